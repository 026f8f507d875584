"""A suggestion's reason and proposed action in the reader's language (the active one): the
facts are stored as data, the sentence is made when it is shown."""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Any

from django.utils import formats
from django.utils.translation import gettext as _

from agents.models import Suggestion

Kind = Suggestion.Kind


def _day(value: Any) -> str:
    if not value:
        return ""
    return formats.date_format(datetime.date.fromisoformat(str(value)), "SHORT_DATE_FORMAT")


def _campaign(name: Any) -> str:
    if name == "summer_ac":
        return _("air conditioning before summer")
    return _("heating and gas before winter")


def reason(suggestion: Suggestion) -> str:
    """Why it is suggested: the data, in plain words."""
    f = {**suggestion.facts}
    for key in ("due_on", "last_service_on", "completed_on", "visited_on"):
        if key in f:
            f[key] = _day(f[key])
    if "balance" in f:
        f["balance"] = formats.number_format(Decimal(f["balance"]), 2, force_grouping=True)
    kind = suggestion.kind
    if kind == Kind.MAINTENANCE:
        if f["days_overdue"] > 0:
            return _("%(equipment)s of %(customer)s was due for service on %(due_on)s, "
                     "%(days_overdue)s days ago.") % f  # fmt: skip
        return _("%(equipment)s of %(customer)s is due for service on %(due_on)s.") % f
    if kind == Kind.FOLLOW_UP:
        return _("%(customer)s had “%(service)s” finished on %(completed_on)s "
                 "(%(days_ago)s days ago) and nobody has called them since.") % f  # fmt: skip
    if kind == Kind.SEASONAL:
        f["campaign"] = _campaign(f["campaign"])
        if f["last_service_on"]:
            return _("Campaign %(campaign)s: %(equipment)s of %(customer)s was last serviced "
                     "on %(last_service_on)s.") % f  # fmt: skip
        return _("Campaign %(campaign)s: %(equipment)s of %(customer)s was never serviced "
                 "by us.") % f  # fmt: skip
    if kind == Kind.COLLECTION:
        return _("Invoice %(invoice)s of %(customer)s is %(days_overdue)s days overdue "
                 "(due %(due_on)s) with $%(balance)s still owed.") % f  # fmt: skip
    if kind == Kind.REPLACEMENT:
        if f.get("age_years") and f["age_years"] >= 10:
            return _("%(equipment)s of %(customer)s is %(age_years)s years old; "
                     "%(repairs)s jobs of its trade in two years.") % f  # fmt: skip
        return _("%(equipment)s of %(customer)s needed %(repairs)s jobs of its trade in two "
                 "years.") % f  # fmt: skip
    if kind == Kind.QUOTE_MISSING:
        return _("%(customer)s had “%(service)s” on %(visited_on)s to get a price, and has "
                 "no quote yet.") % f  # fmt: skip
    f["campaign"] = _campaign(f.get("campaign"))
    return _("%(customer)s was served for %(campaign)s in %(last_season_year)s and has nothing "
             "booked this season.") % f  # fmt: skip


def action(suggestion: Suggestion) -> str:
    """What accepting does, in words."""
    labels = {
        "job_book": _("Book a visit"),
        "follow_up_record": _("Record the follow-up call"),
        "payment_status": _("Review the account to call about it"),
        "quote_create": _("Make a quote"),
    }
    return labels.get(suggestion.tool, suggestion.tool)


def settled(suggestion: Suggestion) -> str:
    """What happened to it, once someone acted: "Aceptada: agendar una visita para Marta Gil."."""
    what = action(suggestion)
    what = what[:1].lower() + what[1:]
    if suggestion.customer is not None:
        what = _("%(action)s for %(customer)s") % {
            "action": what, "customer": suggestion.customer.name
        }  # fmt: skip
    if suggestion.state == Suggestion.State.DISMISSED:
        said = _("Dismissed: %(what)s.") % {"what": what}
        reason = suggestion.dismiss_reason
        return f"{said} {_('Reason: %(reason)s.') % {'reason': reason}}" if reason else said
    if suggestion.state == Suggestion.State.DONE:
        return _("Accepted and done: %(what)s.") % {"what": what}
    if suggestion.state == Suggestion.State.EXPIRED:
        return _("No longer needed: %(what)s.") % {"what": what}
    return _("Accepted: %(what)s. It runs in a conversation of its own.") % {"what": what}
