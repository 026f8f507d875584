"""The WhatsApp socket: every member who chats hears, live, when a customer asks for a person,
writes while a person handles the conversation, or when one is taken over or handed back
(whatsapp/humans.py `tell`, group `whatsapp.o<org>`). It takes no frames."""

from __future__ import annotations

import json
from typing import Any

from business.sockets import OrganisationGroupConsumer
from whatsapp import humans

FIELDS = ("event", "conversation_id", "title", "mode", "text", "by")


class WhatsAppConsumer(OrganisationGroupConsumer):
    permission = "chat"

    def group_for(self, organisation_id: int) -> str:
        return humans.group_name(organisation_id)

    async def whatsapp_changed(self, message: dict[str, Any]) -> None:
        frame = {"type": "whatsapp", **{key: message[key] for key in FIELDS if key in message}}
        await self.send(text_data=json.dumps(frame))
