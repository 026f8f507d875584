"""Per-turn orchestration overhead of the llm engine against a langgraph-supervisor baseline.

    .venv/bin/python bench/orchestrator_overhead.py [--turns 30] [--warmup 3]
        [--scenario single|two_intents|all] [--profile] [--json]

Both sides do the same delegation against the SAME scripted OpenAI-compatible server
(`testing.scripted.ScriptedServer`, real HTTP and SSE, zero latency) in this process, on the
demo organisation in a fresh SQLite database (a temporary folder, like bench/ws_turn.py):

- single: "¿qué turnos libres hay mañana a la mañana?" → scheduling → `slots_find` → its answer.
- two_intents: the same plus "cuánto debe el Consorcio Av. Cabildo 2150" → financial →
  `payment_status` → its answer; the two requests are independent: ours names both in one
  orchestrator call and runs them at once; the supervisor hands off one per call, the way
  langgraph-supervisor works (its parallel handoffs lose agents: issue 230 of its repository).

Ours: `copilot.orchestration.graph.run_graph(TurnRun(ctx=TurnContext(...), engine, llm,
stream))` — the engine and the turn's model client from
`copilot.orchestration.engines.open_for`, as copilot/answering.py does — for the demo
organisation with `engine="llm"` and the environment's provider pointing at the scripted
server: the orchestrator model's `ask_<agent>` call, the agent's tool loop (agents/llm_agent.py)
through `Runner.call` (whitelist, plan budget, approval gate, tool events), concurrent steps,
compose. It includes what the graph
itself writes (a ModelCall row per model call, an AgentRun row per step) but not the turn's
message storage (`copilot.turn`), because the baseline stores nothing either; the user message
is stored once and every turn reuses it, so both sides see no history.

Baseline: `langgraph_supervisor.create_supervisor` over `create_react_agent` workers, with
`langchain_openai.ChatOpenAI(streaming=True)` on the same server; the workers' tools are the
same registry tools (`agents.registry.get_tool(name).run(TurnContext, args)`) with the same
whitelists as the demo's agents, so both sides do the same database work. The run is consumed
with `stream_mode="messages"` (token by token, as a panel would be fed). The supervisor's design
asks its model once more after a worker hands back ("calls per turn" in the report).

Overhead per turn = the turn's wall time minus its model time; model time = the time during
which the scripted server was serving at least one of the turn's requests (measured in the
server's handler: from reading the request to writing its last chunk; the union of spans, so
concurrent requests are not counted twice). The same rule applies to both sides. Turns of the
two sides are interleaved after a warm-up of each; medians are reported. A second view, steadier
on a shared machine: the process's CPU time over the turn less the server threads' CPU time on
its requests (`*_overhead_cpu_ms`, `cpu_ratio`).

Prints JSON: {"ours_ms_p50", "supervisor_ms_p50", "ratio", ...} (the headline figures are the
first scenario run; each scenario has its own block). Target: ratio ≤ 0.5.
`--profile` also prints cProfile's top functions of our side to stderr.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import tempfile
import threading
import time
import uuid
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _llm_bench import (  # noqa: E402
    FINANCIAL_REPLY,
    SCENARIOS,
    SCHEDULING_REPLY,
    Delegation,
    ModelTime,
    RequestClock,
    bench_env,
    dump,
    prepare_demo,
    request_clock,
    script,
    summary,
)

from testing.scripted import ScriptedServer  # noqa: E402

EXPECTED = {"scheduling": SCHEDULING_REPLY, "financial": FINANCIAL_REPLY}


@dataclass
class Sample:
    wall_ms: float
    cpu_ms: float  # this process's CPU time over the turn (every thread)
    model: ModelTime
    nodes: dict[str, float] = field(default_factory=dict)

    @property
    def overhead_ms(self) -> float:
        return self.wall_ms - self.model.wall_ms

    @property
    def overhead_cpu_ms(self) -> float:
        """CPU the orchestration burnt: the process's, less the scripted server's threads."""
        return self.cpu_ms - self.model.cpu_ms


def timed(run: Callable[[], Any], clock: RequestClock) -> tuple[Any, Sample]:
    started, cpu = time.monotonic(), time.process_time()
    result = run()
    ended, cpu_ms = time.monotonic(), (time.process_time() - cpu) * 1000
    return result, Sample((ended - started) * 1000, cpu_ms, clock.window(started, ended))


@dataclass
class World:
    """The demo organisation as both sides see it."""

    organisation: Any
    user: Any
    conversation: Any
    message: Any
    whitelists: dict[str, list[str]]


def boot() -> World:
    import django

    django.setup()
    from django.contrib.auth import get_user_model

    from agents.models import Agent
    from business.models import Organisation
    from copilot.models import Message
    from copilot.services import conversation_create, message_add

    organisation = Organisation.objects.get(slug="demo")
    user = get_user_model().objects.get(username="operadora")
    conversation = conversation_create(organisation=organisation, user=user, channel="panel")
    message = message_add(
        conversation=conversation, role=Message.Role.USER, text="bench", language="es"
    )
    whitelists = {
        agent.name: list(agent.tools or [])
        for agent in Agent.objects.filter(organisation=organisation, name__in=EXPECTED)
    }
    return World(organisation, user, conversation, message, whitelists)


# --- ours ---------------------------------------------------------------------------------------


def ours(world: World, scenario: Delegation, clock: RequestClock) -> Sample:
    from django.utils import timezone

    from agents.abtest import apply_arms
    from agents.cache import turn_agents
    from agents.context import TurnContext
    from copilot.orchestration import engines
    from copilot.orchestration.graph import run_graph
    from copilot.orchestration.state import TurnRun
    from copilot.orchestration.streaming import TextStream

    events: list[Any] = []
    ctx = TurnContext(
        organisation=world.organisation, user=world.user, conversation_id=world.conversation.pk,
        now=timezone.now(), turn_id=str(uuid.uuid4()), message_id=world.message.pk,
        text=scenario.text, emit=events.append,
    )  # fmt: skip

    def turn() -> Any:
        # What copilot/answering.py `open_run` does around the graph: the engine and the turn's
        # model client (its ModelCall rows are written by run_graph's flush at the end), the
        # enabled agents as kept between turns (agents/cache.py) with the conversation's A/B
        # arms, and the conversation the turn already holds.
        engine, client = engines.open_for(ctx)
        stream = TextStream(ctx.emit, ctx.turn_id)
        enabled, running = turn_agents(world.organisation)
        tested = apply_arms(world.organisation, world.conversation.pk, enabled, running)
        return run_graph(
            TurnRun(
                ctx=ctx,
                engine=engine,
                llm=client,
                stream=stream,
                agents=tested.agents,
                arms=tested.arms,
                arm_intents=tested.intents,
                conversation=world.conversation,
            )  # fmt: skip
        )

    state, sample = timed(turn, clock)
    _check_ours(state, scenario)
    sample.nodes = dict(state.get("timings", {}))
    return sample


def _check_ours(state: Any, scenario: Delegation) -> None:
    """The turn really went through the model and every agent's scripted answer came back."""
    problems = []
    reading, delegation = state["reading"], state["delegation"]
    if reading.routed_by != "model":
        problems.append(f"routed_by={reading.routed_by!r} fallback={reading.fallback}")
    for agent, _query, _intent in scenario.calls:
        if EXPECTED[agent] not in state.get("reply", ""):
            problems.append(f"no {agent} answer in the reply")
    for run in delegation.runs:
        if run.fallback or run.step.engine != "llm":
            problems.append(f"{run.step.agent}: engine={run.step.engine} fallback={run.fallback}")
    if problems:
        raise SystemExit(f"ours did not delegate as scripted: {problems}\n{state.get('reply')!r}")


# --- the langgraph-supervisor baseline ----------------------------------------------------------


def registry_tool(name: str, world: World) -> Any:
    """A registry tool as a LangChain tool: same schema, same `Tool.run` on the demo."""
    from django.db import connections
    from django.utils import timezone
    from langchain_core.tools import StructuredTool

    from agents.context import TurnContext
    from agents.registry import get_tool

    tool = get_tool(name)

    def run(**arguments: Any) -> str:
        ctx = TurnContext(world.organisation, world.user, world.conversation.pk, timezone.now())
        try:
            result = tool.run(ctx, arguments)
        finally:
            if threading.current_thread() is not threading.main_thread():
                connections.close_all()  # as our concurrent steps do in their threads
        return json.dumps(result.as_dict(), ensure_ascii=False, default=str)

    return StructuredTool.from_function(
        func=run, name=name, description=tool.description, args_schema=tool.parameters
    )


def build_supervisor(world: World, server: ScriptedServer) -> Any:
    from langchain_openai import ChatOpenAI
    from langgraph_supervisor import create_supervisor
    from pydantic import SecretStr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent's deprecation notice
        from langgraph.prebuilt import create_react_agent

        model = ChatOpenAI(
            model="scripted-model", base_url=server.base_url, api_key=SecretStr("bench-key"),
            streaming=True, stream_usage=True, max_retries=0, timeout=20,
        )  # fmt: skip
        workers: list[Any] = [
            create_react_agent(
                model,
                tools=[registry_tool(name, world) for name in world.whitelists[agent]],
                name=agent,
                prompt=f"You are the {agent} agent of a field-service company. Use your tools.",
            )
            for agent in EXPECTED
        ]
        graph = create_supervisor(
            workers,
            model=model,
            prompt="You route the office's requests to the scheduling and financial agents.",
            # One handoff per call, as shipped: parallel handoffs drop agents (see _llm_bench).
            parallel_tool_calls=False,
        )
    return graph.compile()


def supervisor(graph: Any, scenario: Delegation, clock: RequestClock) -> Sample:
    chunks: list[str] = []

    def run() -> None:
        for message, _meta in graph.stream(
            {"messages": [{"role": "user", "content": scenario.text}]}, stream_mode="messages"
        ):
            content = getattr(message, "content", "")
            if isinstance(content, str) and content:
                chunks.append(content)

    _none, sample = timed(run, clock)
    streamed = "".join(chunks)
    missing = [a for a, _q, _i in scenario.calls if EXPECTED[a] not in streamed]
    if missing:
        raise SystemExit(f"the supervisor did not delegate as scripted: {missing}\n{streamed!r}")
    return sample


# --- the run ------------------------------------------------------------------------------------


def measure(
    sides: dict[str, Callable[[], Sample]], turns: int, warmup: int
) -> dict[str, list[Sample]]:
    for _ in range(warmup):
        for run in sides.values():
            run()
    samples: dict[str, list[Sample]] = {name: [] for name in sides}
    names = list(sides)
    for i in range(turns):
        for name in names if i % 2 == 0 else reversed(names):  # neither side always goes first
            samples[name].append(sides[name]())
    return samples


def report_for(samples: dict[str, list[Sample]]) -> dict[str, Any]:
    ours_, sup = samples["ours"], samples["supervisor"]
    ours_p50 = statistics.median(s.overhead_ms for s in ours_)
    sup_p50 = statistics.median(s.overhead_ms for s in sup)
    ours_cpu = statistics.median(s.overhead_cpu_ms for s in ours_)
    sup_cpu = statistics.median(s.overhead_cpu_ms for s in sup)
    node_names = sorted({name for s in ours_ for name in s.nodes})
    return {
        "ours_ms_p50": round(ours_p50, 2),
        "supervisor_ms_p50": round(sup_p50, 2),
        "ratio": round(ours_p50 / sup_p50, 3),
        "ours_overhead_ms": summary([s.overhead_ms for s in ours_]),
        "supervisor_overhead_ms": summary([s.overhead_ms for s in sup]),
        # CPU time is steadier than wall time on a shared machine: a second view of the same.
        "ours_overhead_cpu_ms": summary([s.overhead_cpu_ms for s in ours_]),
        "supervisor_overhead_cpu_ms": summary([s.overhead_cpu_ms for s in sup]),
        "cpu_ratio": round(ours_cpu / sup_cpu, 3),
        "ours_wall_ms": summary([s.wall_ms for s in ours_]),
        "supervisor_wall_ms": summary([s.wall_ms for s in sup]),
        "ours_model_ms": summary([s.model.wall_ms for s in ours_]),
        "supervisor_model_ms": summary([s.model.wall_ms for s in sup]),
        "ours_calls_per_turn": statistics.median(s.model.calls for s in ours_),
        "supervisor_calls_per_turn": statistics.median(s.model.calls for s in sup),
        "ours_node_ms_p50": {
            name: round(statistics.median(s.nodes.get(name, 0.0) for s in ours_), 2)
            for name in node_names
        },
        "n": len(ours_),
    }


def profile(run: Callable[[], Sample], turns: int, label: str) -> None:
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(turns):
        run()
    profiler.disable()
    if os.environ.get("PROFILE_DUMP"):  # for pstats: PROFILE_DUMP=/tmp/ov → /tmp/ov.ours …
        profiler.dump_stats(f"{os.environ['PROFILE_DUMP']}.{label.split(' ')[0]}")
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    print(f"\n=== {label}: {turns} turns, by own time ===", file=out)
    stats.sort_stats("tottime").print_stats(25)
    print(f"\n=== {label}: {turns} turns, cumulative ===", file=out)
    stats.sort_stats("cumulative").print_stats(40)
    print(out.getvalue(), file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--scenario", choices=[*SCENARIOS, "all"], default="all")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    chosen = list(SCENARIOS.values()) if args.scenario == "all" else [SCENARIOS[args.scenario]]

    clock = request_clock()
    with ScriptedServer() as server, tempfile.TemporaryDirectory() as var:
        env = bench_env(var, server)
        prepare_demo(env, engine="llm")
        os.environ.clear()
        os.environ.update(env)
        world = boot()
        scenarios: dict[str, Any] = {}
        for scenario in chosen:
            server.reset()
            script(server, scenario)
            graph = build_supervisor(world, server)
            sides: dict[str, Callable[[], Sample]] = {
                "ours": partial(ours, world, scenario, clock),
                "supervisor": partial(supervisor, graph, scenario, clock),
            }
            scenarios[scenario.name] = report_for(measure(sides, args.turns, args.warmup))
            if args.profile:
                profile(sides["ours"], args.turns, f"ours / {scenario.name}")
                profile(sides["supervisor"], args.turns, f"supervisor / {scenario.name}")
    first = scenarios[chosen[0].name]
    report = {
        "ours_ms_p50": first["ours_ms_p50"],
        "supervisor_ms_p50": first["supervisor_ms_p50"],
        "ratio": first["ratio"],
        "scenario": chosen[0].name,
        "scenarios": scenarios,
    }
    dump(report, args.json)


if __name__ == "__main__":
    main()
