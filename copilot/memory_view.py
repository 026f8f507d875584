"""The working memory as the office reads it (issue 28.1): the chat's "what the copilot
remembers" panel, built from the conversation's state in the reader's language.

The stored summary (copilot/orchestration/memory.py) is what the model reads — English, with
intent names and `job #258` — and stays so. This view says the same facts in words: the customer
and job under discussion, what was done ("agendar el trabajo: trabajo #258 de Graciela Ibarra"),
the approvals still waiting, the question left open and the last asks, each with the intent's
phrase from the registry instead of its name. Records are read from the organisation's rows, so
a job is named by its number and its customer as people name it; a record gone since is named by
what the state kept. Call it under the request's language.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils.translation import get_language, gettext, pgettext, pgettext_lazy

from agents.base import CUSTOMER_ID, CUSTOMER_LABEL, JOB_ID
from agents.defaults import intent_phrase
from agents.selectors import intent_specs
from approvals.models import PendingAction
from business.models import Customer, Invoice, Job, Quote
from copilot.models import Conversation, Message
from copilot.orchestration.clarify import PENDING
from copilot.orchestration.memory import DONE_SHOWN, HELD, LAST_INTENTS, RECORDS, _wrote
from nlu.language import detect_language
from nlu.values import IntentSpecs, specs_by_name

ASKED = "asked: "
# The other kinds a step may touch, named by what the state kept after the noun.
_KINDS = {
    "quote": pgettext_lazy("memory record", "quote"),
    "invoice": pgettext_lazy("memory record", "invoice"),
    "ticket": pgettext_lazy("memory record", "ticket"),
    "technician": pgettext_lazy("memory record", "technician"),
    "vehicle": pgettext_lazy("memory record", "vehicle"),
    "payment": pgettext_lazy("memory record", "payment"),
    "equipment": pgettext_lazy("memory record", "equipment"),
}


@dataclass(frozen=True)
class MemoryLine:
    """One line: a heading in the reader's language and what it says; `lang` marks text kept
    in the language it was written in (the operator's own words, the question asked)."""

    heading: str
    text: str
    lang: str = ""


def memory_lines(conversation: Conversation) -> list[MemoryLine]:
    state = conversation.state or {}
    if not isinstance(state, dict):
        return []
    language = (get_language() or "es")[:2]
    organisation_id = conversation.organisation_id
    specs = specs_by_name(intent_specs(conversation.organisation))
    names = _Names(organisation_id)
    lines: list[MemoryLine] = []
    customer_id = state.get(CUSTOMER_ID)
    if isinstance(customer_id, int):
        name = names.customer(customer_id) or str(state.get(CUSTOMER_LABEL) or "")
        if name:
            lines.append(MemoryLine(gettext("Customer under discussion"), name))
    job_id = state.get(JOB_ID)
    if isinstance(job_id, int):
        lines.append(MemoryLine(gettext("Job under discussion"), names.record("job", job_id)))
    records = [r for r in state.get(RECORDS, []) if isinstance(r, dict)]
    for record in [r for r in records if _wrote(r)][-DONE_SHOWN:]:
        record_id = record.get("id")
        if not isinstance(record_id, int):
            continue
        phrase = _phrase(str(record.get("intent") or ""), language, specs)
        named = names.record(str(record.get("kind") or ""), record_id, record)
        lines.append(MemoryLine(pgettext("memory", "Done"), f"{named} ({phrase})"))
    held = [a for a in state.get(HELD, []) if isinstance(a, int)]
    waiting = PendingAction.objects.filter(
        organisation_id=organisation_id, pk__in=held, status=PendingAction.Status.PENDING
    ).order_by("pk")
    for action in waiting:
        summary = action.summary_en if language == "en" and action.summary_en else action.summary
        lines.append(MemoryLine(gettext("Waiting for a manager’s approval"), summary))
    pending = state.get(PENDING)
    if isinstance(pending, dict) and pending.get("question"):
        phrase = _phrase(str(pending.get("intent") or ""), language, specs)
        heading = gettext("Question left open (%(action)s)") % {"action": phrase}
        lines.append(MemoryLine(heading, str(pending["question"]), _asked_language(conversation)))
    for text, intents in _asks(conversation.summary, state):
        said = ", ".join(_phrase(i, language, specs) for i in intents)
        heading = pgettext("memory", "Asked") + (f" ({said})" if said else "")
        # Each ask in its own language: a conversation may switch ("Who has overdue invoices?"
        # after three questions in Spanish).
        lines.append(MemoryLine(heading, text, detect_language(text)))
    return lines


def _phrase(intent: str, language: str, specs: IntentSpecs) -> str:
    if not intent:
        return pgettext("memory", "something")
    return intent_phrase(intent, language, specs)


def _asks(summary: str, state: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """The operator's last asks as the summary keeps them ("asked: <text> [intent, intent]")."""
    asks = []
    for line in summary.splitlines():
        if not line.startswith(ASKED):
            continue
        text, intents = line.removeprefix(ASKED), ""
        if text.endswith("]") and " [" in text:
            text, intents = text[:-1].rsplit(" [", 1)
        names = [i.strip() for i in intents.split(",") if i.strip() and i.strip() != "-"]
        asks.append((text.strip(), names))
    if asks and not asks[-1][1] and state.get(LAST_INTENTS):
        asks[-1] = (asks[-1][0], [str(i) for i in state[LAST_INTENTS]])
    return asks


def _asked_language(conversation: Conversation) -> str:
    message = (
        conversation.messages.filter(role=Message.Role.USER).exclude(language="").order_by("-pk")
    ).first()
    return message.language if message is not None else ""


class _Names:
    """Records named as people name them, read once each from the organisation's rows."""

    def __init__(self, organisation_id: int) -> None:
        self.organisation_id = organisation_id

    def customer(self, pk: int) -> str:
        row = Customer.objects.filter(organisation_id=self.organisation_id, pk=pk).first()
        return row.name if row is not None else ""

    def record(self, kind: str, pk: int, kept: dict[str, Any] | None = None) -> str:
        kept = kept or {}
        if kind == "job":
            job = (
                Job.objects.filter(organisation_id=self.organisation_id, pk=pk)
                .select_related("customer")
                .first()
            )
            customer = job.customer.name if job is not None else str(kept.get("customer") or "")
            if customer:
                return gettext("job #%(id)s of %(customer)s") % {"id": pk, "customer": customer}
            return gettext("job #%(id)s") % {"id": pk}
        if kind == "customer":
            return self.customer(pk) or str(kept.get("label") or "")
        if kind in ("quote", "invoice"):
            model = Quote if kind == "quote" else Invoice
            document = (
                model.objects.filter(organisation_id=self.organisation_id, pk=pk)
                .select_related("customer")
                .first()
            )
            if document is not None:
                values = {"number": document.number, "customer": document.customer.name}
                if kind == "quote":
                    return gettext("quote %(number)s of %(customer)s") % values
                return gettext("invoice %(number)s of %(customer)s") % values
        noun = str(_KINDS[kind]) if kind in _KINDS else pgettext("memory record", "record")
        return f"{noun} {kept.get('label') or f'#{pk}'}"
