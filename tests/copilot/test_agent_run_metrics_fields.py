"""What each AgentRun records for the per-agent metrics (D2): the engine, who chose the step, the
agent a reroute came from, and whether the step asked the operator a question — written by the
real graph, then read back by the metrics."""

from __future__ import annotations

from typing import Any

import pytest

from agents.base import Clarification, Outcome, Runner, Step
from copilot.models import AgentRun, Conversation
from copilot.orchestration.graph import run_graph
from evaluation.agent_metrics import agent_metrics, period_from
from tests.conftest import Cast
from tests.copilot.conftest import Emitted, ScriptedRouter, make_run, task

pytestmark = pytest.mark.usefixtures("registry", "handlers")


def _turn(cast: Cast, conversation: Conversation, text: str) -> list[AgentRun]:
    run = make_run(cast.org, cast.operator, conversation, text, Emitted())
    run_graph(run)
    return list(AgentRun.objects.filter(turn_id=run.ctx.turn_id).order_by("pk"))


def test_a_reroute_is_recorded_on_both_runs_and_counted(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    # A read below its gate yields (a doubtful *write* asks instead: orchestration/write_gate.py).
    router.script["lo de Juan"] = [
        task("search_customer", 0.2, candidates=[("check_availability", 0.5)])
    ]

    yielded, taken = _turn(cast, conversation, "lo de Juan")

    assert (yielded.agent, yielded.yielded, yielded.source, yielded.rerouted_from) == (
        "customer", True, "classifier", "")  # fmt: skip
    assert (taken.agent, taken.source, taken.rerouted_from, taken.engine) == (
        "scheduling", "reroute", "customer", "embedded")  # fmt: skip
    period, _errors = period_from({"period": "today"}, cast.org)
    rows = {row.agent: row for row in agent_metrics(cast.org, period).rows}
    assert rows["customer"].misroutes == 1 and rows["customer"].yields == 1
    assert rows["scheduling"].reroutes == 1 and rows["scheduling"].misroutes == 0


def test_a_question_to_the_operator_is_recorded(
    cast: Cast, conversation: Conversation, router: ScriptedRouter, handlers: dict[str, Any]
) -> None:
    def asks(step: Step, runner: Runner) -> Outcome:
        return Outcome(
            text="¿Para qué día?", success=False,
            clarify=Clarification(question="¿Para qué día?", slot="date"),
        )  # fmt: skip

    handlers["check_availability"] = asks
    router.script["hay lugar?"] = [task("check_availability", 0.9)]

    (run,) = _turn(cast, conversation, "hay lugar?")

    assert run.clarified and run.engine == "embedded" and run.source == "classifier"
    period, _errors = period_from({"period": "today"}, cast.org)
    rows = {row.agent: row for row in agent_metrics(cast.org, period).rows}
    assert rows["scheduling"].clarifications == 1
