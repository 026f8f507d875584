"""The tamper-evident trace (T1): every ended turn sealed into a hash chain per organisation.

When a turn ends (answered, paused for a decision, failed or interrupted) `seal_turn` reads back
what it left in the database — the user's message and the answer with its trace, the sub-agent
runs, the tool calls, the model calls, the actions it held and the decision it carried out — as
canonical JSON, and appends a `TraceSeal` whose digest is SHA-256 over the previous seal's digest
and that JSON. Only what cannot change honestly afterwards goes in: a held action's request, not
its later status; a turn's identity, not its status (a paused turn is closed by its decision).

`verify_chain` walks an organisation's seals in order and reports the first place where
  - a seal's digest no longer matches its content and the previous digest (the seal was edited),
  - a seal does not follow the previous one (one was removed or inserted), or
  - the rows the seal vouches for no longer read the same (a trace row was edited, removed or
    back-dated into the turn),
naming the turn and the row. `manage.py verify_trace` and the admin's action run it.

Forgetting a customer (capataz/forgetting.py) rewrites sealed content: `redact_seals` appends a
redaction entry to the chain naming each seal it rewrote (its digest and the new content's
hash), who and when, and `verify_chain` reports those seals as redacted — not as breaks, and
not silently. Content that no redaction entry describes is still a break.

Rows are read back from the database inside the turn's own transaction, so what is sealed is
exactly what a later read returns (JSON fields as stored, times in UTC).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Model, QuerySet
from django.utils import timezone

from agents.models import ToolCall
from approvals.models import PendingAction
from business.models import Organisation
from copilot.models import AgentRun, Message, TraceSeal, Turn
from llm.models import ModelCall

SEAL_ATTEMPTS = 5

# What each kind of row contributes: the fields that never change once the turn has ended.
_MESSAGE_FIELDS = ("id", "role", "text", "language", "agent", "trace", "created_at")
_AGENT_RUN_FIELDS = (
    "id", "agent", "intent", "confidence", "tools", "plan_steps", "latency_ms", "tokens_in",
    "tokens_out", "success", "yielded", "error", "permanent", "created_at",
)  # fmt: skip
_TOOL_CALL_FIELDS = (
    "id", "agent", "intent", "tool", "category", "arguments", "ok", "summary", "error",
    "approval_id", "approved", "latency_ms", "created_at",
)  # fmt: skip
_MODEL_CALL_FIELDS = (
    "id", "agent", "purpose", "model", "source", "tokens_in", "tokens_out", "cost", "latency_ms",
    "first_token_ms", "ok", "error_kind", "error", "retries", "usage_estimated", "created_at",
)  # fmt: skip
# A held action as it was asked for (its status moves on after the turn: not sealed here).
_REQUEST_FIELDS = (
    "id", "agent", "intent", "tool", "category", "arguments", "summary", "summary_en",
    "snapshot_hash", "requested_by_id", "created_at",
)  # fmt: skip


def canonical(value: Any) -> str:
    """One spelling of a JSON-able value: sorted keys, no spaces, UTC times, decimals as text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=_plain)  # fmt: skip


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return _utc(value)
    if isinstance(value, Decimal):
        return format(value.normalize(), "f")
    raise TypeError(f"not JSON: {type(value).__name__}")


def _utc(value: datetime) -> str:
    return value.astimezone(UTC).isoformat()


def digest_of(previous: str, content: str) -> str:
    return hashlib.sha256(f"{previous}\n{content}".encode()).hexdigest()


def _rows(queryset: QuerySet[Any], fields: tuple[str, ...]) -> list[dict[str, Any]]:
    return [_row(obj, fields) for obj in queryset.order_by("pk")]


def _row(obj: Model, fields: tuple[str, ...]) -> dict[str, Any]:
    row = {}
    for name in fields:
        value = getattr(obj, name)
        row[name] = _utc(value) if isinstance(value, datetime) else value
    return row


def turn_content(turn: Turn, sealed_at: datetime) -> dict[str, Any]:
    """What the turn left in the database, by table; rows made after the seal are not its own."""
    org, turn_id = turn.organisation_id, str(turn.pk)
    upto = {"created_at__lte": sealed_at}
    messages = Message.objects.filter(
        organisation_id=org, pk__in=[pk for pk in (turn.message_id, turn.answer_id) if pk]
    )
    content: dict[str, Any] = {
        "turn": {
            "id": turn_id,
            "kind": turn.kind,
            "conversation": turn.conversation_id,
            "message": turn.message_id,
            "answer": turn.answer_id,
            "user": turn.user_id,
            "resumes": str(turn.resumes_id) if turn.resumes_id else None,
            "created_at": _utc(turn.created_at),
        },
        "messages": _rows(messages, _MESSAGE_FIELDS),
        "agent_runs": _rows(
            AgentRun.objects.filter(organisation_id=org, turn_id=turn_id, **upto),
            _AGENT_RUN_FIELDS,
        ),
        "tool_calls": _rows(
            ToolCall.objects.filter(organisation_id=org, turn_id=turn_id, **upto),
            _TOOL_CALL_FIELDS,
        ),
        "model_calls": _rows(
            ModelCall.objects.filter(organisation_id=org, turn_id=turn_id, **upto),
            _MODEL_CALL_FIELDS,
        ),
        "approvals_requested": _rows(
            PendingAction.objects.filter(organisation_id=org, turn_id=turn_id, **upto),
            _REQUEST_FIELDS,
        ),
        "decision": None,
    }
    if turn.kind == Turn.Kind.DECISION and turn.approval_id:
        action = PendingAction.objects.filter(organisation_id=org, pk=turn.approval_id).first()
        if action is not None:
            content["decision"] = {
                "id": action.pk,
                "approved": action.status
                not in (
                    PendingAction.Status.REJECTED,
                    PendingAction.Status.EXPIRED,
                ),  # fmt: skip
                "decided_by_id": action.decided_by_id,
                "decided_at": _utc(action.decided_at) if action.decided_at else None,
                "decision_reason": action.decision_reason,
            }
    return content


def seal_turn(turn: Turn) -> TraceSeal | None:
    """Append the ended turn to its organisation's chain (once: a turn sealed before is left).

    Called inside the transaction that ends the turn, so the seal commits with its answer; the
    organisation's row is locked meanwhile, so two turns ending at once queue for the next seq.
    """
    sealed_at = timezone.now()  # a turn sealed before fails the unique turn_id: left as it was
    text = canonical(turn_content(turn, sealed_at))
    return _append(turn.organisation_id, str(turn.pk), TraceSeal.Kind.TURN, text, sealed_at)


def _append(
    organisation_id: int, entry_id: str, kind: str, text: str, sealed_at: datetime
) -> TraceSeal | None:
    for _attempt in range(SEAL_ATTEMPTS):
        try:
            with transaction.atomic():
                Organisation.objects.select_for_update().filter(pk=organisation_id).first()
                last = (
                    TraceSeal.objects.filter(organisation_id=organisation_id)
                    .order_by("-seq")
                    .only("seq", "digest")
                    .first()
                )
                previous, seq = (last.digest, last.seq + 1) if last else ("", 1)
                return TraceSeal.objects.create(
                    organisation_id=organisation_id, seq=seq, kind=kind, turn_id=entry_id,
                    content=text, previous=previous, digest=digest_of(previous, text),
                    sealed_at=sealed_at,
                )  # fmt: skip
        except IntegrityError:  # another entry took that seq (SQLite takes no row locks)
            if TraceSeal.objects.filter(turn_id=entry_id).exists():
                return None
    raise RuntimeError(f"could not seal {kind} {entry_id}")


# --- redacting (the right to be forgotten) ----------------------------------------------------


def redact_seals(
    organisation_id: int, redact: Callable[[Any], Any], *, by: str, at: datetime
) -> TraceSeal | None:
    """Rewrite the content of every seal that `redact` changes, and append one redaction entry
    to the chain naming them (their digest, the new content's hash, the rows), who and when.

    `redact` must be the same function that blanked the rows, so each rewritten seal still
    matches its rows; the seal's own digest is kept — the chain after it still links — and
    `verify_chain` accepts the rewritten content only as the redaction entry describes it.
    """
    covered = []
    seals = TraceSeal.objects.filter(organisation_id=organisation_id, kind=TraceSeal.Kind.TURN)
    for seal in seals.order_by("seq").iterator(chunk_size=500):
        before = json.loads(seal.content)
        after = redact(before)
        if after == before:
            continue
        text = canonical(after)
        # The one rewrite a seal allows (save() refuses any): vouched for by the entry below.
        TraceSeal.objects.filter(pk=seal.pk).update(content=text)
        covered.append(
            {"seq": seal.seq, "turn": seal.turn_id, "digest": seal.digest,
             "content": _sha(text), "rows": differences(before, after)}
        )  # fmt: skip
    if not covered:
        return None
    record = {"redaction": {"by": by, "at": _utc(at), "seals": covered}}
    return _append(organisation_id, str(uuid.uuid4()), TraceSeal.Kind.REDACTION,
                   canonical(record), at)  # fmt: skip


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Redaction:
    """A seal rewritten by a redaction entry (`entry`, its seq in the chain)."""

    seq: int
    turn_id: str
    by: str
    at: str
    entry: int
    rows: tuple[str, ...]
    digest: str  # the seal's digest, never changed
    content: str  # the hash of the content the redaction left


def redactions_of(organisation_id: int) -> dict[int, list[Redaction]]:
    """Every sealed turn's redactions, by the turn seal's seq. Only entries whose own digest
    holds count: an edited entry vouches for nothing (and breaks the chain where it stands)."""
    found: dict[int, list[Redaction]] = {}
    entries = TraceSeal.objects.filter(
        organisation_id=organisation_id, kind=TraceSeal.Kind.REDACTION
    ).order_by("seq")
    for entry in entries:
        if digest_of(entry.previous, entry.content) != entry.digest:
            continue
        record = json.loads(entry.content)["redaction"]
        for item in record["seals"]:
            found.setdefault(item["seq"], []).append(
                Redaction(
                    item["seq"],
                    item["turn"],
                    record["by"],
                    record["at"],
                    entry.seq,
                    tuple(item["rows"]),
                    item["digest"],
                    item["content"],
                )  # fmt: skip
            )
    return found


def redaction_covering(seal: TraceSeal, redactions: dict[int, list[Redaction]]) -> Redaction | None:
    """The redaction that left this seal's content exactly as it now reads, if one did."""
    content = _sha(seal.content)
    for item in reversed(redactions.get(seal.seq, [])):
        if item.turn_id == seal.turn_id and item.digest == seal.digest and item.content == content:
            return item
    return None


# --- verifying --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Break:
    seq: int
    turn_id: str
    reason: str  # "digest", "link", "gap", "rows", "missing_turn"
    detail: str


@dataclass(frozen=True)
class Verdict:
    organisation_id: int
    seals: int
    breaks: list[Break]
    unsealed: list[str]  # ended turns that have no seal (their seal could not be written)
    redacted: list[Redaction] = field(default_factory=list)  # seals a redaction rewrote

    @property
    def intact(self) -> bool:
        return not self.breaks and not self.unsealed


ENDED = (Turn.Status.DONE, Turn.Status.WAITING, Turn.Status.FAILED, Turn.Status.INTERRUPTED)


def _seals(organisation_id: int) -> Iterator[TraceSeal]:
    return (
        TraceSeal.objects.filter(organisation_id=organisation_id)
        .order_by("seq")
        .iterator(chunk_size=500)
    )


def verify_chain(organisation_id: int, *, first_only: bool = False) -> Verdict:
    """Walk the organisation's seals in order; every break found (or only the first)."""
    breaks: list[Break] = []
    redacted: list[Redaction] = []
    previous, expected_seq, count = "", 1, 0
    turns = Turn.objects.filter(organisation_id=organisation_id)
    redactions = redactions_of(organisation_id)
    for seal in _seals(organisation_id):
        count += 1
        found = check_seal(seal, previous, expected_seq, turns, redactions)
        breaks.extend(found)
        covering = redaction_covering(seal, redactions)
        if covering is not None:
            redacted.append(covering)
        if found and first_only:
            break
        previous, expected_seq = seal.digest, seal.seq + 1
    unsealed = _unsealed(organisation_id, turns)
    return Verdict(organisation_id, count, breaks, unsealed, redacted)


def _unsealed(organisation_id: int, turns: QuerySet[Turn]) -> list[str]:
    """Turns that ended since the organisation's first seal and have none (turns that ended
    before the ledger existed never had one)."""
    seals = TraceSeal.objects.filter(organisation_id=organisation_id)
    first = seals.order_by("seq").values_list("sealed_at", flat=True).first()
    if first is None:
        return []
    sealed = set(seals.filter(kind=TraceSeal.Kind.TURN).values_list("turn_id", flat=True))
    ended = turns.filter(status__in=ENDED, finished_at__gte=first).values_list("pk", flat=True)
    return sorted(str(pk) for pk in ended if str(pk) not in sealed)


def check_seal(
    seal: TraceSeal,
    previous: str,
    expected_seq: int,
    turns: QuerySet[Turn],
    redactions: dict[int, list[Redaction]] | None = None,
) -> list[Break]:
    """Where one seal no longer vouches for its turn: its place in the chain (`expected_seq`,
    `previous` digest), its own digest, and the turn's rows read again (`turns` holds it).
    A content rewritten by a redaction entry (`redactions`, read when not given) is no break;
    its rows are compared with the redacted content, so a later edit still is."""
    found: list[Break] = []

    def broken(reason: str, detail: str) -> None:
        found.append(Break(seal.seq, seal.turn_id, reason, detail))

    if seal.seq != expected_seq:
        broken("gap", f"expected seal #{expected_seq}, found #{seal.seq}")
    if seal.previous != previous:
        broken("link", "does not follow the previous seal")
    if seal.kind == TraceSeal.Kind.REDACTION:
        if digest_of(seal.previous, seal.content) != seal.digest:
            broken("digest", "the redaction record was changed")
        return found
    if digest_of(seal.previous, seal.content) != seal.digest:
        if redactions is None:
            redactions = redactions_of(seal.organisation_id)
        if redaction_covering(seal, redactions) is None:
            broken("digest", "the seal's content or digest was changed")
            return found  # its content cannot be trusted to compare rows against
    turn = turns.filter(pk=seal.turn_id).first()
    if turn is None:
        broken("missing_turn", "the turn is gone")
        return found
    stored = json.loads(seal.content)
    now = json.loads(canonical(turn_content(turn, seal.sealed_at)))
    for detail in differences(stored, now):
        broken("rows", detail)
    return found


def differences(stored: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """Which rows read differently now: "tool_calls #12: arguments", "agent_runs #3: removed"."""
    details: list[str] = []
    for section in sorted(set(stored) | set(now)):
        before, after = stored.get(section), now.get(section)
        if before == after:
            continue
        if isinstance(before, list) and isinstance(after, list):
            old = {row.get("id"): row for row in before}
            new = {row.get("id"): row for row in after}
            for pk in sorted(set(old) | set(new), key=str):
                if pk not in new:
                    details.append(f"{section} #{pk}: removed")
                elif pk not in old:
                    details.append(f"{section} #{pk}: added afterwards")
                elif old[pk] != new[pk]:
                    fields = sorted(k for k in set(old[pk]) | set(new[pk])
                                    if old[pk].get(k) != new[pk].get(k))  # fmt: skip
                    details.append(f"{section} #{pk}: {', '.join(fields)}")
        elif isinstance(before, dict) and isinstance(after, dict):
            fields = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
            details.append(f"{section}: {', '.join(fields)}")
        else:
            details.append(f"{section}: changed")
    return details
