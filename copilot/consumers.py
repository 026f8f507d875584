"""The CopilotPanel websocket (E1): thin — authenticate, scope, parse frames, start the turn.

The turn itself is `copilot.turn.run_turn`, a plain async service; this consumer only hands it a
`send` that writes protocol events (copilot/events.py) to the socket. Bad frames get an `error`
event and leave the connection and the history intact.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from asgiref.sync import sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.utils.translation import gettext, gettext_noop, override

from copilot.events import ErrorEvent, Event
from copilot.models import Conversation
from copilot.router_cache import warm_up
from copilot.selectors import get_conversation_for_user
from copilot.turn import run_turn

logger = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404


class ChatConsumer(AsyncWebsocketConsumer):
    conversation: Conversation
    ui_language: str = "es"

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        conversation_id = self.scope["url_route"]["kwargs"]["conversation_id"]
        try:
            self.conversation = await sync_to_async(get_conversation_for_user)(
                user, conversation_id
            )
        except Conversation.DoesNotExist:
            # An outsider cannot tell a foreign conversation from a missing one.
            await self.close(code=CLOSE_NOT_FOUND)
            return
        self.ui_language = _ui_language(self.scope)
        # One worker per connection takes this socket's messages in arrival order; the
        # conversation lock inside run_turn serialises against other sockets and processes.
        self.inbox: asyncio.Queue[str] = asyncio.Queue()
        self.worker: asyncio.Task[None] | None = None
        await self.accept()
        self.warming = asyncio.create_task(
            sync_to_async(warm_up, thread_sensitive=False)(self.conversation.organisation_id)
        )

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        text, problem = parse_frame(text_data, bytes_data)
        if problem is not None:
            await self._refuse(*problem)
            return
        assert text is not None
        self.inbox.put_nowait(text)
        if self.worker is None or self.worker.done():
            self.worker = asyncio.create_task(self._work())

    async def _work(self) -> None:
        # Runs until the inbox is empty, even after a disconnect: every accepted message gets
        # its answer stored, and the client finds it when it comes back.
        while not self.inbox.empty():
            await self._turn(self.inbox.get_nowait())

    async def _turn(self, text: str) -> None:
        try:
            await run_turn(
                organisation_id=self.conversation.organisation_id,
                conversation_id=self.conversation.pk,
                user_id=self.scope["user"].pk,
                text=text,
                send=self._send_event,
            )
        except Exception:  # run_turn reports its own failures; this is the last guard
            logger.exception("turn crashed in conversation %s", self.conversation.pk)

    async def _send_event(self, event: Event) -> None:
        await self.send(text_data=json.dumps(event, default=str))

    async def _refuse(self, code: str, params: dict[str, object]) -> None:
        with override(self.ui_language):
            message = gettext(FRAME_ERRORS[code])
        if params:
            message = message % params
        event: ErrorEvent = {"type": "error", "turn_id": "", "code": code, "message": message}
        await self.send(text_data=json.dumps(event))


# Messages the panel may show for a refused frame (translated at send time).
FRAME_ERRORS = {
    "binary": gettext_noop("Binary frames are not supported; send JSON text."),
    "malformed": gettext_noop("The message could not be read (it is not valid JSON)."),
    "unknown_type": gettext_noop("Unknown frame type: send a message with some text."),
    "empty": gettext_noop("The message is empty."),
    "too_long": gettext_noop("The message is too long (at most %(limit)s characters)."),
}


FrameProblem = tuple[str, dict[str, object]]


def parse_frame(
    text_data: str | None, bytes_data: bytes | None
) -> tuple[str | None, FrameProblem | None]:
    """(text, None) for a good chat frame, (None, (code, params)) otherwise."""
    limit = settings.COPILOT_MAX_MESSAGE_CHARS
    if bytes_data is not None or text_data is None:
        return None, ("binary", {})
    if len(text_data) > limit * 4 + 1024:  # refuse before parsing a huge frame
        return None, ("too_long", {"limit": limit})
    try:
        frame = json.loads(text_data)
    except ValueError:
        return None, ("malformed", {})
    if not isinstance(frame, dict) or frame.get("type", "message") != "message":
        return None, ("unknown_type", {})
    text = frame.get("text")
    if not isinstance(text, str) or not text.strip():
        return None, ("empty", {})
    if len(text) > limit:
        return None, ("too_long", {"limit": limit})
    return text.strip(), None


def _ui_language(scope: dict[str, Any]) -> str:
    """The UI language from the language cookie (the panel's own language, not the message's)."""
    cookies = scope.get("cookies") or {}
    language = cookies.get(settings.LANGUAGE_COOKIE_NAME, "")
    return "en" if language.startswith("en") else "es-ar"
