"""A paused turn, resumed by one decision (the held-turn graph's `resume` node).

Approved: the action is claimed for running (exactly one runner ever gets it), the records it
relied on are compared with what they are now — if they changed it does not run and becomes
*stale* — else the call runs as it was filed; then the steps that waited for it run, on the chain
as it was when the turn paused. Rejected, expired, stale or failed: the waiting steps are
dropped. Every case is said in the conversation, in the language of the request.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.utils.translation import gettext_lazy as _

from agents.base import Chain, Mutation, Outcome, Runner, Step
from agents.subjects import job_mutation
from approvals.models import PendingAction
from approvals.services import execution_finish, execution_start
from common.wording import say
from copilot.orchestration import replies
from copilot.orchestration.delegate import execute_step, gated, yield_step
from copilot.orchestration.state import Followup, StepRun, TurnRun, TurnState, Waiting
from copilot.selectors import consulted_for_turn
from nlu.values import Entities, IntentSpecs

Status = PendingAction.Status
NOT_RUN = frozenset({Status.REJECTED, Status.EXPIRED, Status.STALE, Status.FAILED})


def run_decision(run: TurnRun, state: TurnState, approval_id: int) -> Followup:
    delegation, language = state["delegation"], state["reading"].language
    action = PendingAction.objects.filter(
        pk=approval_id, organisation_id=run.ctx.organisation.pk
    ).first()
    if action is None or approval_id not in delegation.held:
        return Followup(approval_id=approval_id, status="unknown")
    settled = _settled(state)
    chain = delegation.chain.copy()
    problem = (
        _run_approved(run, chain, action, language) if action.status == Status.APPROVED else ""
    )
    action.refresh_from_db()
    waiting = [
        item for item in delegation.waiting
        if approval_id in item.approvals and item.step.index not in settled
    ]  # fmt: skip
    ready, dropped = _sort_waiting(waiting)
    specs = delegation.specs
    runs = [_run_waiting(run, chain, item, specs) for item in ready]
    lines = [replies.decision_line(_decision(action, language), problem, language)]
    lines += [r.outcome.text or replies.failure_line(_summary(r), language, specs) for r in runs]
    if dropped:
        lines.append(replies.dropped_line([step.intent for step in dropped], language, specs))
    labels = {name: a.label(language) for name, a in run.agents.items()}
    done = {item.step.index for item in ready} | {step.index for step in dropped}
    return Followup(
        approval_id=approval_id,
        status=str(action.status),
        runs=runs,
        dropped=dropped,
        reply="\n\n".join(lines),
        parts=[("", line) for line in lines],
        consulted=consulted_for_turn(run.ctx.organisation, run.ctx.turn_id, labels),
        trace={
            "approval_id": approval_id,
            "status": str(action.status),
            "settled_steps": sorted(settled | done),
            "ran": [r.step.intent for r in runs],
            "dropped": [step.intent for step in dropped],
        },
    )


def run_decision_alone(run: TurnRun, approval_id: int, language: str) -> Followup:
    """A decision whose paused turn cannot be resumed (its checkpoint is gone): the action
    alone, with nothing waiting on it."""
    action = PendingAction.objects.filter(
        pk=approval_id, organisation_id=run.ctx.organisation.pk
    ).first()
    if action is None:
        return Followup(approval_id=approval_id, status="unknown")
    problem = ""
    if action.status == Status.APPROVED:
        problem = _run_approved(run, Chain(language), action, language)
        action.refresh_from_db()
    line = replies.decision_line(_decision(action, language), problem, language)
    labels = {name: a.label(language) for name, a in run.agents.items()}
    return Followup(
        approval_id=approval_id, status=str(action.status), reply=line, parts=[("", line)],
        consulted=consulted_for_turn(run.ctx.organisation, run.ctx.turn_id, labels),
        trace={"approval_id": approval_id, "status": str(action.status), "resumed": False},
    )  # fmt: skip


def _settled(state: TurnState) -> set[int]:
    """Waiting steps an earlier decision on this turn already ran or dropped."""
    previous = state.get("followup")
    return set(previous.trace.get("settled_steps", [])) if previous is not None else set()


def _decision(action: PendingAction, language: str) -> replies.Decision:
    decider = action.decided_by
    name = (decider.get_full_name() or decider.get_username()) if decider is not None else ""
    return replies.Decision(
        approval_id=action.pk, status=str(action.status), summary=action.summary_in(language),
        decided_by=name, reason=action.decision_reason,
    )  # fmt: skip


def _run_approved(run: TurnRun, chain: Chain, action: PendingAction, language: str) -> str:
    """Run the approved call, once. What went wrong, as words ("" when it ran as filed)."""
    if not execution_start(action):
        return ""  # another runner claimed it first: its outcome is on the row
    agent = run.agents.get(action.agent)
    if agent is None:
        execution_finish(action, status=Status.FAILED, error=f"agent {action.agent} is disabled")
        return say(language, _("its agent is disabled"))
    step = Step(index=0, intent=action.intent, agent=action.agent, confidence=1.0, text="",
                entities=Entities())  # fmt: skip
    runner = Runner(run.ctx, chain, agent, step)
    try:
        result, changed = runner.call_approved(
            action.tool, action.arguments, approval_id=action.pk, relied_on=action.snapshot
        )
    except Exception as exc:  # a bug in the tool: failed, never retried silently
        execution_finish(action, status=Status.FAILED, error=f"{type(exc).__name__}: {exc}")
        return say(language, _("it failed to run"))
    if changed:
        execution_finish(
            action, status=Status.STALE, error="; ".join(changed), detail={"changed": changed}
        )
        return replies.changed_line(changed, language)
    if not result.ok:
        execution_finish(
            action, status=Status.FAILED, error=result.error, result=_json(result.data)
        )
        return result.error
    execution_finish(action, status=Status.EXECUTED, result=_json(result.data))
    chain.absorb(_mutations(result.data))
    return ""


def _json(data: dict[str, Any]) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(json.dumps(data, cls=DjangoJSONEncoder))
    return value


def _mutations(data: dict[str, Any]) -> list[Mutation]:
    """What the approved call made, for the steps that waited for it (the job it booked or
    moved, the customer it registered)."""
    made: list[Mutation] = []
    job, customer = data.get("job"), data.get("customer")
    if isinstance(job, dict) and "id" in job:
        made.append(job_mutation(job))
    if isinstance(customer, dict) and "id" in customer:
        made.append(
            Mutation(kind="customer", id=customer["id"], label=str(customer.get("name", "")))
        )
    return made


def _sort_waiting(waiting: list[Waiting]) -> tuple[list[Waiting], list[Step]]:
    """Waiting steps whose approvals have all run (ready), and those one of which never will
    (dropped); the others keep waiting for their remaining decisions."""
    ids = {approval for item in waiting for approval in item.approvals}
    statuses = dict(PendingAction.objects.filter(pk__in=ids).values_list("pk", "status"))
    ready: list[Waiting] = []
    dropped: list[Step] = []
    for item in waiting:
        states = {statuses.get(approval) for approval in item.approvals}
        if states <= {Status.EXECUTED}:
            ready.append(item)
        elif states & NOT_RUN:
            dropped.append(item.step)
    return ready, dropped


def _run_waiting(run: TurnRun, chain: Chain, item: Waiting, specs: IntentSpecs) -> StepRun:
    step = item.step
    agent = run.agents.get(step.agent)
    if agent is None:
        outcome = Outcome(text="", success=False, error=f"agent {step.agent} is not enabled")
        return StepRun(step=step, outcome=outcome, label=step.agent, ran=False)
    if gated(agent, step, specs):
        return yield_step(run, chain.language, agent, step, item.source)
    result = execute_step(run, chain, agent, step, item.source)
    chain.absorb(result.outcome.mutations)
    return result


def _summary(result: StepRun) -> replies.StepSummary:
    outcome = result.outcome
    return replies.StepSummary(
        intent=result.step.intent, text=outcome.text, success=outcome.success,
        yielded=outcome.yielded, ran=result.ran, pending=bool(outcome.pending_approvals),
    )  # fmt: skip
