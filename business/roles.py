"""Role checks in one place: what each role may do.

Roles are ordered — a manager can do what an operator can, an admin what a manager can.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar, cast

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

from business.models import Membership, Role

RANK = {Role.OPERATOR: 1, Role.MANAGER: 2, Role.ADMIN: 3}

# Each permission names the lowest role that holds it.
PERMISSIONS: dict[str, Role] = {
    "chat": Role.OPERATOR,
    "view_records": Role.OPERATOR,
    "edit_records": Role.OPERATOR,
    "decide_approvals": Role.MANAGER,
    "edit_profiles": Role.MANAGER,  # correct or clear what the copilot learnt of a customer
    "supervise_conversations": Role.MANAGER,
    "view_metrics": Role.MANAGER,
    "edit_agents": Role.ADMIN,
    "run_evaluations": Role.ADMIN,
    "manage_members": Role.ADMIN,
}


def role_at_least(membership: Membership | None, role: Role) -> bool:
    if membership is None:
        return False
    return RANK[Role(membership.role)] >= RANK[role]


def outranks(reader: Membership | None, owner: Membership | None) -> bool:
    """Whether `reader` ranks above `owner` in their organisation (no membership ranks lowest:
    someone who left, or nobody)."""
    if reader is None:
        return False
    owner_rank = RANK[Role(owner.role)] if owner is not None else 0
    return RANK[Role(reader.role)] > owner_rank


def can(membership: Membership | None, permission: str) -> bool:
    return role_at_least(membership, PERMISSIONS[permission])


def require(membership: Membership | None, permission: str) -> None:
    if not can(membership, permission):
        raise PermissionDenied(permission)


ViewFunc = TypeVar("ViewFunc", bound=Callable[..., "HttpResponse"])


def permission_required(permission: str) -> Callable[[ViewFunc], ViewFunc]:
    """View decorator: a logged-in member of the current organisation holding `permission`."""

    def decorator(view: ViewFunc) -> ViewFunc:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            require(getattr(request, "membership", None), permission)
            return view(request, *args, **kwargs)

        return cast(ViewFunc, wrapped)

    return decorator
