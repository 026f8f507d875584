"""The live approvals queue's socket: managers and admins of one organisation, nobody else.

It joins the organisation's group (approvals/live.py) and forwards each change with the
organisation's pending count; the page decides what to redraw. It takes no frames: decisions
are made through the queue's forms (approvals/views.py), which also work without a socket.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from approvals import live
from business.roles import can
from business.selectors import membership_for_user

logger = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403


def _deciding_organisation(user: Any, org_slug: str | None) -> int | None:
    """The organisation whose queue this user may watch: the one the session works in, as for
    the pages (business/middleware.py)."""
    membership = membership_for_user(user, org_slug)
    if membership is None or not can(membership, "decide_approvals"):
        return None
    return membership.organisation_id


class ApprovalsConsumer(AsyncWebsocketConsumer):
    group = ""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        session = self.scope.get("session")
        org_slug = session.get("org_slug") if session is not None else None
        organisation_id = await database_sync_to_async(_deciding_organisation)(user, org_slug)
        if organisation_id is None:
            await self.close(code=CLOSE_FORBIDDEN)
            return
        self.organisation_id = organisation_id
        self.group = live.group_name(organisation_id)
        try:
            await self.channel_layer.group_add(self.group, self.channel_name)
        except Exception as exc:  # no live channel: the page still works, by reloading
            logger.warning("approvals queue %s: no live channel (%s)", self.group, exc)
            self.group = ""
        await self.accept()
        await self._send_count(None, "")

    async def disconnect(self, code: int) -> None:
        if self.group:
            try:
                await self.channel_layer.group_discard(self.group, self.channel_name)
            except Exception:
                logger.debug("group_discard failed", exc_info=True)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Frames are not commands here; the queue's forms decide."""

    async def approvals_changed(self, message: dict[str, Any]) -> None:
        pending = message.get("pending")  # counted once by the sender
        await self._send_count(message.get("action"), str(message.get("status", "")), pending)

    async def _send_count(self, action: Any, status: str, pending: Any = None) -> None:
        if not isinstance(pending, int):
            pending = await database_sync_to_async(live.pending_count)(self.organisation_id)
        payload = {"type": "approvals", "action": action, "status": status, "pending": pending}
        await self.send(text_data=json.dumps(payload))
