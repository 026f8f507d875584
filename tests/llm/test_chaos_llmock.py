"""Chaos against a server we did not write: the llm and hybrid engines, turn by turn, against
LLMock (a third-party OpenAI-compatible mock, `llmock serve` in a subprocess) breaking the model
the way real providers do, one fault class at a time.

Every cell runs two real turns through the product's turn path (`accept_message` then
`runner.drain`, as in test_engine_e2e): a read ("until when are you open?") whose orchestrator
call meets the fault, and a write (booking a job for a demo customer) whose sub-agent call meets
it — the call that carries the `job_book` tool call, so a fault there is a fault *before* the
write. Each turn must end with a complete answer, at most one job and no approval, a truthful
step status (a booking step says success exactly when a job was booked) and the failure in the
trace (the fallback kind in the reply's trace, the ModelCall row's error kind).

Faults are deterministic: LLMock's scenario queue (its `/_llmock/scenario` API) serves each
queued behaviour to the first request it matches, and the orchestrator and the sub-agents ask for
different model names, so a behaviour matched on a model name lands on exactly one stage. No
probabilities. The project's own scripted server (testing/scripted.py) stays for what LLMock cannot
aim, e.g. a stream cut *after* the write (the last test here).

LLMock's verdict (`/_llmock/verdict`) also grades the client; its one disagreement with our policy
is allowed and named: a stream cut without a finish reason is not retried (the turn falls back
instead), which LLMock reports as `truncated_stream_accepted` because it cannot see the fallback.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from agents.models import Agent, ToolCall
from approvals.models import PendingAction
from business.models import Job, Organisation
from copilot import router_cache
from copilot.models import AgentRun, Conversation, Message
from llm.models import ModelCall
from nlu import Router
from testing import scripted
from testing.scripted import ScriptedServer, for_tool, tool_calls
from tests import factories
from tests.conftest import Cast
from tests.llm.test_engine_e2e import (  # noqa: F401 - the e2e fixtures: org, conversation, server
    SCHEDULING,
    Turn,
    ask,
    conversation,
    org,
    server,
)

pytest.importorskip("llmock", reason="llmock (requirements.txt) is not installed")

pytestmark = [
    pytest.mark.django_db(transaction=True),  # the turn and its concurrent steps run in threads
]

ORCHESTRATOR_MODEL = "chaos-orchestrator"
AGENT_MODEL = "chaos-agent"
TIMEOUT_S = 1.0  # OPENAI_TIMEOUT: a healthy LLMock answers in milliseconds, even on a busy box
HANG_S = TIMEOUT_S + 0.6  # long enough to time out, short enough not to hold the next cell
RETRY_BUDGET_S = 0.3  # a 429 asking for 0.2 s is waited for; 5xx backoff is cut to it
READ = "hasta qué hora están?"
READ_ANSWER = "Atendemos de lunes a viernes de 8 a 18."
WRITE_ANSWER = "Listo, quedó agendado para el lunes a las 10."


# --- the server -------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LLMock:
    url: str
    http: httpx.Client

    def reset(self) -> None:
        self.http.post("/_llmock/reset").raise_for_status()

    def clear_scenario(self) -> None:
        self.http.delete("/_llmock/scenario").raise_for_status()

    def queue(self, *behaviours: dict[str, Any]) -> None:
        self.http.post("/_llmock/scenario", json={"behaviors": list(behaviours)}).raise_for_status()

    def pending(self) -> list[dict[str, Any]]:
        return list(self.http.get("/_llmock/scenario").json()["pending"])

    def verdict_errors(self) -> set[str]:
        """What LLMock's verdict fails the client on (it waits for requests still in flight)."""
        verdict = self.http.get("/_llmock/verdict").json()
        return {f["code"] for f in verdict["findings"] if f["severity"] == "error"}


@pytest.fixture(scope="module")
def llmock_process() -> Iterator[LLMock]:
    """`llmock serve` on a free port for this module; stopped (its process only) at the end."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    command = [
        sys.executable, "-m", "llmock.cli", "serve", "--host", "127.0.0.1", "--port", str(port),
        "--log-level", "warning", "--response-style", "static",
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLMOCK_")}
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        http = httpx.Client(base_url=url, timeout=10.0)
        try:
            _wait_until_up(process, http, log)
            yield LLMock(url=url, http=http)
        finally:
            http.close()
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_until_up(process: subprocess.Popen[bytes], http: httpx.Client, log: Any) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"llmock exited ({process.returncode}): {log.read()[-2000:]!r}")
        try:
            if http.get("/health").status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError("llmock did not answer /health within 30 s")


@pytest.fixture
def model(llmock_process: LLMock, settings: Any) -> LLMock:
    """The environment's provider pointed at LLMock, with small timeouts and budgets."""
    llmock_process.reset()
    settings.OPENAI_API_KEY = "chaos-key"
    settings.OPENAI_BASE_URL = f"{llmock_process.url}/v1"
    settings.OPENAI_MODEL = ORCHESTRATOR_MODEL
    settings.OPENAI_TIMEOUT = TIMEOUT_S
    settings.OPENAI_MAX_RETRIES = 1
    settings.OPENAI_RETRY_BUDGET = RETRY_BUDGET_S
    settings.OPENAI_CALL_DEADLINE = 10.0
    settings.COPILOT_BUFFER_FLUSH_DELAY_MS = 1
    return llmock_process


_routers: dict[tuple[Any, ...], Router] = {}


@pytest.fixture(autouse=True)
def _train_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every cell's organisation has the default registry, so its router is the same one: build
    it once (a router is a function of its examples and agent names; each cell's new ids would
    otherwise retrain it, half a second a cell)."""
    build = router_cache.build_router

    def cached(examples: list[Any], **kwargs: Any) -> Router:
        key = (tuple(examples), tuple(kwargs.get("agent_names") or ()))
        if key not in _routers:
            _routers[key] = build(examples, **kwargs)
        return _routers[key]

    monkeypatch.setattr(router_cache, "build_router", cached)


# --- the faults -------------------------------------------------------------------------------


def _on(model_name: str, **match: Any) -> dict[str, Any]:
    return {"model": model_name, **match}


@dataclass(frozen=True)
class Fault:
    """One fault class: the LLMock behaviours that make it, aimed at one model name, and the
    ModelFailure kind the stage it hits must fall back with ("" when the stage recovers);
    `write_kind` when the booking step falls back differently from the read's orchestrator."""

    behaviours: Callable[[str], list[dict[str, Any]]]
    kind: str = ""
    write_kind: str | None = None

    @property
    def on_write(self) -> str:
        return self.kind if self.write_kind is None else self.write_kind


# Kinds the caller raises after judging a complete answer: the model call itself succeeded.
JUDGED = {"unbacked_claim", "not_an_answer"}


def _fail(status: int, **extra: Any) -> Callable[[str], list[dict[str, Any]]]:
    return lambda name: [{"type": "fail", "status": status, **extra, "match": _on(name)}]


def _stream(kind: str, **extra: Any) -> Callable[[str], list[dict[str, Any]]]:
    # After two chunks: the role, then the tool call's name; its arguments never arrive whole.
    fault = {"type": "stream_fault", "kind": kind, "after_chunks": 2, **extra}
    return lambda name: [{**fault, "match": _on(name, stream=True)}]


def _tool(kind: str) -> Callable[[str], list[dict[str, Any]]]:
    return lambda name: [{"type": "tool_fault", "kind": kind, "match": _on(name, tools=True)}]


FAULTS: dict[str, Fault] = {
    # A 429 whose Retry-After fits the retry budget is waited for, then the call succeeds.
    "rate_limit_within_budget": Fault(_fail(429, retry_after=0.2)),
    # One asking for longer than the budget is not waited for: the stage falls back.
    "rate_limit_beyond_budget": Fault(_fail(429, retry_after=30), "rate_limited"),
    # A 500 (no Retry-After: our backoff) on the attempt and on its one retry. LLMock's 503 comes
    # with Retry-After: 1 s, beyond this budget: the case above.
    "server_error": Fault(_fail(500, times=2), "server_error"),
    # LLMock's context_overflow: a 400 that no retry can fix.
    "context_overflow": Fault(
        _fail(400, code="context_length_exceeded", message="maximum context length exceeded"),
        "bad_request",
    ),
    "hang_before_headers": Fault(
        lambda name: [{"type": "delay", "seconds": HANG_S, "match": _on(name)}], "timeout"
    ),
    "hang_before_first_chunk": Fault(
        lambda name: [
            {"type": "slow_first_token", "seconds": HANG_S, "match": _on(name, stream=True)}
        ],
        "timeout",
    ),
    "hang_mid_stream": Fault(_stream("stall", stall_seconds=HANG_S), "timeout"),
    "disconnect_mid_stream": Fault(_stream("disconnect"), "dropped"),
    "truncated_without_finish_reason": Fault(_stream("truncate"), "no_finish_reason"),
    "malformed_chunk": Fault(_stream("malformed"), "invalid_chunk"),
    # An answer that stops at max_tokens mid-sentence (LLMock scripts any finish reason).
    "cut_at_max_tokens": Fault(
        lambda name: [
            {
                "type": "reply",
                "text": "Ya te digo: atendemos de",
                "finish_reason": "length",
                "match": _on(name),
            }
        ],
        "length",
    ),
    # The orchestrator's broken call still routes (the verbatim rules; the fallback agent). The
    # agent's broken job_book never runs, then the model says it booked: a claim no tool backs,
    # so the step falls back to its handler.
    "broken_tool_arguments": Fault(_tool("malformed_arguments"), write_kind="unbacked_claim"),
    "unknown_tool": Fault(_tool("unknown_tool"), write_kind="unbacked_claim"),
    # Not an LLMock fault but scripted through it: the same call twice in one answer, then again.
    "repeated_calls": Fault(lambda name: []),
}


def _cells() -> list[Any]:
    return [
        pytest.param(engine, name, id=f"{engine}-{name}")
        for engine in ("llm", "hybrid")
        for name in FAULTS
    ]


# --- what the model says when nothing breaks --------------------------------------------------


Call = tuple[str, dict[str, Any]]


def _reply(name: str, *calls: Call, text: str | None = None) -> dict[str, Any]:
    scripted_calls = [{"name": tool, "arguments": arguments} for tool, arguments in calls]
    return {"type": "reply", "text": text, "tool_calls": scripted_calls, "match": _on(name)}


def _ask(agent: str, query: str, intent: str) -> Call:
    return f"ask_{agent}", {"query": query, "intent": intent, "intent_count": 1}


def read_script(fault: str) -> list[dict[str, Any]]:
    """Orchestrator → general (hours) → org_info → the answer; the fault is on the orchestrator."""
    route = _ask("general", READ, "hours")
    routes = (route, route) if fault == "repeated_calls" else (route,)
    return [
        *FAULTS[fault].behaviours(ORCHESTRATOR_MODEL),
        _reply(ORCHESTRATOR_MODEL, *routes),
        _reply(AGENT_MODEL, ("org_info", {})),
        _reply(AGENT_MODEL, text=READ_ANSWER),
    ]


def write_script(fault: str, booking: dict[str, Any], text: str) -> list[dict[str, Any]]:
    """Orchestrator → scheduling → job_book → the answer; the fault is on the job_book answer."""
    book = ("job_book", booking)
    rounds = (
        [_reply(AGENT_MODEL, book, book), _reply(AGENT_MODEL, book)]
        if fault == "repeated_calls"
        else [_reply(AGENT_MODEL, book)]
    )
    return [
        _reply(ORCHESTRATOR_MODEL, _ask("scheduling", text, "book_job")),
        *FAULTS[fault].behaviours(AGENT_MODEL),
        *rounds,
        _reply(AGENT_MODEL, text=WRITE_ANSWER),
    ]


# --- the organisation -------------------------------------------------------------------------


@dataclass
class Shop:
    customer: Any
    text: str  # the booking request
    booking: dict[str, Any]  # the job_book arguments the model sends


@pytest.fixture
def shop(org: Organisation) -> Shop:  # noqa: F811
    """A customer to book for, a technician to book, and the sub-agents on their own model."""
    customer = factories.make_customer(org, "Juan Pérez")
    factories.make_technician(org, "Carlos Gómez", zone="Sur")
    for agent in Agent.objects.filter(organisation=org):
        agent.model = AGENT_MODEL
        agent.save()
    monday = factories.next_monday()
    return Shop(
        customer=customer,
        text=(
            f"agendale a Juan Pérez una instalación de split el lunes {monday.day}/{monday.month}"
            " a las 10"
        ),
        booking={
            "customer_id": customer.pk,
            "service": "instalación de split",
            "start": f"{monday.isoformat()}T10:00",
        },
    )


def _use_engine(organisation: Organisation, engine: str) -> None:
    organisation.engine = engine
    organisation.save(update_fields=["engine"])
    if engine == "hybrid":
        # Hybrid asks the model only below an agent's gate: at 1.0 no classifier reading clears
        # it, so both messages reach the model (each cell checks that the stage was asked).
        for agent in Agent.objects.filter(organisation=organisation):
            agent.min_confidence = 1.0
            agent.save()


# --- the checks -------------------------------------------------------------------------------


def _shown(turn: Turn) -> str:
    """The text the panel shows as the answer: streamed text minus what a `retract` marked."""
    pieces: list[tuple[str, str]] = []
    for event in turn.events:
        if event["type"] == "text":
            pieces.append((event.get("agent", ""), event["text"]))
        elif event["type"] == "retract":
            pieces = [piece for piece in pieces if piece[0] != event["agent"]]
    return " ".join("".join(text for _agent, text in pieces).split())


def _complete(turn: Turn) -> None:
    assert turn.result.ok
    assert turn.reply.strip()
    assert not [e for e in turn.events if e["type"] == "error"]
    completed = turn.events[-1]
    assert completed["type"] == "completed" and completed["text"] == turn.reply
    assert _shown(turn) == " ".join(turn.reply.split())  # no half answer left looking whole
    stored = Message.objects.get(pk=turn.result.assistant_message_id)
    assert stored.role == "assistant" and stored.text and stored.trace


def _model_calls(turn: Turn, purpose: str) -> list[ModelCall]:
    return list(ModelCall.objects.filter(turn_id=turn.result.turn_id, purpose=purpose))


def _served(model: LLMock, turn: Turn, fault: str, purpose: str, stage_model: str) -> None:
    """The stage asked the model, and LLMock served the fault: none of it is still queued."""
    assert _model_calls(turn, purpose), f"no {purpose} call (hybrid: was the reading gated?)"

    def key(behaviour: dict[str, Any]) -> tuple[Any, ...]:
        return behaviour["type"], behaviour.get("kind"), behaviour.get("finish_reason")

    faults = {key(b) for b in FAULTS[fault].behaviours(stage_model)}
    pending = model.pending()
    assert not [p for p in pending if key(p) in faults], pending


def _check_read(turn: Turn, engine: str, fault_name: str) -> None:
    fault = FAULTS[fault_name]
    _complete(turn)
    trace = turn.trace()
    calls = _model_calls(turn, "orchestrator")
    if fault.kind:
        assert (trace["fallback"] or {}).get("stage") == "orchestrator", trace["fallback"]
        assert trace["fallback"]["kind"] == fault.kind
        assert [(c.ok, c.error_kind) for c in calls] == [(False, fault.kind)]
    else:
        assert trace["fallback"] is None and trace["routed_by"] == "model"
        assert [c.ok for c in calls] == [True]
    if fault_name == "rate_limit_within_budget":
        assert calls[0].retries == 1
    if fault_name == "unknown_tool":
        assert "unknown_tool" in trace["plan"]["guards"]
    (run,) = AgentRun.objects.filter(turn_id=turn.result.turn_id)  # a repeated route runs once
    answered = "8" in turn.reply and "18" in turn.reply
    if engine == "hybrid" and fault.kind:
        # The embedded reading is the gated one: the step yields (says so) instead of guessing.
        assert (run.success, run.yielded, answered) == (False, True, False)
    else:
        assert (run.agent, run.success, answered) == ("general", True, True)


def _check_write(turn: Turn, fault_name: str, booked: int) -> None:
    fault = FAULTS[fault_name]
    _complete(turn)
    trace = turn.trace()
    assert trace["fallback"] is None and trace["routed_by"] == "model"
    (step,) = trace["steps"]
    (run,) = AgentRun.objects.filter(turn_id=turn.result.turn_id)
    assert (run.agent, run.intent) == ("scheduling", "book_job")
    calls = _model_calls(turn, "agent")
    kind = fault.on_write
    assert step["fallback"] == (kind or None)
    if kind and kind not in JUDGED:
        assert (calls[0].ok, calls[0].error_kind) == (False, kind)
    else:
        assert all(c.ok for c in calls)
    if kind:
        assert booked == 1  # by the embedded handler: the model's call never ran
    if fault_name == "rate_limit_within_budget":
        assert calls[0].retries == 1 and booked == 1
    if fault_name == "repeated_calls":
        rows = list(ToolCall.objects.filter(turn_id=turn.result.turn_id, tool="job_book"))
        assert booked == 1 and len(rows) == 3
        assert all("not repeated" in row.summary for row in rows[1:])  # the trace says so
    # Truthful: the booking step is a success exactly when a job was booked, else it says why.
    assert run.success == (booked == 1), (run.success, run.error, booked, turn.reply)
    assert run.success or run.error


def _verdict(model: LLMock, fault_name: str) -> None:
    # Ours: a stream without a finish reason is refused and the turn falls back (not retried);
    # LLMock only sees that nothing retried it.
    refused = FAULTS[fault_name].kind == "no_finish_reason"
    assert model.verdict_errors() <= ({"truncated_stream_accepted"} if refused else set())


# --- the matrix -------------------------------------------------------------------------------


@pytest.mark.parametrize(("engine", "fault_name"), _cells())
def test_a_broken_model_still_gets_a_complete_answer_and_at_most_one_write(
    cast: Cast,
    org: Organisation,  # noqa: F811
    conversation: Conversation,  # noqa: F811
    shop: Shop,
    model: LLMock,
    engine: str,
    fault_name: str,
) -> None:
    _use_engine(org, engine)
    jobs, approvals = Job.objects.count(), PendingAction.objects.count()

    model.queue(*read_script(fault_name))
    read = ask(cast, conversation, READ)

    _served(model, read, fault_name, "orchestrator", ORCHESTRATOR_MODEL)
    _check_read(read, engine, fault_name)
    assert (Job.objects.count(), PendingAction.objects.count()) == (jobs, approvals)

    model.clear_scenario()  # the journal stays: the verdict judges both turns' calls
    model.queue(*write_script(fault_name, shop.booking, shop.text))
    write = ask(cast, conversation, shop.text)

    _served(model, write, fault_name, "agent", AGENT_MODEL)
    booked = Job.objects.filter(customer=shop.customer).count()
    assert booked <= 1 and Job.objects.count() == jobs + booked
    assert PendingAction.objects.count() == approvals
    _verdict(model, fault_name)
    _check_write(write, fault_name, booked)


# --- a precise scenario LLMock cannot aim: the stream cut *after* the write -------------------


@pytest.mark.parametrize("engine", ["llm", "hybrid"])
def test_a_stream_cut_after_the_booking_does_not_book_again(
    cast: Cast,
    org: Organisation,  # noqa: F811
    conversation: Conversation,  # noqa: F811
    shop: Shop,
    server: ScriptedServer,  # noqa: F811
    engine: str,
) -> None:
    # LLMock serves a behaviour to the first request it matches; the sub-agent's second round
    # looks like its first, so the project's scripted server cuts that one.
    _use_engine(org, engine)
    server.add(
        tool_calls([_ask("scheduling", shop.text, "book_job")]), when=for_tool("ask_scheduling")
    )
    server.add(tool_calls([("job_book", shop.booking)]), when=SCHEDULING)
    server.add(scripted.drop_after(scripted.text("Listo, quedó agendado"), 2), when=SCHEDULING)

    turn = ask(cast, conversation, shop.text)

    _complete(turn)
    (job,) = Job.objects.filter(customer=shop.customer)  # the fallback did not book again
    (step,) = turn.trace()["steps"]
    assert step["fallback"] == "dropped" and step["tools"] == ["job_book"]
    assert f"#{job.pk}" in turn.reply  # the reply says, by record, what got done before the cut
    (call,) = [c for c in _model_calls(turn, "agent") if not c.ok]
    assert call.error_kind == "dropped"
