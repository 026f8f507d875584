"""Message templates (issue 27.5): the organisation's templates as Meta knows them, and the one
that goes out when the 24-hour window is closed.

- **In sync**: `message_template_status_update`, `message_template_quality_update` and
  `template_category_update` webhooks update the template they name (a template Meta names and we
  did not know is added, its variables for an admin to fill); a template paused, disabled,
  rejected or flagged alerts the organisation's admins (whatsapp/alerts.py).
- **Chosen**: an approved template in the customer's language (the account's preferred name
  first, then utility before marketing; never an authentication one).
- **Filled**: each body variable gets the reply's essentials ("text": one line, no tabs or runs
  of spaces, which the Cloud API refuses in a parameter, cut to fit) or the customer's first name
  ("name"), as positional or named parameters (`WhatsAppTemplate.named`)."""

from __future__ import annotations

import re
from typing import Any

from django.db.models import Case, IntegerField, Value, When
from django.utils import timezone

from whatsapp import alerts
from whatsapp.models import WhatsAppTemplate
from whatsapp.payload import AccountEvent

PARAMETER_LIMIT = 700  # a template's body is at most 1024 characters, its own words included
NAME_VARIABLES = {"name", "nombre", "customer_name", "first_name"}
# Events whose template status is another word (Meta's reference): the status they leave.
EVENT_STATUS = {"REINSTATED": "APPROVED", "UNPAUSED": "APPROVED", "UNARCHIVED": "APPROVED",
                "UNLOCKED": "APPROVED", "PENDING_REVIEW": "PENDING"}  # fmt: skip
ALERTING = {"PAUSED", "DISABLED", "REJECTED", "FLAGGED", "LOCKED", "PENDING_DELETION"}
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def template_event(organisation_id: int, event: AccountEvent) -> None:
    """A template webhook applied to the organisation's template it names."""
    if not event.template_name or not event.template_language:
        return
    template, _created = WhatsAppTemplate.objects.get_or_create(
        organisation_id=organisation_id, name=event.template_name,
        language=event.template_language,
    )  # fmt: skip
    fields = _changes(event)
    if event.template_id:
        fields["template_id"] = event.template_id
    WhatsAppTemplate.objects.filter(pk=template.pk).update(**fields, updated_at=timezone.now())
    if fields.get("status") in ALERTING:
        alerts.alert_record(
            organisation_id, kind="template", event=str(fields["status"]),
            subject=f"{event.template_name} ({event.template_language})", detail=event.detail,
            key=event.key,
        )  # fmt: skip


def _changes(event: AccountEvent) -> dict[str, Any]:
    """The template's fields the event changes (an unknown word changes nothing)."""
    if event.field == "message_template_quality_update":
        return {"quality": event.event[:16]}
    fields: dict[str, Any] = {}
    if event.category in WhatsAppTemplate.Category.values:
        fields["category"] = event.category
    if event.field == "message_template_status_update":
        status = EVENT_STATUS.get(event.event, event.event)
        if status in WhatsAppTemplate.Status.values:
            fields |= {"status": status, "reason": event.detail}
    return fields


def template_for(organisation_id: int, language: str, preferred: str) -> WhatsAppTemplate | None:
    """The approved template to send in `language` ("es", "en"; "es_AR" is Spanish)."""
    base = (language or "es").split("_")[0].lower()
    approved = WhatsAppTemplate.objects.filter(
        organisation_id=organisation_id, status=WhatsAppTemplate.Status.APPROVED,
        category__in=[WhatsAppTemplate.Category.UTILITY, WhatsAppTemplate.Category.MARKETING],
    )  # fmt: skip
    ranked = approved.annotate(
        first=Case(When(name=preferred, then=Value(0)), default=Value(1),
                   output_field=IntegerField()),
        kind=Case(When(category=WhatsAppTemplate.Category.UTILITY, then=Value(0)),
                  default=Value(1), output_field=IntegerField()),
    ).order_by("first", "kind", "name")  # fmt: skip
    for template in ranked:
        if template.language.split("_")[0].lower() == base:
            return template
    return None


def template_body(to: str, template: WhatsAppTemplate, text: str, name: str) -> dict[str, Any]:
    """The Cloud API's template message with its body's parameters filled."""
    body: dict[str, Any] = {"name": template.name, "language": {"code": template.language}}
    parameters = _parameters(template, text, name)
    if parameters:
        body["components"] = [{"type": "body", "parameters": parameters}]
    return {"messaging_product": "whatsapp", "recipient_type": "individual", "to": to,
            "type": "template", "template": body}  # fmt: skip


def _parameters(template: WhatsAppTemplate, text: str, name: str) -> list[dict[str, str]]:
    variables = [str(v) for v in template.variables or []]
    texts = split(essentials(text), sum(1 for v in variables if v not in NAME_VARIABLES))
    parameters = []
    for variable in variables:
        value = (name or "—") if variable in NAME_VARIABLES else texts.pop(0)
        parameter = {"type": "text", "text": value}
        if template.named:
            parameter["parameter_name"] = variable
        parameters.append(parameter)
    return parameters


def essentials(text: str, limit: int = PARAMETER_LIMIT) -> str:
    """The reply as one parameter: one line, single spaces, cut at a word with "…"."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    return line[: limit - 1].rsplit(" ", 1)[0] + "…"


def split(text: str, parts: int) -> list[str]:
    """`text` over `parts` variables, a sentence each, the last taking the rest ("—" for a
    variable left empty: the Cloud API refuses an empty parameter)."""
    if parts <= 0:
        return []
    sentences = _SENTENCE.split(text) if parts > 1 else [text]
    head, rest = sentences[: parts - 1], " ".join(sentences[parts - 1 :])
    return [piece or "—" for piece in [*head, rest]] + ["—"] * (parts - len(head) - 1)
