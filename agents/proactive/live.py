"""Suggestions, live: every open panel and dashboard of the organisation hears of a change.

Group `proactive.o<organisation id>` carries `{"type": "suggestions.changed", "new": count}`;
the socket (agents/proactive/consumers.py) passes it on as a `SuggestionsFrame` and the page
reloads its badge and list. The embedded default's channel layer lives in one process, so a
Celery worker's run reaches no socket: the pages also poll (hx-trigger "every 30s") and what a
message says is always readable from the database.
"""

from __future__ import annotations

import logging
from typing import Literal, TypedDict

from django.db import transaction

from agents.models import Suggestion
from common.sockets import send_to_group

logger = logging.getLogger(__name__)

GROUP_MESSAGE = "suggestions.changed"


class SuggestionsFrame(TypedDict):
    """What the socket sends the page: how many suggestions wait for someone."""

    type: Literal["suggestions"]
    new: int


def group_name(organisation_id: int) -> str:
    return f"proactive.o{int(organisation_id)}"


def new_count(organisation_id: int) -> int:
    return Suggestion.objects.filter(
        organisation_id=organisation_id, state=Suggestion.State.NEW
    ).count()


def tell(organisation_id: int) -> None:
    """Once the change is committed: the organisation's count, to its group."""
    transaction.on_commit(lambda: _send(organisation_id))


def _send(organisation_id: int) -> None:
    # Through the web process's loop (common/sockets.py): from a turn runner's thread, a
    # bare async_to_sync send would run on a loop of its own the in-memory layer does not share.
    message = {"type": GROUP_MESSAGE, "new": new_count(organisation_id)}
    send_to_group(group_name(organisation_id), message)
