"""The scripted OpenAI-compatible server, exercised through the real `openai` SDK over a socket:
what the other llm tests rely on (ordering, matching, faults) must hold here first."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import httpx2
import openai
import pytest

from testing import scripted
from testing.scripted import ScriptedServer


def _client(server: ScriptedServer, timeout: float = 2.0) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=server.base_url, api_key="test", max_retries=0, timeout=httpx2.Timeout(timeout)
    )


def _stream(client: openai.OpenAI, content: str = "hola", **extra: Any) -> list[Any]:
    return list(
        client.chat.completions.create(
            model="scripted-model",
            messages=[{"role": "user", "content": content}],
            stream=True,
            stream_options={"include_usage": True},
            **extra,
        )
    )


def test_text_streams_in_chunks_with_finish_and_usage(server: ScriptedServer) -> None:
    server.add(scripted.text("Hola, ¿cómo andás?", chunk_size=5, usage=(12, 7)))
    chunks = _stream(_client(server))
    deltas = [c.choices[0].delta.content for c in chunks if c.choices]
    deltas = [d for d in deltas if d]
    assert deltas == ["Hola,", " ¿cóm", "o and", "ás?"]
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage.prompt_tokens == 12 and chunks[-1].usage.completion_tokens == 7
    assert chunks[0].model == "scripted-model"
    assert server.requests[0]["messages"][0]["content"] == "hola"
    assert server.first_token_at[0] is not None


def test_tool_call_arguments_split_across_chunks(server: ScriptedServer) -> None:
    arguments = {"query": "agendá a Jorge", "intent_count": 2}
    server.add(scripted.tool_calls([("ask_scheduling", arguments)], preamble="Dale.", split=3))
    chunks = _stream(_client(server))
    pieces = [
        call
        for chunk in chunks
        if chunk.choices
        for call in (chunk.choices[0].delta.tool_calls or [])
    ]
    assert len(pieces) == 3
    assert pieces[0].function.name == "ask_scheduling" and pieces[0].id
    assert json.loads("".join(p.function.arguments for p in pieces)) == arguments
    assert chunks[0].choices[0].delta.content == "Dale."
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"


def test_rules_match_before_the_default_queue_and_empty_queue_is_500(
    server: ScriptedServer,
) -> None:
    server.add(scripted.text("default"))
    server.add(scripted.text("sales"), when=scripted.for_tool("ask_sales"))
    client = _client(server)
    tools = [{"type": "function", "function": {"name": "ask_sales", "parameters": {}}}]
    sales = client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "x"}],
        tools=tools,  # type: ignore[arg-type]
    )
    other = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "y"}])
    assert sales.choices[0].message.content == "sales"
    assert other.choices[0].message.content == "default"
    with pytest.raises(openai.InternalServerError, match="no reply queued"):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "z"}])


def test_has_text_matches_message_content(server: ScriptedServer) -> None:
    server.add(scripted.text("second"), when=scripted.has_text("presupuesto"))
    server.add(scripted.text("first"))
    client = _client(server)
    reply = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "un presupuesto"}]
    )
    assert reply.choices[0].message.content == "second"


def test_status_carries_retry_after(server: ScriptedServer) -> None:
    server.add(scripted.status(429, retry_after=2))
    with pytest.raises(openai.RateLimitError) as caught:
        _stream(_client(server))
    assert caught.value.response.headers["retry-after"] == "2"


def test_faults_reach_the_sdk_as_they_would_from_a_real_server(server: ScriptedServer) -> None:
    client = _client(server, timeout=0.3)
    server.add(scripted.hang(5))
    started = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        _stream(client)
    assert time.monotonic() - started < 2

    server.add(scripted.drop_after(scripted.text("abcdefgh", chunk_size=2), 2))
    received: list[str] = []
    with pytest.raises(openai.APIConnectionError):
        for chunk in client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}], stream=True
        ):
            received.append(chunk.choices[0].delta.content or "")
    assert received == ["ab", "cd"]

    server.add(scripted.no_finish(scripted.text("abc")))
    assert all(c.choices[0].finish_reason is None for c in _stream(client) if c.choices)

    server.add(scripted.invalid_chunk(scripted.text("abcdef", chunk_size=2), at=1))
    with pytest.raises(json.JSONDecodeError):
        _stream(client)


def test_concurrent_requests_are_served_in_parallel(server: ScriptedServer) -> None:
    # Three slow replies at once: served in parallel, every reply has begun before any has
    # ended (one after another, the third would begin only after the first ended). Compared
    # by order, not against a wall-clock bound a loaded machine can miss.
    server.add(scripted.text("abcd", chunk_size=1, delay=0.2), times=3)
    client = _client(server)
    errors: list[BaseException] = []
    first_chunks: list[float] = []
    ends: list[float] = []

    def call() -> None:
        try:
            stream = client.chat.completions.create(
                model="scripted-model", messages=[{"role": "user", "content": "hola"}],
                stream=True,
            )  # fmt: skip
            for index, _chunk in enumerate(stream):
                if index == 0:
                    first_chunks.append(time.monotonic())
            ends.append(time.monotonic())
        except BaseException as error:  # noqa: BLE001 - reported by the assert below
            errors.append(error)

    threads = [threading.Thread(target=call) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert not errors
    assert len(first_chunks) == len(ends) == 3
    assert max(first_chunks) < min(ends)
    assert len(server.requests) == 3 and server.pending == 0


def test_stop_is_prompt_even_with_a_hanging_request() -> None:
    server = ScriptedServer().start()
    server.add(scripted.hang(30))
    failures: list[BaseException] = []

    def call() -> None:
        try:
            _stream(_client(server, timeout=10))
        except openai.APIConnectionError as error:
            failures.append(error)

    worker = threading.Thread(target=call)
    worker.start()
    assert server.wait_for_requests(1)
    started = time.monotonic()
    server.stop()
    worker.join(5)
    assert time.monotonic() - started < 2 and not worker.is_alive()
    assert len(failures) == 1  # the client saw the connection closed, not a reply
