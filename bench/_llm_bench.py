"""Shared by bench/orchestrator_overhead.py and bench/llm_first_token.py: the demo database in a
temporary folder, the delegation scenarios scripted on a `ScriptedServer`, and a clock of how
long the server spends on each request (the "model time" the overhead bench subtracts).

Requests are told apart by the tools they offer and the tool calls already in their messages, so
the SAME rules answer Capataz's orchestrator and agents and the langgraph-supervisor baseline:

    orchestrator   offers ask_scheduling (ours)  /  transfer_to_scheduling (supervisor: one
                   transfer_to_<agent> per call, then a closing line after the last hands back)
    scheduling     offers slots_find: first a slots_find call, then (after its result) the text
    financial      offers payment_status: first a payment_status call, then the text
"""

from __future__ import annotations

import datetime
import json
import os
import secrets
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
sys.path.insert(0, str(ROOT))

from testing import scripted  # noqa: E402  (stdlib only: no Django needed)
from testing.scripted import Reply, ScriptedServer, for_tool, text, tool_calls  # noqa: E402

Request = dict[str, Any]

PREAMBLE = "Dale, me fijo."
SCHEDULING_REPLY = "Mañana hay lugar a las 9:00 con Carlos y a las 11:00 con Marta."
FINANCIAL_REPLY = "El Consorcio Av. Cabildo 2150 tiene facturas pendientes, te paso el detalle."
SUPERVISOR_CLOSING = "Listo, ahí tenés."
CUSTOMER = "Consorcio Av. Cabildo 2150"
SUPERVISOR = "transfer_to_scheduling"  # a tool only the supervisor's requests offer


@dataclass(frozen=True)
class Delegation:
    """One user message and the agent calls the orchestrator model makes for it."""

    name: str
    text: str
    calls: tuple[tuple[str, str, str], ...]  # (agent, query, intent)


SCHEDULING_ASK = "¿qué turnos libres hay mañana a la mañana?"
FINANCIAL_ASK = f"cuánto debe el {CUSTOMER}"
SCENARIOS = {
    "single": Delegation(
        "single", SCHEDULING_ASK, (("scheduling", SCHEDULING_ASK, "check_availability"),)
    ),
    "two_intents": Delegation(
        "two_intents",
        f"{SCHEDULING_ASK} y decime {FINANCIAL_ASK}",
        (
            ("scheduling", SCHEDULING_ASK, "check_availability"),
            ("financial", FINANCIAL_ASK, "payment_status"),
        ),
    ),
}


# --- matchers ---------------------------------------------------------------------------------


def called(request: Request, name: str) -> bool:
    """Whether an assistant message of the request already called the tool `name`."""
    for message in request.get("messages") or []:
        for call in message.get("tool_calls") or []:
            if (call.get("function") or {}).get("name") == name:
                return True
    return False


def _before(offered: str, done: str) -> Callable[[Request], bool]:
    """Requests offering `offered` whose messages have not called `done` yet."""
    offers = for_tool(offered)
    return lambda request: offers(request) and not called(request, done)


def _after(offered: str, done: str) -> Callable[[Request], bool]:
    """Requests offering `offered` whose messages already called `done`."""
    offers = for_tool(offered)
    return lambda request: offers(request) and called(request, done)


def after_tool(name: str) -> Callable[[Request], bool]:
    """An agent's request after its `name` call: the one answered with its text."""
    return _after(name, name)


def _supervisor_turn(names: list[str], position: int) -> Callable[[Request], bool]:
    """The supervisor's request that should hand off to `names[position]` (or close, past the
    end): every earlier worker was handed off to, and no later one."""
    offers = for_tool(SUPERVISOR)

    def match(request: Request) -> bool:
        done = [called(request, f"transfer_to_{name}") for name in names]
        return offers(request) and all(done[:position]) and not any(done[position:])

    return match


def script(server: ScriptedServer, scenario: Delegation, *, delay: float = 0.0) -> None:
    """Answer every request of `scenario`, for both sides, for as long as the server runs.

    Ours: one orchestrator call names every agent (its steps run concurrently). The supervisor
    hands off one agent per call and closes after the last hands back: langgraph-supervisor's
    parallel handoffs lose all but one agent with `create_react_agent`'s v2 tool dispatch
    (langgraph-supervisor-py issue 230), so the baseline runs as the library ships, sequentially.
    """
    tomorrow = (datetime.date.today() + datetime.timedelta(days=1)).isoformat()
    agents = [agent for agent, _query, _intent in scenario.calls]
    ask = [
        (f"ask_{agent}", {"query": query, "intent_count": len(scenario.calls), "intent": intent})
        for agent, query, intent in scenario.calls
    ]
    slots = tool_calls([("slots_find", {"date": tomorrow})], delay=delay)
    owed = tool_calls([("payment_status", {"customer": CUSTOMER})], delay=delay)
    rules: list[tuple[Reply, Callable[[Request], bool]]] = [
        (tool_calls(ask, preamble=PREAMBLE, delay=delay), for_tool("ask_scheduling")),
        (text(SUPERVISOR_CLOSING, delay=delay), _supervisor_turn(agents, len(agents))),
        (slots, _before("slots_find", "slots_find")),
        (text(SCHEDULING_REPLY, delay=delay), after_tool("slots_find")),
        (owed, _before("payment_status", "payment_status")),
        (text(FINANCIAL_REPLY, delay=delay), after_tool("payment_status")),
    ]
    for position, agent in enumerate(agents):
        preamble = PREAMBLE if position == 0 else ""
        handoff = tool_calls([(f"transfer_to_{agent}", {})], preamble=preamble, delay=delay)
        rules.append((handoff, _supervisor_turn(agents, position)))
    for reply, when in rules:
        server.add(reply, when=when, times=None)


# --- model time: how long the server spends on each request ------------------------------------


@dataclass(frozen=True)
class ModelTime:
    """What the scripted server spent on the requests of one window (one turn)."""

    wall_ms: float  # time during which at least one request was being served
    cpu_ms: float  # CPU time of the server's handler threads on those requests
    calls: int  # requests that started in the window


class RequestClock:
    """Every request the scripted servers of this process answered: its (start, end)
    `time.monotonic()`, from the moment the handler starts on the request to its last byte
    written, and the CPU time its handler thread spent meanwhile."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.spans: list[tuple[float, float, float]] = []

    def add(self, start: float, end: float, cpu_s: float) -> None:
        with self._lock:
            self.spans.append((start, end, cpu_s))

    def window(self, start: float, end: float) -> ModelTime:
        """The model time within [start, end]: the union of the spans (concurrent requests are
        not counted twice), their CPU time, and how many requests started in it."""
        with self._lock:
            inside = [(a, b, cpu) for a, b, cpu in self.spans if a < end and b > start]
        total, cursor = 0.0, start
        for a, b, _cpu in sorted(inside):
            a, b = max(a, start), min(b, end)
            if b > cursor:
                total += b - max(a, cursor)
                cursor = b
        cpu = sum(cpu for _a, _b, cpu in inside)
        calls = sum(1 for a, _b, _cpu in inside if a >= start)
        return ModelTime(total * 1000, cpu * 1000, calls)


_clock: RequestClock | None = None


def request_clock() -> RequestClock:
    """Time every request of every ScriptedServer in this process. The server itself records
    first-token moments but not durations, so its handler's `do_POST` is wrapped here (bench
    only): the span covers parsing the body, choosing the reply and writing every chunk."""
    global _clock
    if _clock is not None:
        return _clock
    clock = RequestClock()
    handler = scripted._Handler  # noqa: SLF001 - no public hook for per-request durations
    serve = handler.do_POST

    def timed(self: Any) -> None:
        started, cpu = time.monotonic(), time.thread_time()
        try:
            serve(self)
        finally:
            clock.add(started, time.monotonic(), time.thread_time() - cpu)

    handler.do_POST = timed  # type: ignore[method-assign]
    _clock = clock
    return clock


# --- the demo database ------------------------------------------------------------------------


def bench_env(var_dir: str, server: ScriptedServer) -> dict[str, str]:
    """The environment of a Capataz process on a fresh SQLite database in `var_dir`, whose
    model provider (the environment's) is the scripted server."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("LANGSMITH_", "LANGCHAIN_"))  # no tracing in a benchmark
    }
    env.update(
        CAPATAZ_VAR_DIR=var_dir,
        DATABASE_URL="",
        REDIS_URL="",
        DEBUG="false",  # no query log: timings as in production
        SECRET_KEY=secrets.token_urlsafe(50),  # DEBUG=false refuses a weak key
        SECURE_SSL_REDIRECT="false",  # plain HTTP on loopback
        SESSION_COOKIE_SECURE="false",
        CSRF_COOKIE_SECURE="false",
        LOG_LEVEL="WARNING",
        OPENAI_API_KEY="bench-key",
        OPENAI_BASE_URL=server.base_url,
        OPENAI_MODEL="scripted-model",
        OPENAI_MAX_RETRIES="0",
        COPILOT_BUFFER_FLUSH_DELAY_MS="0",
        DJANGO_SETTINGS_MODULE="capataz.settings",
    )
    return env


def prepare_demo(env: dict[str, str], engine: str = "llm") -> None:
    """Migrate, load the demo organisation and put it on `engine` (subprocesses, like
    bench/ws_turn.py, so this process's Django is not configured twice)."""
    for args in (["migrate", "--noinput", "-v0"], ["load_demo"]):
        subprocess.run(
            [PY, "manage.py", *args], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL
        )
    command = (
        "from business.models import Organisation;"
        f"Organisation.objects.filter(slug='demo').update(engine={engine!r})"
    )
    subprocess.run(
        [PY, "manage.py", "shell", "-c", command],
        cwd=ROOT,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def percentile(values: Iterable[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def summary(values: list[float]) -> dict[str, float]:
    return {
        "p50": round(statistics.median(values), 2),
        "p95": round(percentile(values, 0.95), 2),
    }


def dump(report: dict[str, Any], as_json: bool) -> None:
    print(json.dumps(report) if as_json else json.dumps(report, indent=2, ensure_ascii=False))
