from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from approvals.live import pending_count
from business.roles import can


def approvals(request: HttpRequest) -> dict[str, Any]:
    """The sidebar's count of actions waiting for a decision, for those who decide them."""
    membership = getattr(request, "membership", None)
    if not can(membership, "decide_approvals"):
        return {}
    return {"pending_approvals": pending_count(membership.organisation_id)}  # type: ignore[union-attr]
