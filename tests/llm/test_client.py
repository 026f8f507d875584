"""ChatClient against the scripted server through the real openai SDK: streaming, tool-call
assembly, usage and cost, retries and every fault kind, each call recorded as a ModelCall."""

from __future__ import annotations

import gc
import json
import logging
import math
import socket
import threading
import time
from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from copilot.models import Conversation
from llm.client import ChatClient, ModelFailure, ToolCall, estimate_tokens, sdk_client
from llm.models import ModelCall, ModelPrice
from llm.provider import Provider
from testing import scripted
from testing.scripted import Reply, ScriptedServer
from tests.conftest import Cast
from tests.llm.conftest import tuned

pytestmark = pytest.mark.django_db

MESSAGES = [{"role": "user", "content": "¿Qué turnos hay mañana?"}]


def _client(provider: Provider, cast: Cast, **kwargs: object) -> ChatClient:
    return ChatClient(provider, organisation=cast.org, turn_id="turn-1", **kwargs)  # type: ignore[arg-type]


def _fails(client: ChatClient, kind: str, **kwargs: object) -> ModelFailure:
    with pytest.raises(ModelFailure) as caught:
        client.complete(MESSAGES, purpose="agent", **kwargs)  # type: ignore[arg-type]
    assert caught.value.kind == kind, caught.value
    return caught.value


def test_text_deltas_reach_on_text_as_they_arrive(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast
) -> None:
    # Four chunks 0.25 s apart: a client that buffered would deliver everything at the end.
    scripted_server.add(scripted.text("Mañana hay tres.", chunk_size=4, delay=0.25))
    seen: list[tuple[str, float]] = []
    started = time.monotonic()

    completion = _client(provider, cast).complete(
        MESSAGES, purpose="agent", on_text=lambda delta: seen.append((delta, time.monotonic()))
    )
    returned = time.monotonic()

    assert [delta for delta, _ in seen] == ["Maña", "na h", "ay t", "res."]
    moments = [moment for _, moment in seen]
    # Each delta was handed over when its chunk arrived, the first long before the end: the
    # deltas are spread over the three waits (0.75 s), with room for a loaded machine that
    # hands two of them over together.
    assert moments == sorted(moments)
    assert moments[-1] - moments[0] > 0.4
    assert returned - moments[0] > 0.4
    assert completion.text == "Mañana hay tres." and completion.finish_reason == "stop"
    assert completion.tool_calls == [] and completion.retries == 0
    assert completion.first_token_ms is not None
    assert completion.first_token_ms < (returned - started) * 1000 - 400
    assert scripted_server.requests[0]["stream"] is True
    assert scripted_server.requests[0]["stream_options"] == {"include_usage": True}
    assert scripted_server.requests[0]["messages"] == MESSAGES


def test_tool_call_deltas_split_across_chunks_are_assembled(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast
) -> None:
    first = {"query": "agendá a Jorge el jueves", "intent_count": 2}
    second = {"query": "¿cuánto sale una carga de gas?", "intent_count": 2}
    scripted_server.add(
        scripted.tool_calls(
            [("ask_scheduling", first, "call_a"), ("ask_sales", second, "call_b")],
            preamble="Dale, me fijo.",
            split=4,
        )
    )
    texts: list[str] = []
    tools = [
        {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
        for name in ("ask_scheduling", "ask_sales")
    ]

    completion = _client(provider, cast).complete(
        MESSAGES, purpose="orchestrator", tools=tools, tool_choice="auto", on_text=texts.append
    )

    assert "".join(texts) == completion.text == "Dale, me fijo."
    assert completion.finish_reason == "tool_calls"
    assert [(c.id, c.name) for c in completion.tool_calls] == [
        ("call_a", "ask_scheduling"),
        ("call_b", "ask_sales"),
    ]
    assert [c.parsed() for c in completion.tool_calls] == [first, second]
    request = scripted_server.requests[0]
    assert request["tool_choice"] == "auto" and len(request["tools"]) == 2


def test_usage_and_cost_are_recorded_per_call(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast
) -> None:
    conversation = Conversation.objects.create(organisation=cast.org)
    # The seeded table prices gpt-4o-mini at 0.15 / 0.60 USD per million; the longest prefix wins
    # over gpt-4o (2.50 / 10.00).
    scripted_server.add(scripted.text("Listo.", usage=(1000, 500)))
    client = _client(provider, cast, conversation_id=conversation.pk)

    completion = client.complete(
        MESSAGES, purpose="agent", agent="scheduling", model="gpt-4o-mini-2024-07-18"
    )

    expected = Decimal("0.15") * 1000 / 1_000_000 + Decimal("0.60") * 500 / 1_000_000
    assert completion.tokens_in == 1000 and completion.tokens_out == 500
    assert completion.cost == expected
    assert completion.model == "gpt-4o-mini-2024-07-18"
    call = ModelCall.objects.get()
    assert (call.organisation, call.conversation_id) == (cast.org, conversation.pk)
    assert call.turn_id == "turn-1"
    assert (call.purpose, call.agent, call.model) == ("agent", "scheduling", completion.model)
    assert (call.tokens_in, call.tokens_out, call.cost) == (1000, 500, expected)
    assert call.ok and call.error_kind == "" and call.retries == 0
    assert call.latency_ms > 0 and call.first_token_ms is not None
    assert call.source == "environment"


def test_an_edited_price_applies_and_an_unpriced_model_costs_nothing(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast
) -> None:
    ModelPrice.objects.create(
        model_prefix="llama", input_per_million=Decimal("1"), output_per_million=Decimal("2")
    )
    scripted_server.add(scripted.text("a", usage=(1_000_000, 1_000_000)), times=2)
    client = _client(provider, cast)

    assert client.complete(MESSAGES, purpose="agent", model="llama-3.1-8b").cost == Decimal(3)
    assert client.complete(MESSAGES, purpose="agent", model="qwen2.5").cost == Decimal(0)


def test_429_then_success_waits_the_retry_after(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast
) -> None:
    scripted_server.add(scripted.status(429, retry_after=0.4))
    scripted_server.add(scripted.text("Ahora sí."))
    started = time.monotonic()

    completion = _client(provider, cast).complete(MESSAGES, purpose="agent")

    elapsed = time.monotonic() - started
    assert completion.text == "Ahora sí." and completion.retries == 1
    assert 0.4 <= elapsed < 1.5
    assert len(scripted_server.requests) == 2
    call = ModelCall.objects.get()
    assert call.ok and call.retries == 1


def test_retry_after_ms_is_honoured(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast
) -> None:
    scripted_server.add(scripted.status(429, retry_after_ms=250))
    scripted_server.add(scripted.text("ok"))
    started = time.monotonic()

    _client(provider, cast).complete(MESSAGES, purpose="agent")

    assert 0.25 <= time.monotonic() - started < 1.5


def test_429_forever_ends_rate_limited_after_the_retries_within_budget(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast
) -> None:
    scripted_server.add(scripted.status(429, retry_after=0.3), times=None)
    started = time.monotonic()

    failure = _fails(_client(provider, cast), "rate_limited")

    elapsed = time.monotonic() - started
    assert 0.6 <= elapsed < 1.8  # two waits of Retry-After, then it gives up
    assert len(scripted_server.requests) == 3 and not failure.streamed
    call = ModelCall.objects.get()
    assert not call.ok and call.error_kind == "rate_limited" and call.retries == 2


def test_a_retry_after_beyond_the_budget_fails_at_once(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast
) -> None:
    scripted_server.add(scripted.status(429, retry_after=30), times=None)
    started = time.monotonic()

    _fails(_client(tuned(provider, retry_budget_s=2.0), cast), "rate_limited")

    assert time.monotonic() - started < 1.5  # not the 30 s asked for
    assert len(scripted_server.requests) == 1


def test_500_is_retried_with_backoff(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast
) -> None:
    scripted_server.add(scripted.status(500))
    scripted_server.add(scripted.text("Recuperado."))
    started = time.monotonic()

    completion = _client(provider, cast).complete(MESSAGES, purpose="agent")

    assert completion.text == "Recuperado." and completion.retries == 1
    assert time.monotonic() - started >= 0.3  # the first backoff step (0.5 s, jittered)


def test_500_forever_is_a_server_error(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast
) -> None:
    scripted_server.add(scripted.status(503), times=None)
    _fails(_client(tuned(provider, max_retries=1), cast), "server_error")
    assert len(scripted_server.requests) == 2


def test_a_hanging_server_times_out_without_retry(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast
) -> None:
    scripted_server.add(scripted.hang(5), times=None)
    started = time.monotonic()

    _fails(_client(tuned(provider, timeout_s=0.3), cast), "timeout")

    assert 0.3 <= time.monotonic() - started < 2.5
    assert len(scripted_server.requests) == 1
    assert ModelCall.objects.get().error_kind == "timeout"


def test_silence_between_chunks_longer_than_the_timeout_is_a_timeout(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast
) -> None:
    scripted_server.add(scripted.text("lento", chunk_size=1, delay=0.6))
    _fails(_client(tuned(provider, timeout_s=0.3), cast), "timeout")


def test_a_model_that_keeps_writing_is_cut_at_the_call_deadline(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast
) -> None:
    # Never silent for long (a chunk every 0.05 s), so the timeout alone would wait ~10 s.
    scripted_server.add(scripted.text("x" * 200, chunk_size=1, delay=0.05))
    started = time.monotonic()

    failure = _fails(_client(tuned(provider, timeout_s=1.0, deadline_s=0.6), cast), "deadline")

    assert 0.6 <= time.monotonic() - started < 3.0
    assert failure.streamed  # the caller must not leave the partial text as an answer
    assert len(scripted_server.requests) == 1  # not retried
    assert ModelCall.objects.get().error_kind == "deadline"


def test_every_call_asks_for_at_most_the_configured_tokens(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast
) -> None:
    scripted_server.add(scripted.text("Listo."))
    _client(tuned(provider, max_tokens=300), cast).complete(MESSAGES, purpose="agent")
    assert scripted_server.requests[0]["max_tokens"] == 300


def test_a_stream_dropped_mid_way_is_dropped_and_says_text_was_streamed(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast
) -> None:
    scripted_server.add(scripted.drop_after(scripted.text("abcdefgh", chunk_size=2), 2))
    scripted_server.add(scripted.text("never asked for"))
    texts: list[str] = []

    failure = _fails(_client(provider, cast), "dropped", on_text=texts.append)

    assert texts == ["ab", "cd"] and failure.streamed
    assert len(scripted_server.requests) == 1  # text reached the user: never retried
    assert ModelCall.objects.get().error_kind == "dropped"


def test_a_stream_without_finish_reason_fails(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast
) -> None:
    scripted_server.add(scripted.no_finish(scripted.text("a medias")))
    failure = _fails(_client(provider, cast), "no_finish_reason")
    assert failure.streamed


@pytest.mark.parametrize("reason", ["length", "content_filter"])
def test_an_answer_that_stopped_short_fails_and_is_not_retried(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast, reason: str
) -> None:
    # Cut at max_tokens mid-sentence (or withheld by a filter): not an answer to show as whole.
    scripted_server.add(
        replace(scripted.text("Atendemos de lunes a", chunk_size=6), finish_reason=reason)
    )
    texts: list[str] = []

    failure = _fails(_client(tuned(provider, max_tokens=5), cast), reason, on_text=texts.append)

    assert "".join(texts) == "Atendemos de lunes a" and failure.streamed
    assert len(scripted_server.requests) == 1
    row = ModelCall.objects.get()
    assert (row.ok, row.error_kind) == (False, reason)


def test_a_tool_call_stream_without_finish_reason_fails_without_text(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast
) -> None:
    scripted_server.add(scripted.no_finish(scripted.tool_calls([("ask_sales", {"query": "x"})])))
    assert not _fails(_client(provider, cast), "no_finish_reason").streamed


def test_an_invalid_chunk_fails(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast
) -> None:
    scripted_server.add(scripted.invalid_chunk(scripted.text("abcdef", chunk_size=2), at=2))
    texts: list[str] = []
    failure = _fails(_client(provider, cast), "invalid_chunk", on_text=texts.append)
    assert texts == ["ab", "cd"] and failure.streamed


def test_a_refused_connection_is_retried_then_fails(provider: Provider, cast: Cast) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    refused = tuned(provider, base_url=f"http://127.0.0.1:{port}/v1", retry_budget_s=0.3)
    started = time.monotonic()

    failure = _fails(_client(refused, cast), "connection")

    assert time.monotonic() - started < 1.5 and not failure.streamed
    assert ModelCall.objects.get().retries >= 1


@pytest.mark.parametrize(
    ("code", "kind"), [(400, "bad_request"), (401, "auth"), (404, "bad_request")]
)
def test_client_errors_are_not_retried(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast, code: int, kind: str
) -> None:
    scripted_server.add(scripted.status(code), times=None)
    _fails(_client(provider, cast), kind)
    assert len(scripted_server.requests) == 1


def test_an_exception_from_on_text_is_the_callers_and_is_recorded(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast
) -> None:
    scripted_server.add(scripted.text("abcdef", chunk_size=2))

    def cancel(_: str) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _client(provider, cast).complete(MESSAGES, purpose="agent", on_text=cancel)
    assert ModelCall.objects.get().error_kind == "aborted"


def test_tool_call_arguments_parse() -> None:
    assert ToolCall("c", "ask_sales", "").parsed() == {}
    assert ToolCall("c", "ask_sales", '{"query": "hola"}').parsed() == {"query": "hola"}
    with pytest.raises(ValueError):
        ToolCall("c", "ask_sales", '{"query": ').parsed()
    with pytest.raises(ValueError):
        ToolCall("c", "ask_sales", "[1, 2]").parsed()


def test_one_sdk_client_per_endpoint_key_and_timeout(provider: Provider) -> None:
    assert sdk_client(provider) is sdk_client(tuned(provider, max_retries=5))
    assert sdk_client(provider) is not sdk_client(tuned(provider, api_key="sk-other"))
    assert sdk_client(provider) is not sdk_client(tuned(provider, timeout_s=9.0))
    assert sdk_client(provider).max_retries == 0


# --- chunks as the server's JSON -----------------------------------------------------------------


def _raw(*chunks: dict[str, Any] | str, delay: float = 0.0) -> Reply:
    """A stream of exactly these chunks (dicts sent as JSON, strings as they are), then [DONE]."""
    frames = tuple(c if isinstance(c, str) else json.dumps(c) for c in chunks)
    return Reply(kind="stream", frames=frames, delay=delay)


def _delta(delta: dict[str, Any], *, finish: str | None = None, index: int = 0) -> dict[str, Any]:
    return {"choices": [{"index": index, "delta": delta, "finish_reason": finish}]}


def _call(index: int | None = None, **fields: Any) -> dict[str, Any]:
    """One tool-call delta: `id`, and `name`/`arguments` inside `function`."""
    delta: dict[str, Any] = {} if index is None else {"index": index}
    if "id" in fields:
        delta["id"] = fields.pop("id")
    delta["function"] = fields
    return delta


def test_tool_call_deltas_interleaved_by_index_are_assembled_in_index_order(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast
) -> None:
    # The second call starts first and the two calls' pieces alternate; names come in pieces too.
    scripted_server.add(
        _raw(
            {"model": "gpt-4o-mini-2024-07-18", **_delta({"role": "assistant", "content": None})},
            _delta({"tool_calls": [_call(1, id="call_b", name="ask_sch", arguments="")]}),
            _delta({"tool_calls": [_call(0, id="call_a", name="ask_sales", arguments='{"qu')]}),
            _delta({"tool_calls": [_call(1, name="eduling", arguments='{"query": ')]}),
            _delta({"tool_calls": [_call(0, arguments='ery": "precio"}')]}),
            _delta({"tool_calls": [_call(1, arguments='"agenda"}')]}),
            _delta({}, finish="tool_calls"),
            {"choices": [], "usage": {"prompt_tokens": 30, "completion_tokens": 12}},
        )
    )

    completion = _client(provider, cast).complete(MESSAGES, purpose="orchestrator")

    assert [(c.id, c.name, c.parsed()) for c in completion.tool_calls] == [
        ("call_a", "ask_sales", {"query": "precio"}),
        ("call_b", "ask_scheduling", {"query": "agenda"}),
    ]
    assert completion.text == "" and completion.finish_reason == "tool_calls"
    assert completion.model == "gpt-4o-mini-2024-07-18"
    assert (completion.tokens_in, completion.tokens_out) == (30, 12)
    assert completion.first_token_ms is not None


def test_tool_call_deltas_without_index_follow_their_ids_and_other_choices_are_ignored(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast
) -> None:
    # Some compatible servers omit `index`: an id opens a call, a delta without one continues it.
    other_choice = {"index": 1, "delta": {"content": "otra"}, "finish_reason": None}
    scripted_server.add(
        _raw(
            _delta({"content": "Ya "}),
            _delta({"tool_calls": [_call(id="c1", name="ask_sales", arguments='{"query": ')]}),
            {
                "choices": [
                    *_delta({"tool_calls": [_call(arguments='"x"}')]})["choices"],
                    other_choice,
                ]
            },
            _delta({"content": "va."}),
            _delta({"tool_calls": [_call(id="c2", name="ask_fleet", arguments="")]}),
            _delta({}, finish="tool_calls"),
        )
    )
    texts: list[str] = []

    completion = _client(provider, cast).complete(MESSAGES, purpose="agent", on_text=texts.append)

    assert texts == ["Ya ", "va."] and completion.text == "Ya va."
    assert [(c.id, c.name, c.parsed()) for c in completion.tool_calls] == [
        ("c1", "ask_sales", {"query": "x"}),
        ("c2", "ask_fleet", {}),
    ]
    # No usage chunk was sent: the request's and the output's size stand in for it.
    assert completion.usage_estimated
    assert completion.tokens_in == estimate_tokens(MESSAGES, None)
    assert completion.tokens_out == math.ceil(len('Ya va.ask_sales{"query": "x"}ask_fleet') / 4)


@pytest.mark.parametrize(
    "chunk",
    [
        "[1, 2, 3]",
        _delta({"content": 5}),
        _delta({"tool_calls": [_call(0, id="c", name="ask_sales", arguments=7)]}),
        _delta({"tool_calls": "ask_sales"}),
        {"choices": [], "usage": {"prompt_tokens": "many", "completion_tokens": 1}},
        {"choices": ["stop"]},
    ],
    ids=["array", "number_content", "number_arguments", "string_calls", "bad_usage", "bad_choice"],
)
def test_a_chunk_of_the_wrong_shape_is_an_invalid_chunk(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast, chunk: dict[str, Any] | str
) -> None:
    scripted_server.add(_raw(_delta({"content": "ab"}), chunk, _delta({}, finish="stop")))
    texts: list[str] = []

    failure = _fails(_client(provider, cast), "invalid_chunk", on_text=texts.append)

    assert texts == ["ab"] and failure.streamed
    assert ModelCall.objects.get().error_kind == "invalid_chunk"


def test_an_error_event_in_the_stream_is_a_server_error(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast
) -> None:
    scripted_server.add(_raw(_delta({"content": "ab"}), {"error": {"message": "overloaded"}}))
    failure = _fails(_client(provider, cast), "server_error")
    assert "overloaded" in failure.detail and failure.streamed
    assert len(scripted_server.requests) == 1  # text was out: not retried


def test_the_answer_is_back_at_done_even_if_the_body_stays_open(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast
) -> None:
    # After [DONE] this server keeps the body open for three more seconds: the rest is read off
    # the caller's path (for the connection's sake), the caller has its answer at [DONE].
    tail = ["{}"] * 12
    scripted_server.add(_raw(_delta({"content": "ya"}, finish="stop"), "[DONE]", *tail, delay=0.25))
    started = time.monotonic()

    completion = _client(provider, cast).complete(MESSAGES, purpose="agent")

    assert completion.text == "ya" and completion.finish_reason == "stop"
    # Two chunk delays (0.5 s), not fourteen (3.5 s); the margin is for a loaded machine.
    assert time.monotonic() - started < 2.0


def test_consecutive_calls_reuse_one_connection(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Closing a response at [DONE] with the end of the body unread closes its connection: a new
    # TCP (and TLS) handshake on every call. The client reads the end so the pool keeps it.
    opened: list[object] = []
    setup = scripted._Handler.setup  # noqa: SLF001 - one handler per accepted connection

    def counting(handler: Any) -> None:
        opened.append(handler.client_address)
        setup(handler)

    monkeypatch.setattr(scripted._Handler, "setup", counting)  # noqa: SLF001
    scripted_server.add(scripted.text("uno"))
    scripted_server.add(scripted.tool_calls([("ask_sales", {"query": "dos"})]))
    scripted_server.add(scripted.text("tres"))
    client = _client(provider, cast)

    replies = []
    for _ in range(3):
        replies.append(client.complete(MESSAGES, purpose="agent"))
        time.sleep(0.1)  # the end of the body is read in the background

    assert [r.text for r in replies] == ["uno", "", "tres"]
    assert len(scripted_server.requests) == 3 and len(opened) == 1


# --- deferred rows: one INSERT per turn ----------------------------------------------------------


def test_deferred_rows_wait_for_flush_and_are_written_once_in_one_insert(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast
) -> None:
    conversation = Conversation.objects.create(organisation=cast.org)
    scripted_server.add(scripted.text("Listo.", usage=(100, 20)))
    scripted_server.add(scripted.status(400))
    client = _client(provider, cast, conversation_id=conversation.pk, deferred_records=True)

    completion = client.complete(MESSAGES, purpose="orchestrator")
    _fails(client, "bad_request", agent="sales")
    assert not ModelCall.objects.exists()  # nothing written while the turn runs

    with CaptureQueriesContext(connection) as queries:
        assert client.flush() == 2
    inserts = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("INSERT")]
    assert len(inserts) == 1

    first, second = ModelCall.objects.all()
    assert (first.purpose, first.ok, first.tokens_in, first.tokens_out) == (
        "orchestrator", True, 100, 20,
    )  # fmt: skip
    assert first.cost == completion.cost and first.first_token_ms is not None
    assert first.latency_ms == completion.latency_ms  # one measurement, not two (no timing)
    assert (second.purpose, second.agent, second.ok, second.error_kind) == (
        "agent", "sales", False, "bad_request",
    )  # fmt: skip
    for row in (first, second):
        assert (row.organisation, row.conversation_id, row.turn_id) == (
            cast.org,
            conversation.pk,
            "turn-1",
        )
    assert first.created_at <= second.created_at  # when each call ended, not the flush
    assert not ModelCall.objects.filter(organisation=cast.other_org).exists()

    assert client.flush() == 0  # idempotent
    assert ModelCall.objects.count() == 2


def test_the_default_client_writes_each_row_at_once(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast
) -> None:
    scripted_server.add(scripted.text("a"))
    client = _client(provider, cast)
    client.complete(MESSAGES, purpose="agent")
    assert ModelCall.objects.count() == 1
    assert client.flush() == 0 and ModelCall.objects.count() == 1


def test_a_deferred_client_used_as_a_context_flushes_even_when_the_turn_fails(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast
) -> None:
    scripted_server.add(scripted.text("a"))
    with pytest.raises(RuntimeError), _client(provider, cast, deferred_records=True) as client:
        client.complete(MESSAGES, purpose="agent")
        raise RuntimeError("the turn broke after the call")
    assert ModelCall.objects.get().ok


def test_when_the_bulk_insert_fails_each_row_is_written_on_its_own(
    scripted_server: ScriptedServer,
    provider: Provider,
    cast: Cast,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    scripted_server.add(scripted.text("a"), times=2)
    client = _client(provider, cast, deferred_records=True)
    client.complete(MESSAGES, purpose="agent", agent="sales")
    client.complete(MESSAGES, purpose="agent", agent="fleet")

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("no bulk today")

    monkeypatch.setattr(ModelCall.objects, "bulk_create", refuse)
    with caplog.at_level(logging.ERROR, logger="llm.client"):
        assert client.flush() == 2
    assert sorted(ModelCall.objects.values_list("agent", flat=True)) == ["fleet", "sales"]
    assert "could not record 2 model calls at once" in caplog.text


def test_a_deferred_client_that_is_never_flushed_says_so(
    scripted_server: ScriptedServer,
    provider: Provider,
    cast: Cast,
    caplog: pytest.LogCaptureFixture,
) -> None:
    scripted_server.add(scripted.text("a"))
    client = _client(provider, cast, deferred_records=True)
    client.complete(MESSAGES, purpose="agent")
    with caplog.at_level(logging.ERROR, logger="llm.client"):
        del client
        gc.collect()
    assert "1 model call rows of turn turn-1 were never flushed" in caplog.text


@pytest.mark.django_db(transaction=True)
def test_concurrent_calls_on_a_shared_deferred_client_lose_no_row(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast
) -> None:
    # Concurrent sub-agents share the turn's client: every call's row is collected.
    agents = [f"agent{i}" for i in range(8)]
    scripted_server.add(scripted.text("hecho", chunk_size=2, delay=0.01), times=len(agents))
    # Rows, not speed, are under test: a loaded machine must not turn this into a timeout.
    client = _client(tuned(provider, timeout_s=15.0), cast, deferred_records=True)
    errors: list[BaseException] = []
    start = threading.Barrier(len(agents))

    def run(agent: str) -> None:
        try:
            start.wait()
            client.complete(MESSAGES, purpose="agent", agent=agent)
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=run, args=(agent,)) for agent in agents]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert errors == [] and not ModelCall.objects.exists()
    assert client.flush() == len(agents)
    assert sorted(ModelCall.objects.values_list("agent", flat=True)) == agents


def test_an_agents_own_cap_and_the_turns_budget_lower_max_tokens(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast
) -> None:
    scripted_server.add(scripted.text("Uno."))
    scripted_server.add(scripted.text("Dos."))
    client = _client(tuned(provider, max_tokens=1024), cast, token_budget=600)

    client.complete(MESSAGES, purpose="agent", max_tokens=200)  # the agent's cap: 200
    spent = client.tokens_spent  # the usage chunk said (10, 5)
    client.complete(MESSAGES, purpose="agent")  # what is left of 600 after this call's prompt

    first, second = scripted_server.requests
    assert first["max_tokens"] == 200 and spent == 15
    assert second["max_tokens"] == 600 - 15 - estimate_tokens(MESSAGES, None)


def test_a_spent_token_budget_refuses_the_next_call_without_sending_it(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast
) -> None:
    scripted_server.add(scripted.text("Uno.", usage=(400, 150)))
    client = _client(provider, cast, token_budget=600)
    client.complete(MESSAGES, purpose="agent")

    failure = _fails(client, "budget")

    assert "600 tokens are spent" in failure.detail and not failure.retryable
    assert len(scripted_server.requests) == 1  # the refused call never reached the server
    refused = ModelCall.objects.order_by("pk").last()
    assert refused is not None and refused.error_kind == "budget" and refused.tokens_in == 0


def test_the_turns_deadline_cuts_a_call_and_refuses_the_next(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast
) -> None:
    # The call's own deadline (60 s) is far; the turn has 3 s in all. (With 1.5 s a loaded CI
    # machine once spent the half second before the first call, which was then refused: a call
    # is not made with under MIN_CALL_SECONDS left.)
    scripted_server.add(scripted.text("x" * 200, chunk_size=1, delay=0.05))
    started = time.monotonic()
    client = _client(tuned(provider, timeout_s=1.0, deadline_s=60.0), cast, turn_deadline_s=3.0)

    cut = _fails(client, "turn_deadline")
    assert 2.0 <= time.monotonic() - started < 8.0 and cut.streamed
    refused = _fails(client, "turn_deadline")  # under a second left: not worth a call

    assert "used up" in refused.detail and len(scripted_server.requests) == 1
    assert [row.error_kind for row in ModelCall.objects.order_by("pk")] == [
        "turn_deadline",
        "turn_deadline",
    ]


def test_a_failed_call_that_streamed_still_counts_against_the_budget(
    scripted_server: ScriptedServer, provider: Provider, cast: Cast
) -> None:
    # A stream cut at the deadline sent no usage: what it wrote is estimated and spent.
    scripted_server.add(scripted.text("y" * 400, chunk_size=4, delay=0.01))
    client = _client(tuned(provider, deadline_s=0.3), cast, token_budget=10_000)

    _fails(client, "deadline")

    row = ModelCall.objects.get()
    assert row.usage_estimated and row.tokens_out > 0
    assert client.tokens_spent == row.tokens_in + row.tokens_out > 0


# --- the privacy guard (T4) ----------------------------------------------------------------------


def test_personal_data_is_masked_on_the_way_out_and_restored_on_the_way_back(
    provider: Provider, scripted_server: ScriptedServer, cast: Cast
) -> None:
    from nlu.privacy import Vault

    phone = "11 5555-1234"
    arguments = {"query": "llamar al [TEL_1]", "intent_count": 1}
    scripted_server.add(
        scripted.tool_calls(
            [("ask_customer", arguments, "c1")], preamble="Le escribo al [TEL_1].", split=2
        )
    )
    vault = Vault()
    texts: list[str] = []
    messages = [
        {"role": "system", "content": "Sos el copiloto."},
        {"role": "user", "content": f"llamá a Juana al {phone} o a juana@example.com"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "x", "type": "function",
             "function": {"name": "ask_customer", "arguments": f'{{"query": "{phone}"}}'}}]},
    ]  # fmt: skip
    completion = _client(provider, cast, redactor=vault).complete(
        messages, purpose="orchestrator", on_text=texts.append
    )
    sent = json.dumps(scripted_server.requests[0]["messages"], ensure_ascii=False)
    assert phone not in sent and "juana@example.com" not in sent
    assert "[TEL_1]" in sent and "[EMAIL_1]" in sent
    assert messages[1]["content"].endswith("juana@example.com")  # the caller's copy is untouched
    assert completion.text == "".join(texts) == f"Le escribo al {phone}."
    assert completion.tool_calls[0].parsed()["query"] == f"llamar al {phone}"
    assert vault.receipt()["phone"] == {"values": 1, "times": 2}
