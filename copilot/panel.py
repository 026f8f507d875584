"""What the CopilotPanel shows around the conversation (S1): the record under discussion beside
the chat, and the actions under each answer.

- `subject_for`: the customer (or job) the conversation's working state is about
  (copilot/orchestration/memory.py keeps it), with what the office needs at hand: contact,
  address, open jobs, balance, equipment and the learnt profile (P3).
- `answer_actions`: per answer, the records its turn wrote (to open them), the held actions it
  filed (a card a manager decides inline, through `approvals.services.action_decide`), and an
  *undo* where the registry gives the intent that wrote a job an inverse (`undone_by`: a booking
  is undone by cancel_job) — as a new turn that calls the inverse intent's tool with the job's
  id through the Runner and the approval gate, never by writing the job here. Undo is offered to
  the conversation's author only, once per answer.

Every read is scoped to the conversation's organisation.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from agents.base import CUSTOMER_ID, JOB_ID, Chain, Runner, Step
from agents.events import AcceptedEvent
from agents.models import ToolCall
from agents.selectors import intent_specs
from approvals.models import PendingAction
from approvals.selectors import record_links
from approvals.services import may_decide_as
from business.forms import PROFILE_LABELS
from business.models import Customer, Equipment, Job, Membership
from business.profiles import customer_profile_fields, profile_rows
from business.selectors import invoices_with_balance, open_jobs
from common.wording import say
from copilot import eventlog
from copilot.models import Conversation, Message, Turn
from copilot.orchestration.memory import RECORDS
from copilot.orchestration.state import TurnRun, UndoPayload
from copilot.services import message_add
from nlu.values import Entities, IntentSpec, IntentSpecs, specs_by_name

OPEN_JOBS_SHOWN = 5
# A system note's trace: {"message": answer id, "job_id": …, "intent": the inverse, "tool": its}.
UNDO_KEY = "undo"


# --- the record under discussion ---------------------------------------------------------------


@dataclass(frozen=True)
class Subject:
    customer: Customer
    job: Job | None
    address: Any
    open_jobs: list[Job]
    open_count: int
    balance: Decimal
    equipment: list[Equipment]
    profile: list[Any]


def subject_for(conversation: Conversation) -> Subject | None:
    """The customer under discussion (or the customer of the job under discussion), or None."""
    state = conversation.state or {}
    organisation = conversation.organisation
    job = None
    job_id = state.get(JOB_ID)
    if isinstance(job_id, int):
        job = (
            Job.objects.filter(organisation=organisation, pk=job_id)
            .select_related("customer", "technician", "address")
            .first()
        )
    customer = job.customer if job is not None else None
    customer_id = state.get(CUSTOMER_ID)
    if customer is None and isinstance(customer_id, int):
        customer = Customer.objects.filter(organisation=organisation, pk=customer_id).first()
    if customer is None:
        return None
    jobs = open_jobs(organisation, customer=customer)
    learnt = customer_profile_fields(organisation.pk, customer.pk)
    return Subject(
        customer=customer, job=job,
        address=customer.addresses.order_by("-is_primary", "pk").first(),
        open_jobs=list(jobs[:OPEN_JOBS_SHOWN]), open_count=jobs.count(),
        balance=invoices_with_balance(organisation, customer).owed,
        equipment=list(customer.equipment.order_by("kind", "pk")[:5]),
        profile=profile_rows(learnt, PROFILE_LABELS),
    )  # fmt: skip


# --- actions on answers ------------------------------------------------------------------------


@dataclass
class AnswerActions:
    message_id: int
    links: list[dict[str, Any]] = field(default_factory=list)
    approvals: list[dict[str, Any]] = field(default_factory=list)
    undo_job: int | None = None  # the booking this answer made, which its author may cancel
    undo_by: str = ""  # the intent that undoes it (the registry's `undone_by`)
    undo_tool: str = ""  # …and its tool
    undone: bool = False  # an undo was already asked for


def approval_card(
    action: PendingAction, membership: Membership | None, language: str
) -> dict[str, Any]:
    """What a card shows of one held action; `may_decide` only for a manager (or admin) whose
    role the action's rules accept — an operator sees it read-only."""
    is_open = action.status == PendingAction.Status.PENDING and not _expired(action)
    decider = action.decided_by
    return {
        "action": action,
        "summary": action.summary_in(language),
        "links": record_links(action.links),
        "open": is_open,
        "may_decide": is_open and may_decide_as(membership, action),
        "decider": (decider.get_full_name() or decider.get_username()) if decider else "",
    }


def _expired(action: PendingAction) -> bool:
    return action.expires_at is not None and action.expires_at <= timezone.now()


def answer_actions(
    conversation: Conversation,
    answers: list[Message],
    *,
    user: Any,
    membership: Membership | None,
    language: str,
) -> dict[int, AnswerActions]:
    """The actions under each of these answers, in a fixed number of queries."""
    by_turn = {
        str(m.trace.get("turn_id")): m
        for m in answers
        if m.role == Message.Role.ASSISTANT
        and isinstance(m.trace, dict)
        and _is_uuid(m.trace.get("turn_id"))
    }
    found = {m.pk: AnswerActions(m.pk) for m in by_turn.values()}
    if not by_turn:
        return found
    turns = {
        str(t.pk): t
        for t in Turn.objects.filter(conversation=conversation, pk__in=list(by_turn)).only(
            "pk", "user_id", "message_id"
        )
    }
    records: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for record in (conversation.state or {}).get(RECORDS, []):
        if isinstance(record, dict) and isinstance(record.get("message"), int):
            records[record["message"]].append(record)
    specs = specs_by_name(intent_specs(conversation.organisation))
    inverses = _inverses(specs)
    booked = set(  # the undoable intent's own tool ran, not held for a manager
        ToolCall.objects.filter(
            organisation_id=conversation.organisation_id, turn_id__in=list(by_turn),
            intent__in=list(inverses), tool__in=[specs[name].tool for name in inverses],
            ok=True, approval_id__isnull=True,
        ).values_list("turn_id", flat=True)
    )  # fmt: skip
    held: dict[str, list[PendingAction]] = defaultdict(list)
    for action in (
        PendingAction.objects.filter(
            organisation_id=conversation.organisation_id, turn_id__in=list(by_turn)
        )
        .select_related("decided_by")
        .order_by("pk")
    ):
        held[action.turn_id].append(action)
    undone = set(
        Message.objects.filter(
            conversation=conversation,
            client_id__in=[_undo_client_id(m.pk) for m in by_turn.values()],
        ).values_list("client_id", flat=True)
    )
    candidates: dict[int, tuple[int, IntentSpec]] = {}
    for turn_id, message in by_turn.items():
        turn = turns.get(turn_id)
        actions = found[message.pk]
        written = list(records.get(turn.message_id, [])) if turn else []
        actions.links = [
            {**link, "label": _record_label(link)} for link in record_links(written) if link["url"]
        ][:3]
        actions.approvals = [approval_card(a, membership, language) for a in held.get(turn_id, [])]
        actions.undone = _undo_client_id(message.pk) in undone
        if turn is None or turn_id not in booked or turn.user_id != getattr(user, "pk", None):
            continue
        if conversation.user_id != getattr(user, "pk", None):
            continue
        jobs = [r for r in written if r.get("kind") == "job" and r.get("intent") in inverses]
        if len(jobs) == 1 and isinstance(jobs[0]["id"], int):
            candidates[message.pk] = (jobs[0]["id"], inverses[jobs[0]["intent"]])
    still_open = set(
        Job.objects.filter(
            organisation_id=conversation.organisation_id,
            pk__in=[job_id for job_id, _kind in candidates.values()], status__in=Job.OPEN_STATUSES,
        ).values_list("pk", flat=True)
    )  # fmt: skip
    for message_id, (job_id, inverse) in candidates.items():
        if job_id in still_open or found[message_id].undone:
            actions = found[message_id]
            actions.undo_job, actions.undo_by, actions.undo_tool = (
                job_id,
                inverse.name,
                inverse.tool,
            )
    return found


def _inverses(specs: IntentSpecs) -> dict[str, IntentSpec]:
    """Intent → the intent that undoes what it wrote (the registry's `undone_by`), for those
    that have one with a tool."""
    return {
        name: specs[spec.undone_by]
        for name, spec in specs.items()
        if spec.undone_by in specs and specs[spec.undone_by].tool
    }


def _is_uuid(value: object) -> bool:
    """A turn id as stored: anything else (an old or hand-made trace) has no turn to act on."""
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return value is not None


def _record_label(link: dict[str, Any]) -> str:
    """How the "open" button names a record: jobs by number, the rest by their label."""
    number = link["url"].rstrip("/").rsplit("/", 1)[-1]
    if link["kind"] == "job":
        return gettext("job #%(id)s") % {"id": number}
    return str(link["label"])


def _undo_client_id(message_id: int) -> str:
    # A message's client_id is stored once per conversation (a unique constraint): the undo of
    # one answer can be asked for once, whatever races or double clicks.
    return f"undo-{message_id}"


class UndoRefused(Exception):
    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code  # not_author, nothing_to_undo, already


@dataclass(frozen=True)
class UndoAsked:
    conversation_id: int
    organisation_id: int
    message_id: int
    job_id: int


def undo_request(
    conversation: Conversation, answer: Message, *, user: Any, language: str
) -> UndoAsked:
    """Ask for the undo of `answer`'s booking: a note and a queued turn in the conversation
    (the caller dispatches it once this commits). Refused for anyone but the author, for an
    answer with nothing to undo, and the second time."""
    if conversation.user_id != user.pk:
        raise UndoRefused("not_author")
    actions = answer_actions(conversation, [answer], user=user, membership=None, language=language)
    mine = actions.get(answer.pk)
    if mine is not None and mine.undone:
        raise UndoRefused("already")
    if mine is None or mine.undo_job is None:
        raise UndoRefused("nothing_to_undo")
    job_id = mine.undo_job
    undo: UndoPayload = {
        "message": answer.pk, "job_id": job_id, "intent": mine.undo_by, "tool": mine.undo_tool
    }  # fmt: skip
    note = say(language, _("Undo: cancel job #%(job)s, just booked."), job=job_id)
    try:
        with transaction.atomic():
            message = message_add(
                conversation=conversation, role=Message.Role.SYSTEM, text=note, language=language,
                trace={UNDO_KEY: undo},
                client_id=_undo_client_id(answer.pk),
            )  # fmt: skip
            turn = Turn.objects.create(
                organisation_id=conversation.organisation_id, conversation=conversation,
                message=message, user_id=user.pk, created_at=message.created_at,
                kind=Turn.Kind.UNDO, payload=undo,
            )  # fmt: skip
            eventlog.publish(
                conversation.organisation_id, conversation.pk,
                AcceptedEvent(type="accepted", turn_id=str(turn.pk), message_id=message.pk,
                              text=note, client_id=message.client_id),
            )  # fmt: skip
    except IntegrityError as exc:
        raise UndoRefused("already") from exc
    return UndoAsked(conversation.pk, conversation.organisation_id, message.pk, job_id)


@dataclass
class UndoRun:
    reply: str
    trace: dict[str, Any] = field(default_factory=dict)
    held: bool = False


def run_undo(run: TurnRun, undo: UndoPayload, language: str) -> UndoRun:
    """The cancellation, through the same Runner as any step: the agent's whitelist, the
    approval gate (a cancellation is an *execute* tool: it waits for a manager), a ToolCall row."""
    job_id, tool = undo["job_id"], undo["tool"]
    trace: dict[str, Any] = {UNDO_KEY: undo, "tool": tool}
    agent = next((a for a in run.agents.values() if tool and tool in (a.tools or [])), None)
    if agent is None:
        nobody = _("Could not undo: no enabled agent may cancel job #%(job)s.")
        return UndoRun(say(language, nobody, job=job_id), trace)
    step = Step(index=0, intent=undo["intent"], agent=agent.name, confidence=1.0,
                text="", entities=Entities())  # fmt: skip
    runner = Runner(run.ctx, Chain(language), agent, step)
    reason = say(language, _("undone from the chat"))
    result = runner.call(tool, job_id=job_id, reason=reason)
    trace.update(ok=result.ok, held=runner.held, agent=agent.name)
    if runner.held:
        number = runner.held[0]
        text = say(
            language, _("I asked a manager to approve (#%(number)s) cancelling job #%(job)s."),
            number=number, job=job_id,
        )  # fmt: skip
        return UndoRun(text, trace, held=True)
    if result.ok:
        return UndoRun(
            say(language, _("Done: job #%(job)s is cancelled."), job=job_id), trace,
        )  # fmt: skip
    return UndoRun(
        say(language, _("Could not cancel job #%(job)s: %(error)s."), job=job_id,
            error=result.error), trace,
    )  # fmt: skip
