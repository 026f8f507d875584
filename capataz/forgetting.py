"""The right to be forgotten, everywhere: the customer's record and every row that names them.

`customer_forget` blanks the customer's record (business.services.customer_blank: the jobs,
invoices and payments stay, no longer saying who; the profile is deleted), then replaces what
identified them — name, phones, email, CUIT, street addresses — with a neutral placeholder in
every free-text or JSON column of every table that belongs to the organisation (messages and
their traces, tool calls, model calls, held actions, the event log, summaries, suggestions,
evaluation cases, notes…), found through the app registry so a table added later is covered
too. The sealed trace is rewritten the same way and the rewrite recorded in the chain
(copilot/ledger.py: `redact_seals`), so `verify_trace` says who redacted what, and when.

It sits in the configuration package because it reaches every floor: the records at the bottom
must not import the trace ledger above them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.apps import apps
from django.contrib.admin.models import LogEntry
from django.db import models, transaction
from django.utils import timezone

from business.models import Address, Customer, Organisation
from business.services import Actor, customer_blank
from common.text import strip_accents
from copilot.ledger import redact_seals
from copilot.models import TraceSeal

PLACEHOLDER = "[cliente olvidado]"

# Columns that never hold prose: identifiers, hashes and ciphertexts (a phone's digits could
# turn up inside one by chance).
_SKIPPED_SUFFIXES = ("_id", "_encrypted", "digest", "sha256", "hash", "password")
_SEP = r"[\s\-.()]*"  # what people put between a phone's digits
# Other customers' own identity is theirs, even when they share a data point with this one (one
# administrator's email for several buildings): their records are not rewritten.
_OTHERS_IDENTITY = {
    Customer: {"name", "cuit", "phone", "phone_alt", "email"},
    Address: {"street", "unit", "city", "zone"},
}
_VOWELS = {"a": "aáàäâ", "e": "eéèëê", "i": "iíìïî", "o": "oóòöô", "u": "uúùüû", "n": "nñ"}


@dataclass(frozen=True)
class Forgotten:
    customer: Customer
    rows: dict[str, int]  # table label → rows redacted
    redaction: TraceSeal | None  # the chain's record of the seals rewritten


def customer_forget(
    *, organisation: Organisation, customer: Customer, actor: Actor = None
) -> Forgotten:
    """Forget the customer: their record blanked, and their personal data redacted in every
    row of the organisation that holds it (and in the sealed trace, with a redaction record).
    Another organisation's rows are never read."""
    pattern = personal_data_pattern(customer)
    with transaction.atomic():
        customer_blank(organisation=organisation, customer=customer)
        rows = redact_rows(organisation, pattern) if pattern else {}
        entry = None
        if pattern:
            entry = redact_seals(
                organisation.pk, lambda value: redact(value, pattern),
                by=_who(actor), at=timezone.now(),
            )  # fmt: skip
    return Forgotten(customer, rows, entry)


def _who(actor: Actor) -> str:
    return actor.get_username() if actor is not None else "system"


# --- what identifies the customer -----------------------------------------------------------


def personal_data_pattern(customer: Customer) -> re.Pattern[str] | None:
    """One pattern for every spelling of what the record holds: the name and streets with or
    without accents and in any case, phones and CUIT with any separators, the email."""
    streets = Address.objects.filter(customer=customer).values_list("street", flat=True)
    parts = [_words(customer.name), *(_words(street) for street in streets)]
    parts += [_phone(customer.phone), _phone(customer.phone_alt), _digits(customer.cuit)]
    if customer.email.strip():
        parts.append(re.escape(customer.email.strip()))
    wanted = sorted({p for p in parts if p}, key=len, reverse=True)
    if not wanted:
        return None
    return re.compile("|".join(f"(?:{p})" for p in wanted), re.IGNORECASE)


def _words(text: str) -> str:
    """A name or street matched whole, accents and case aside ("Gomez" finds "Gómez")."""
    words = (text or "").split()
    if len("".join(words)) < 3:  # "—" or an initial would redact half the organisation
        return ""
    return r"(?<!\w)" + r"\s+".join("".join(map(_letter, w)) for w in words) + r"(?!\w)"


def _letter(ch: str) -> str:
    # Accents stripped before lowering, not `fold` (casefold first): "ᴬ" or "𝐀" would stay
    # upper case there, and the pattern must keep matching every letter it matched before.
    base = strip_accents(ch)[:1].lower()
    return f"[{_VOWELS[base]}]" if base in _VOWELS else re.escape(ch)


def _phone(stored: str) -> str:
    """An E.164 number as people write it: "+54 9 11 5555-0000", "011 5555 0000",
    "1155550000", or the local eight digits alone."""
    digits = re.sub(r"\D", "", stored or "")
    if len(digits) < 8:
        return ""
    if not digits.startswith("54"):
        return _digits(digits)
    national = digits[2:].removeprefix("9")
    prefix = rf"(?:\+?\s*54{_SEP})?(?:9{_SEP})?(?:0{_SEP})?"
    whole = rf"(?<![\d+]){prefix}{_SEP.join(national)}(?!\d)"
    return f"{whole}|{_digits(national[-8:])}"


def _digits(value: str) -> str:
    digits = re.sub(r"\D", "", value or "")
    return rf"(?<!\d){_SEP.join(digits)}(?!\d)" if len(digits) >= 8 else ""


def redact(value: Any, pattern: re.Pattern[str]) -> Any:
    """The value with every match replaced, through lists and dicts (keys too)."""
    if isinstance(value, str):
        return pattern.sub(PLACEHOLDER, value)
    if isinstance(value, list):
        return [redact(item, pattern) for item in value]
    if isinstance(value, dict):
        return {redact(k, pattern): redact(v, pattern) for k, v in value.items()}
    return value


# --- where it is written --------------------------------------------------------------------


def redact_rows(organisation: Organisation, pattern: re.Pattern[str]) -> dict[str, int]:
    """Every organisation-owned row whose prose or JSON matches, rewritten in place (update():
    no save(), so no timestamp moves and the sealed rows still read as the seal says)."""
    counts: dict[str, int] = {}
    for model, rows, fields in _owned_columns(organisation):
        for row in rows.only("pk", *fields).iterator(chunk_size=500):
            changes = _changes(row, fields, pattern)
            if changes:
                model._default_manager.filter(pk=row.pk).update(**changes)
                counts[model._meta.label] = counts.get(model._meta.label, 0) + 1
    logged = _redact_log_entries(organisation, pattern)
    if logged:
        counts[LogEntry._meta.label] = logged
    return counts


def _changes(row: models.Model, fields: list[str], pattern: re.Pattern[str]) -> dict[str, Any]:
    changes = {}
    for name in fields:
        value = getattr(row, name)
        redacted = redact(value, pattern)
        if redacted != value:
            changes[name] = redacted
    return changes


def _owned_columns(
    organisation: Organisation,
) -> Iterator[tuple[type[models.Model], models.QuerySet[Any], list[str]]]:
    """(model, the organisation's rows, their text and JSON columns) for every table that
    belongs to an organisation directly or through its parent (a quote's lines)."""
    for model in apps.get_models():
        if model is TraceSeal:  # rewritten by the ledger, which records it
            continue
        scope = _organisation_path(model)
        kept = _OTHERS_IDENTITY.get(model, set())
        fields = [
            f.name for f in model._meta.concrete_fields if _is_prose(f) and f.name not in kept
        ]
        if scope is None or not fields:
            continue
        yield model, model._default_manager.filter(**{scope: organisation}), fields


def _organisation_path(model: type[models.Model]) -> str | None:
    names = {f.name: f for f in model._meta.concrete_fields}
    if "organisation" in names:
        return "organisation"
    for field in names.values():
        parent = field.related_model if field.many_to_one else None
        if isinstance(parent, type) and any(
            f.name == "organisation" for f in parent._meta.concrete_fields
        ):
            return f"{field.name}__organisation"
    return None


def _is_prose(field: models.Field[Any, Any]) -> bool:
    if field.primary_key or field.name.endswith(_SKIPPED_SUFFIXES):
        return False
    if isinstance(field, models.JSONField | models.TextField):
        return True
    return isinstance(field, models.CharField) and not field.choices


def _redact_log_entries(organisation: Organisation, pattern: re.Pattern[str]) -> int:
    """The admin's history names what it changed (`object_repr`); it belongs to no
    organisation, so an entry is redacted only when the object it names is this one's."""
    count = 0
    for entry in LogEntry.objects.select_related("content_type").iterator(chunk_size=500):
        repr_, message = redact(entry.object_repr, pattern), redact(entry.change_message, pattern)
        if (repr_, message) == (entry.object_repr, entry.change_message):
            continue
        if _logged_object_is_ours(entry, organisation):
            LogEntry.objects.filter(pk=entry.pk).update(object_repr=repr_, change_message=message)
            count += 1
    return count


def _logged_object_is_ours(entry: LogEntry, organisation: Organisation) -> bool:
    model = entry.content_type.model_class() if entry.content_type else None
    scope = _organisation_path(model) if model is not None else None
    if model is None or scope is None or not (entry.object_id or "").isdigit():
        return False  # a platform object, or one since deleted: whose it was is unknown
    return model._default_manager.filter(pk=entry.object_id, **{scope: organisation}).exists()
