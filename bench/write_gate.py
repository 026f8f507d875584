"""Coverage against wrong writes, per agent, with and without the write gate (issue 24.5).

    .venv/bin/python bench/write_gate.py [FILE.jsonl ...] [--reference-date 2026-11-18]

On a throw-away test database (like pytest-django) with the shipped registry, the embedded
router reads every case of the labelled files (default: evaluation/datasets/golden.jsonl and
phantom_dev.jsonl; PRODUCT.md's evaluation format) and each step is settled as the delegate node
would settle it, without running a handler:

- *before* (the gate of main): a step runs when its confidence clears its agent's threshold;
  below it, the step yields and the first candidate of another agent that clears its own gate
  runs instead;
- *after* (orchestration/write_gate.py): a doubtful write — a question, below its gate, a weak
  statement, a job write that names no job — runs the best reading that writes nothing, or asks
  (nothing runs); otherwise as before.

Per agent: **coverage** = the expected writes of that agent that ran / its expected writes;
**wrong writes** = messages in which that agent ran a write the message did not ask for (its
intent is not among the expected ones) / all messages. The conversation has no subject (the
golden set has no context), so continuations and corrections are not exercised here.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import zoneinfo
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "capataz.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

from agents.base import Step  # noqa: E402
from agents.defaults import default_specs  # noqa: E402
from agents.models import Agent  # noqa: E402
from agents.selectors import agents_for_org, intent_specs  # noqa: E402
from agents.services import agents_install_defaults  # noqa: E402
from business.models import Organisation  # noqa: E402
from copilot.orchestration import write_gate  # noqa: E402
from copilot.router_cache import router_for  # noqa: E402
from evaluation.metrics import Case  # noqa: E402
from evaluation.services import load_cases  # noqa: E402
from nlu import Context, Router, Vocabulary  # noqa: E402
from nlu.values import NEVER_ACTS, IntentSpecs, Task, with_role  # noqa: E402

DATASETS = ROOT / "evaluation" / "datasets"
DEFAULT_FILES = [DATASETS / "golden.jsonl", DATASETS / "phantom_dev.jsonl"]


@dataclass
class Tally:
    expected: Counter[str] = field(default_factory=Counter)  # expected writes per agent
    covered: Counter[str] = field(default_factory=Counter)
    wrong: Counter[str] = field(default_factory=Counter)  # messages with a wrong write
    messages: int = 0
    any_wrong: int = 0


def _step(task: Task) -> Step:
    return Step(
        index=0, intent=task.intent, agent=task.agent, confidence=task.confidence,
        text=task.text, entities=task.entities, candidates=list(task.candidates),
    )  # fmt: skip


def _reroute(step: Step, agents: dict[str, Agent], intent_agents: dict[str, str]) -> str | None:
    """The delegate's reroute: the first candidate of another agent that clears its gate."""
    for intent, score in step.candidates:
        agent = agents.get(intent_agents.get(intent, ""))
        if agent is not None and agent.name != step.agent:
            return intent if score >= agent.min_confidence else None
    return None


Writes = Callable[[str], bool]


def writes_of(organisation: Organisation) -> Writes:
    """Whether an intent writes, as the registry says (what orchestration.delegate.writes asks)."""
    writing = {spec.name for spec in intent_specs(organisation) if spec.writes}
    return writing.__contains__


def ran(
    task: Task,
    agents: dict[str, Agent],
    intents: dict[str, str],
    writes: Writes,
    *,
    gate: bool,
    specs: IntentSpecs | None = None,
) -> str | None:
    """The intent that runs for this step (None when it yields without a reroute or asks);
    `specs` the router's (as a turn's reading carries them), else the shipped registry's."""
    step, agent = _step(task), agents.get(task.agent)
    if agent is None:
        return None
    spec = (specs or default_specs()).get(step.intent)
    if gate and writes(step.intent) and (why := write_gate.doubt(agent, step, {}, spec=spec)):
        if os.environ.get("WRITE_GATE_SHOW"):
            print(f"   doubt {why}: {step.intent} {step.confidence:.2f} {step.text!r}")
        never = with_role(default_specs(), *NEVER_ACTS)
        quiet = write_gate.quiet_reading(
            step, intents, agents, writes, never=never, question=why == "question"
        )
        if quiet is not None or why != "entities":
            return quiet.intent if quiet is not None else None
    if step.intent != "unknown" and step.confidence < agent.min_confidence:
        return _reroute(step, agents, intents)
    return step.intent


def tally(
    cases: list[Case], router: Router, context: Context, agents: dict[str, Agent], writes: Writes
) -> dict[str, Tally]:
    tallies = {"before": Tally(), "after": Tally()}
    intents = dict(router.intents)
    for case in cases:
        tasks = router.understand(case.input, context).tasks
        for name, gate in (("before", False), ("after", True)):
            t = tallies[name]
            t.messages += 1
            settled = (
                ran(task, agents, intents, writes, gate=gate, specs=router.specs) for task in tasks
            )
            done = [i for i in settled if i]
            expected = [i for i in case.expected_intents if writes(i)]
            for intent in expected:
                t.expected[intents.get(intent, "?")] += 1
                t.covered[intents.get(intent, "?")] += intent in done
            wrong = {
                intents.get(i, "?") for i in done if writes(i) and i not in case.expected_intents
            }
            for agent in wrong:
                t.wrong[agent] += 1
            t.any_wrong += bool(wrong)
    return tallies


def report(title: str, tallies: dict[str, Tally]) -> None:
    before, after = tallies["before"], tallies["after"]
    print(f"\n{title}: {before.messages} messages")
    header = f"{'agent':<12} {'writes':>6}  {'coverage before → after':>24}"
    print(f"{header}  {'wrong writes before → after':>28}")
    for agent in sorted(set(before.expected) | set(before.wrong) | set(after.wrong)):
        expected = before.expected[agent]
        cov = (
            f"{before.covered[agent] / expected:6.1%} → {after.covered[agent] / expected:6.1%}"
            if expected
            else "—"
        )
        wrong_before = before.wrong[agent] / before.messages
        wrong = f"{wrong_before:6.2%} → {after.wrong[agent] / after.messages:6.2%}"
        print(f"{agent:<12} {expected:>6}  {cov:>24}  {wrong:>28}")
    total = sum(before.expected.values())
    print(
        f"{'all':<12} {total:>6}  {sum(before.covered.values()) / total:6.1%} → "
        f"{sum(after.covered.values()) / total:6.1%}  {' ' * 5}"
        f"{before.any_wrong / before.messages:6.2%} → {after.any_wrong / after.messages:6.2%}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="*", type=Path, default=DEFAULT_FILES)
    parser.add_argument("--reference-date", default="2026-11-18")
    args = parser.parse_args()
    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        organisation = Organisation.objects.create(name="Bench", slug="bench")
        agents_install_defaults(organisation=organisation)
        agents = {agent.name: agent for agent in agents_for_org(organisation) if agent.enabled}
        router = router_for(organisation)
        writes = writes_of(organisation)
        day = datetime.date.fromisoformat(args.reference_date)
        tz = organisation.timezone
        now = datetime.datetime.combine(day, datetime.time(10), tzinfo=zoneinfo.ZoneInfo(tz))
        context = Context(today=day, now=now, tz=tz, vocabulary=Vocabulary())
        print("agents' thresholds:", {name: a.min_confidence for name, a in sorted(agents.items())})
        everything: list[Case] = []
        for path in args.files:
            cases = load_cases(path)
            everything += cases
            report(path.name, tally(cases, router, context, agents, writes))
        if len(args.files) > 1:
            report("all files", tally(everything, router, context, agents, writes))
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
