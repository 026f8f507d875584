"""Read-only sockets of one organisation's group (the plumbing is `common/sockets.py`).

A subclass names its permission (`business/roles.py`; "" for any member), its group and what it
sends on connect and on each group message. The socket joins the group of the organisation the
session works in (as the pages do, `business/middleware.py`).
"""

from __future__ import annotations

from typing import Any

from business.roles import can
from business.selectors import membership_for_user
from common.sockets import GroupConsumer


def organisation_for(user: Any, org_slug: str | None, permission: str) -> int | None:
    """The organisation whose group this user may join, or None."""
    membership = membership_for_user(user, org_slug)
    if membership is None or (permission and not can(membership, permission)):
        return None
    return membership.organisation_id


class OrganisationGroupConsumer(GroupConsumer):
    permission = ""
    organisation_id = 0

    def group_for(self, organisation_id: int) -> str:
        raise NotImplementedError

    def admit(self, user: Any, session: Any) -> str | None:
        org_slug = session.get("org_slug") if session is not None else None
        organisation_id = organisation_for(user, org_slug, self.permission)
        if organisation_id is None:
            return None
        self.organisation_id = organisation_id
        return self.group_for(organisation_id)
