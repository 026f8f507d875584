"""A real OpenAI-compatible HTTP server whose replies are scripted: tests and bench/ talk to it
through the real `openai` SDK, so streaming, tool-call deltas and every fault travel over a socket.

    with ScriptedServer() as server:
        server.add(text("Hola"))
        server.add(tool_calls([("ask_sales", {"query": "..."})]), when=for_tool("ask_sales"))
        client = openai.OpenAI(base_url=server.base_url, api_key="test")

Replies are served in order: the first queued rule whose `when(request_json)` is true answers,
else the default queue, else HTTP 500 saying nothing was queued. Streams use HTTP/1.1 chunked
encoding with keep-alive, TCP_NODELAY and one write per SSE event, so a zero-delay reply costs no
waiting; `delay` (seconds before each chunk) lets a test force the order replies finish in.

It also answers `POST /v1/audio/transcriptions` (multipart, as the SDK's
`audio.transcriptions.create` sends it): the request is recorded as `{"endpoint":
"audio/transcriptions", "model", "response_format", "language", "file": {"name",
"content_type", "size"}}` and the reply's text is the transcript (`transcript("...")`; a
`status(...)` or `hang(...)` fault works the same as for chat). A vision request is an ordinary
chat request whose user content holds an `image_url` part (`has_image()` matches it).

Stdlib only: importable and usable without Django.
"""

from __future__ import annotations

import contextlib
import email.parser
import email.policy
import json
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, Self

RequestJSON = dict[str, Any]
Matcher = Callable[[RequestJSON], bool]
# One streamed frame: a `delta` dict, or raw text sent as-is on a `data:` line (an invalid chunk).
Frame = dict[str, Any] | str


@dataclass(frozen=True)
class Reply:
    """What the server answers to one request. Build it with the functions below."""

    kind: Literal["stream", "status", "hang"]
    frames: tuple[Frame, ...] = ()
    finish_reason: str | None = None
    usage: tuple[int, int] | None = None
    delay: float = 0.0
    status_code: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    body: Any = None
    hang_s: float = 0.0
    drop_at: int | None = None


# --- reply builders ---------------------------------------------------------------------------


def _pieces(value: str, size: int) -> list[str]:
    size = max(1, size)
    return [value[i : i + size] for i in range(0, len(value), size)]


def _split_even(value: str, parts: int) -> list[str]:
    """`value` cut into `parts` consecutive non-empty pieces (fewer when it is shorter)."""
    parts = max(1, min(parts, len(value) or 1))
    step, extra = divmod(len(value), parts)
    out, start = [], 0
    for i in range(parts):
        end = start + step + (1 if i < extra else 0)
        out.append(value[start:end])
        start = end
    return out


def _text_frames(content: str, chunk_size: int) -> list[Frame]:
    return [{"content": piece} for piece in _pieces(content, chunk_size)]


def text(
    content: str, *, chunk_size: int = 8, usage: tuple[int, int] = (10, 5), delay: float = 0.0
) -> Reply:
    """A streamed text reply cut every `chunk_size` characters, finishing with "stop"."""
    return Reply(
        kind="stream",
        frames=tuple(_text_frames(content, chunk_size)),
        finish_reason="stop",
        usage=usage,
        delay=delay,
    )


ToolSpec = tuple[str, dict[str, Any] | str] | tuple[str, dict[str, Any] | str, str]


def tool_calls(
    calls: Sequence[ToolSpec],
    *,
    preamble: str = "",
    split: int = 3,
    usage: tuple[int, int] = (20, 10),
    delay: float = 0.0,
    chunk_size: int = 8,
) -> Reply:
    """Tool calls (name, arguments[, id]) after an optional streamed preamble, finishing with
    "tool_calls". Each call's arguments JSON (a dict, or raw text to script invalid JSON) is cut
    into `split` chunks, the first carrying the id and name as OpenAI streams them."""
    frames: list[Frame] = _text_frames(preamble, chunk_size)
    for index, spec in enumerate(calls):
        name, arguments = spec[0], spec[1]
        call_id = spec[2] if len(spec) > 2 else f"call_{uuid.uuid4().hex[:16]}"  # type: ignore[misc]
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        pieces = _split_even(raw, split) if raw else [""]
        for number, piece in enumerate(pieces):
            call: dict[str, Any] = {"index": index, "function": {"arguments": piece}}
            if number == 0:
                call = {
                    "index": index,
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": piece},
                }
            frames.append({"tool_calls": [call]})
    return Reply(
        kind="stream",
        frames=tuple(frames),
        finish_reason="tool_calls",
        usage=usage,
        delay=delay,
    )


def transcript(content: str) -> Reply:
    """The answer to a transcription request: `{"text": content}`."""
    return text(content)


def status(
    code: int,
    *,
    retry_after: float | None = None,
    retry_after_ms: float | None = None,
    body: Any = None,
) -> Reply:
    """An HTTP error (e.g. 429 with Retry-After, 500) with an OpenAI-shaped error body."""
    headers: list[tuple[str, str]] = []
    if retry_after is not None:
        seconds = str(int(retry_after)) if retry_after == int(retry_after) else str(retry_after)
        headers.append(("Retry-After", seconds))
    if retry_after_ms is not None:
        headers.append(("retry-after-ms", str(retry_after_ms)))
    if body is None:
        body = {
            "error": {
                "message": f"scripted status {code}",
                "type": "rate_limit_exceeded" if code == 429 else "scripted_error",
                "code": str(code),
            }
        }
    return Reply(kind="status", status_code=code, headers=tuple(headers), body=body)


def hang(seconds: float) -> Reply:
    """Accept the request and send nothing for `seconds`, then close the connection."""
    return Reply(kind="hang", hang_s=seconds)


def drop_after(reply: Reply, n_chunks: int) -> Reply:
    """`reply`'s first `n_chunks` chunks, then the socket is closed mid-body."""
    return replace(reply, drop_at=n_chunks)


def no_finish(reply: Reply) -> Reply:
    """`reply`'s chunks with no finish_reason anywhere, still ending with [DONE]."""
    return replace(reply, finish_reason=None)


def invalid_chunk(reply: Reply, at: int = 1) -> Reply:
    """`reply` with a data line that is not JSON at position `at` among its chunks."""
    frames = list(reply.frames)
    frames.insert(min(at, len(frames)), '{"id": "broken", "choices": [{"delta": {"content": "x"')
    return replace(reply, frames=tuple(frames))


# --- matchers -----------------------------------------------------------------------------------


def for_tool(name: str) -> Matcher:
    """Requests that offer a function tool called `name`."""

    def match(request: RequestJSON) -> bool:
        for tool in request.get("tools") or []:
            if (tool.get("function") or {}).get("name") == name:
                return True
        return False

    return match


def _message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def has_text(needle: str) -> Matcher:
    """Requests where any message's content contains `needle`."""

    def match(request: RequestJSON) -> bool:
        return any(needle in _message_text(m) for m in request.get("messages") or [])

    return match


def has_image() -> Matcher:
    """Chat requests with an image in a message's content (a vision call)."""

    def match(request: RequestJSON) -> bool:
        for message in request.get("messages") or []:
            content = message.get("content")
            if isinstance(content, list) and any(
                isinstance(part, dict) and part.get("type") == "image_url" for part in content
            ):
                return True
        return False

    return match


def for_transcription() -> Matcher:
    """Requests to `/audio/transcriptions`."""

    def match(request: RequestJSON) -> bool:
        return request.get("endpoint") == "audio/transcriptions"

    return match


# --- the server ---------------------------------------------------------------------------------


@dataclass
class _Rule:
    reply: Reply
    when: Matcher | None
    times: int | None  # None: forever


@dataclass
class _State:
    lock: threading.Lock = field(default_factory=threading.Lock)
    rules: list[_Rule] = field(default_factory=list)
    requests: list[RequestJSON] = field(default_factory=list)
    first_token_at: list[float | None] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)
    connections: set[socket.socket] = field(default_factory=set)
    arrived: threading.Condition = field(init=False)

    def __post_init__(self) -> None:
        self.arrived = threading.Condition(self.lock)


class ScriptedServer:
    """The server: `start()` binds a free loopback port and serves in daemon threads."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self._host = host
        self._state = _State()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle
    def start(self) -> Self:
        state = self._state

        class Handler(_Handler):
            shared = state

        httpd = ThreadingHTTPServer((self._host, 0), Handler)
        httpd.daemon_threads = True
        httpd.block_on_close = False  # kept-alive client connections must not block stop()
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._state.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        with self._state.lock:
            connections = list(self._state.connections)
        for conn in connections:
            _close_quietly(conn)
        self._httpd = None

    def __enter__(self) -> Self:
        return self.start() if self._httpd is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "start() the server first"
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://{self._host}:{self.port}/v1"

    # script
    def add(self, reply: Reply, when: Matcher | None = None, *, times: int | None = 1) -> Self:
        """Queue `reply` for the next request `when` accepts (any when None); `times=None`
        answers every such request from now on."""
        with self._state.lock:
            self._state.rules.append(_Rule(reply=reply, when=when, times=times))
        return self

    def extend(self, replies: Iterable[Reply]) -> Self:
        for reply in replies:
            self.add(reply)
        return self

    def reset(self) -> None:
        """Forget queued replies and recorded requests (a fixture shared by several tests)."""
        with self._state.lock:
            self._state.rules.clear()
            self._state.requests.clear()
            self._state.first_token_at.clear()

    @property
    def pending(self) -> int:
        """Replies still queued (rules with `times=None` count once)."""
        with self._state.lock:
            return len(self._state.rules)

    @property
    def requests(self) -> list[RequestJSON]:
        with self._state.lock:
            return list(self._state.requests)

    @property
    def first_token_at(self) -> list[float | None]:
        """Per request (same order as `requests`): `time.monotonic()` just before its first
        content chunk (text or tool call) was written; None when it had none."""
        with self._state.lock:
            return list(self._state.first_token_at)

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> bool:
        with self._state.arrived:
            return self._state.arrived.wait_for(
                lambda: len(self._state.requests) >= count, timeout=timeout
            )


def _close_quietly(conn: socket.socket) -> None:
    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        conn.close()


def _take(state: _State, request: RequestJSON) -> tuple[Reply | None, int]:
    """Record the request and pick its reply: first matching rule in queue order."""
    with state.lock:
        state.requests.append(request)
        state.first_token_at.append(None)
        index = len(state.requests) - 1
        state.arrived.notify_all()
        chosen: _Rule | None = None
        for rule in state.rules:
            if rule.when is not None and rule.when(request):
                chosen = rule
                break
        if chosen is None:
            chosen = next((rule for rule in state.rules if rule.when is None), None)
        if chosen is None:
            return None, index
        if chosen.times is not None:
            chosen.times -= 1
            if chosen.times <= 0:
                state.rules.remove(chosen)
        return chosen.reply, index


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ScriptedOpenAI/1.0"
    shared: _State  # set by ScriptedServer.start
    timeout = 60  # an idle kept-alive connection is closed after this

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.shared.lock:
            self.shared.connections.add(self.connection)

    def finish(self) -> None:
        with self.shared.lock:
            self.shared.connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def handle(self) -> None:
        try:
            super().handle()
        except (ConnectionError, TimeoutError):
            # A client that closes or resets its kept-alive connection (the SDK drops a stream's
            # connection right after [DONE]) is the normal end of a connection here, not an error.
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        return

    # routing
    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.rstrip("/").endswith("/audio/transcriptions"):
            self._transcription(raw)
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        try:
            request = json.loads(raw or b"{}")
        except ValueError:
            self._json(400, {"error": {"message": "body is not JSON", "type": "invalid_request"}})
            return
        reply, index = _take(self.shared, request)
        if reply is None:
            message = "scripted server: no reply queued for this request"
            self._json(500, {"error": {"message": message, "type": "scripted_empty"}})
            return
        try:
            self._answer(reply, request, index)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (its timeout): nothing to do

    def _transcription(self, raw: bytes) -> None:
        request = _multipart(self.headers.get("Content-Type", ""), raw)
        if request is None:
            self._json(400, {"error": {"message": "not multipart", "type": "invalid_request"}})
            return
        reply, _index = _take(self.shared, request)
        if reply is None:
            message = "scripted server: no reply queued for this request"
            self._json(500, {"error": {"message": message, "type": "scripted_empty"}})
        elif reply.kind == "status":
            self._json(reply.status_code, reply.body, reply.headers)
        elif reply.kind == "hang":
            self.shared.stopping.wait(reply.hang_s)
            self.close_connection = True
        else:
            words = "".join(f.get("content") or "" for f in reply.frames if isinstance(f, dict))
            self._json(200, {"text": words})

    # answers
    def _answer(self, reply: Reply, request: RequestJSON, index: int) -> None:
        if reply.kind == "status":
            self._json(reply.status_code, reply.body, reply.headers)
        elif reply.kind == "hang":
            self.shared.stopping.wait(reply.hang_s)
            self.close_connection = True
        elif request.get("stream"):
            self._stream(reply, request, index)
        else:
            self._complete(reply, request)

    def _json(self, code: int, body: Any, headers: Iterable[tuple[str, str]] = ()) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _chunks(self, reply: Reply, request: RequestJSON) -> Iterator[tuple[bytes, bool]]:
        """The SSE events of `reply` as (bytes, carries content)."""
        base = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:20]}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": request.get("model") or "scripted",
        }
        first = True
        for frame in reply.frames:
            if isinstance(frame, str):
                yield f"data: {frame}\n\n".encode(), False
                continue
            delta = dict(frame)
            if first:
                delta = {"role": "assistant", **delta}
                first = False
            chunk = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
            carries = bool(delta.get("content") or delta.get("tool_calls"))
            yield _sse(chunk), carries
        if reply.finish_reason is not None:
            end = {"index": 0, "delta": {}, "finish_reason": reply.finish_reason}
            yield _sse({**base, "choices": [end]}), False
        include_usage = (request.get("stream_options") or {}).get("include_usage")
        if reply.usage is not None and include_usage:
            prompt, completion = reply.usage
            usage = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
            yield _sse({**base, "choices": [], "usage": usage}), False
        yield b"data: [DONE]\n\n", False

    def _stream(self, reply: Reply, request: RequestJSON, index: int) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        stopping = self.shared.stopping
        for sent, (event, carries) in enumerate(self._chunks(reply, request)):
            if reply.drop_at is not None and sent >= reply.drop_at:
                # Cut mid-body: no terminating chunk, so the client sees an incomplete read.
                self.close_connection = True
                _close_quietly(self.connection)
                return
            if reply.delay and stopping.wait(reply.delay):
                self.close_connection = True
                return
            if carries:
                with self.shared.lock:
                    if self.shared.first_token_at[index] is None:
                        self.shared.first_token_at[index] = time.monotonic()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
        self.wfile.write(b"0\r\n\r\n")

    def _complete(self, reply: Reply, request: RequestJSON) -> None:
        """The non-streaming answer: the same reply assembled into one chat.completion."""
        content = "".join(
            frame.get("content") or "" for frame in reply.frames if isinstance(frame, dict)
        )
        calls: dict[int, dict[str, Any]] = {}
        for frame in reply.frames:
            if not isinstance(frame, dict):
                continue
            for delta in frame.get("tool_calls") or []:
                call = calls.setdefault(
                    delta["index"],
                    {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
                )
                call["id"] = delta.get("id") or call["id"]
                function = delta.get("function") or {}
                call["function"]["name"] += function.get("name") or ""
                call["function"]["arguments"] += function.get("arguments") or ""
        message: dict[str, Any] = {"role": "assistant", "content": content or None}
        if calls:
            message["tool_calls"] = [calls[i] for i in sorted(calls)]
        prompt, completion = reply.usage or (0, 0)
        body = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:20]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model") or "scripted",
            "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }
        self._json(200, body)


def _multipart(content_type: str, raw: bytes) -> RequestJSON | None:
    """A multipart/form-data body as a request dict: its text fields, and the file's name, type
    and size."""
    if not content_type.startswith("multipart/form-data"):
        return None
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode()
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + raw)
    if not message.is_multipart():
        return None
    request: RequestJSON = {"endpoint": "audio/transcriptions"}
    for part in message.iter_parts():  # type: ignore[attr-defined]
        name = part.get_param("name", header="content-disposition")
        decoded = part.get_payload(decode=True)
        payload = decoded if isinstance(decoded, bytes) else b""
        if part.get_filename():
            request[str(name)] = {
                "name": part.get_filename(),
                "content_type": part.get_content_type(),
                "size": len(payload),
            }
        elif name:
            request[str(name)] = payload.decode("utf-8", "replace")
    return request


def _sse(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload, ensure_ascii=False).encode() + b"\n\n"


__all__ = [
    "Reply",
    "ScriptedServer",
    "drop_after",
    "for_tool",
    "for_transcription",
    "has_image",
    "has_text",
    "hang",
    "invalid_chunk",
    "no_finish",
    "status",
    "text",
    "tool_calls",
    "transcript",
]
