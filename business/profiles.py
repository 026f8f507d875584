"""Writes and reads of customer profiles (P3), apart from business/services.py (already ~1,200
lines) but by its conventions: keyword-only `<entity>_<verb>`, one transaction, scoped to the
organisation.

A profile field is `{"value": str, "sources": [str, …], "at": ISO date-time}`. Sources name the
evidence: `message:<id>` (what was said in a conversation), `job:<id>`, `invoice:<id>`,
`ticket:<id>`, `equipment:<id>`, `address:<id>`, `customer:<id>`, `conversation:<id>`, or
`manager:<user id>` for a field a manager wrote — extraction never overwrites that one.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from business.models import Customer, CustomerProfile, Organisation
from business.scheduling import fold_words  # a manager may write "miércoles" or "miercoles"
from business.services import Actor

MANAGER = "manager:"
VALUE_CHARS = 200  # one field's value at most: a profile is read by every turn about its customer
SOURCES_KEPT = 8


class ProfileField(TypedDict):
    value: str
    sources: list[str]
    at: str


def profile_field(value: str, sources: Iterable[str], at: datetime.datetime) -> ProfileField:
    """One field, bounded: its value, its distinct sources (the first few) and its date."""
    unique = list(dict.fromkeys(s for s in sources if s))[:SOURCES_KEPT]
    return ProfileField(
        value=" ".join(str(value).split())[:VALUE_CHARS], sources=unique, at=at.isoformat()
    )


def by_manager(item: Any) -> bool:
    return isinstance(item, dict) and any(
        str(source).startswith(MANAGER) for source in item.get("sources", [])
    )


def customer_profile_fields(organisation_id: int, customer_id: int) -> dict[str, Any]:
    """The customer's profile fields ({} without one); never another organisation's."""
    fields = (
        CustomerProfile.objects.filter(organisation_id=organisation_id, customer_id=customer_id)
        .values_list("fields", flat=True)
        .first()
    )
    return dict(fields or {})


def _locked_profile(organisation: Organisation, customer_id: int) -> CustomerProfile | None:
    customer = Customer.objects.filter(organisation=organisation, pk=customer_id).first()
    if customer is None:
        return None
    CustomerProfile.objects.get_or_create(organisation=organisation, customer=customer)
    return CustomerProfile.objects.select_for_update().get(customer=customer)


def customer_profile_learn(
    *,
    organisation: Organisation,
    customer_id: int,
    fields: Mapping[str, ProfileField],
    extracted: bool = False,
) -> CustomerProfile | None:
    """Learnt fields over the stored ones (a manager's fields stay as they are). None when the
    customer is not the organisation's (or no longer exists): nothing is written."""
    with transaction.atomic():
        profile = _locked_profile(organisation, customer_id)
        if profile is None:
            return None
        merged = dict(profile.fields)
        for name, item in fields.items():
            if name in CustomerProfile.FIELDS and not by_manager(merged.get(name)):
                merged[name] = dict(item)
        now = timezone.now()
        changes: dict[str, Any] = {}
        if merged != profile.fields:
            changes.update(fields=merged, updated_at=now)
        if extracted:
            changes["extracted_at"] = now
        if changes:
            CustomerProfile.objects.filter(pk=profile.pk).update(**changes)
            for key, value in changes.items():
                setattr(profile, key, value)
    return profile


def customer_profile_edit(
    *, organisation: Organisation, customer: Customer, values: Mapping[str, str], actor: Actor
) -> CustomerProfile | None:
    """A manager's corrections: each given field set to its text (an empty text removes it).
    The field's source is the manager, so later extraction leaves it alone — only the fields
    whose text changed: the form sends every field back, the ones left as shown stay learnt."""
    if customer.organisation_id != organisation.pk:
        return None
    author = f"{MANAGER}{actor.pk if actor is not None else ''}"
    now = timezone.now()
    with transaction.atomic():
        profile = _locked_profile(organisation, customer.pk)
        if profile is None:
            return None
        merged = dict(profile.fields)
        for name, text in values.items():
            if name not in CustomerProfile.FIELDS:
                continue
            stored = merged.get(name)
            if isinstance(stored, dict) and str(stored.get("value", "")) == text.strip():
                continue  # sent back as it was shown: still learnt, not the manager's
            if text.strip():
                merged[name] = dict(profile_field(text, [author], now))
            else:
                merged.pop(name, None)
        CustomerProfile.objects.filter(pk=profile.pk).update(fields=merged, updated_at=now)
        profile.fields, profile.updated_at = merged, now
    return profile


def customer_profile_clear(*, organisation: Organisation, customer_id: int) -> bool:
    """Delete what was learnt of the customer; True when there was a profile."""
    deleted, _ = CustomerProfile.objects.filter(
        organisation=organisation, customer_id=customer_id
    ).delete()
    return deleted > 0


DAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
PARTS_OF_DAY = ("morning", "afternoon", "evening")
_CLOCK = re.compile(r"\b([01]?\d|2[0-3]):([0-5]\d)\b")


@dataclass(frozen=True)
class UsualSlot:
    """When a customer usually wants their visits, read from their profile (P4)."""

    weekdays: tuple[int, ...]  # 0 = Monday; () when only the time is known
    part_of_day: str  # morning / afternoon / evening, or ""
    clock: datetime.time | None  # their usual start, when one stands out

    def next_day(self, after: datetime.date) -> datetime.date | None:
        """The first of their days strictly after `after` (None without days)."""
        ahead = [(weekday - after.weekday() - 1) % 7 + 1 for weekday in self.weekdays]
        return after + datetime.timedelta(days=min(ahead)) if ahead else None


def usual_slot(fields: Mapping[str, Any]) -> UsualSlot | None:
    """The preferred days and time of a profile (learnt or a manager's words: "martes",
    "tuesday, thursday", "morning 09:00", "a la mañana"); None when it says neither."""
    days_text = _value(fields.get("preferred_days")).casefold()
    time_text = _value(fields.get("preferred_time")).casefold()
    weekdays = tuple(
        index
        for index, (en, es) in enumerate(zip(DAY_NAMES, _DAYS_ES, strict=True))
        if en in days_text or es in fold_words(days_text)
    )
    part = next((p for p in PARTS_OF_DAY if p in time_text), "")
    part = part or next((p for p, es in _PARTS_ES.items() if es in fold_words(time_text)), "")
    match = _CLOCK.search(time_text)
    clock = datetime.time(int(match[1]), int(match[2])) if match else None
    if not weekdays and not part and clock is None:
        return None
    return UsualSlot(weekdays=weekdays, part_of_day=part, clock=clock)


_DAYS_ES = ("lunes", "martes", "miercoles", "jueves", "viernes", "sabado", "domingo")
_PARTS_ES = {"morning": "manana", "afternoon": "tarde", "evening": "noche"}


def _value(item: Any) -> str:
    return str(item.get("value", "")) if isinstance(item, dict) else ""


@dataclass(frozen=True)
class ProfileRow:
    """One field of a profile as the customer page shows it."""

    name: str
    label: str
    value: str
    sources: list[str]
    at: datetime.datetime | None
    by_manager: bool


def profile_rows(fields: Mapping[str, Any], labels: Mapping[str, Any]) -> list[ProfileRow]:
    rows = []
    for name in CustomerProfile.FIELDS:
        item = fields.get(name)
        if not isinstance(item, dict) or not item.get("value"):
            continue
        try:
            at = datetime.datetime.fromisoformat(str(item.get("at", "")))
        except ValueError:
            at = None
        rows.append(
            ProfileRow(
                name=name,
                label=str(labels.get(name, name)),
                value=display_value(name, str(item["value"])),
                sources=[str(s) for s in item.get("sources", [])],
                at=at,
                by_manager=by_manager(item),
            )  # fmt: skip
        )
    return rows


_PAYMENT = re.compile(r"pays (late|on time) \((\d+) of (\d+) invoices")


def display_value(name: str, value: str) -> str:
    """A learnt value in the reader's language: the extraction stores language-neutral words
    ("tuesday", "morning 09:00", "pays late (2 of 3 …)"); a manager's own words pass as they are."""
    words = {
        "morning": gettext("morning"), "afternoon": gettext("afternoon"),
        "evening": gettext("evening"), "brief": gettext("brief"), "detailed": gettext("detailed"),
        "phone": gettext("phone"), "email": gettext("email"), "whatsapp": "WhatsApp",
        **{day: gettext(day.capitalize()) for day in DAY_NAMES},  # Django's own catalogue
    }  # fmt: skip
    if name == "payment" and (match := _PAYMENT.match(value)):
        late, count, total = match[1] == "late", match[2], match[3]
        if late:
            return gettext("pays late (%(late)s of %(total)s invoices late or unpaid)") % {
                "late": count, "total": total,
            }  # fmt: skip
        return gettext("pays on time (%(total)s invoices)") % {"total": total}
    if name in ("preferred_days", "preferred_time", "brevity", "channel"):
        return re.sub(r"[a-z]+", lambda m: words.get(m[0], m[0]), value)
    return value
