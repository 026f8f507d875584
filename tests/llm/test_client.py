"""ChatClient against the scripted server through the real openai SDK: streaming, tool-call
assembly, usage and cost, retries and every fault kind, each call recorded as a ModelCall."""

from __future__ import annotations

import socket
import time
from decimal import Decimal

import pytest

from copilot.llm import scripted
from copilot.llm.client import ChatClient, ModelFailure, ToolCall, sdk_client
from copilot.llm.provider import Provider
from copilot.llm.scripted import ScriptedServer
from copilot.models import Conversation, ModelCall, ModelPrice
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
    # Four chunks 0.15 s apart: a client that buffered would deliver everything at the end.
    scripted_server.add(scripted.text("Mañana hay tres.", chunk_size=4, delay=0.15))
    seen: list[tuple[str, float]] = []
    started = time.monotonic()

    completion = _client(provider, cast).complete(
        MESSAGES, purpose="agent", on_text=lambda delta: seen.append((delta, time.monotonic()))
    )
    returned = time.monotonic()

    assert [delta for delta, _ in seen] == ["Maña", "na h", "ay t", "res."]
    moments = [moment for _, moment in seen]
    # Each delta was handed over when its chunk arrived, the first long before the end.
    assert all(later - earlier > 0.1 for earlier, later in zip(moments, moments[1:], strict=False))
    assert returned - moments[0] > 0.45
    assert completion.text == "Mañana hay tres." and completion.finish_reason == "stop"
    assert completion.tool_calls == [] and completion.retries == 0
    assert completion.first_token_ms is not None
    assert completion.first_token_ms < (returned - started) * 1000 - 450
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
    assert (call.organisation, call.conversation) == (cast.org, conversation)
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
