"""`ChatClient.complete`: one streamed chat completion over the `openai` SDK, with our own retries,
every fault named, and one `ModelCall` row per call.

Why our own loop and not the SDK's retries: a retry is only safe before anything reached the
user, the wait must honour `Retry-After` within a budget of seconds (not a count alone), and a
failure must say what went wrong (timeout, rate limit, dropped stream, ...) so the turn can fall
back to the embedded engine and the trace can say why.

Retried (before any output): 429, 5xx/408/409, a connection that could not be made. Not retried:
timeouts (waiting again would double the user's wait), anything after the stream started.

Per-call cost, since a turn makes several calls: the request goes through the SDK's `post` with
the body as we built it and the chunks come back as plain dicts (no per-request TypedDict
transform, no pydantic model per chunk); the end of each body is read off the caller's path so
the connection is reused; and with `deferred_records=True` the turn's ModelCall rows are written
by one `flush()` at its end instead of one INSERT per call.
"""

from __future__ import annotations

import dataclasses
import email.utils
import json
import logging
import math
import queue
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Protocol

import httpx2
import openai
from django.db import transaction
from django.utils import timezone

from business.models import Organisation
from llm import pricing
from llm.models import ModelCall
from llm.provider import Provider

logger = logging.getLogger(__name__)

OPENAI_BASE_URL = "https://api.openai.com/v1"
_BACKOFF_BASE_S = 0.5
_BACKOFF_MAX_S = 8.0
_CLIENTS_KEPT = 32
CHARS_PER_TOKEN = 4
MIN_OUTPUT_TOKENS = 64  # a call that may write fewer is not worth making: the turn falls back
MIN_CALL_SECONDS = 1.0  # likewise for the seconds left of the turn
IMAGE_TOKENS = 800  # what one image of a request reads, about (a photo at high detail)


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str  # the JSON text as streamed (joined)

    def parsed(self) -> dict[str, Any]:
        """The arguments as a dict: {} for "", ValueError for invalid JSON or a non-object."""
        if not self.arguments.strip():
            return {}
        value = json.loads(self.arguments)  # JSONDecodeError is a ValueError
        if not isinstance(value, dict):
            raise ValueError(f"tool arguments are not a JSON object: {self.arguments[:80]!r}")
        return value


@dataclass
class Completion:
    text: str
    tool_calls: list[ToolCall]
    finish_reason: str
    model: str
    tokens_in: int
    tokens_out: int
    latency_ms: float
    first_token_ms: float | None
    cost: Decimal
    retries: int = 0
    usage_estimated: bool = False  # the server sent no usage: tokens are estimates


class Redactor(Protocol):
    """The privacy guard's side of the seam (nlu/privacy.py `Vault`, given by the turn)."""

    def mask(self, text: str) -> str: ...

    def unmask(self, text: str) -> str: ...


def _masked(messages: list[dict[str, Any]], redactor: Redactor) -> list[dict[str, Any]]:
    """A copy of the request's messages with personal data masked in every text and in the
    arguments of earlier tool calls; the caller's list is left as it was."""
    masked: list[dict[str, Any]] = []
    for message in messages:
        copy = dict(message)
        if isinstance(copy.get("content"), str):
            copy["content"] = redactor.mask(copy["content"])
        if isinstance(copy.get("tool_calls"), list):
            copy["tool_calls"] = [_masked_call(call, redactor) for call in copy["tool_calls"]]
        masked.append(copy)
    return masked


def _masked_call(call: Any, redactor: Redactor) -> Any:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("arguments"), str):
        return call
    return {**call, "function": {**function, "arguments": redactor.mask(function["arguments"])}}


def _unmasked(completion: Completion, redactor: Redactor) -> Completion:
    """The model's answer with the real values back in its text and its tool arguments."""
    return dataclasses.replace(
        completion,
        text=redactor.unmask(completion.text),
        tool_calls=[
            dataclasses.replace(call, arguments=redactor.unmask(call.arguments))
            for call in completion.tool_calls
        ],
    )


class _Unmasking:
    """A text callback whose deltas get the real values back; a placeholder cut between two
    deltas ("[TE" + "L_1]") is held until it is whole, or clearly is not one."""

    HOLD_LIMIT = 16

    def __init__(self, redactor: Redactor, emit: Callable[[str], None]) -> None:
        self.redactor, self.emit, self.held = redactor, emit, ""

    def __call__(self, delta: str) -> None:
        text = self.held + delta
        cut = text.rfind("[")
        if cut != -1 and "]" not in text[cut:] and len(text) - cut <= self.HOLD_LIMIT:
            text, self.held = text[:cut], text[cut:]
        else:
            self.held = ""
        if text:
            self.emit(self.redactor.unmask(text))

    def flush(self) -> None:
        if self.held:
            held, self.held = self.held, ""
            self.emit(self.redactor.unmask(held))


class ModelFailure(Exception):
    """A model call that did not produce a complete answer.

    kind: timeout | rate_limited | server_error | connection | dropped | no_finish_reason
          | length (cut at max_tokens) | content_filter (the provider withheld the rest)
          | invalid_chunk | bad_request | auth | deadline (still writing when its time was up)
          | turn_deadline (the turn's wall-clock allowance ran out) | budget (the turn's tokens
          are spent) | not_an_answer / unbacked_claim (raised by callers that judged the text)
    streamed: whether `on_text` already received text before it failed (the caller must not
              leave that partial text looking like an answer).
    """

    def __init__(
        self,
        kind: str,
        detail: str,
        *,
        streamed: bool = False,
        retryable: bool = False,
        retry_after: float | None = None,
        status_code: int | None = None,
    ) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail
        self.streamed = streamed
        self.retryable = retryable
        self.retry_after = retry_after
        self.status_code = status_code


# --- SDK clients, one per endpoint/key/timeout, shared by threads ---------------------------------

_clients: OrderedDict[tuple[str, str, float], openai.OpenAI] = OrderedDict()
_clients_lock = threading.Lock()


def sdk_client(provider: Provider) -> openai.OpenAI:
    """The cached `openai.OpenAI` for `provider` (its connection pool is reused across turns).
    Connect, read (the silence between two chunks), write and pool timeouts are all
    `provider.timeout_s`; the SDK's own retries are off."""
    key = (provider.base_url, provider.api_key, provider.timeout_s)
    with _clients_lock:
        client = _clients.get(key)
        if client is not None:
            _clients.move_to_end(key)
            return client
        client = openai.OpenAI(
            api_key=provider.api_key,
            # Explicit even for OpenAI: the SDK would otherwise read OPENAI_BASE_URL from the
            # environment and send an organisation's key there.
            base_url=provider.base_url or OPENAI_BASE_URL,
            timeout=httpx2.Timeout(provider.timeout_s),
            max_retries=0,
        )
        _clients[key] = client
        while len(_clients) > _CLIENTS_KEPT:
            _clients.popitem(last=False)  # a replaced key; its pool closes when collected
        return client


# --- fault classification -----------------------------------------------------------------------


def _retry_after(headers: httpx2.Headers | None) -> float | None:
    """Seconds the server asked us to wait: `retry-after-ms`, else `Retry-After` (seconds or an
    HTTP date); None when absent or unreadable."""
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - time.time())


def _status_failure(error: openai.APIStatusError) -> ModelFailure:
    code = error.status_code
    detail = f"HTTP {code}: {error.message}"[:500]
    if code == 429:
        kind, retryable = "rate_limited", True
    elif code >= 500 or code in (408, 409):
        kind, retryable = "server_error", True
    elif code in (401, 403):
        kind, retryable = "auth", False
    else:
        kind, retryable = "bad_request", False
    return ModelFailure(
        kind,
        detail,
        retryable=retryable,
        retry_after=_retry_after(error.response.headers),
        status_code=code,
    )


def _request_failure(error: Exception) -> ModelFailure:
    """A failure of `create()` itself: nothing was streamed yet."""
    if isinstance(error, openai.APITimeoutError):
        return ModelFailure("timeout", "no response within the timeout")
    if isinstance(error, openai.APIConnectionError):
        cause = error.__cause__ or error
        return ModelFailure("connection", f"{type(cause).__name__}: {cause}"[:500], retryable=True)
    if isinstance(error, openai.APIStatusError):
        return _status_failure(error)
    return ModelFailure("server_error", f"{type(error).__name__}: {error}"[:500])


def _stream_failure(error: Exception, streamed: bool) -> ModelFailure:
    """A failure while reading the stream (after the response started): never retried."""
    if isinstance(error, openai.APITimeoutError):
        return ModelFailure("timeout", "the stream went silent", streamed=streamed)
    if isinstance(error, openai.APIConnectionError):
        cause = error.__cause__ or error
        detail = f"stream cut: {type(cause).__name__}: {cause}"[:500]
        return ModelFailure("dropped", detail, streamed=streamed)
    if isinstance(error, openai.APIError):  # an error event inside the stream
        return ModelFailure("server_error", f"error in stream: {error}"[:500], streamed=streamed)
    detail = f"unreadable chunk: {type(error).__name__}: {error}"[:500]
    return ModelFailure("invalid_chunk", detail, streamed=streamed)


_STREAM_ERRORS = (openai.APIError, ValueError, TypeError, KeyError, AttributeError)

# What `chat.completions.create` sends besides the body: the bearer key only (not the admin key).
_REQUEST_OPTIONS: openai.RequestOptions = {"security": {"bearer_auth": True}}


class _DictStream(openai.Stream[object]):
    """The SDK's SSE stream (its decoder, and its mapping of timeouts and cut connections to
    APITimeoutError / APIConnectionError) yielding each chunk as the JSON the server sent
    (`cast_to=object`: no pydantic model built per chunk).

    Unlike the SDK's own loop, which closes the response at `[DONE]` with the end of the body
    still unread (which closes the connection: a new TCP, and TLS, handshake on every call), the
    rest of the body is read by a background thread, so the connection goes back to the pool
    for the next call and the caller never waits for it."""

    _handed_over = False

    def __stream__(self) -> Iterator[object]:
        events = self._iter_events()
        finished = False
        try:
            for sse in events:
                if sse.data.startswith("[DONE]"):
                    finished = True
                    return
                data = sse.json()
                if isinstance(data, dict) and data.get("error"):
                    raise _error_event(data["error"], self.response)
                yield data
        finally:
            if finished:
                self._handed_over = True
                _drain_later(self.response, events)
            else:
                self.response.close()

    def close(self) -> None:
        if not self._handed_over:
            self.response.close()


def _error_event(error: Any, response: httpx2.Response) -> openai.APIError:
    """An `{"error": ...}` chunk, as the SDK reports it."""
    message = error.get("message") if isinstance(error, dict) else None
    if not message or not isinstance(message, str):
        message = "An error occurred during streaming"
    return openai.APIError(message=message, request=response.request, body=error)


_drains: queue.SimpleQueue[tuple[httpx2.Response, Iterator[Any]]] = queue.SimpleQueue()
_drainer: threading.Thread | None = None
_drainer_lock = threading.Lock()


def _drain_later(response: httpx2.Response, rest: Iterator[Any]) -> None:
    """Have the drain thread read `rest` (what follows `[DONE]`: normally only the end of the
    chunked body) and close `response`. A server that keeps the body open after `[DONE]` holds
    only that thread and that connection (up to the read timeout), never a caller."""
    global _drainer
    _drains.put((response, rest))
    if _drainer is None:
        with _drainer_lock:
            if _drainer is None:
                _drainer = threading.Thread(target=_drain_forever, name="llm-drain", daemon=True)
                _drainer.start()


def _drain_forever() -> None:
    while True:
        response, rest = _drains.get()
        try:
            for _ in rest:
                pass
        except Exception:  # the answer was complete; a bad tail only costs the connection
            logger.debug("the tail of a finished stream could not be read", exc_info=True)
        finally:
            response.close()


# --- the client ---------------------------------------------------------------------------------


@dataclass
class _Partial:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class _Attempt:
    """What one attempt streamed so far."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, _Partial] = field(default_factory=dict)
    finish_reason: str | None = None
    model: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    first_token_at: float | None = None
    streamed: bool = False
    usage_estimated: bool = False


@dataclass(frozen=True)
class _Allowance:
    """What one call may spend: tokens it may write, seconds it may take, and which limit the
    seconds come from (the call's own, or what is left of the turn's)."""

    max_tokens: int
    deadline_s: float
    deadline_kind: str  # "deadline" | "turn_deadline"
    prompt_estimate: int


class ChatClient:
    """Streams chat completions for one organisation (and turn), recording each call.

    `deferred_records=True`: the ModelCall rows are collected and written by `flush()` in one
    INSERT (the turn calls it once, at its end, whatever happened), instead of one INSERT (and,
    on SQLite, one commit) per call while the user waits. Safe to share between the threads of
    concurrent sub-agents."""

    def __init__(
        self,
        provider: Provider,
        *,
        organisation: Organisation,
        turn_id: str = "",
        conversation_id: int | None = None,
        deferred_records: bool = False,
        turn_deadline_s: float = 0.0,
        token_budget: int = 0,
        redactor: Redactor | None = None,
    ) -> None:
        self.provider = provider
        # The privacy guard (T4): personal data masked in every request, put back in answers.
        self.redactor = redactor
        self.organisation = organisation
        self.turn_id = turn_id
        self.conversation_id = conversation_id
        self.deferred_records = deferred_records
        # The turn's own limits (0 = none): every call of the turn draws from them, whichever
        # agent makes it, so a turn of many steps and rounds cannot run away either.
        self.turn_deadline_s = turn_deadline_s
        self.token_budget = token_budget
        self.opened = time.monotonic()
        self.tokens_spent = 0
        # What actually left for a model, (purpose, agent) once each: the turn's privacy
        # receipt says this, not whether a client was opened (hybrid opens one and may not call).
        self.sent: list[tuple[str, str]] = []
        self._sdk = sdk_client(provider)
        self._pending: list[dict[str, Any]] = []
        self._pending_lock = threading.Lock()

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.flush()

    def __del__(self) -> None:
        if getattr(self, "_pending", None):  # a deferred client nobody flushed: say so
            logger.error(
                "%d model call rows of turn %s were never flushed", len(self._pending), self.turn_id
            )

    def flush(self) -> int:
        """Write the rows collected since the last flush (deferred mode) in one INSERT; how
        many were written. Idempotent: a row is written once, a second flush writes nothing.
        A failed INSERT falls back to one row at a time, so one bad row loses no other."""
        with self._pending_lock:
            rows, self._pending = self._pending, []
        if not rows:
            return 0
        try:
            with transaction.atomic():  # a savepoint inside a caller's transaction
                ModelCall.objects.bulk_create([ModelCall(**row) for row in rows])
            return len(rows)
        except Exception:
            logger.exception("could not record %d model calls at once", len(rows))
        return sum(_save(row) for row in rows)

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        purpose: str,
        agent: str = "",
        model: str | None = None,
        tools: list[dict[str, Any]] | None = None,
        tool_choice: str | dict[str, Any] | None = None,
        on_text: Callable[[str], None] | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        """One completion, streamed: `on_text(delta)` gets each text delta as it arrives.

        `max_tokens` (an agent's own cap) defaults to the provider's; the turn's token budget
        and deadline may lower both. Raises ModelFailure; either way a ModelCall row is stored
        (with estimated usage when the server reported none)."""
        model = model or self.provider.default_model
        started = time.monotonic()
        retries, waited = 0, 0.0
        redactor = self.redactor
        if redactor is not None:
            messages = _masked(messages, redactor)
            if on_text is not None:
                on_text = _Unmasking(redactor, on_text)
        try:
            allowance = self._allowance(messages, tools, max_tokens)
        except ModelFailure as refused:  # nothing sent: the row says why
            self._record(_Attempt(model=model), purpose, agent, started, 0, refused)
            raise
        self._sending(purpose, agent)
        while True:
            progress = _Attempt(model=model)
            try:
                self._attempt(progress, messages, model, tools, tool_choice, on_text, started,
                              allowance)  # fmt: skip
                _check_finish(progress, allowance.max_tokens)
            except ModelFailure as failure:
                _estimate_usage(progress, allowance.prompt_estimate)
                self._spend(progress)
                wait = self._retry_wait(failure, retries, waited)
                if wait is None:
                    self._record(progress, purpose, agent, started, retries, failure)
                    raise
                time.sleep(wait)
                waited += wait
                retries += 1
                continue
            except BaseException as error:  # on_text gave up (the turn was cancelled, ...)
                _estimate_usage(progress, allowance.prompt_estimate)
                self._spend(progress)
                aborted = ModelFailure("aborted", f"{type(error).__name__}: {error}"[:500])
                self._record(progress, purpose, agent, started, retries, aborted)
                raise
            _estimate_usage(progress, allowance.prompt_estimate)
            self._spend(progress)
            completion = self._completion(progress, started, retries)
            self._record(
                progress, purpose, agent, started, retries, None, completion.cost,
                latency_ms=completion.latency_ms,
            )  # fmt: skip
            if isinstance(on_text, _Unmasking):
                on_text.flush()
            return _unmasked(completion, redactor) if redactor is not None else completion

    # the turn's limits
    def _allowance(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        max_tokens: int | None,
    ) -> _Allowance:
        """What the next call may spend, or ModelFailure when the turn has nothing left."""
        cap = max_tokens if max_tokens and max_tokens > 0 else self.provider.max_tokens
        deadline_s, kind = self.provider.deadline_s, "deadline"
        prompt = estimate_tokens(messages, tools)
        if self.turn_deadline_s > 0:
            left_s = self.turn_deadline_s - (time.monotonic() - self.opened)
            if left_s < MIN_CALL_SECONDS:
                raise ModelFailure(
                    "turn_deadline", f"the turn's {self.turn_deadline_s:g} s are used up"
                )
            if left_s < deadline_s:
                deadline_s, kind = left_s, "turn_deadline"
        if self.token_budget > 0:
            left = self.token_budget - self.tokens_spent - prompt
            if left < MIN_OUTPUT_TOKENS:
                raise ModelFailure(
                    "budget",
                    f"the turn's {self.token_budget} tokens are spent ({self.tokens_spent} "
                    f"used; this call would read about {prompt})",
                )
            cap = min(cap, left)
        return _Allowance(max_tokens=cap, deadline_s=deadline_s, deadline_kind=kind,
                          prompt_estimate=prompt)  # fmt: skip

    def _sending(self, purpose: str, agent: str) -> None:
        with self._pending_lock:
            if (purpose, agent) not in self.sent:
                self.sent.append((purpose, agent))

    def _spend(self, progress: _Attempt) -> None:
        with self._pending_lock:
            self.tokens_spent += progress.tokens_in + progress.tokens_out

    # one attempt
    def _attempt(
        self,
        progress: _Attempt,
        messages: list[dict[str, Any]],
        model: str,
        tools: list[dict[str, Any]] | None,
        tool_choice: str | dict[str, Any] | None,
        on_text: Callable[[str], None] | None,
        started: float,
        allowance: _Allowance,
    ) -> None:
        body: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_tokens": allowance.max_tokens,
        }
        deadline = started + allowance.deadline_s
        if tools:
            body["tools"] = tools
        if tool_choice is not None:
            body["tool_choice"] = tool_choice
        try:
            # `post` rather than `chat.completions.create`: the same request, auth, status and
            # error mapping, without `create`'s recursive TypedDict transform of every message
            # and tool schema, and with each chunk handed over as the decoded JSON dict instead
            # of a pydantic model built field by field (`cast_to=object`).
            stream = self._sdk.post(
                "/chat/completions",
                body=body,
                cast_to=object,
                options=_REQUEST_OPTIONS,
                stream=True,
                stream_cls=_DictStream,
            )
        except openai.OpenAIError as error:
            raise _request_failure(error) from error
        try:
            for chunk in _guarded(stream, progress):
                if time.monotonic() > deadline:  # a model that will not stop: cut, not waited
                    raise ModelFailure(
                        allowance.deadline_kind,
                        f"still writing after {allowance.deadline_s:g} s",
                        streamed=progress.streamed,
                    )
                delta_text = _absorb(progress, chunk)
                if delta_text:
                    progress.text.append(delta_text)
                    progress.streamed = True
                    if on_text is not None:
                        on_text(delta_text)  # its exceptions are the caller's, not the model's
        finally:
            stream.close()

    def _retry_wait(self, failure: ModelFailure, retries: int, waited: float) -> float | None:
        """Seconds to wait before the next attempt, or None to give up now: only retryable
        failures before any output, within the retry count and the budget of seconds."""
        if not failure.retryable or failure.streamed or retries >= self.provider.max_retries:
            return None
        left = self.provider.retry_budget_s - waited
        if failure.retry_after is not None:
            return failure.retry_after if failure.retry_after <= left else None
        backoff = min(_BACKOFF_MAX_S, _BACKOFF_BASE_S * 2**retries)
        backoff *= random.uniform(0.75, 1.0)
        return min(backoff, left) if left > 0 else None

    # results
    def _completion(self, progress: _Attempt, started: float, retries: int) -> Completion:
        calls = [
            ToolCall(id=part.id, name=part.name, arguments="".join(part.arguments))
            for _, part in sorted(progress.calls.items())
        ]
        return Completion(
            text="".join(progress.text),
            tool_calls=calls,
            finish_reason=progress.finish_reason or "",
            model=progress.model,
            tokens_in=progress.tokens_in,
            tokens_out=progress.tokens_out,
            latency_ms=(time.monotonic() - started) * 1000,
            first_token_ms=_ms_since(started, progress.first_token_at),
            cost=pricing.cost(progress.model, progress.tokens_in, progress.tokens_out),
            retries=retries,
            usage_estimated=progress.usage_estimated,
        )

    def _record(
        self,
        progress: _Attempt,
        purpose: str,
        agent: str,
        started: float,
        retries: int,
        failure: ModelFailure | None,
        cost: Decimal | None = None,
        *,
        latency_ms: float | None = None,
    ) -> None:
        """The call's row (now, or kept until `flush`); a completed call's cost and latency are
        the ones its `Completion` carries, so the row and the caller read the same numbers."""
        if cost is None:
            cost = pricing.cost(progress.model, progress.tokens_in, progress.tokens_out)
        if latency_ms is None:
            latency_ms = (time.monotonic() - started) * 1000
        row = {
            "organisation": self.organisation,
            "conversation_id": self.conversation_id,
            "turn_id": self.turn_id,
            "agent": agent,
            "purpose": purpose,
            "model": progress.model,
            "source": self.provider.source,
            "tokens_in": progress.tokens_in,
            "tokens_out": progress.tokens_out,
            "cost": cost,
            "latency_ms": latency_ms,
            "first_token_ms": _ms_since(started, progress.first_token_at),
            "ok": failure is None,
            "error_kind": failure.kind if failure else "",
            "error": failure.detail if failure else "",
            "retries": retries,
            "usage_estimated": progress.usage_estimated,
            "created_at": timezone.now(),  # when the call ended, not when the rows are flushed
        }
        if self.deferred_records:
            with self._pending_lock:
                self._pending.append(row)
        else:
            _save(row)


def estimate_tokens(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> int:
    """About how many tokens a request reads: its JSON at ~4 characters a token (close enough
    for budgets and for servers that report no usage; exact counts need the model's tokenizer).
    An image counts as IMAGE_TOKENS, not as the characters of its base64 data URL."""
    images = sum(_image_count(message) for message in messages)
    if images:
        messages = [_without_images(message) for message in messages]
    size = len(json.dumps(messages, ensure_ascii=False, default=str))
    if tools:
        size += len(json.dumps(tools, ensure_ascii=False, default=str))
    return max(1, math.ceil(size / CHARS_PER_TOKEN)) + images * IMAGE_TOKENS


def _image_count(message: dict[str, Any]) -> int:
    content = message.get("content")
    if not isinstance(content, list):
        return 0
    return sum(1 for p in content if isinstance(p, dict) and p.get("type") == "image_url")


def _without_images(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    if not isinstance(content, list):
        return message
    kept = [p for p in content if not (isinstance(p, dict) and p.get("type") == "image_url")]
    return {**message, "content": kept}


def _estimate_usage(progress: _Attempt, prompt_estimate: int) -> None:
    """A server that sent no usage (many local ones) still gets counted: the request's size,
    and what it wrote, estimated. Nothing is counted for a call that produced nothing."""
    if progress.tokens_in or progress.tokens_out:
        return
    written = "".join(progress.text) + "".join(
        part.name + "".join(part.arguments) for part in progress.calls.values()
    )
    if not written and progress.finish_reason is None:
        return  # refused or failed before any output: most likely nothing was billed
    progress.tokens_in = prompt_estimate
    progress.tokens_out = math.ceil(len(written) / CHARS_PER_TOKEN)
    progress.usage_estimated = True


def _save(row: dict[str, Any]) -> bool:
    """One ModelCall row, now; False (logged) when it could not be written."""
    try:
        ModelCall.objects.create(**row)
    except Exception:  # the answer matters more than its accounting row
        logger.exception("could not record a model call")
        return False
    return True


def _check_finish(progress: _Attempt, max_tokens: int) -> None:
    """A stream that ended without saying it was done, or that says it stopped short: cut at
    max_tokens (a sentence or a call's arguments half written) or withheld by a content filter.
    Either is not an answer to show as complete; not retried (the same call stops the same)."""
    reason = progress.finish_reason
    if reason is None:
        detail = "the stream ended without a finish reason"
        raise ModelFailure("no_finish_reason", detail, streamed=progress.streamed)
    if reason == "length":
        detail = f"cut at max_tokens ({max_tokens}) before the answer was complete"
        raise ModelFailure("length", detail, streamed=progress.streamed)
    if reason == "content_filter":
        detail = "the provider's content filter withheld the rest of the answer"
        raise ModelFailure("content_filter", detail, streamed=progress.streamed)


def _guarded(stream: Any, progress: _Attempt) -> Iterator[Any]:
    """The stream's chunks, with the SDK's and the decoder's errors turned into ModelFailure."""
    iterator = iter(stream)
    while True:
        try:
            chunk = next(iterator)
        except StopIteration:
            return
        except _STREAM_ERRORS as error:
            raise _stream_failure(error, progress.streamed) from error
        yield chunk


def _absorb(progress: _Attempt, chunk: Any) -> str:
    """Fold one chunk (the server's JSON) into `progress`; the text delta it carries ("" if
    none). A chunk of the wrong shape is `invalid_chunk`."""
    try:
        if not isinstance(chunk, dict):
            raise TypeError(f"a chunk that is not a JSON object: {type(chunk).__name__}")
        model = chunk.get("model")
        if model:
            progress.model = _string(model)
        usage = chunk.get("usage")
        if usage is not None:
            progress.tokens_in = int(usage.get("prompt_tokens") or 0)
            progress.tokens_out = int(usage.get("completion_tokens") or 0)
        text = ""
        for choice in chunk.get("choices") or ():
            if choice.get("index") not in (0, None):
                continue
            delta = choice.get("delta")
            if delta:
                content = delta.get("content")
                if content:
                    text += _string(content)
                calls = delta.get("tool_calls")
                for call in calls or ():
                    _merge_call(progress.calls, call)
                if (text or calls) and progress.first_token_at is None:
                    progress.first_token_at = time.monotonic()
            finish = choice.get("finish_reason")
            if finish:
                progress.finish_reason = _string(finish)
        return text
    except (TypeError, ValueError, KeyError, AttributeError) as error:
        raise _stream_failure(error, progress.streamed) from error


def _merge_call(calls: dict[int, _Partial], delta: dict[str, Any]) -> None:
    """Join one tool-call delta into its call, by `index` (servers that omit it: a delta with
    an id opens a new call, one without continues the last)."""
    index = delta.get("index")
    call_id = delta.get("id")
    if index is None:
        index = len(calls) if call_id or not calls else max(calls)
    part = calls.setdefault(int(index), _Partial())
    if call_id:
        part.id = _string(call_id)
    function = delta.get("function")
    if function:
        name = function.get("name")
        if name:
            part.name += _string(name)
        arguments = function.get("arguments")
        if arguments:
            part.arguments.append(_string(arguments))


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"a string was expected, not {type(value).__name__}")
    return value


def _ms_since(started: float, moment: float | None) -> float | None:
    return None if moment is None else (moment - started) * 1000
