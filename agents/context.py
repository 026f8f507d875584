"""The turn context: who a turn acts for, when, and where its events go.

One frozen object, made once by the turn service (copilot/turn.py) and read unchanged by every
graph node, every sub-agent step (through `Runner.ctx`) and every tool. Outside a turn — the
evaluation's dry runs, an approved action's execution, the tests — `TurnContext.build` makes one
with no turn id and an event sink that drops what it is given.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from zoneinfo import ZoneInfo

from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from agents.events import Event
from business.models import Organisation

EventSink = Callable[[Event], None]


def _drop(event: Event) -> None:
    """The event sink outside a turn: nobody is listening."""


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
