"""Reads of the held actions, always scoped to one organisation."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.urls import NoReverseMatch, reverse
from django.utils.translation import pgettext_lazy

from approvals.models import PendingAction
from business.models import Organisation

Status = PendingAction.Status

# The queue's tabs: a label (every one agrees with "acciones") and the statuses it shows.
STATE_FILTERS: dict[str, tuple[Any, tuple[str, ...]]] = {
    "pending": (pgettext_lazy("held actions", "Waiting"), (Status.PENDING,)),
    "approved": (
        pgettext_lazy("held actions", "Approved"),
        (Status.APPROVED, Status.EXECUTING, Status.EXECUTED, Status.FAILED, Status.STALE),
    ),
    "rejected": (pgettext_lazy("held actions", "Rejected"), (Status.REJECTED,)),
    "expired": (pgettext_lazy("held actions", "Expired"), (Status.EXPIRED,)),
    "all": (pgettext_lazy("held actions", "All"), ()),
}

# Where a record a held action relies on is shown (the kinds the tools' previews name).
_RECORD_PAGES = {"job": "job_detail", "customer": "customer_detail", "invoice": "invoice_detail",
                 "quote": "quote_detail"}  # fmt: skip


def actions_for_org(organisation: Organisation, state: str = "pending") -> QuerySet[PendingAction]:
    actions = PendingAction.objects.filter(organisation=organisation).select_related(
        "requested_by", "decided_by"
    )
    _label, statuses = STATE_FILTERS.get(state, STATE_FILTERS["pending"])
    return actions.filter(status__in=statuses) if statuses else actions


def action_for_org(organisation: Organisation, action_id: int) -> PendingAction | None:
    return (
        PendingAction.objects.filter(organisation=organisation, pk=action_id)
        .select_related("requested_by", "decided_by")
        .first()
    )


def record_links(links: Any) -> list[dict[str, Any]]:
    """The action's records as {label, url} (url "" when the kind has no page); malformed
    entries are left out, never an error."""
    shown: list[dict[str, Any]] = []
    for link in links if isinstance(links, list) else []:
        if not isinstance(link, dict):
            continue
        kind, record_id, label = link.get("kind"), link.get("id"), link.get("label")
        url = ""
        if kind in _RECORD_PAGES and isinstance(record_id, int):
            try:
                url = reverse(_RECORD_PAGES[str(kind)], args=[record_id])
            except NoReverseMatch:
                url = ""
        shown.append({"kind": str(kind or ""), "label": str(label or record_id or ""), "url": url})
    return shown
