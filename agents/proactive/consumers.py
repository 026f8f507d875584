"""The suggestions socket: any member of one organisation hears its suggestion count change.

It joins the organisation's group (agents/proactive/live.py) and sends a `SuggestionsFrame` on
connect and on every change; it takes no frames — suggestions are accepted and dismissed
through their forms.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from agents.proactive import live
from business.selectors import membership_for_user

logger = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403


def _organisation_of(user: Any, org_slug: str | None) -> int | None:
    membership = membership_for_user(user, org_slug)
    return membership.organisation_id if membership is not None else None


class SuggestionsConsumer(AsyncWebsocketConsumer):
    group = ""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        session = self.scope.get("session")
        org_slug = session.get("org_slug") if session is not None else None
        organisation_id = await database_sync_to_async(_organisation_of)(user, org_slug)
        if organisation_id is None:
            await self.close(code=CLOSE_FORBIDDEN)
            return
        self.organisation_id = organisation_id
        self.group = live.group_name(organisation_id)
        try:
            await self.channel_layer.group_add(self.group, self.channel_name)
        except Exception as exc:  # no live channel: the page still polls
            logger.warning("suggestions %s: no live channel (%s)", self.group, exc)
            self.group = ""
        await self.accept()
        await self._send(await database_sync_to_async(live.new_count)(organisation_id))

    async def disconnect(self, code: int) -> None:
        if self.group:
            try:
                await self.channel_layer.group_discard(self.group, self.channel_name)
            except Exception:
                logger.debug("group_discard failed", exc_info=True)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Frames are not commands here."""

    async def suggestions_changed(self, message: dict[str, Any]) -> None:
        new = message.get("new")
        if not isinstance(new, int):
            new = await database_sync_to_async(live.new_count)(self.organisation_id)
        await self._send(new)

    async def _send(self, new: int) -> None:
        frame: live.SuggestionsFrame = {"type": "suggestions", "new": new}
        await self.send(text_data=json.dumps(frame))
