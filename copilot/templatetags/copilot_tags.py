"""Template helpers of the chat panel."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import template
from django.utils.translation import ngettext

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
