"""The tamper-evident trace (T1): every ended turn sealed into its conversation's hash chain,
and the conversations' chains anchored into their organisation's chain.

When a turn ends (answered, paused for a decision, failed or interrupted) `seal_turn` takes
what it left in the database — the user's message and the answer with its trace, the sub-agent
runs, the tool calls, the model calls, the actions it held and the decision it carried out — as
canonical JSON, and appends a `TraceSeal` to its conversation's chain (`chain`, the
conversation's id) whose digest is SHA-256 over the previous seal's digest and that JSON. Only
what cannot change honestly afterwards goes in: a held action's request, not its later status;
a turn's identity, not its status (a paused turn is closed by its decision). What the turn
holds is sealed as it holds it — the two messages (it just stored its answer and loaded its
question), and, from a turn that ran (`hold_rows`), its sub-agent runs and tool calls (every
one goes through its run) and the model calls and approvals it cannot have made (no model
client, no held call); JSON fields pass through their encoder, so they read exactly as stored.
Any other table is read back inside the turn's own transaction. Either way what is sealed is
exactly what a later read returns — `verify_chain` reads every table back to check it.

No row is locked per turn: a conversation's turns run one at a time under its runner's lease,
and two seals racing for one seq meet at the unique (chain, seq) and retry. Every minute the
scheduled job (`copilot.anchor_trace_chains`, capataz/schedules.py) — and `verify_trace` or the
admin's action, before they read — appends one `anchor` entry to the organisation's chain (the
one place that takes the organisation's row) listing the head (seq, digest) each conversation
chain reached since its last anchor, and flags the seals it covers as anchored. Seals written
before the conversation chains are turn seals in the organisation's chain and verify as before.

`verify_chain` walks the organisation's chain, then each conversation's, and reports the first
place where
  - a seal's digest no longer matches its content and the previous digest (a seal or an anchor
    was edited),
  - a seal does not follow the previous one (one was removed or inserted),
  - the rows the seal vouches for no longer read the same (a trace row was edited, removed or
    back-dated into the turn),
  - a conversation seal is not the one its anchor vouched for (a seal forged with its rows and
    every digest after it recomputed), a chain ends before the head an anchor vouched for (cut
    after its last anchor), or seals are flagged anchored that no anchor vouches for (the last
    anchor was removed),
naming the chain, the seal, the turn and the row. `manage.py verify_trace` and the admin's
action run it; a tail cut before any anchor shows as a turn that ended without a seal.

Forgetting a customer (capataz/forgetting.py) rewrites sealed content: `redact_seals` appends a
redaction entry to the organisation's chain naming each seal it rewrote (its turn, digest and
the new content's hash), who and when, and `verify_chain` reports those seals as redacted — not
as breaks, and not silently. Content that no redaction entry describes is still a break; the
digests anchors vouched for never change.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F, JSONField, Min, Model, QuerySet
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


def _stored(obj: Model, fields: tuple[str, ...]) -> dict[str, Any]:
    """A row held in memory as a read would return it: JSON fields through their own encoder."""
    row = _row(obj, fields)
    for field_ in obj._meta.concrete_fields:
        if isinstance(field_, JSONField) and field_.name in row:
            encoded = json.dumps(row[field_.name], cls=field_.encoder)
            row[field_.name] = json.loads(encoded, cls=field_.decoder)
    return row


def _messages(turn: Turn, held: bool) -> list[dict[str, Any]]:
    """The turn's question and answer: as the turn holds them when it has both (it has just
    stored the answer and loaded the question with the turn), else read back."""
    ids = sorted(pk for pk in (turn.message_id, turn.answer_id) if pk)
    if held:
        cached = turn._state.fields_cache
        kept = [cached[name] for name in ("message", "answer") if name in cached]
        mine = [m for m in kept if m is not None and m.organisation_id == turn.organisation_id]
        if sorted(m.pk for m in mine) == ids:
            return [_stored(m, _MESSAGE_FIELDS) for m in sorted(mine, key=lambda m: m.pk)]
    rows = Message.objects.filter(organisation_id=turn.organisation_id, pk__in=ids)
    return _rows(rows, _MESSAGE_FIELDS)


# What a turn that ran holds of the rows it wrote, by table, for its seal (`hold_rows`).
_HELD_ROWS = "_sealable_rows"


def hold_rows(turn: Turn, rows: dict[str, list[Model] | None]) -> None:
    """Give the seal the rows the turn wrote and holds, by table (`agent_runs`, `tool_calls`,
    `model_calls`, `approvals_requested`): a list is every row of that table the turn wrote
    (empty: none), None has the seal read the table. Only a producer that recorded every row
    of a table may give it (copilot/answering.py does, from the turn's run)."""
    turn.__dict__[_HELD_ROWS] = rows


def _table(
    turn: Turn, held: bool, name: str, queryset: QuerySet[Any], fields: tuple[str, ...],
    sealed_at: datetime,
) -> list[dict[str, Any]]:  # fmt: skip
    """A table's rows of the turn: as the turn holds them when it gave them all (each stored,
    its own, not after the seal), else read back."""
    kept = turn.__dict__.get(_HELD_ROWS, {}).get(name) if held else None
    if kept is not None and all(
        row.pk is not None and row.organisation_id == turn.organisation_id  # type: ignore[attr-defined]
        and str(row.turn_id) == str(turn.pk) and row.created_at <= sealed_at  # type: ignore[attr-defined]
        for row in kept
    ):  # fmt: skip
        return [_stored(row, fields) for row in sorted(kept, key=lambda row: row.pk)]
    return _rows(queryset.filter(created_at__lte=sealed_at), fields)


def turn_content(turn: Turn, sealed_at: datetime, *, held: bool = False) -> dict[str, Any]:
    """What the turn left in the database, by table; rows made after the seal are not its own.
    `held`: its messages, and the tables whose rows it gave (`hold_rows`), come from what the
    turn holds (the seal; a check reads them all)."""
    org, turn_id = turn.organisation_id, str(turn.pk)

    def table(name: str, queryset: QuerySet[Any], fields: tuple[str, ...]) -> Any:
        return _table(turn, held, name, queryset, fields, sealed_at)

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
        "messages": _messages(turn, held),
        "agent_runs": table(
            "agent_runs",
            AgentRun.objects.filter(organisation_id=org, turn_id=turn_id),
            _AGENT_RUN_FIELDS,
        ),
        "tool_calls": table(
            "tool_calls",
            ToolCall.objects.filter(organisation_id=org, turn_id=turn_id),
            _TOOL_CALL_FIELDS,
        ),
        "model_calls": table(
            "model_calls",
            ModelCall.objects.filter(organisation_id=org, turn_id=turn_id),
            _MODEL_CALL_FIELDS,
        ),
        "approvals_requested": table(
            "approvals_requested",
            PendingAction.objects.filter(organisation_id=org, turn_id=turn_id),
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
    """Append the ended turn to its conversation's chain (once: a turn sealed before is left).

    Called inside the transaction that ends the turn, so the seal commits with its answer. No
    row is locked: a conversation's turns run one at a time (its runner's lease), and two seals
    racing for one seq meet at the unique (chain, seq) — the loser reads the new head again.
    """
    sealed_at = timezone.now()  # a turn sealed before fails the unique turn_id: left as it was
    return _append(
        turn.organisation_id, turn.conversation_id, str(turn.pk), TraceSeal.Kind.TURN,
        lambda: canonical(turn_content(turn, sealed_at, held=True)), sealed_at,
    )  # fmt: skip


def _append(
    organisation_id: int, chain: int | None, entry_id: str, kind: str,
    content: Callable[[], str], sealed_at: datetime,
) -> TraceSeal | None:  # fmt: skip
    """Link an entry after its chain's head, in a savepoint of its own: the content is built
    inside it (a failed read rolls back only the seal) and once, however often the seq is taken."""
    text = ""
    for _attempt in range(SEAL_ATTEMPTS):
        try:
            with transaction.atomic():
                text = text or content()
                return _link(organisation_id, chain, entry_id, kind, text, sealed_at)
        except IntegrityError:  # another entry took that seq (SQLite takes no row locks)
            if TraceSeal.objects.filter(turn_id=entry_id).exists():
                return None
    raise RuntimeError(f"could not seal {kind} {entry_id}")


def _link(
    organisation_id: int, chain: int | None, entry_id: str, kind: str, text: str,
    sealed_at: datetime,
) -> TraceSeal:  # fmt: skip
    """The organisation's chain (anchors and redactions: a few entries an hour) is guarded by
    the organisation's row; a conversation's chain by the unique (chain, seq) alone."""
    if chain is None:
        Organisation.objects.select_for_update().filter(pk=organisation_id).first()
    last = (
        TraceSeal.objects.filter(organisation_id=organisation_id, chain=chain)
        .order_by("-seq")
        .only("seq", "digest")
        .first()
    )
    previous, seq = (last.digest, last.seq + 1) if last else ("", 1)
    return TraceSeal.objects.create(
        organisation_id=organisation_id, chain=chain, seq=seq, kind=kind, turn_id=entry_id,
        content=text, previous=previous, digest=digest_of(previous, text), sealed_at=sealed_at,
    )  # fmt: skip


# --- anchoring the conversations' chains into the organisation's -------------------------------


def anchor_chains(organisation_id: int) -> TraceSeal | None:
    """Vouch for every conversation chain that grew since it was last anchored: one anchor
    entry in the organisation's chain lists each one's head (conversation, seq, digest), and
    the seals it covers are flagged anchored in the same transaction. None: nothing new."""
    with transaction.atomic():
        Organisation.objects.select_for_update().filter(pk=organisation_id).first()
        fresh = TraceSeal.objects.filter(
            organisation_id=organisation_id, chain__isnull=False, anchored=False
        )
        pks, heads = _heads(
            fresh.order_by("chain", "seq").values_list("pk", "chain", "seq", "digest")
        )
        if not heads:
            return None
        text = canonical({"anchor": {"heads": heads}})
        entry = _append(organisation_id, None, str(uuid.uuid4()), TraceSeal.Kind.ANCHOR,
                        lambda: text, timezone.now())  # fmt: skip
        TraceSeal.objects.filter(pk__in=pks).update(anchored=True)
    return entry


def _heads(
    rows: Iterable[tuple[int, int | None, int, str]],
) -> tuple[list[int], list[dict[str, Any]]]:
    """The seals read and, per conversation, the last of them (rows come in chain, seq order)."""
    pks, last = [], {}
    for pk, chain, seq, digest in rows:
        pks.append(pk)
        last[chain] = {"conversation": chain, "seq": seq, "digest": digest}
    return pks, list(last.values())


def anchor_all() -> int:
    """Anchor every organisation's grown chains (the scheduled job); how many anchors written."""
    waiting = TraceSeal.objects.filter(chain__isnull=False, anchored=False)
    organisations = waiting.values_list("organisation_id", flat=True).distinct()
    return sum(anchor_chains(pk) is not None for pk in sorted(set(organisations)))


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
    for seal in seals.order_by("pk").iterator(chunk_size=500):
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
    text = canonical({"redaction": {"by": by, "at": _utc(at), "seals": covered}})
    return _append(organisation_id, None, str(uuid.uuid4()), TraceSeal.Kind.REDACTION,
                   lambda: text, at)  # fmt: skip


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


def redactions_of(organisation_id: int) -> dict[str, list[Redaction]]:
    """Every sealed turn's redactions, by the turn's id (a seq names a seal only within its
    chain; a turn has one seal). Only entries whose own digest
    holds count: an edited entry vouches for nothing (and breaks the chain where it stands)."""
    found: dict[str, list[Redaction]] = {}
    entries = TraceSeal.objects.filter(
        organisation_id=organisation_id, kind=TraceSeal.Kind.REDACTION
    ).order_by("seq")
    for entry in entries:
        if digest_of(entry.previous, entry.content) != entry.digest:
            continue
        record = json.loads(entry.content)["redaction"]
        for item in record["seals"]:
            found.setdefault(item["turn"], []).append(
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


def redaction_covering(seal: TraceSeal, redactions: dict[str, list[Redaction]]) -> Redaction | None:
    """The redaction that left this seal's content exactly as it now reads, if one did."""
    content = _sha(seal.content)
    for item in reversed(redactions.get(seal.turn_id, [])):
        if item.digest == seal.digest and item.content == content:
            return item
    return None


# --- verifying --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Break:
    seq: int
    turn_id: str
    reason: str  # "digest", "link", "gap", "rows", "missing_turn", "anchor", "cut"
    detail: str
    chain: int | None = None  # the conversation whose chain breaks (None: the organisation's)


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
    """The organisation's own chain first (its anchors are read before the seals they vouch
    for), then each conversation's chain, each in seq order."""
    return (
        TraceSeal.objects.filter(organisation_id=organisation_id)
        .order_by(F("chain").asc(nulls_first=True), "seq")
        .iterator(chunk_size=500)
    )


@dataclass
class _Anchors:
    """What the organisation's anchors vouch for, held against the conversation chains."""

    vouched: dict[tuple[int, int], tuple[int, str]] = field(
        default_factory=dict
    )  # → anchor, digest
    upto: dict[int, tuple[int, int]] = field(default_factory=dict)  # chain → seq, its anchor
    flagged: dict[int, int] = field(default_factory=dict)  # chain → last seq flagged anchored
    last: dict[int, int] = field(default_factory=dict)  # chain → its last seq

    def see(self, seal: TraceSeal) -> list[Break]:
        if seal.chain is not None:
            return self._check(seal)
        if seal.kind == TraceSeal.Kind.ANCHOR and _holds(seal):  # an edited one vouches nothing
            for head in json.loads(seal.content)["anchor"]["heads"]:
                chain, seq = head["conversation"], head["seq"]
                self.vouched[(chain, seq)] = (seal.seq, head["digest"])
                self.upto[chain] = max(self.upto.get(chain, (0, 0)), (seq, seal.seq))
        return []

    def _check(self, seal: TraceSeal) -> list[Break]:
        """A conversation seal against the anchor that vouched for it, if one did."""
        chain = seal.chain
        assert chain is not None
        self.last[chain] = seal.seq
        if seal.anchored:
            self.flagged[chain] = seal.seq
        anchor, digest = self.vouched.get((chain, seal.seq), (0, seal.digest))
        if digest == seal.digest:
            return []
        detail = f"not the seal anchor #{anchor} vouched for"
        return [Break(seal.seq, seal.turn_id, "anchor", detail, chain)]

    def ends(self) -> list[Break]:
        """Chains cut short of their anchored head, and anchored flags no anchor explains (the
        anchor that set them was removed)."""
        found = []
        for chain in sorted(set(self.upto) | set(self.flagged)):
            (seq, anchor), last = self.upto.get(chain, (0, 0)), self.last.get(chain, 0)
            if last < seq:
                detail = f"the chain ends at seal #{last}; anchor #{anchor} vouched for #{seq}"
                found.append(Break(seq, "", "cut", detail, chain))
            elif self.flagged.get(chain, 0) > seq:
                detail = "anchored, but no anchor vouches for it (an anchor was removed)"
                found.append(Break(self.flagged[chain], "", "anchor", detail, chain))
        return found


def _holds(seal: TraceSeal) -> bool:
    return digest_of(seal.previous, seal.content) == seal.digest


def verify_chain(organisation_id: int, *, first_only: bool = False) -> Verdict:
    """Walk the organisation's chain and then each conversation's, in order, holding each
    conversation seal against the anchors; every break found (or only the first)."""
    breaks: list[Break] = []
    redacted: list[Redaction] = []
    heads: dict[int | None, tuple[str, int]] = {}  # chain → its previous digest, next seq
    turns, anchors = Turn.objects.filter(organisation_id=organisation_id), _Anchors()
    redactions = redactions_of(organisation_id)
    for seal in _seals(organisation_id):
        previous, expected_seq = heads.get(seal.chain, ("", 1))
        found = check_seal(seal, previous, expected_seq, turns, redactions) + anchors.see(seal)
        breaks.extend(found)
        covering = redaction_covering(seal, redactions)
        if covering is not None:
            redacted.append(covering)
        if found and first_only:
            break
        heads[seal.chain] = (seal.digest, seal.seq + 1)
    else:
        breaks.extend(anchors.ends()[: 1 if first_only and not breaks else None])
    seals = TraceSeal.objects.filter(organisation_id=organisation_id).count()
    return Verdict(organisation_id, seals, breaks, _unsealed(organisation_id, turns), redacted)


def _unsealed(organisation_id: int, turns: QuerySet[Turn]) -> list[str]:
    """Turns that ended since the organisation's first seal and have none (turns that ended
    before the ledger existed never had one)."""
    seals = TraceSeal.objects.filter(organisation_id=organisation_id)
    first = seals.aggregate(first=Min("sealed_at"))["first"]
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
    redactions: dict[str, list[Redaction]] | None = None,
) -> list[Break]:
    """Where one seal no longer vouches for its turn: its place in the chain (`expected_seq`,
    `previous` digest), its own digest, and the turn's rows read again (`turns` holds it).
    A content rewritten by a redaction entry (`redactions`, read when not given) is no break;
    its rows are compared with the redacted content, so a later edit still is."""
    found: list[Break] = []

    def broken(reason: str, detail: str) -> None:
        found.append(Break(seal.seq, seal.turn_id, reason, detail, seal.chain))

    if seal.seq != expected_seq:
        broken("gap", f"expected seal #{expected_seq}, found #{seal.seq}")
    if seal.previous != previous:
        broken("link", "does not follow the previous seal")
    if seal.kind != TraceSeal.Kind.TURN:  # a redaction or an anchor: vouched for by its digest
        if not _holds(seal):
            broken("digest", f"the {seal.kind} record was changed")
        return found
    if not _holds(seal):
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
