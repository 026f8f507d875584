"""Reads of the pending actions, always scoped to one organisation."""

from __future__ import annotations

from django.db.models import QuerySet

from approvals.models import PendingAction
from business.models import Organisation


def pending_actions_for_org(
    organisation: Organisation, status: str = ""
) -> QuerySet[PendingAction]:
    actions = PendingAction.objects.filter(organisation=organisation).select_related(
        "requested_by", "decided_by"
    )
    return actions.filter(status=status) if status else actions
