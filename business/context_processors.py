from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from business.roles import can


def organisation(request: HttpRequest) -> dict[str, Any]:
    membership = getattr(request, "membership", None)
    return {
        "membership": membership,
        "organisation": getattr(request, "organisation", None),
        "can_decide": can(membership, "decide_approvals"),
        "can_edit_agents": can(membership, "edit_agents"),
    }
