"""Turns as jobs: one runner per conversation at a time, its queued turns in order (S5).

`drain` is the body of the job (copilot/tasks.py starts it — a Celery task in production, a
worker thread on the embedded default). It takes the conversation's *lease* with a conditional
update on the conversation row, so across every web process and worker exactly one runner works
through a conversation; it renews the lease from a heartbeat thread while it works and gives it
up at the end. A runner that dies stops renewing: its lease lapses within `LEASE` seconds.

Inside the lease it claims the oldest queued turn (queued → running in one conditional
`UPDATE … RETURNING`: two runners never run one turn) and answers it (copilot/turn.py), until
none is left. A runner that took over a lapsed lease first *interrupts* the turns its dead
predecessor left running — said, never re-run. A lease found free needs no such scan: a runner
gives its lease back only when it left nothing running (after a failure it lets it lapse).

One heartbeat thread per process renews the leases its runners hold, every third of a lease; a
turn shorter than that costs no renewal at all. The runner thread keeps its database connection
for its life (`CONN_MAX_AGE`, health-checked), never a reconnect per turn.

`stale_conversations` is the sweep behind recovery: conversations with an orphaned running turn
or a queued turn that nobody is working on.
"""

from __future__ import annotations

import datetime
import logging
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from copilot import services
from copilot.answering import TurnResult
from copilot.eventlog import PROCESS
from copilot.models import Conversation, Turn
from copilot.turn import interrupt_turn, run_turn

# The turn as the runner claims it, with what every kind reads first.
_CLAIMED = ("conversation__organisation", "message", "user")

logger = logging.getLogger(__name__)


def lease_seconds() -> float:
    return float(getattr(settings, "COPILOT_LEASE_SECONDS", 6.0))


@dataclass
class Drained:
    results: list[TurnResult] = field(default_factory=list)
    interrupted: int = 0
    # The lease was someone else's: try again then (its holder may have died), if turns wait.
    retry_in: float | None = None


def drain(organisation_id: int, conversation_id: int) -> Drained:
    """Answer the conversation's queued turns, oldest first, while holding its lease."""
    close_old_connections()  # drops this thread's connection only when it is broken or too old
    token = f"{PROCESS}:{uuid.uuid4().hex[:8]}"
    drained = Drained()
    while True:
        with transaction.atomic():  # a free lease and the first turn: one commit
            acquired = _acquire(organisation_id, conversation_id, token)
            claimed = _claim_next(conversation_id, token) if acquired is _FREE else None
        if acquired is None:
            if Conversation.objects.filter(
                pk=conversation_id, organisation_id=organisation_id
            ).exists() and has_queued(conversation_id):
                drained.retry_in = _until_lapse(conversation_id)
            return drained  # held by another runner, or not this organisation's conversation
        with HEARTBEAT.holding(conversation_id, token):
            if acquired is _TAKEN_OVER:
                drained.interrupted += _interrupt_orphans(conversation_id)
            turn = claimed if acquired is not _TAKEN_OVER else _claim_next(conversation_id, token)
            while True:
                released: list[bool] = []  # set when the turn's closing transaction commits
                if turn is not None:
                    drained.results.append(_run_releasing(turn, token, released))
                # Given back only with nothing left running and nothing queued, in one
                # statement — in the turn's own closing transaction when it got that far (an
                # exception above lets it lapse, and the next runner then interrupts what was
                # cut short). A message queued meanwhile by someone who found the lease taken
                # keeps it here: claimed next.
                if released[-1] if released else _release_if_idle(conversation_id, token):
                    return drained
                if not _holds(conversation_id, token):  # lost to a runner that took it over
                    break
                turn = _claim_next(conversation_id, token)


_FREE, _TAKEN_OVER = "free", "taken over"


def _run_releasing(turn: Turn, token: str, released: list[bool]) -> TurnResult:
    """Run the claimed turn; the transaction that finishes it also gives the lease back if
    nothing is queued (one commit less a turn). `released` learns the outcome once that
    transaction commits: a closing rolled back (the failure is stored after it) says nothing."""

    def close(finished: Turn) -> None:
        if finished.pk != turn.pk:  # another turn finished from this one (a decision's resume)
            return
        outcome = _release_if_idle(finished.conversation_id, token)
        transaction.on_commit(lambda: _closed(finished.conversation_id, outcome))

    def _closed(conversation_id: int, outcome: bool) -> None:
        released.append(outcome)
        if outcome:  # given back: the heartbeat must not try to renew it any more
            HEARTBEAT.forget(conversation_id, token)

    reset = services.at_turn_close.set(close)
    try:
        return run_turn(turn)
    finally:
        services.at_turn_close.reset(reset)


def _acquire(organisation_id: int, conversation_id: int, token: str) -> str | None:
    """Take the conversation's lease: `_FREE` when nobody held it (one statement), `_TAKEN_OVER`
    when its holder let it lapse (its turns may have been cut short), None when it is held."""
    now = timezone.now()
    until = now + datetime.timedelta(seconds=lease_seconds())
    mine = Conversation.objects.filter(pk=conversation_id, organisation_id=organisation_id)
    if mine.filter(lease_owner="").update(lease_owner=token, lease_until=until) == 1:
        return _FREE
    lapsed = Q(lease_until__isnull=True) | Q(lease_until__lt=now)
    if mine.filter(lapsed).update(lease_owner=token, lease_until=until) == 1:
        return _TAKEN_OVER
    return None


def _renew(conversation_id: int, token: str) -> bool:
    until = timezone.now() + datetime.timedelta(seconds=lease_seconds())
    renewed = Conversation.objects.filter(pk=conversation_id, lease_owner=token).update(
        lease_until=until
    )
    return renewed == 1


def _release_if_idle(conversation_id: int, token: str) -> bool:
    """Give the lease back unless a turn is queued (or the lease is no longer this runner's)."""
    queued = Turn.objects.filter(conversation_id=OuterRef("pk"), status=Turn.Status.QUEUED)
    mine = Conversation.objects.filter(pk=conversation_id, lease_owner=token)
    return mine.filter(~Exists(queued)).update(lease_owner="", lease_until=None) == 1


def _holds(conversation_id: int, token: str) -> bool:
    return Conversation.objects.filter(pk=conversation_id, lease_owner=token).exists()


def _until_lapse(conversation_id: int) -> float:
    until = Conversation.objects.filter(pk=conversation_id).values_list("lease_until", flat=True)
    moment = until.first()
    if moment is None:
        return 0.2
    return max(0.2, (moment - timezone.now()).total_seconds() + 0.2)


def has_queued(conversation_id: int) -> bool:
    return Turn.objects.filter(conversation_id=conversation_id, status=Turn.Status.QUEUED).exists()


def _claim_next(conversation_id: int, token: str) -> Turn | None:
    """The oldest queued turn of the conversation, now running for this runner: one
    `UPDATE … RETURNING` claims it (SQLite ≥ 3.35 and PostgreSQL), one select reads it."""
    table = connection.ops.quote_name(Turn._meta.db_table)
    sql = (
        f"UPDATE {table} SET status = %s, runner = %s, started_at = %s "  # noqa: S608
        f"WHERE id = (SELECT id FROM {table} WHERE conversation_id = %s AND status = %s "
        "ORDER BY message_id LIMIT 1) AND status = %s RETURNING id"
    )
    queued, running = Turn.Status.QUEUED.value, Turn.Status.RUNNING.value
    with connection.cursor() as cursor:
        cursor.execute(sql, [running, token, timezone.now(), conversation_id, queued, queued])
        row = cursor.fetchone()
    # No row: nothing is queued, or a runner that took over a lease this one lost claimed it.
    return None if row is None else Turn.objects.select_related(*_CLAIMED).get(pk=row[0])


def _interrupt_orphans(conversation_id: int) -> int:
    """Turns left running by a runner that died (this runner holds the lease now)."""
    orphans = Turn.objects.filter(
        conversation_id=conversation_id, status=Turn.Status.RUNNING
    ).select_related("conversation", "message")
    return sum(interrupt_turn(turn) for turn in orphans)


class _Heartbeat:
    """One thread per process renews every lease its runners hold, each a third of a lease after
    it was taken or last renewed. Holding a lease costs a dictionary entry; a lease given back
    before its first third costs no statement at all."""

    def __init__(self) -> None:
        self._held: dict[tuple[int, str], float] = {}  # (conversation, token) → next renewal
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)  # a new lease may be due before the nap ends
        self._thread: threading.Thread | None = None

    @contextmanager
    def holding(self, conversation_id: int, token: str) -> Iterator[None]:
        key = (conversation_id, token)
        with self._lock:
            self._held[key] = time.monotonic() + lease_seconds() / 3
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._beat, name="copilot-lease", daemon=True
                )
                self._thread.start()
            self._wake.notify()
        try:
            yield
        finally:
            with self._lock:
                self._held.pop(key, None)

    def forget(self, conversation_id: int, token: str) -> None:
        """Stop renewing a lease its runner gave back before leaving `holding`."""
        with self._lock:
            self._held.pop((conversation_id, token), None)

    def _due(self) -> tuple[list[tuple[int, str]], float] | None:
        """The leases to renew now and how long to sleep after; None (and the thread is gone)
        when no runner holds a lease."""
        now, third = time.monotonic(), lease_seconds() / 3
        with self._lock:
            if not self._held:
                self._thread = None
                return None
            due = [key for key, moment in self._held.items() if moment <= now]
            for key in due:
                self._held[key] = now + third
            upcoming = min(self._held.values())
        return due, max(0.05, upcoming - now)

    def _beat(self) -> None:
        try:
            while (work := self._due()) is not None:
                due, wait = work
                for conversation_id, token in due:
                    try:
                        if not _renew(conversation_id, token):
                            logger.warning("lease of conversation %s lost", conversation_id)
                    except Exception:  # the database hiccuped: the next beat tries again
                        logger.warning("lease renewal failed", exc_info=True)
                        close_old_connections()
                with self._lock:
                    self._wake.wait(wait)
        finally:
            connection.close()  # this thread's own, if a renewal opened one


HEARTBEAT = _Heartbeat()


def leased_with_work() -> bool:
    """Whether a conversation with queued or running turns is under a lease not lapsed yet."""
    unfinished = (Turn.Status.QUEUED, Turn.Status.RUNNING)
    return Turn.objects.filter(
        status__in=unfinished, conversation__lease_until__gte=timezone.now()
    ).exists()


def stale_conversations(*, queued_for: float = 10.0) -> list[tuple[int, int]]:
    """(organisation, conversation) pairs that need a runner: a turn left running under a lapsed
    lease, or a turn queued for more than `queued_for` seconds with nobody holding the lease."""
    now = timezone.now()
    lapsed = Q(conversation__lease_until__isnull=True) | Q(conversation__lease_until__lt=now)
    orphaned = Q(status=Turn.Status.RUNNING)
    waiting = Q(
        status=Turn.Status.QUEUED, created_at__lt=now - datetime.timedelta(seconds=queued_for)
    )
    rows = (
        Turn.objects.filter(lapsed & (orphaned | waiting))
        .values_list("organisation_id", "conversation_id")
        .distinct()
    )
    return sorted(set(rows))
