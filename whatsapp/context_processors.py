from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from business.models import Role
from business.roles import role_at_least
from whatsapp.alerts import unseen


def alerts(request: HttpRequest) -> dict[str, Any]:
    """The organisation's unseen WhatsApp alerts (a restricted account, a paused template), at
    the top of every page its admins open until they mark them seen in the admin."""
    membership = getattr(request, "membership", None)
    if not role_at_least(membership, Role.ADMIN):
        return {}
    return {"whatsapp_alerts": list(unseen(membership.organisation_id)[:5])}  # type: ignore[union-attr]
