"""The CopilotPanel websocket (E1): a subscriber, not a runner.

On connect it checks the user and the conversation, joins the conversation's group and replays
what the client missed (`?after=<seq>`, the last sequence number it saw). A chat frame is
validated, the message stored (`accept_message`) and acknowledged with `accepted`, and the
conversation handed to a runner (`dispatch`); the turn's events come back through the group like
everyone else's, so every open tab sees the turn live and a reconnecting one misses nothing.

Every event has a `seq`; the socket forwards each once and in order, filling any gap from the
log. With the channel layer down (Redis gone) the socket stays open: it reads the log instead,
says when a stored message waits for the service, and rejoins the group when it is back.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.db import DatabaseError
from django.utils.translation import gettext, gettext_noop, override

from agents.events import DeferredEvent, ErrorEvent, Event
from business.hygiene import text_problem
from copilot import eventlog, tasks
from copilot.intake import MessageRefused, accept_message
from copilot.models import Conversation
from copilot.runner import has_queued
from copilot.selectors import get_conversation_for_user
from copilot.turn import warm_up

logger = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404
RECOVER_EVERY_S = 2.0
# A turn under way that has been silent this long: read the log (a live send can be dropped —
# a full channel, a Redis hiccup — and a dropped *last* event leaves no gap to notice).
WATCH_S = 3.0
_CLIENT_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")


def _db(func: Any) -> Any:
    """`func` on a worker thread, with Django's stale connections closed around it. Not the
    single thread-sensitive thread: 200 sockets must not queue behind one another's queries."""
    return database_sync_to_async(func, thread_sensitive=False)


class ChatConsumer(AsyncWebsocketConsumer):
    conversation: Conversation
    ui_language: str = "es"
    # A supervisor (a manager or admin reading a member's conversation) follows it live, and
    # every frame they send is refused with `read_only`: nothing is stored.
    read_only: bool = True

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        conversation_id = self.scope["url_route"]["kwargs"]["conversation_id"]
        try:
            access = await _db(get_conversation_for_user)(user, conversation_id)
        except Conversation.DoesNotExist:
            # An outsider (or a colleague) cannot tell it from a missing conversation.
            await self.close(code=CLOSE_NOT_FOUND)
            return
        self.conversation, self.read_only = access
        self.ui_language = _ui_language(self.scope)
        self.group = eventlog.group_name(self.conversation.organisation_id, self.conversation.pk)
        self.last_seq: int = 0
        self.subscribed = False
        self.undispatched = False
        self.recovering: asyncio.Task[None] | None = None
        self.open_turns: set[str] = set()
        self.watching: asyncio.Task[None] | None = None
        self.last_heard = time.monotonic()
        eventlog.use_loop(asyncio.get_running_loop())
        if settings.COPILOT_EVENT_TAIL and eventlog.needs_tail():
            await eventlog.start_tail()
        tasks.recover_here_once()
        # Subscribed first, then the starting point: an event published in between is both
        # after the starting point and on its way through the group, never neither.
        await self._subscribe()
        after = _after(self.scope)
        if after is None:
            self.last_seq = await _db(eventlog.last_seq)(self.conversation.pk)
        else:
            self.last_seq = after
        await self.accept()
        if after is not None:
            await self._catch_up()
        self.warming = asyncio.create_task(_db(warm_up)(self.conversation.organisation_id))

    async def disconnect(self, code: int) -> None:
        for task in (getattr(self, "recovering", None), getattr(self, "watching", None)):
            if task is not None:
                task.cancel()
        if getattr(self, "subscribed", False):
            try:
                await self.channel_layer.group_discard(self.group, self.channel_name)
            except Exception:  # the layer is gone; nothing to leave
                logger.debug("group_discard failed", exc_info=True)

    # --- incoming frames -----------------------------------------------------------------

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if self.read_only:
            await self._refuse("read_only", {})
            return
        frame, problem = parse_frame(text_data, bytes_data)
        if problem is not None:
            await self._refuse(*problem)
            return
        assert frame is not None
        text, client_id, consult = frame
        try:
            accepted = await _db(accept_message)(
                conversation=self.conversation, user_id=self.scope["user"].pk, text=text,
                client_id=client_id, consult=consult,
            )  # fmt: skip
        except MessageRefused:
            await self._refuse("invalid_characters", {})
            return
        except DatabaseError:
            logger.exception("could not store a message in conversation %s", self.conversation.pk)
            await self._refuse("unavailable", {})
            return
        await self._deliver(accepted.event)
        await self._dispatch(accepted.turn_id, accepted.message_id)

    async def _dispatch(self, turn_id: str, message_id: int) -> None:
        conversation = self.conversation
        if await _db(tasks.dispatch)(conversation.organisation_id, conversation.pk):
            return
        self.undispatched = True
        with override(self.ui_language):
            text = gettext(FRAME_ERRORS["deferred"])
        deferred = DeferredEvent(
            type="deferred", turn_id=turn_id, message_id=message_id, code="queue_unavailable",
            message=text,
        )  # fmt: skip
        logged = await _db(eventlog.publish)(
            conversation.organisation_id, conversation.pk, deferred
        )
        await self._deliver(logged)
        self._start_recovering()

    # --- outgoing events ------------------------------------------------------------------

    async def chat_event(self, message: dict[str, Any]) -> None:
        """An event published to the conversation's group (by any process)."""
        await self._deliver(message["event"])

    async def _deliver(self, event: Event) -> None:
        """Forward each logged event once, in order: an older one is dropped, a gap is filled
        from the log first."""
        seq = event.get("seq")
        if seq is None:
            await self.send(text_data=json.dumps(event, default=str))
            return
        if seq <= self.last_seq:
            return
        if seq > self.last_seq + 1:
            await self._catch_up()
            if seq <= self.last_seq:
                return
        await self._forward(event)

    async def _catch_up(self) -> None:
        for event in await _db(eventlog.events_after)(self.conversation.pk, self.last_seq):
            # Two catch-ups may overlap (the watch's and a gap's, each awaiting the log): what
            # the other one forwarded meanwhile is not sent twice.
            if int(event["seq"]) > self.last_seq:  # type: ignore[typeddict-item]
                await self._forward(event)

    async def _forward(self, event: Event) -> None:
        # Counted as sent before the send is awaited: a catch-up running meanwhile skips it.
        self.last_seq = int(event["seq"])  # type: ignore[typeddict-item]
        await self.send(text_data=json.dumps(event, default=str))
        self.last_heard = time.monotonic()
        turn_id = str(event.get("turn_id") or "")
        if not turn_id:
            return
        if event["type"] == "completed":
            self.open_turns.discard(turn_id)
        else:
            self.open_turns.add(turn_id)
            if self.watching is None or self.watching.done():
                self.watching = asyncio.create_task(self._watch())

    async def _watch(self) -> None:
        """While a turn this socket has seen is not completed, a silence reads the log."""
        while self.open_turns:
            await asyncio.sleep(WATCH_S)
            if time.monotonic() - self.last_heard < WATCH_S:
                continue
            self.last_heard = time.monotonic()
            try:
                await self._catch_up()
            except Exception:  # the database is busy: the next round tries again
                logger.debug("conversation %s: watch failed", self.conversation.pk, exc_info=True)

    async def _refuse(self, code: str, params: dict[str, object]) -> None:
        with override(self.ui_language):
            message = gettext(FRAME_ERRORS[code])
        if params:
            message = message % params
        event = ErrorEvent(type="error", turn_id="", code=code, message=message)
        await self.send(text_data=json.dumps(event))

    # --- the channel layer or the job queue is down -----------------------------------------

    # Channels sets `channel_receive` (the layer's receive for this socket's channel) in
    # `__call__` and ends the socket when it raises; the property puts a patient one in its place.
    @property
    def channel_receive(self) -> Callable[[], Awaitable[dict[str, Any]]]:
        return self._receive_from_layer

    @channel_receive.setter
    def channel_receive(self, receive: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        self._layer_receive = receive

    async def _receive_from_layer(self) -> dict[str, Any]:
        """The next group message. While the layer fails (Redis gone, or back empty: without this
        socket's group) the socket stays open, reads the log and joins the group again."""
        while True:
            try:
                return await self._layer_receive()
            except Exception as exc:
                if getattr(self, "subscribed", False):
                    logger.warning("conversation %s: live channel lost (%s)", self.group, exc)
                    self.subscribed = False
                    self._start_recovering()
                await asyncio.sleep(RECOVER_EVERY_S)

    async def _subscribe(self) -> None:
        try:
            await self.channel_layer.group_add(self.group, self.channel_name)
        except Exception as exc:  # Redis is gone: read the log until it is back
            logger.warning("conversation %s: no live channel (%s)", self.conversation.pk, exc)
            self._start_recovering()
            return
        self.subscribed = True

    def _start_recovering(self) -> None:
        if self.recovering is None or self.recovering.done():
            self.recovering = asyncio.create_task(self._recover())

    async def _recover(self) -> None:
        """Until the group and the queue work again: deliver from the log, retry both."""
        conversation = self.conversation
        while not self.subscribed or self.undispatched:
            await asyncio.sleep(RECOVER_EVERY_S)
            try:
                await self._catch_up()
                if not self.subscribed:
                    await self._subscribe()
                    await self._catch_up()
                if self.undispatched and await _db(has_queued)(conversation.pk):
                    ok = await _db(tasks.dispatch)(conversation.organisation_id, conversation.pk)
                    self.undispatched = not ok
                else:
                    self.undispatched = False
            except Exception:  # still down: the next round tries again
                logger.debug("conversation %s: still recovering", conversation.pk, exc_info=True)


# Messages the panel may show for a refused frame (translated at send time).
FRAME_ERRORS = {
    "binary": gettext_noop("Binary frames are not supported; send JSON text."),
    "malformed": gettext_noop("The message could not be read (it is not valid JSON)."),
    "unknown_type": gettext_noop("Unknown frame type: send a message with some text."),
    "empty": gettext_noop("The message is empty."),
    "too_long": gettext_noop("The message is too long (at most %(limit)s characters)."),
    "invalid_characters": gettext_noop(
        "The message has characters that cannot be saved (a NUL or broken Unicode). "
        "Remove them and send it again."
    ),
    "unavailable": gettext_noop(
        "Your message could not be saved right now. The panel sends it again by itself in a moment."
    ),
    "read_only": gettext_noop(
        "You are reading this conversation as a supervisor: you cannot write into it."
    ),
    "deferred": gettext_noop(
        "Your message is saved. The copilot will answer it as soon as the service is back."
    ),
}


FrameProblem = tuple[str, dict[str, object]]
Frame = tuple[str, str, list[str]]  # (text, client_id, agents ticked to consult)
_AGENT_NAME = re.compile(r"^[a-z0-9_-]{1,40}$")
MAX_CONSULT = 8


def parse_frame(
    text_data: str | None, bytes_data: bytes | None
) -> tuple[Frame | None, FrameProblem | None]:
    """((text, client_id, consult), None) for a good chat frame, (None, (code, params))
    otherwise. `consult` names agents the operator ticked: short names, at most MAX_CONSULT
    (an unknown name is kept: the turn says it could not consult it)."""
    limit = settings.COPILOT_MAX_MESSAGE_CHARS
    if bytes_data is not None or text_data is None:
        return None, ("binary", {})
    if len(text_data) > limit * 4 + 1024:  # refuse before parsing a huge frame
        return None, ("too_long", {"limit": limit})
    try:
        frame = json.loads(text_data)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser goes
        return None, ("malformed", {})
    if not isinstance(frame, dict) or frame.get("type", "message") != "message":
        return None, ("unknown_type", {})
    text = frame.get("text")
    if not isinstance(text, str) or not text.strip():
        return None, ("empty", {})
    if len(text) > limit:
        return None, ("too_long", {"limit": limit})
    if text_problem(text) is not None:
        return None, ("invalid_characters", {})
    client_id = frame.get("client_id", "")
    if not isinstance(client_id, str) or (client_id and not _CLIENT_ID.match(client_id)):
        return None, ("malformed", {})
    consult = frame.get("consult", [])
    if not isinstance(consult, list) or len(consult) > MAX_CONSULT:
        return None, ("malformed", {})
    if not all(isinstance(name, str) and _AGENT_NAME.match(name) for name in consult):
        return None, ("malformed", {})
    return (text.strip(), client_id, list(dict.fromkeys(consult))), None


def _ui_language(scope: dict[str, Any]) -> str:
    """The UI language from the language cookie (the panel's own language, not the message's)."""
    cookies = scope.get("cookies") or {}
    language = cookies.get(settings.LANGUAGE_COOKIE_NAME, "")
    return "en" if language.startswith("en") else "es-ar"


def _after(scope: dict[str, Any]) -> int | None:
    """The last sequence number the client saw (`?after=N`), if it said one."""
    query = parse_qs((scope.get("query_string") or b"").decode("latin-1"))
    values = query.get("after") or []
    if not values or not values[0].isdigit():
        return None
    return int(values[0])
