"""The turn context: who a turn acts for, when, and where its events go.

One frozen object, made once by the turn service (copilot/turn.py) and read unchanged by every
graph node, every sub-agent step (through `Runner.ctx`) and every tool. Outside a turn — the
evaluation's dry runs, an approved action's execution, the tests — `TurnContext.build` makes one
with no turn id and an event sink that drops what it is given.
"""

from __future__ import annotations

import datetime
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from zoneinfo import ZoneInfo

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Model
from django.utils import timezone

from agents.events import Event
from business.models import Organisation

EventSink = Callable[[Event], None]


def _drop(event: Event) -> None:
    """The event sink outside a turn: nobody is listening."""


class WriteLedger:
    """The turn's writes by target (O3): a write the turn already made — the same round, a
    failsafe retry, a second orchestrator call, a fallback engine — is answered with the first
    result instead of running again. `lock` serialises writes of steps that run at once, so two
    of them cannot both find a target free and both write it."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._results: dict[str, object] = {}

    def first(self, key: str) -> object | None:
        return self._results.get(key)

    def remember(self, key: str, result: object) -> None:
        self._results.setdefault(key, result)


class CallLog:
    """The turn's tool-call rows: each read's kept until the step's commit point, and every row
    the turn recorded (with how many approvals it filed) for its seal.

    A read changes nothing, so its `ToolCall` row need not commit on its own: the step's
    closing transaction (copilot/orchestration/delegate.py `_close`) writes the step's reads
    with its `AgentRun`, and the turn's last transaction whatever is left — one commit for
    what used to be one per call. The seal (copilot/ledger.py) then takes the turn's calls from
    here instead of reading them back. Only a turn's context keeps reads (`keeps`); any other
    context writes each row at once."""

    def __init__(self, keeps: bool = False) -> None:
        self.keeps = keeps
        self.rows: list[Model] = []  # every row recorded, in order (kept ones get their pk later)
        self.held = 0  # approvals filed by the turn's calls
        self._kept: list[Model] = []
        self._lock = threading.Lock()

    def record(self, row: Model, *, kept: bool) -> None:
        """Store the call's row now, or keep it (a read) for the next commit point."""
        if not (kept and self.keeps):
            row.save()
        with self._lock:
            self.rows.append(row)
            if kept and self.keeps:
                self._kept.append(row)

    def write(self) -> None:
        """Store the kept rows (in the caller's transaction), in the order they were kept."""
        with self._lock:
            rows, self._kept = self._kept, []
        for model in dict.fromkeys(type(row) for row in rows):
            model._default_manager.bulk_create([row for row in rows if type(row) is model])


@dataclass(frozen=True)
class TurnContext:
    organisation: Organisation
    user: AbstractBaseUser | None
    conversation_id: int | None
    now: datetime.datetime  # aware: the turn's one moment, for every date it reads
    turn_id: str = ""
    message_id: int | None = None  # the user's message this turn answers
    text: str = ""  # that message's text
    emit: EventSink = field(default=_drop, repr=False, compare=False)
    # Shared by every copy of the context (dataclasses.replace keeps the same ledger).
    writes: WriteLedger = field(default_factory=WriteLedger, repr=False, compare=False)
    calls: CallLog = field(default_factory=CallLog, repr=False, compare=False)
    # A customer's own turn (WhatsApp): every tool call is scoped to this customer's records
    # (agents/customer_scope.py); None for the organisation's members.
    customer_id: int | None = None

    def __post_init__(self) -> None:
        if self.now.tzinfo is None:
            raise ValueError("TurnContext.now must be timezone-aware")

    @classmethod
    def build(
        cls,
        organisation: Organisation,
        user: AbstractBaseUser | None = None,
        conversation_id: int | None = None,
        now: datetime.datetime | None = None,
    ) -> TurnContext:
        """A context outside any turn (now, unless told otherwise)."""
        return cls(organisation, user, conversation_id, now or timezone.now())

    @property
    def acting_user(self) -> AbstractBaseUser | None:
        """The signed-in user the turn acts for, if any (a schedule or a webhook has none)."""
        user = self.user
        return user if user is not None and user.is_authenticated else None

    @cached_property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.organisation.timezone)

    @property
    def local_now(self) -> datetime.datetime:
        """The turn's moment on the organisation's clock."""
        return self.now.astimezone(self.tz)

    @property
    def today(self) -> datetime.date:
        return self.local_now.date()

    def local(self, moment: datetime.datetime) -> datetime.datetime:
        return moment.astimezone(self.tz)

    def aware(self, day: datetime.date, at: datetime.time) -> datetime.datetime:
        """`day` at wall-clock `at` in the organisation's timezone."""
        return datetime.datetime.combine(day, at, tzinfo=self.tz)
