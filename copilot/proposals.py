"""An accepted suggestion's proposed call, run inside its turn (P2).

The call goes through the same `Runner.call` as any chat step — the agent's tool whitelist, the
approval gate, one ToolCall row, the tool events — on behalf of an enabled agent that has the
tool (the proactive agent first). The suggestion then says what came of it: done, still
accepted while a manager decides a held call (then as decided: `proposal_decided`), or back
to new when the call could not run (a slot taken since), so the operator can choose again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext, override
from django.utils.translation import gettext_lazy as _

from agents.base import Chain, Runner, Step
from agents.models import Agent, Suggestion
from agents.proactive.services import suggestion_settle
from agents.registry import ToolResult
from agents.step_lines import tool_line
from approvals.models import PendingAction
from common.wording import say
from copilot.orchestration.state import TurnRun
from nlu.values import Entities

State = Suggestion.State
Status = PendingAction.Status
PREFERRED_AGENT = "proactive"


@dataclass
class ProposalRun:
    reply: str
    trace: dict[str, Any] = field(default_factory=dict)


def _agent_for(run: TurnRun, tool: str) -> Agent | None:
    candidates = [agent for agent in run.agents.values() if tool in (agent.tools or [])]
    candidates.sort(key=lambda agent: agent.name != PREFERRED_AGENT)
    return candidates[0] if candidates else None


def run_proposal(run: TurnRun, suggestion_id: int, language: str) -> ProposalRun:
    organisation = run.ctx.organisation
    suggestion = Suggestion.objects.filter(pk=suggestion_id, organisation=organisation).first()
    trace: dict[str, Any] = {"suggestion_id": suggestion_id}
    if suggestion is None or suggestion.state != State.ACCEPTED:
        gone = say(language, _("That suggestion is no longer there to run."))
        return ProposalRun(gone, trace)
    agent = _agent_for(run, suggestion.tool)
    settle: dict[str, Any] = {"suggestion_id": suggestion.pk, "organisation_id": organisation.pk}
    if agent is None:
        suggestion_settle(**settle, state=State.NEW, outcome=f"{suggestion.tool}: no agent")
        missing = say(language, _("No enabled agent has the tool %(tool)s."), tool=suggestion.tool)
        return ProposalRun(missing, trace)
    step = Step(index=0, intent="suggestion", agent=agent.name, confidence=1.0, text="",
                entities=Entities())  # fmt: skip
    runner = Runner(run.ctx, Chain(language), agent, step)
    result = runner.call(suggestion.tool, **suggestion.arguments)
    trace.update(tool=suggestion.tool, ok=result.ok, held=runner.held, agent=agent.name)
    if runner.held:
        held = runner.held[0]
        suggestion_settle(**settle, state=State.ACCEPTED, outcome=f"held for approval #{held}")
        text = say(language, _("It waits for a manager's approval (#%(id)s)."), id=held)
    elif result.ok:
        suggestion_settle(**settle, state=State.DONE, outcome=result.summary)
        text = _done(suggestion.tool, result, language)
    else:
        suggestion_settle(**settle, state=State.NEW, outcome=result.error)
        text = say(
            language, _("It could not run: %(error)s. The suggestion stays open."),
            error=result.error,
        )  # fmt: skip
    return ProposalRun(text, trace)


def _done(tool: str, result: ToolResult, language: str) -> str:
    """ "Listo: agendé el trabajo #389." — the call's panel line (agents/step_lines.py), not
    the tool's English summary, in the language of the operator who accepted it."""
    line = tool_line(tool, result, language)
    if line[1:2].islower():  # "Booked job…" reads on after the colon; "CUIT…" stays as it is
        line = line[:1].lower() + line[1:]
    with override("en" if language == "en" else "es-ar"):
        return gettext("Done: %(line)s.") % {"line": line}


def proposal_settled(action: PendingAction) -> None:
    """A held call came to an end (executed, rejected, expired, failed, stale): when it was an
    accepted suggestion's, the suggestion follows — whatever path ended it, a decision turn or
    not (an abandoned run is failed by a schedule, with no turn at all)."""
    suggestion = (
        Suggestion.objects.filter(
            organisation_id=action.organisation_id,
            turn_id=action.turn_id,
            state=Suggestion.State.ACCEPTED,
        )  # fmt: skip
        .exclude(turn_id="")
        .values_list("pk", flat=True)
        .first()
    )
    if suggestion is not None:
        proposal_decided(
            organisation_id=action.organisation_id, suggestion_id=suggestion,
            approval_id=action.pk,
        )  # fmt: skip


def proposal_decided(*, organisation_id: int, suggestion_id: int, approval_id: int) -> None:
    """A manager decided the call an accepted suggestion was held for: done once it ran;
    dismissed (with the manager's reason) when rejected; new again when it expired, failed or
    found its records changed — the operator may try again."""
    action = PendingAction.objects.filter(pk=approval_id, organisation_id=organisation_id).first()
    if action is None or action.status in (Status.PENDING, Status.APPROVED, Status.EXECUTING):
        return
    settle: dict[str, Any] = {"suggestion_id": suggestion_id, "organisation_id": organisation_id}
    outcome = f"#{action.pk} {action.status}"
    if action.status == Status.EXECUTED:
        suggestion_settle(**settle, state=State.DONE, outcome=outcome)
    elif action.status == Status.REJECTED:
        reason = action.decision_reason or outcome
        suggestion_settle(**settle, state=State.DISMISSED, outcome=outcome, dismiss_reason=reason)
    else:
        suggestion_settle(**settle, state=State.NEW, outcome=outcome)
