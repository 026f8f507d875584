"""Working memory (O9): what a turn knows of the conversation before it starts.

A compact summary, the last few messages, the structured state (the customer and job under
discussion, the records this conversation touched, the approvals it waits for, the last intents)
and the profile of the customer under discussion (P3). Raw history is never loaded whole: a node
that needs more asks the selectors. After the turn, the state absorbs the step mutations so the
next message can say "pasalo al viernes" or "cancelalo" and mean the same job, and the summary is
rewritten from the state (`summarize`: extractive, deterministic, bounded).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.base import CUSTOMER_ID, CUSTOMER_LABEL, JOB_ID, JOB_LABEL, Mutation
from agents.defaults import default_specs
from business.profiles import customer_profile_fields
from copilot.models import Conversation, Message
from copilot.orchestration.clarify import PENDING
from copilot.selectors import recent_messages

RECENT_MESSAGES = 3
SUMMARY_LINES = 10
LINE_CHARS = 160  # one summary line at most: the summary stays ~1 KB whatever happens
RECORDS_KEPT = 12
ASKS_KEPT = 4
DONE_SHOWN = 4
# What the last turn did (the customer and job keys are the agents': agents/base.py).
LAST_INTENTS = "last_intents"
LAST_AGENT = "last_agent"
# The records this conversation touched, newest last: {kind, id, label, intent, message, …}.
RECORDS = "records"
# Approvals this conversation filed; the summary names those still waiting.
HELD = "held_approvals"


@dataclass(frozen=True)
class RecentMessage:
    role: str
    text: str
    agent: str = ""


@dataclass
class WorkingMemory:
    summary: str = ""
    recent: list[RecentMessage] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    # The profile of the customer under discussion: field → {value, sources, at} (P3).
    profile: dict[str, Any] = field(default_factory=dict)
    channel: str = Conversation.Channel.PANEL  # whatsapp: the customer reads the replies

    def writes_to_customer(self) -> bool:
        return self.channel == Conversation.Channel.WHATSAPP

    def earlier_user_texts(self) -> list[str]:
        return [m.text for m in self.recent if m.role == Message.Role.USER]


def load_working_memory(
    conversation: Conversation,
    *,
    before_message_id: int | None,
    earlier: Sequence[Message] | None = None,
) -> WorkingMemory:
    """Summary + last messages before this turn's own message + a copy of the state + the
    profile of the customer under discussion. `earlier`: those messages already read, oldest
    first (at least the last RECENT_MESSAGES of them), so the turn reads them once."""
    if earlier is None:
        earlier = recent_messages(conversation.pk, RECENT_MESSAGES, before_id=before_message_id)
    recent = [
        RecentMessage(role=m.role, text=m.text, agent=m.agent) for m in earlier[-RECENT_MESSAGES:]
    ]
    state = dict(conversation.state or {})
    customer_id = state.get(CUSTOMER_ID)
    profile = (
        customer_profile_fields(conversation.organisation_id, customer_id)
        if isinstance(customer_id, int)
        else {}
    )
    return WorkingMemory(
        summary=conversation.summary, recent=recent, state=state, profile=profile,
        channel=conversation.channel,
    )  # fmt: skip


def remember_turn(
    state: dict[str, Any],
    *,
    intents: Sequence[str],
    agents: Sequence[str],
    done: Iterable[tuple[str, Mutation]] = (),
    message_id: int | None = None,
    held: Iterable[int] = (),
    writes: Collection[str] | None = None,
) -> dict[str, Any]:
    """The state after a turn: its intents, the records its steps touched (with the intent and
    the message that asked, and whether that intent writes: `writes`), and the approvals it
    filed."""
    updated = dict(state)
    if intents:
        updated[LAST_INTENTS] = list(intents)
        updated[LAST_AGENT] = agents[-1] if agents else ""
    records = [dict(r) for r in updated.get(RECORDS, []) if isinstance(r, dict)]
    for intent, mutation in done:
        entry = _record(intent, mutation, message_id)
        if writes is not None:
            entry["wrote"] = intent in writes
        records = [
            r for r in records if (r.get("kind"), r.get("id")) != (entry["kind"], entry["id"])
        ]
        records.append(entry)
    if records:
        updated[RECORDS] = records[-RECORDS_KEPT:]
    filed = [*updated.get(HELD, []), *(a for a in held if a not in updated.get(HELD, []))]
    if filed:
        updated[HELD] = filed[-RECORDS_KEPT:]
    return updated


def _wrote(record: dict[str, Any]) -> bool:
    if "wrote" in record:
        return bool(record["wrote"])
    # Stored before the registry said which intents write: the shipped intents' word.
    spec = default_specs().get(str(record.get("intent")))
    return spec is not None and spec.writes


def _record(intent: str, mutation: Mutation, message_id: int | None) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "kind": mutation.kind, "id": mutation.id, "label": mutation.label[:80],
        "intent": intent, "message": message_id,
    }  # fmt: skip
    for key in ("customer_id", "customer", "start", "status"):
        value = mutation.data.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool):
            entry[key] = value if not isinstance(value, str) else value[:60]
    return entry


def summarize(
    state: dict[str, Any],
    previous: str,
    user_text: str,
    *,
    waiting: Iterable[int] = (),
) -> str:
    """A compact, deterministic summary: who and what is under discussion, what was done (job
    numbers), what waits for a manager, the question left open, and the last few asks.

    The same state and text always give the same summary; it is bounded (`SUMMARY_LINES` lines
    of at most `LINE_CHARS`). The embedded engine needs no model for this; the llm engine's
    models read it instead of the raw history (and on that engine a model may rewrite it:
    copilot/summaries.py, which falls back to this one).
    """
    lines: list[str] = []
    if state.get(CUSTOMER_ID):
        lines.append(f"customer: {state.get(CUSTOMER_LABEL, '')} (#{state[CUSTOMER_ID]})")
    if state.get(JOB_ID):
        label = str(state.get(JOB_LABEL, "")).removeprefix(f"#{state[JOB_ID]}").strip()
        lines.append(f"job: #{state[JOB_ID]} {label}".strip())
    # Only what a write intent did is "done"; what a read touched was looked at (the registry
    # says which intents write: `remember_turn` marks their records).
    done = [r for r in state.get(RECORDS, []) if _wrote(r)]
    if done:
        lines.append("done: " + "; ".join(_done_line(r) for r in done[-DONE_SHOWN:]))
    waiting = list(waiting)
    if waiting:
        lines.append(WAITING + ", ".join(f"#{a}" for a in waiting))
    pending = state.get(PENDING)
    if isinstance(pending, dict) and pending.get("question"):
        lines.append(f"open question ({pending.get('intent', '')}): {pending['question']}")
    # A model's gist (llm engine: copilot/summaries.py) is carried until the model rewrites it.
    lines.extend([line for line in previous.splitlines() if line.startswith("gist: ")][:3])
    asks = [line for line in previous.splitlines() if line.startswith("asked: ")]
    intents = ", ".join(state.get(LAST_INTENTS, [])) or "-"
    asks.append(f"asked: {' '.join(user_text.split())[:100]} [{intents}]")
    room = max(1, SUMMARY_LINES - len(lines))
    lines.extend(asks[-min(room, ASKS_KEPT) :])
    return "\n".join(_bounded(line) for line in lines)


def _done_line(record: dict[str, Any]) -> str:
    """ "book_job job #379 service de aire — Carolina Ruiz 01/12 09:00" (the label says the
    number and the time when it has them: not said twice)."""
    number = f"#{record['id']}"
    label = str(record.get("label", "")).removeprefix(number).strip()
    start = str(record.get("start") or "")
    when = f" {start[:16]}" if start and start[11:16] not in label else ""
    return f"{record.get('intent', '')} {record['kind']} {number} {label}{when}".strip()


def _bounded(line: str) -> str:
    line = " ".join(line.split())
    return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"


WAITING = "waiting for approval: "
_FACTS = ("customer: ", "job: ", "done: ")


def with_waiting(summary: str, waiting: Iterable[int]) -> str:
    """The summary with its approvals line brought up to date (a manager decided one): the
    facts first, then what still waits, then the rest as it was."""
    lines = [line for line in summary.splitlines() if not line.startswith(WAITING)]
    facts = [line for line in lines if line.startswith(_FACTS)]
    rest = [line for line in lines if not line.startswith(_FACTS)]
    still = [f"{WAITING}{', '.join(f'#{a}' for a in waiting)}"] if waiting else []
    return "\n".join([*facts, *still, *rest])
