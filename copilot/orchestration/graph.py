"""The orchestrator graph: wiring only. Nodes live in `copilot/orchestration/nodes.py`.

    intake → signals → understand → route → delegate → compose → END

and, for a turn whose steps filed actions for approval, the held-turn graph that picks up its
final state and pauses with a checkpoint until each decision:

    START → hold ⇄ resume → END

`understand` picks the chain: a directive, the answer to a pending clarification, the embedded
router, or the orchestrator model (llm / hybrid engines, engines.py), falling back to the
embedded reading when the model fails. `route` applies the signals (an emergency goes first) and
the conversation's subject; `delegate` runs the chain step by step (delegate.py: gates,
reroutes, hand-offs, concurrent llm steps); `compose` writes the reply and the trace.

Both are compiled once per process and reused; a turn passes its `TurnRun` as the run context.
The straight path runs its nodes without LangGraph's per-step machinery (`run_graph`); the
compiled graph is its declaration and the yardstick it is tested against (`run_compiled`).
Only the held-turn graph has a checkpointer (checkpoints.py): a turn without approvals
writes no checkpoint at all, and a paused one writes one when it pauses and one per decision.
"""

from __future__ import annotations

import contextvars
import functools
import threading
import time
from collections.abc import Callable
from typing import Annotated, Any, cast, get_origin, get_type_hints

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command

from agents.base import load_handlers
from copilot.orchestration import checkpoints, nodes
from copilot.orchestration.state import TurnRun, TurnState

Node = Callable[[TurnState, Runtime[TurnRun]], TurnState]
NODES = ("intake", "signals", "understand", "route", "delegate", "compose")

_compiled: CompiledStateGraph[Any, Any, Any, Any] | None = None
_held: tuple[BaseCheckpointSaver[Any], CompiledStateGraph[Any, Any, Any, Any]] | None = None
_lock = threading.Lock()


def _timed(name: str, node: Node) -> Node:
    """The node, adding its wall time to `timings` (the per-turn overhead shows in the trace)."""

    def run(state: TurnState, runtime: Runtime[TurnRun]) -> TurnState:
        started = time.perf_counter()
        update = node(state, runtime)
        update["timings"] = {name: (time.perf_counter() - started) * 1000}
        return update

    run.__name__ = name
    return run


def build_graph() -> CompiledStateGraph[Any, Any, Any, Any]:
    load_handlers()
    graph = StateGraph(TurnState, context_schema=TurnRun)
    for name in NODES:
        # LangGraph's overloads cannot see that a wrapper taking (state, runtime) is a node.
        graph.add_node(name, _timed(name, getattr(nodes, name)))  # type: ignore[call-overload]
    graph.add_edge(START, NODES[0])
    for before, after in zip(NODES, NODES[1:], strict=False):
        graph.add_edge(before, after)
    graph.add_edge(NODES[-1], END)
    return graph.compile()


def get_graph() -> CompiledStateGraph[Any, Any, Any, Any]:
    """The process's compiled graph, built on first use."""
    global _compiled
    if _compiled is None:
        with _lock:
            if _compiled is None:
                _compiled = build_graph()
    return _compiled


def build_hold_graph(saver: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any, Any, Any, Any]:
    graph = StateGraph(TurnState, context_schema=TurnRun)
    for name in ("hold", "resume"):
        graph.add_node(name, _timed(name, getattr(nodes, name)))  # type: ignore[call-overload]
    graph.add_edge(START, "hold")
    graph.add_edge("hold", "resume")
    graph.add_conditional_edges("resume", nodes.after_resume, ["hold", END])
    return graph.compile(checkpointer=saver)


def get_hold_graph() -> CompiledStateGraph[Any, Any, Any, Any]:
    """The held-turn graph on this database's checkpointer (rebuilt if the database changes)."""
    global _held
    saver = checkpoints.saver()
    with _lock:
        if _held is None or _held[0] is not saver:
            _held = (saver, build_hold_graph(saver))
        return _held[1]


def _config(run: TurnRun, turn_id: str) -> RunnableConfig:
    ctx = run.ctx
    thread = checkpoints.thread_id(ctx.organisation.pk, ctx.conversation_id or 0, turn_id)
    return {"configurable": {"thread_id": thread}}


def pause(run: TurnRun, state: TurnState) -> None:
    """Hand a turn that filed approvals to the held-turn graph: it checkpoints and waits."""
    get_hold_graph().invoke(
        dict(state), config=_config(run, run.ctx.turn_id), context=run, durability="exit"
    )


def resume(run: TurnRun, paused_turn_id: str, approval_id: int) -> TurnState | None:
    """Resume a paused turn with one decision; None when there is nothing to resume (its
    checkpoint is gone). Its `followup` says what the decision led to."""
    graph = get_hold_graph()
    config = _config(run, paused_turn_id)
    if not graph.get_state(config).next:
        return None
    try:
        decision: Command[Any] = Command(resume={"approval_id": approval_id})
        return cast(
            TurnState, graph.invoke(decision, config=config, context=run, durability="exit")
        )
    finally:
        if run.llm is not None:
            run.llm.flush()


def run_graph(run: TurnRun) -> TurnState:
    """Run one turn synchronously (in a worker thread: the ORM is sync). Events go to
    `run.ctx.emit`; the model client's rows are written afterwards, whatever happened.

    The path is a straight line with no checkpoint, so it runs without LangGraph's per-step
    machinery (about 3 ms of CPU a turn, a quarter of the graph's; bench/turn_cost.py): the
    same nodes in the same order, each given a copy of the state and run in a copy of the
    caller's context, as LangGraph runs them, each update merged by `TurnState`'s reducers.
    tests/copilot/test_graph.py keeps it equal to the compiled graph's run. LangGraph keeps the
    held turns, where its checkpoints earn their place."""
    runtime, line = Runtime(context=run), _line()
    state: dict[str, Any] = {}
    try:
        for node in line:
            given = cast(TurnState, dict(state))
            update = contextvars.copy_context().run(node, given, runtime)
            for key, value in (update or {}).items():
                merge = _REDUCERS.get(key)
                state[key] = merge(state[key], value) if merge and key in state else value
        return cast(TurnState, state)
    finally:
        if run.llm is not None:
            run.llm.flush()


def run_compiled(run: TurnRun) -> TurnState:
    """The same turn through the compiled LangGraph graph (what `run_graph` must equal)."""
    try:
        return cast(TurnState, get_graph().invoke({}, context=run))
    finally:
        if run.llm is not None:
            run.llm.flush()


def _reducers() -> dict[str, Callable[[Any, Any], Any]]:
    """The state keys merged by a function (`Annotated[..., reducer]`), by key."""
    hints = get_type_hints(TurnState, include_extras=True)
    return {
        key: hint.__metadata__[0]
        for key, hint in hints.items()
        if get_origin(hint) is Annotated and callable(hint.__metadata__[0])
    }


_REDUCERS = _reducers()


@functools.cache
def _line() -> tuple[Node, ...]:
    """The nodes of the straight path, timed, once the handlers are registered."""
    load_handlers()
    return tuple(_timed(name, getattr(nodes, name)) for name in NODES)
