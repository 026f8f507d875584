"""Small template helpers for the record pages: money, skills, working days, navigation."""

from __future__ import annotations

import json
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation

from django import template
from django.template.context import Context
from django.utils import formats, timezone
from django.utils.dateparse import parse_datetime
from django.utils.dates import WEEKDAYS_ABBR
from django.utils.translation import gettext_lazy as _

from business.models import Address, Job, JobEvent, Organisation, Skill, choice_label, money
from business.validators import format_phone

register = template.Library()


@register.filter
def ars(value: Decimal | int | float | str | None) -> str:
    """Pesos the Argentine way, `$ 1.234.567,89`, in both UI languages (the currency is ARS)."""
    if value is None or value == "":
        return ""
    try:
        amount = money(Decimal(str(value)))
    except InvalidOperation:
        return str(value)
    whole, _dot, cents = f"{abs(amount):.2f}".partition(".")
    grouped = f"{int(whole):,}".replace(",", ".")
    sign = "-" if amount < 0 else ""
    return f"{sign}$ {grouped},{cents}"


@register.filter
def pretty_json(value: object) -> str:
    """A stored JSON value, indented for reading (keys sorted, non-ASCII kept)."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


@register.filter
def skill_labels(codes: Iterable[str] | None) -> str:
    """Trade codes stored on a technician (["ac", "gas"]) as translated labels."""
    labels = {code: str(label) for code, label in Skill.choices}
    return ", ".join(labels.get(code, code) for code in codes or [])


@register.filter
def weekday_names(days: Iterable[int] | None) -> str:
    """Working days stored as 0=Monday … 6=Sunday, as translated short names."""
    return ", ".join(str(WEEKDAYS_ABBR[day]) for day in sorted(days or []) if day in WEEKDAYS_ABBR)


@register.simple_tag(takes_context=True)
def nav_active(context: Context, prefix: str) -> str:
    """`is-active` when the current page lives under `prefix` ("/" matches only the home page)."""
    request = context.get("request")
    if request is None:
        return ""
    active = request.path == "/" if prefix == "/" else request.path.startswith(prefix)
    return "is-active" if active else ""


# Labels for the keys services write into JobEvent.data; unknown keys show as written.
EVENT_KEYS = {
    "service": _("Service"),
    "start": _("Starts"),
    "end": _("Ends"),
    "technician": _("Technician"),
    "plate": _("Vehicle"),
    "vehicle": _("Vehicle"),
    "reason": _("Reason"),
    "customer": _("Customer"),
}


def _readable(value: object) -> str:
    if isinstance(value, str):
        moment = parse_datetime(value)
        if moment is not None and timezone.is_aware(moment):
            return formats.date_format(timezone.localtime(moment), "SHORT_DATETIME_FORMAT")
        if value in Job.Status.values:
            return str(Job.Status(value).label)
    return str(value)


@register.filter
def event_lines(event: JobEvent) -> list[str]:
    """A job event's data as short readable lines: "from → to", or "label: value" pairs."""
    data = event.data if isinstance(event.data, dict) else {}
    if "from" in data and "to" in data:
        return [f"{_readable(data['from'])} → {_readable(data['to'])}"]
    return [
        f"{EVENT_KEYS.get(key, key.replace('_', ' '))}: {_readable(value)}"
        for key, value in data.items()
        if not key.endswith("_id") and value not in (None, "")
    ]


@register.filter
def phone(value: str | None) -> str:
    """A stored phone (E.164) the one way the site shows it: "+54 11 4567-8901"."""
    return format_phone(value or "")


@register.filter
def address_line(address: Address | None) -> str:
    """An address the one way the site shows it (Address.__str__: no "CABA (CABA)")."""
    return str(address) if address is not None else ""


@register.filter
def engine_words(code: object) -> str:
    """An engine as the organisation's settings name it ("Integrado (sin conexión)"); a code
    that is not one of them as it is."""
    return choice_label(Organisation.Engine, str(code or ""))
