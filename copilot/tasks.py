"""The chat's jobs: running a conversation's turns, recovering stalled ones, trimming the log.

Thin, as Celery tasks should be: ids in, one service call (copilot/runner.py), idempotent — a
drain for a conversation with nothing queued does nothing, and a turn is claimed before it runs.

`dispatch` is how an entry point hands a conversation to a runner. With a job queue
(`COPILOT_TURN_RUNNER=celery`, the default when `REDIS_URL` is set) it enqueues
`drain_conversation` on its own queue, so web processes only hold sockets and workers scale
separately; on the embedded default it runs the same drain on a worker thread of this process.
"""

from __future__ import annotations

import datetime
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from copilot import ledger, memory_tasks, runner
from copilot.models import ConversationEvent, Turn
from copilot.orchestration import checkpoints

logger = logging.getLogger(__name__)

# The memory jobs live apart (the turn enqueues them); named here so the worker registers them.
MEMORY_TASKS = (
    memory_tasks.extract_profiles,
    memory_tasks.sweep_idle_conversations,
    memory_tasks.refresh_summary,
)

_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()
_recovered = False


def uses_celery() -> bool:
    return str(getattr(settings, "COPILOT_TURN_RUNNER", "local")) == "celery"


def dispatch(organisation_id: int, conversation_id: int) -> bool:
    """Hand the conversation's queued turns to a runner. False when the job queue cannot be
    reached: the turns stay queued (stored) and recovery hands them over later."""
    if not uses_celery():
        _local().submit(_drain_here, organisation_id, conversation_id)
        return True
    try:
        drain_conversation.apply_async(
            args=[organisation_id, conversation_id], queue=settings.COPILOT_TURN_QUEUE
        )
    except Exception as exc:  # the broker is down: the turn waits, stored
        logger.warning("could not enqueue conversation %s: %s", conversation_id, exc)
        return False
    return True


# Nobody reads these tasks' results. With the Redis result backend a task whose result is kept
# subscribes to it when it is sent, and with Redis down that retries for ~20 s before failing:
# `dispatch` (on a socket's thread) would hang instead of saying `deferred` at once.
@shared_task(
    name="copilot.drain_conversation", bind=True, acks_late=True, max_retries=None,
    ignore_result=True,
)  # fmt: skip
def drain_conversation(self: Any, organisation_id: int, conversation_id: int) -> int:
    """Run the conversation's queued turns (or come back when the lease holder's lapses)."""
    drained = runner.drain(organisation_id, conversation_id)
    if drained.retry_in is not None and not self.request.is_eager:
        raise self.retry(countdown=drained.retry_in)
    return len(drained.results)


@shared_task(name="copilot.recover_turns", ignore_result=True)
def recover_turns() -> int:
    """Conversations whose runner died or whose turns nobody picked up get one now."""
    stale = runner.stale_conversations()
    for organisation_id, conversation_id in stale:
        dispatch(organisation_id, conversation_id)
    return len(stale)


@shared_task(name="copilot.anchor_trace_chains", ignore_result=True)
def anchor_trace_chains() -> int:
    """Each organisation's conversation chains that grew get an anchor in its own chain."""
    return ledger.anchor_all()


@shared_task(name="copilot.purge_event_log")
def purge_event_log() -> int:
    """Events older than the replay window are of no use to a reconnecting client."""
    days = int(getattr(settings, "COPILOT_EVENT_LOG_DAYS", 7))
    cutoff = timezone.now() - datetime.timedelta(days=days)
    deleted, _ = ConversationEvent.objects.filter(created_at__lt=cutoff).delete()
    return deleted


@shared_task(name="copilot.purge_checkpoints", ignore_result=True)
def purge_checkpoints() -> int:
    """Paused turns nobody can resume any more (every action they hold has long expired): their
    checkpoints go and they are done. A settled turn forgets its own checkpoint at once."""
    days = int(getattr(settings, "COPILOT_CHECKPOINT_DAYS", 14))
    cutoff = timezone.now() - datetime.timedelta(days=days)
    stale = list(
        Turn.objects.filter(status=Turn.Status.WAITING, created_at__lt=cutoff).values_list(
            "pk", "organisation_id", "conversation_id"
        )
    )
    for turn_id, organisation_id, conversation_id in stale:
        checkpoints.forget(organisation_id, conversation_id, str(turn_id))
        Turn.objects.filter(pk=turn_id, status=Turn.Status.WAITING).update(status=Turn.Status.DONE)
    return len(stale)


# --- the embedded default: this process runs its own turns ----------------------------------


def _local() -> ThreadPoolExecutor:
    global _executor
    with _executor_lock:
        if _executor is None:
            workers = int(getattr(settings, "COPILOT_LOCAL_RUNNERS", 4))
            _executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="copilot-turn")
        return _executor


def _drain_here(organisation_id: int, conversation_id: int) -> None:
    try:
        drained = runner.drain(organisation_id, conversation_id)
    except Exception:  # a bug, not a user error: the turns stay queued for recovery
        logger.exception("drain of conversation %s failed", conversation_id)
        return
    if drained.retry_in is not None:
        _later(drained.retry_in, dispatch, organisation_id, conversation_id)


_timers: set[threading.Timer] = set()


def _later(delay: float, func: Callable[..., object], *args: object) -> None:
    """`func(*args)` on a timer thread after `delay` seconds (kept, so that it can be stopped)."""

    def run() -> None:
        _timers.discard(timer)
        func(*args)

    timer = threading.Timer(delay, run)
    timer.daemon = True
    _timers.add(timer)
    timer.start()


def stop_local() -> None:
    """Stop this process's runner threads after the turns they hold, and its pending retries
    (a test's turns must not be handed over again in the next test, under its settings)."""
    global _executor
    for _ in range(3):  # a turn that ends meanwhile may set a retry, a retry a new executor
        for timer in list(_timers):
            timer.cancel()
        _timers.clear()
        with _executor_lock:
            executor, _executor = _executor, None
        if executor is None:
            return
        executor.shutdown(wait=True)


def recover_here_once() -> None:
    """On the embedded default, this process recovers what a previous run of it left behind
    (queued turns, turns cut short), once, on a runner thread: as daphne starts
    (capataz/asgi.py), or else when its first socket connects."""
    global _recovered
    if _recovered or uses_celery():
        return
    _recovered = True
    _local().submit(_recover_now)


def _recover_now(*, again: bool = True) -> None:
    try:
        stale = runner.stale_conversations(queued_for=0)
        # A restart is quicker than a lease: conversations still leased to the previous run of
        # this process are not stale yet. Nobody renews those leases, so one lease later they
        # have lapsed: look once more then (once — a lease this process holds is renewed).
        held = again and runner.leased_with_work()
        for organisation_id, conversation_id in stale:
            _drain_here(organisation_id, conversation_id)
    except Exception:
        logger.exception("recovery of stalled turns failed")
        return
    if held:
        _later(runner.lease_seconds() + 0.2, _recover_later)


def _recover_later() -> None:
    _local().submit(_recover_now, again=False)
