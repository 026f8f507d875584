"""Template helpers of the chat panel."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import template
from django.utils.translation import gettext, ngettext, pgettext

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


@register.filter
def privacy_receipt(receipt: Any) -> str:
    """The turn's privacy receipt (T4) in words: what was masked before it went to a model."""
    if not isinstance(receipt, dict):
        return ""
    if not receipt.get("sent_to_model"):
        return gettext("Nothing left the system: no model was called (embedded engine).")
    if not receipt.get("guard"):
        return gettext("Sent to the model without the privacy guard (it is turned off).")
    masked = receipt.get("masked") or {}
    if not masked:
        return gettext("Sent to the model: no personal data found to mask.")
    parts = [
        _category(category, int(counts.get("values", 0)))
        for category, counts in masked.items()
        if isinstance(counts, dict)
    ]
    return pgettext("privacy receipt", "Masked before it went to the model: %(what)s.") % {
        "what": ", ".join(parts)
    }
