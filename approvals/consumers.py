"""The live approvals queue's socket: managers and admins of one organisation, nobody else.

It joins the organisation's group (approvals/live.py) and forwards each change with the
organisation's pending count; the page decides what to redraw. It takes no frames: decisions
are made through the queue's forms (approvals/views.py), which also work without a socket.
"""

from __future__ import annotations

import json
from typing import Any

from channels.db import database_sync_to_async

from approvals import live
from business.sockets import OrganisationGroupConsumer


class ApprovalsConsumer(OrganisationGroupConsumer):
    permission = "decide_approvals"

    def group_for(self, organisation_id: int) -> str:
        return live.group_name(organisation_id)

    async def hello(self) -> None:
        await self._send_count(None, "")

    async def approvals_changed(self, message: dict[str, Any]) -> None:
        pending = message.get("pending")  # counted once by the sender
        await self._send_count(message.get("action"), str(message.get("status", "")), pending)

    async def approvals_emergency(self, message: dict[str, Any]) -> None:
        """An urgent ticket of the organisation (approvals/live.py `notify_emergency`)."""
        payload = {
            "type": "emergency",
            "ticket": message.get("ticket"),
            "summary": str(message.get("summary", "")),
            "conversation": message.get("conversation"),
        }
        await self.send(text_data=json.dumps(payload))

    async def _send_count(self, action: Any, status: str, pending: Any = None) -> None:
        if not isinstance(pending, int):
            pending = await database_sync_to_async(live.pending_count)(self.organisation_id)
        payload = {"type": "approvals", "action": action, "status": status, "pending": pending}
        await self.send(text_data=json.dumps(payload))
