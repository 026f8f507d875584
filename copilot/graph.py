"""The orchestrator graph: wiring only. Nodes live in `copilot/nodes.py`.

    intake → signals → understand → route ─┬─→ subagent ⇄ (reroute) ─→ advance ─┬─→ compose → END
                                           ├─→ fanout (independent llm steps) ───┤
                                           │          ↑______ steps remain ______│
                                           └──────────── nothing to run ─────────┘

`understand` picks the chain: a directive, the answer to a pending clarification, the embedded
router, or the orchestrator model (llm / hybrid engines, copilot/engines.py), falling back to the
embedded reading when the model fails. `fanout` runs independent llm steps concurrently.

Compiled once per process and reused by every turn; a turn passes its `TurnDeps` as the run
context. No checkpointer: a turn is short and its durable record is the message, its trace and
the agent runs (a held action is persisted by the approval gate, not by the graph).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from copilot import nodes
from copilot.state import TurnDeps, TurnState

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph
    from langgraph.runtime import Runtime

Node = Callable[[TurnState, "Runtime[TurnDeps]"], TurnState]
# Every step is two supersteps (subagent, advance) plus one per reroute; generous but finite.
RECURSION_LIMIT = 200
logger = logging.getLogger(__name__)

_compiled: CompiledStateGraph[Any, Any, Any, Any] | None = None
_lock = threading.Lock()


def _timed(name: str, node: Node) -> Node:
    """The node, adding its wall time to `timings` (the per-turn overhead shows in the trace)."""

    def run(state: TurnState, runtime: Runtime[TurnDeps]) -> TurnState:
        started = time.perf_counter()
        update = node(state, runtime)
        update["timings"] = {name: (time.perf_counter() - started) * 1000}
        return update

    run.__name__ = name
    return run


def build_graph() -> CompiledStateGraph[Any, Any, Any, Any]:
    from langgraph.graph import END, START, StateGraph

    nodes.load_handlers()
    graph = StateGraph(TurnState, context_schema=TurnDeps)
    names = ("intake", "signals", "understand", "route", "subagent", "fanout", "advance", "compose")
    for name in names:
        # LangGraph's overloads cannot see that a wrapper taking (state, runtime) is a node.
        graph.add_node(name, _timed(name, getattr(nodes, name)))  # type: ignore[call-overload]
    graph.add_edge(START, "intake")
    graph.add_edge("intake", "signals")
    graph.add_edge("signals", "understand")
    graph.add_edge("understand", "route")
    graph.add_conditional_edges("route", nodes.after_route, ["subagent", "fanout", "compose"])
    graph.add_conditional_edges("subagent", nodes.after_subagent, ["subagent", "advance"])
    graph.add_conditional_edges("fanout", nodes.after_advance, ["subagent", "fanout", "compose"])
    graph.add_conditional_edges("advance", nodes.after_advance, ["subagent", "fanout", "compose"])
    graph.add_edge("compose", END)
    return graph.compile()


def get_graph() -> CompiledStateGraph[Any, Any, Any, Any]:
    """The process's compiled graph (built on first use: importing LangGraph costs ~1.7 s)."""
    global _compiled
    if _compiled is None:
        with _lock:
            if _compiled is None:
                _compiled = build_graph()
    return _compiled


def run_graph(deps: TurnDeps) -> TurnState:
    """Run one turn synchronously (in a worker thread: the ORM is sync). Events go to deps.emit.

    `deps.on_finish` runs afterwards whatever happened (the turn's ModelCall rows are written
    there); a failure in it is logged, never raised over the turn's own outcome.
    """
    try:
        result = get_graph().invoke({}, context=deps, config={"recursion_limit": RECURSION_LIMIT})
    finally:
        for finish in deps.on_finish:
            try:
                finish()
            except Exception:  # bookkeeping must not lose the answer
                logger.exception("turn %s: a finishing step failed", deps.turn_id)
    return cast(TurnState, result)
