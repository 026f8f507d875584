"""The suggestions socket: any member of one organisation hears its suggestion count change.

It joins the organisation's group (agents/proactive/live.py) and sends a `SuggestionsFrame` on
connect and on every change; it takes no frames — suggestions are accepted and dismissed
through their forms.
"""

from __future__ import annotations

import json
from typing import Any

from channels.db import database_sync_to_async

from agents.proactive import live
from business.sockets import OrganisationGroupConsumer


class SuggestionsConsumer(OrganisationGroupConsumer):
    permission = ""  # every member sees the suggestions

    def group_for(self, organisation_id: int) -> str:
        return live.group_name(organisation_id)

    async def hello(self) -> None:
        await self._send(await database_sync_to_async(live.new_count)(self.organisation_id))

    async def suggestions_changed(self, message: dict[str, Any]) -> None:
        new = message.get("new")
        if not isinstance(new, int):
            new = await database_sync_to_async(live.new_count)(self.organisation_id)
        await self._send(new)

    async def _send(self, new: int) -> None:
        frame: live.SuggestionsFrame = {"type": "suggestions", "new": new}
        await self.send(text_data=json.dumps(frame))
