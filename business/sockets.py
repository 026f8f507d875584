"""Read-only sockets of one organisation's group: the live approvals count, the suggestions count.

A subclass names its permission (`business/roles.py`; "" for any member), its group and what it
sends on connect and on each group message. The socket joins the group of the organisation the
session works in (as the pages do, `business/middleware.py`), closes with 4401 for a visitor and
4403 for someone without the permission there, and takes no frames: those pages act through
forms. Without a channel layer it still accepts and sends its first frame; the page polls.
"""

from __future__ import annotations

import logging
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from business.roles import can
from business.selectors import membership_for_user

logger = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403


def organisation_for(user: Any, org_slug: str | None, permission: str) -> int | None:
    """The organisation whose group this user may join, or None."""
    membership = membership_for_user(user, org_slug)
    if membership is None or (permission and not can(membership, permission)):
        return None
    return membership.organisation_id


class OrganisationGroupConsumer(AsyncWebsocketConsumer):
    permission = ""
    group = ""
    organisation_id = 0

    def group_for(self, organisation_id: int) -> str:
        raise NotImplementedError

    async def hello(self) -> None:
        """The first frame, sent once the socket is accepted."""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        session = self.scope.get("session")
        org_slug = session.get("org_slug") if session is not None else None
        organisation_id = await database_sync_to_async(organisation_for)(
            user, org_slug, self.permission
        )
        if organisation_id is None:
            await self.close(code=CLOSE_FORBIDDEN)
            return
        self.organisation_id = organisation_id
        self.group = self.group_for(organisation_id)
        try:
            await self.channel_layer.group_add(self.group, self.channel_name)
        except Exception as exc:  # no live channel: the page still works, by polling or reloading
            logger.warning("%s: no live channel (%s)", self.group, exc)
            self.group = ""
        await self.accept()
        await self.hello()

    async def disconnect(self, code: int) -> None:
        if self.group:
            try:
                await self.channel_layer.group_discard(self.group, self.channel_name)
            except Exception:
                logger.debug("group_discard failed", exc_info=True)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Frames are not commands here: the page's forms act."""
