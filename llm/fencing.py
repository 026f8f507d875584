"""Untrusted text in a prompt goes between tags it cannot close.

The operator's message, a conversation summary or an agent's earlier question are data, not
instructions: both the orchestrator and the sub-agents wrap them as `<tag>…</tag>`, removing any
copy of that tag inside the text (any case, any spacing) so it cannot end its own fence.
"""

from __future__ import annotations

import re


def without_tag(tag: str, text: str) -> str:
    """`text` with every `<tag>` / `</tag>` in it removed."""
    return re.sub(rf"<\s*/?\s*{re.escape(tag)}\s*>", "", text, flags=re.IGNORECASE)


def fence(tag: str, text: str) -> str:
    return f"<{tag}>{without_tag(tag, text)}</{tag}>"
