"""A readable diff between two versions of an agent's configuration (D1).

A version's snapshot (agents.services.agent_snapshot) is serialised into stable, line-oriented text
— one field per line, lists one item per line, each intent a block with one example per line — so
that `difflib` shows what an admin changed ("+ es: agendame un service") rather than a JSON blob.

Both the diff and the list of changed fields read *comparable* values (`comparable`): text with
its line ends as "\n" and no trailing blanks (a browser's textarea sends "\r\n"), tool lists as
sets (the admin's checkboxes send them in the page's order) — so a save that only moved the
threshold lists "min_confidence", not "prompt, tools" besides; `agents.services.agent_save` keeps
the stored value of a field whose comparable value did not change.

Plain functions on plain data: the admin view and the A/B test page both render them.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from agents.defaults import SPEC_KEYS
from agents.models import AgentVersion

# The order an admin reads an agent in; fields a snapshot has beyond these follow, sorted.
FIELD_ORDER = (
    "label_es",
    "label_en",
    "category",
    "enabled",
    "description",
    "prompt",
    "model",
    "context_mode",
    "direct_line",
    "consult_when",
    "min_confidence",
    "max_plan_steps",
    "max_tokens",
    "tools",
    "requires_approval_for",
    "approval_expiry_hours",
    "approval_decider",
)


# Lists whose order means nothing: the tools an agent may call, the tools that need approval.
UNORDERED = frozenset({"tools", "requires_approval_for"})


def comparable(key: str, value: Any) -> Any:
    """`value` as it is compared and shown: what a form's round trip changes is taken out."""
    if isinstance(value, str):
        return "\n".join(line.rstrip() for line in value.splitlines()).strip("\n")
    if isinstance(value, dict):
        return {k: comparable(k, v) for k, v in value.items()}
    if isinstance(value, list):
        items = [comparable(key, item) for item in value]
        return sorted(set(map(str, items))) if key in UNORDERED else items
    return value


def _scalar(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def serialise(snapshot: dict[str, Any]) -> list[str]:
    """The snapshot as lines of text, in a fixed order (two equal snapshots, equal lines)."""
    snapshot = {key: comparable(key, value) for key, value in snapshot.items()}
    lines: list[str] = []
    keys = [k for k in FIELD_ORDER if k in snapshot]
    keys += sorted(k for k in snapshot if k not in FIELD_ORDER and k not in ("name", "intents"))
    for key in keys:
        value = snapshot[key]
        if isinstance(value, list):
            lines.append(f"{key}:")
            lines.extend(f"  - {_scalar(item)}" for item in value)
        elif isinstance(value, str) and "\n" in value:
            lines.append(f"{key}:")
            lines.extend(f"  | {line}" for line in value.splitlines())
        else:
            lines.append(f"{key}: {_scalar(value)}")
    lines.append("intents:")
    for intent in snapshot.get("intents", []):
        lines.append(f"  [{intent.get('name', '')}]")
        if intent.get("description"):
            lines.append(f"    description: {intent['description']}")
        for key in SPEC_KEYS:  # what the product knows about it, when set
            value = intent.get(key)
            if value not in (None, "", [], False):
                shown = ", ".join(map(str, value)) if isinstance(value, list) else _scalar(value)
                lines.append(f"    {key}: {shown}")
        for lang in ("es", "en"):
            block = intent.get(f"examples_{lang}") or ""
            lines.extend(
                f"    {lang}: {line.strip()}" for line in block.splitlines() if line.strip()
            )
    return lines


@dataclass(frozen=True)
class DiffLine:
    kind: str  # "add", "remove", "context", "hunk"
    text: str


@dataclass(frozen=True)
class VersionDiff:
    old_label: str
    new_label: str
    lines: list[DiffLine]
    changed_fields: list[str]
    added: int
    removed: int

    @property
    def identical(self) -> bool:
        return not self.added and not self.removed


def changed_fields(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The top-level keys whose values differ ("intents" when any intent or example does)."""
    keys = [k for k in (*FIELD_ORDER, "intents") if k in old or k in new]
    keys += sorted({*old, *new} - {*FIELD_ORDER, "intents", "name"})
    return [k for k in keys if comparable(k, old.get(k)) != comparable(k, new.get(k))]


def diff_snapshots(
    old: dict[str, Any], new: dict[str, Any], *, old_label: str, new_label: str, context: int = 3
) -> VersionDiff:
    raw = difflib.unified_diff(
        serialise(old), serialise(new), fromfile=old_label, tofile=new_label, lineterm="", n=context
    )
    lines: list[DiffLine] = []
    added = removed = 0
    for line in raw:
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("@@"):
            lines.append(DiffLine("hunk", line))
        elif line.startswith("+"):
            added += 1
            lines.append(DiffLine("add", line[1:]))
        elif line.startswith("-"):
            removed += 1
            lines.append(DiffLine("remove", line[1:]))
        else:
            lines.append(DiffLine("context", line[1:]))
    return VersionDiff(
        old_label=old_label,
        new_label=new_label,
        lines=lines,
        changed_fields=changed_fields(old, new),
        added=added,
        removed=removed,
    )


def previous_version(version: AgentVersion) -> AgentVersion | None:
    return (
        AgentVersion.objects.filter(agent_id=version.agent_id, number__lt=version.number)
        .order_by("-number")
        .first()
    )


def latest_version(version: AgentVersion) -> AgentVersion | None:
    return AgentVersion.objects.filter(agent_id=version.agent_id).order_by("-number").first()


def diff_versions(old: AgentVersion, new: AgentVersion) -> VersionDiff:
    return diff_snapshots(
        old.snapshot, new.snapshot, old_label=f"v{old.number}", new_label=f"v{new.number}"
    )
