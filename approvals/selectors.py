"""Reads of the held actions, always scoped to one organisation."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.urls import NoReverseMatch, reverse
from django.utils.dateparse import parse_datetime
from django.utils.formats import date_format
from django.utils.timezone import localtime
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from approvals.models import PendingAction
from business.models import Job, Organisation

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


# How the snapshot's records and fields read on the detail page.
_RECORD_TITLES = {
    "job": _("Job"), "jobs": _("Jobs"), "customer": _("Customer"), "technician": _("Technician"),
    "invoice": _("Invoice"), "lines": _("Lines"),
}  # fmt: skip
_FIELD_LABELS = {
    "id": _("Number"), "status": _("Status"), "start": _("Start"), "end": _("End"),
    "technician_id": _("Technician (number)"), "customer_id": _("Customer (number)"),
    "active": _("Active"), "name": _("Name"), "total": _("Total"), "moves": _("Jobs to move"),
    "not_moved": _("Jobs that stay"), "affected_jobs": _("Affected jobs"),
}  # fmt: skip


def snapshot_view(snapshot: Any) -> list[dict[str, Any]]:
    """The records a held action relies on as titled lists of (label, value) — never raw JSON;
    whatever shape the snapshot has, it renders."""
    if not isinstance(snapshot, dict):
        return []
    shown: list[dict[str, Any]] = []
    for kind, value in snapshot.items():
        title = _RECORD_TITLES.get(str(kind), str(kind).replace("_", " ").capitalize())
        records = value if isinstance(value, list) else [value]
        for record in records:
            if isinstance(record, dict):
                fields = [
                    (_FIELD_LABELS.get(str(k), str(k).replace("_", " ")), _readable(v, str(k)))
                    for k, v in record.items()
                ]
            else:
                fields = [("", _readable(record))]
            shown.append({"title": title, "fields": fields})
    return shown


def _readable(value: Any, key: str = "") -> str:
    if value is None or value == "":
        return "—"
    if key == "status" and value in Job.Status.values:
        return str(Job.Status(value).label)
    if isinstance(value, bool):
        return str(_("yes") if value else _("no"))
    if isinstance(value, str) and (moment := _moment(value)) is not None:
        return moment
    if isinstance(value, list):
        return ", ".join(_readable(item) for item in value) or "—"
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_readable(v)}" for k, v in value.items())
    return str(value)


def _moment(text: str) -> str | None:
    try:
        parsed = parse_datetime(text)
    except ValueError:
        return None
    if parsed is None:
        return None
    return date_format(localtime(parsed) if parsed.tzinfo else parsed, "SHORT_DATETIME_FORMAT")
