"""Turns as jobs: one runner per conversation at a time, its queued turns in order (S5).

`drain` is the body of the job (copilot/tasks.py starts it — a Celery task in production, a
worker thread on the embedded default). It takes the conversation's *lease* with a conditional
update on the conversation row, so across every web process and worker exactly one runner works
through a conversation; it renews the lease from a heartbeat thread while it works and gives it
up at the end. A runner that dies stops renewing: its lease lapses within `LEASE` seconds.

Inside the lease it claims the oldest queued turn (queued → running, another conditional update:
two runners never run one turn) and answers it (copilot/turn.py), until none is left. Before
that, a turn still marked running from a runner that died is *interrupted* — said, never re-run.

`stale_conversations` is the sweep behind recovery: conversations with an orphaned running turn
or a queued turn that nobody is working on.
"""

from __future__ import annotations

import datetime
import logging
import threading
import uuid
from dataclasses import dataclass, field

from django.conf import settings
from django.db import close_old_connections
from django.db.models import Q
from django.utils import timezone

from copilot.answering import TurnResult
from copilot.eventlog import PROCESS
from copilot.models import Conversation, Turn
from copilot.turn import interrupt_turn, run_turn

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
    close_old_connections()
    token = f"{PROCESS}:{uuid.uuid4().hex[:8]}"
    drained = Drained()
    try:
        if not Conversation.objects.filter(
            pk=conversation_id, organisation_id=organisation_id
        ).exists():
            return drained  # not this organisation's: nothing to run, nothing to retry
        while True:
            if not _acquire(organisation_id, conversation_id, token):
                if has_queued(conversation_id):
                    drained.retry_in = _until_lapse(conversation_id)
                return drained
            try:
                with _Heartbeat(conversation_id, token):
                    drained.interrupted += _interrupt_orphans(conversation_id)
                    while (turn_id := _claim_next(conversation_id, token)) is not None:
                        drained.results.append(run_turn(turn_id))
            finally:
                _release(conversation_id, token)
            # A message may have been queued after the last claim and before the release, by
            # someone who then found the lease taken: look once more.
            if not has_queued(conversation_id):
                return drained
    finally:
        close_old_connections()


def _acquire(organisation_id: int, conversation_id: int, token: str) -> bool:
    now = timezone.now()
    free = Q(lease_owner="") | Q(lease_until__isnull=True) | Q(lease_until__lt=now)
    taken = Conversation.objects.filter(
        free, pk=conversation_id, organisation_id=organisation_id
    ).update(lease_owner=token, lease_until=now + datetime.timedelta(seconds=lease_seconds()))
    return taken == 1


def _renew(conversation_id: int, token: str) -> bool:
    until = timezone.now() + datetime.timedelta(seconds=lease_seconds())
    renewed = Conversation.objects.filter(pk=conversation_id, lease_owner=token).update(
        lease_until=until
    )
    return renewed == 1


def _release(conversation_id: int, token: str) -> None:
    Conversation.objects.filter(pk=conversation_id, lease_owner=token).update(
        lease_owner="", lease_until=None
    )


def _until_lapse(conversation_id: int) -> float:
    until = Conversation.objects.filter(pk=conversation_id).values_list("lease_until", flat=True)
    moment = until.first()
    if moment is None:
        return 0.2
    return max(0.2, (moment - timezone.now()).total_seconds() + 0.2)


def has_queued(conversation_id: int) -> bool:
    return Turn.objects.filter(conversation_id=conversation_id, status=Turn.Status.QUEUED).exists()


def _claim_next(conversation_id: int, token: str) -> str | None:
    """The oldest queued turn of the conversation, now running for this runner."""
    while True:
        turn_id = (
            Turn.objects.filter(conversation_id=conversation_id, status=Turn.Status.QUEUED)
            .order_by("message_id")
            .values_list("pk", flat=True)
            .first()
        )
        if turn_id is None:
            return None
        claimed = Turn.objects.filter(pk=turn_id, status=Turn.Status.QUEUED).update(
            status=Turn.Status.RUNNING, runner=token, started_at=timezone.now()
        )
        if claimed == 1:
            return str(turn_id)


def _interrupt_orphans(conversation_id: int) -> int:
    """Turns left running by a runner that died (this runner holds the lease now)."""
    orphans = Turn.objects.filter(
        conversation_id=conversation_id, status=Turn.Status.RUNNING
    ).select_related("conversation", "message")
    return sum(interrupt_turn(turn) for turn in orphans)


class _Heartbeat:
    """Renews the lease every third of its length while the runner works."""

    def __init__(self, conversation_id: int, token: str) -> None:
        self._conversation_id = conversation_id
        self._token = token
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="copilot-lease", daemon=True)

    def __enter__(self) -> _Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _beat(self) -> None:
        try:
            while not self._stop.wait(lease_seconds() / 3):
                try:
                    if not _renew(self._conversation_id, self._token):
                        logger.warning("lease of conversation %s lost", self._conversation_id)
                except Exception:  # the database hiccuped: the next beat tries again
                    logger.warning("lease renewal failed", exc_info=True)
        finally:
            close_old_connections()


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
