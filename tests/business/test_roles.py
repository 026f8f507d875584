"""Roles are ordered: operator < manager < admin; each permission names the lowest role."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied

from business.models import Membership, Role
from business.roles import PERMISSIONS, can, outranks, require, role_at_least

pytestmark = [pytest.mark.django_db]

EXPECTED = {
    "chat": {"operator", "manager", "admin"},
    "view_records": {"operator", "manager", "admin"},
    "edit_records": {"operator", "manager", "admin"},
    "decide_approvals": {"manager", "admin"},
    "edit_profiles": {"manager", "admin"},
    "supervise_conversations": {"manager", "admin"},
    "view_metrics": {"manager", "admin"},
    "edit_agents": {"admin"},
    "run_evaluations": {"admin"},
    "manage_members": {"admin"},
}


def test_every_permission_is_covered_here() -> None:
    assert set(PERMISSIONS) == set(EXPECTED)


@pytest.mark.parametrize("permission", sorted(EXPECTED))
def test_can_for_each_role(cast, permission: str) -> None:
    for user in (cast.operator, cast.manager, cast.admin):
        membership = Membership.objects.get(user=user, organisation=cast.org)
        allowed = membership.role in EXPECTED[permission]
        assert can(membership, permission) is allowed
        if allowed:
            require(membership, permission)
        else:
            with pytest.raises(PermissionDenied):
                require(membership, permission)


def test_no_membership_can_do_nothing() -> None:
    assert not any(can(None, permission) for permission in PERMISSIONS)
    assert not role_at_least(None, Role.OPERATOR)
    with pytest.raises(PermissionDenied):
        require(None, "chat")


def test_the_outsider_holds_no_role_in_the_organisation(cast) -> None:
    assert not Membership.objects.filter(user=cast.outsider, organisation=cast.org).exists()


def test_role_order(cast) -> None:
    manager = Membership.objects.get(user=cast.manager)
    assert role_at_least(manager, Role.OPERATOR)
    assert role_at_least(manager, Role.MANAGER)
    assert not role_at_least(manager, Role.ADMIN)


def test_outranks_orders_roles_and_ranks_no_membership_lowest(cast) -> None:
    operator, manager, admin = (
        Membership.objects.get(user=user, organisation=cast.org)
        for user in (cast.operator, cast.manager, cast.admin)
    )
    assert outranks(admin, manager) and outranks(manager, operator) and outranks(operator, None)
    assert not outranks(manager, admin) and not outranks(manager, manager)
    assert not outranks(None, None)
