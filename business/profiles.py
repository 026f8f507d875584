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
from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

from django.db import transaction
from django.utils import timezone

from business.models import Customer, CustomerProfile, Organisation
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
    The field's source is the manager, so later extraction leaves it alone."""
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
