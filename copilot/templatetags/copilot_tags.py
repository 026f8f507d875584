"""Template helpers of the chat panel."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import template
from django.utils.translation import gettext, ngettext, pgettext, pgettext_lazy

register = template.Library()


@register.filter
def consulted_counts(consulted: Iterable[Any] | None) -> str:
    """ "2 agentes · 3 pasos": the agents a turn consulted and the tool calls they made, from
    the stored footer (execution rows), never from generated text."""
    agents = [a for a in consulted or () if isinstance(a, dict)]
    steps = sum(int(a.get("tools") or 0) for a in agents)
    return "{} · {}".format(
        ngettext("%(counter)s agent", "%(counter)s agents", len(agents)) % {"counter": len(agents)},
        ngettext("%(counter)s step", "%(counter)s steps", steps) % {"counter": steps},
    )


def _category(category: str, count: int) -> str:
    names = {
        "phone": ngettext("%(counter)s phone", "%(counter)s phones", count),
        "email": ngettext("%(counter)s email", "%(counter)s emails", count),
        "cuit": ngettext("%(counter)s CUIT/CUIL", "%(counter)s CUIT/CUIL", count),
        "dni": ngettext("%(counter)s ID number", "%(counter)s ID numbers", count),
        "card": ngettext("%(counter)s card number", "%(counter)s card numbers", count),
        "address": ngettext("%(counter)s address", "%(counter)s addresses", count),
    }
    return names.get(category, f"%(counter)s {category}") % {"counter": count}


def _sent_part(part: Any) -> str:
    """One part of a turn that went to a model, as the office says it."""
    purpose = part.get("purpose", "") if isinstance(part, dict) else ""
    if purpose == "orchestrator":
        return pgettext("privacy receipt", "the reading of the message")
    if purpose == "failsafe":
        return pgettext("privacy receipt", "a second reading of the message")
    agent = str(part.get("label") or part.get("agent") or "") if isinstance(part, dict) else ""
    if purpose == "agent" and agent:
        return pgettext("privacy receipt", "the step of %(agent)s") % {"agent": agent}
    return pgettext("privacy receipt", "a request of the turn")


def _sent_parts(parts: Any) -> str:
    """What went, once each; a receipt stored before the parts were kept says "the turn"."""
    if not isinstance(parts, list) or not parts:
        return pgettext("privacy receipt", "this turn's requests")
    return ", ".join(dict.fromkeys(_sent_part(part) for part in parts))


@register.filter
def privacy_receipt(receipt: Any) -> str:
    """The turn's privacy receipt (T4) in one statement: nothing went to a model, or which parts
    of the turn went and what was masked in them (or that the guard was off)."""
    if not isinstance(receipt, dict):
        return ""
    if not receipt.get("sent_to_model"):
        return gettext("Nothing left the system: no model was called in this turn.")
    sent = {"parts": _sent_parts(receipt.get("parts"))}
    if not receipt.get("guard"):
        return (
            gettext("Sent to a model without the privacy guard (it is turned off): %(parts)s.")
            % sent
        )
    masked = receipt.get("masked") or {}
    if not masked:
        return gettext("Sent to a model: %(parts)s. No personal data found to mask.") % sent
    what = ", ".join(
        _category(category, int(counts.get("values", 0)))
        for category, counts in masked.items()
        if isinstance(counts, dict)
    )
    return pgettext(
        "privacy receipt",
        "Sent to a model: %(parts)s. Masked first, as placeholders like [TEL_1]: %(what)s.",
    ) % {**sent, "what": what}


_ROUTED_BY = {
    "embedded": pgettext_lazy("routed by", "the embedded reading"),
    "model": pgettext_lazy("routed by", "the model"),
    "directive": pgettext_lazy("routed by", "a #agent directive"),
    "clarification": pgettext_lazy("routed by", "the answer to its question"),
    "choice": pgettext_lazy("routed by", "an option it offered"),
}


@register.filter
def routed_by_words(code: object) -> str:
    """What chose the turn's chain, in the reader's language; an unknown code as it is."""
    value = str(code or "")
    return str(_ROUTED_BY.get(value, value))
