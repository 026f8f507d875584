"""Customer profiles (P3): what the copilot learns of a customer, in two tiers.

- **Per message** (`learn_from_message`, every turn): when the customer writes themselves (a
  WhatsApp conversation), the message's language and register (voseo / usted / tuteo) update the
  profile at once — cheap signals, no model.
- **At farewell and when a conversation goes idle** (`extract_for_conversation`, a Celery task:
  copilot/memory_tasks.py): the fuller extraction for every customer the conversation was
  about, from what was said and from the records — preferred days and time (their jobs, and
  what someone said they prefer), contact channel, language, register and brevity, equipment and
  address notes, payment behaviour (invoices against payments), sensitivities (complaints).

Extraction is deterministic here; on the llm engine a model may refine the fields it is given
(copilot/profile_model.py), bounded, falling back to these on any fault. Every field names its
sources (`message:<id>`, `job:<id>`, …) and its date (business/profiles.py).
"""

from __future__ import annotations

import datetime
from collections import Counter, defaultdict
from collections.abc import Mapping
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

from django.db.models import F, Prefetch, Q
from django.utils import timezone

from agents.base import CUSTOMER_ID
from business.models import (
    Customer,
    Equipment,
    EscalationTicket,
    Invoice,
    Job,
)
from business.profiles import DAY_NAMES, ProfileField, customer_profile_learn, profile_field
from business.scheduling import day_part_of
from common.text import fold
from copilot import profile_model
from copilot.models import Conversation, Message
from copilot.orchestration.memory import RECORDS
from nlu.normalize import words
from nlu.style import read_brevity, read_register, stated_preference

JOBS_READ = 30  # the customer's latest jobs the preferred days and times are read from
MESSAGES_READ = 200  # the conversation's latest messages read by an extraction
MIN_EVIDENCE = 2  # a day or a time is "preferred" only with at least two pieces of evidence
STATED_WEIGHT = 2  # someone saying so counts as much as two jobs
IDLE_MINUTES = 30
IDLE_LOOKBACK_DAYS = 7  # older idle conversations are not swept (their moment has passed)
SHOWN = 3  # equipment, invoices, complaints named in one field


def _part_of_day(hour: int) -> str:
    return day_part_of(datetime.time(hour))


# --- tier 1: every message ------------------------------------------------------------------


def learn_from_message(
    conversation: Conversation, message: Message, known: Mapping[str, Any] | None = None
) -> None:
    """The language and register of a customer writing themselves, at once (WhatsApp only: in
    the panel the words are the operator's, not the customer's). `known` is the profile the
    turn already loaded: a value it already holds is not written again (every turn would)."""
    customer_id = (conversation.state or {}).get(CUSTOMER_ID)
    if conversation.channel != Conversation.Channel.WHATSAPP or not isinstance(customer_id, int):
        return
    now, source = timezone.now(), [f"message:{message.pk}"]
    read = {"language": message.language, "register": read_register(message.text)}
    fields: dict[str, ProfileField] = {
        name: profile_field(value, source, now)
        for name, value in read.items()
        if value and _value_of((known or {}).get(name)) != value
    }
    if fields:
        customer_profile_learn(
            organisation=conversation.organisation, customer_id=customer_id, fields=fields
        )


def _value_of(stored: Any) -> Any:
    return stored.get("value") if isinstance(stored, dict) else None


# --- tier 2: at farewell and when idle ------------------------------------------------------


def customers_of(conversation: Conversation) -> list[int]:
    """The customers a conversation was about: the one under discussion and those of the records
    it touched, in the order they came up."""
    state = conversation.state or {}
    found: list[int] = []
    for record in state.get(RECORDS, []):
        if not isinstance(record, dict):
            continue
        candidate = record.get("id") if record.get("kind") == "customer" else None
        candidate = candidate or record.get("customer_id")
        if isinstance(candidate, int) and candidate not in found:
            found.append(candidate)
    current = state.get(CUSTOMER_ID)
    if isinstance(current, int) and current not in found:
        found.append(current)
    return found


def extract_for_conversation(
    organisation_id: int, conversation_id: int
) -> dict[int, dict[str, ProfileField]]:
    """Extract and store the profile of every customer the conversation was about. A deleted
    conversation or customer (or another organisation's) is skipped: nothing is written."""
    conversation = (
        Conversation.objects.select_related("organisation")
        .filter(pk=conversation_id, organisation_id=organisation_id)
        .first()
    )
    if conversation is None:
        return {}
    messages = list(
        Message.objects.filter(conversation=conversation).order_by("-created_at", "-pk")[
            :MESSAGES_READ
        ]
    )[::-1]
    learnt: dict[int, dict[str, ProfileField]] = {}
    for customer in Customer.objects.filter(
        organisation_id=organisation_id, pk__in=customers_of(conversation)
    ).prefetch_related("addresses"):
        now = timezone.now()
        fields = extract_customer(conversation, customer, messages, now)
        about = _messages_about(conversation, customer, messages)
        fields = profile_model.refine(
            conversation.organisation, conversation.pk, about, fields, now
        )
        profile = customer_profile_learn(
            organisation=conversation.organisation, customer_id=customer.pk, fields=fields,
            extracted=True,
        )  # fmt: skip
        if profile is not None:
            learnt[customer.pk] = fields
    return learnt


def extract_customer(
    conversation: Conversation,
    customer: Customer,
    messages: list[Message],
    now: datetime.datetime,
) -> dict[str, ProfileField]:
    """Every field the conversation and the records tell of one customer (deterministic)."""
    about = _messages_about(conversation, customer, messages)
    own = (
        [m for m in about if m.role == Message.Role.USER] if _customer_writes(conversation) else []
    )
    fields: dict[str, ProfileField] = {}
    fields.update(_schedule_preferences(conversation, customer, about, now))
    fields.update(_how_they_write(own, now))
    for name, reader in (
        ("channel", _channel), ("equipment", _equipment), ("address_notes", _address_notes),
        ("payment", _payment), ("sensitivities", _sensitivities),
    ):  # fmt: skip
        item = reader(conversation, customer, now)
        if item is not None:
            fields[name] = item
    return fields


def _customer_writes(conversation: Conversation) -> bool:
    return conversation.channel == Conversation.Channel.WHATSAPP


def _messages_about(
    conversation: Conversation, customer: Customer, messages: list[Message]
) -> list[Message]:
    """The user messages about this customer: all of them when the customer writes; in the
    panel, those that asked for this customer's records or name them."""
    users = [m for m in messages if m.role == Message.Role.USER]
    if _customer_writes(conversation):
        return users
    asked = {
        r.get("message")
        for r in (conversation.state or {}).get(RECORDS, [])
        if isinstance(r, dict)
        and customer.pk in (r.get("customer_id"), r.get("id") if r.get("kind") == "customer" else 0)
    }
    names = {w for w in words(fold(customer.name)) if len(w) >= 3}
    return [m for m in users if m.pk in asked or names & set(words(fold(m.text)))]


def _schedule_preferences(
    conversation: Conversation, customer: Customer, about: list[Message], now: datetime.datetime
) -> dict[str, ProfileField]:
    """The preferred days and time: the customer's jobs (a job booked in this conversation also
    cites the message that asked for it) and what was said ("prefiere los martes")."""
    tz = ZoneInfo(conversation.organisation.timezone)
    asked_for = {
        r["id"]: r.get("message")
        for r in (conversation.state or {}).get(RECORDS, [])
        if isinstance(r, dict) and r.get("kind") == "job"
    }
    days: dict[int, list[str]] = defaultdict(list)
    parts: dict[str, list[str]] = defaultdict(list)
    clocks: Counter[str] = Counter()
    jobs = Job.objects.filter(organisation_id=customer.organisation_id, customer=customer).exclude(
        status=Job.Status.CANCELLED
    )
    for job in jobs.order_by("-scheduled_start")[:JOBS_READ]:
        start = job.scheduled_start.astimezone(tz)
        cited = [f"job:{job.pk}"]
        if asked_for.get(job.pk):
            cited.insert(0, f"message:{asked_for[job.pk]}")
        days[start.weekday()].extend(cited)
        if part := _part_of_day(start.hour):  # a midday visit says neither
            parts[part].extend(cited)
        clocks[start.strftime("%H:%M")] += 1
    stated: set[int] = set()
    for message in about:
        said = stated_preference(message.text)
        if said is None:
            continue
        stated.update(said.weekdays)
        for weekday in said.weekdays:
            days[weekday].extend([f"message:{message.pk}"] * STATED_WEIGHT)
        if said.part_of_day:
            parts[said.part_of_day].extend([f"message:{message.pk}"] * STATED_WEIGHT)
    if stated:  # what someone said the customer prefers beats what their jobs suggest
        days = defaultdict(list, {d: cited for d, cited in days.items() if d in stated})
    fields: dict[str, ProfileField] = {}
    best_days = _preferred(days)
    if best_days:
        value = ", ".join(DAY_NAMES[d] for d in best_days)
        fields["preferred_days"] = profile_field(value, _sources(days, best_days), now)
    best_parts = _preferred(parts)
    if best_parts:
        part = best_parts[0]
        clock, seen = clocks.most_common(1)[0] if clocks else ("", 0)
        usual = f" {clock}" if seen >= MIN_EVIDENCE and _part_of_day(int(clock[:2])) == part else ""
        fields["preferred_time"] = profile_field(f"{part}{usual}", parts[part], now)
    return fields


def _preferred[K](evidence: dict[K, list[str]]) -> list[K]:
    """The keys with the most evidence (ties kept, in order), when that is at least two."""
    if not evidence:
        return []
    top = max(len(cited) for cited in evidence.values())
    if top < MIN_EVIDENCE:
        return []
    return sorted(key for key, cited in evidence.items() if len(cited) == top)  # type: ignore[type-var]


def _sources[K](evidence: dict[K, list[str]], keys: list[K]) -> list[str]:
    return [source for key in keys for source in evidence[key]]


def _how_they_write(own: list[Message], now: datetime.datetime) -> dict[str, ProfileField]:
    """Language, register and brevity from the customer's own messages (the majority)."""
    fields: dict[str, ProfileField] = {}
    languages = Counter(m.language for m in own if m.language)
    if languages:
        language = languages.most_common(1)[0][0]
        cited = [f"message:{m.pk}" for m in own if m.language == language]
        fields["language"] = profile_field(language, cited, now)
    registers = {m.pk: read_register(m.text) for m in own}
    counted = Counter(r for r in registers.values() if r)
    if counted:
        register = counted.most_common(1)[0][0]
        cited = [f"message:{pk}" for pk, r in registers.items() if r == register]
        fields["register"] = profile_field(register, cited, now)
    if brevity := read_brevity([m.text for m in own]):
        fields["brevity"] = profile_field(brevity, [f"message:{m.pk}" for m in own], now)
    return fields


def _channel(
    conversation: Conversation, customer: Customer, now: datetime.datetime
) -> ProfileField | None:
    if _customer_writes(conversation):
        return profile_field("whatsapp", [f"conversation:{conversation.pk}"], now)
    if customer.phone:
        return profile_field("phone", [f"customer:{customer.pk}"], now)
    if customer.email:
        return profile_field("email", [f"customer:{customer.pk}"], now)
    return None


def _equipment(
    conversation: Conversation, customer: Customer, now: datetime.datetime
) -> ProfileField | None:
    items = list(
        Equipment.objects.filter(organisation_id=customer.organisation_id, customer=customer)[
            :SHOWN
        ]
    )
    if not items:
        return None
    described = [
        " ".join(part for part in (item.kind, item.brand, item.model) if part)
        + (f" (service {item.last_service_on.isoformat()})" if item.last_service_on else "")
        for item in items
    ]
    return profile_field("; ".join(described), [f"equipment:{i.pk}" for i in items], now)


def _address_notes(
    conversation: Conversation, customer: Customer, now: datetime.datetime
) -> ProfileField | None:
    address = customer.primary_address
    parts, cited = [], []
    if address is not None:
        parts.append(str(address))
        cited.append(f"address:{address.pk}")
    if customer.notes.strip():
        parts.append(customer.notes.strip()[:120])
        cited.append(f"customer:{customer.pk}")
    return profile_field("; ".join(parts), cited, now) if parts else None


def _payment(
    conversation: Conversation, customer: Customer, now: datetime.datetime
) -> ProfileField | None:
    """On time or late: each issued invoice already due, paid in full by its due date or not."""
    today = timezone.localdate(now, ZoneInfo(conversation.organisation.timezone))
    invoices = (
        Invoice.objects.filter(
            organisation_id=customer.organisation_id,
            customer=customer,
            status=Invoice.Status.ISSUED,
            due_on__lte=today,
        )  # fmt: skip
        .prefetch_related(
            Prefetch("lines", to_attr=Invoice.LINES), Prefetch("payments", to_attr=Invoice.PAYMENTS)
        )
        .order_by("-issued_on")[:10]
    )
    late: list[Invoice] = []
    counted: list[Invoice] = []
    for invoice in invoices:
        counted.append(invoice)
        payments = invoice.payment_items()
        paid = sum((p.amount for p in payments), Decimal("0"))
        last = max((p.received_on for p in payments), default=None)
        assert invoice.due_on is not None
        if paid < invoice.totals()["total"] or last is None or last > invoice.due_on:
            late.append(invoice)
    if not counted:
        return None
    if late:
        value = f"pays late ({len(late)} of {len(counted)} invoices late or unpaid)"
        return profile_field(value, [f"invoice:{i.pk}" for i in late], now)
    value = f"pays on time ({len(counted)} of {len(counted)} invoices)"
    return profile_field(value, [f"invoice:{i.pk}" for i in counted], now)


def _sensitivities(
    conversation: Conversation, customer: Customer, now: datetime.datetime
) -> ProfileField | None:
    reasons = (EscalationTicket.Reason.COMPLAINT, EscalationTicket.Reason.FRUSTRATION)
    tickets = list(
        EscalationTicket.objects.filter(
            organisation_id=customer.organisation_id, customer=customer, reason__in=reasons
        ).order_by("-created_at")[:SHOWN]
    )
    if not tickets:
        return None
    said = [
        f"complained {t.created_at.date().isoformat()}: {' '.join(t.summary.split())[:60]}"
        for t in tickets
    ]
    return profile_field("; ".join(said), [f"ticket:{t.pk}" for t in tickets], now)


# --- which conversations are idle ------------------------------------------------------------


def claim_for_extraction(organisation_id: int, conversation_id: int) -> bool:
    """Mark the conversation as profiled now; False when it is not (any more) this org's."""
    return (
        Conversation.objects.filter(pk=conversation_id, organisation_id=organisation_id).update(
            profiled_at=timezone.now()
        )
        == 1
    )


def claim_idle(now: datetime.datetime) -> list[tuple[int, int]]:
    """Conversations quiet for `IDLE_MINUTES` with something new since their last extraction,
    each claimed once (a conditional update: two sweeps never take the same one)."""
    cutoff = now - datetime.timedelta(minutes=IDLE_MINUTES)
    unprofiled = Q(profiled_at__isnull=True) | Q(profiled_at__lt=F("updated_at"))
    idle = Conversation.objects.filter(
        unprofiled,
        updated_at__lt=cutoff,
        updated_at__gte=now - datetime.timedelta(days=IDLE_LOOKBACK_DAYS),
        # Only conversations about someone: the others have no profile to extract.
        state__has_any_keys=[RECORDS, CUSTOMER_ID],
    )
    claimed: list[tuple[int, int]] = []
    for pk, organisation_id in idle.values_list("pk", "organisation_id")[:500]:
        won = Conversation.objects.filter(unprofiled, pk=pk).update(profiled_at=now)
        if won == 1:
            claimed.append((organisation_id, pk))
    return claimed


def release_claim(conversation_id: int) -> None:
    """The extraction could not be enqueued: the next idle sweep takes the conversation again."""
    Conversation.objects.filter(pk=conversation_id).update(profiled_at=None)
