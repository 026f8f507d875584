"""What a model reads besides text (issue 14.5): a photo of an equipment's plate or fault, through
an OpenAI-compatible chat call with the image as a data URL, and a voice note, through the
provider's `/audio/transcriptions` endpoint.

Both are bounded and checked like any untrusted input: the photo's answer must be one small JSON
object of short strings (`Reading`), the transcript a non-empty text under a size limit; anything
else is a `ModelFailure`, and the caller keeps the media and asks the sender for text. Each call
writes a `ModelCall` row (purpose `vision` / `transcription`)."""

from __future__ import annotations

import base64
import json
import random
import re
import time
from dataclasses import asdict, dataclass
from typing import Any

import openai
from django.utils import timezone

from business.models import Organisation
from llm.client import (
    ChatClient,
    ModelFailure,
    _request_failure,
    _save,
    sdk_client,
)
from llm.models import ModelCall
from llm.provider import Provider

VISION_MAX_TOKENS = 300
TRANSCRIPT_MAX_CHARS = 4000
# Each field of a reading and the longest value accepted (a longer one is a model that rambles).
READING_FIELDS = {"kind": 60, "brand": 60, "model": 60, "capacity": 60, "symptom": 300}
_UNKNOWN = {"", "-", "?", "n/a", "na", "none", "null", "unknown", "desconocido", "desconocida",
            "no se ve", "no visible", "ilegible"}  # fmt: skip
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

VISION_PROMPT = (
    "You read photos that customers of a heating, air-conditioning, plumbing, gas and electrical "
    "service company send: an equipment's rating plate, or the equipment showing a fault. Answer "
    "with ONE JSON object and nothing else, with these keys, each a short string or null when the "
    'photo does not show it: "kind" (what equipment: split, caldera, termotanque, ...), "brand", '
    '"model" (the model code as printed), "capacity" (as printed: frigorías, BTU, kcal/h, kW, '
    'litres), "symptom" (the fault the photo shows, in a few words, in the language given). Do '
    "not guess what is not visible."
)


@dataclass(frozen=True)
class Reading:
    """What a photo showed: each field "" when it did not show it."""

    kind: str = ""
    brand: str = ""
    model: str = ""
    capacity: str = ""
    symptom: str = ""

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def parse_reading(text: str) -> Reading:
    """The model's answer as a Reading; ModelFailure("not_an_answer") for anything but one JSON
    object of known keys whose values are short strings (or null), with at least one of them."""
    cleaned = text.strip()
    if cleaned.startswith("```"):  # a fenced block: ```json ... ```
        cleaned = cleaned.strip("`").removeprefix("json").strip()
    start, end = cleaned.find("{"), cleaned.rfind("}")
    if start == -1 or end < start:
        raise ModelFailure("not_an_answer", f"no JSON object in {text[:80]!r}")
    try:
        data = json.loads(cleaned[start : end + 1])
    except ValueError as exc:
        raise ModelFailure("not_an_answer", f"invalid JSON: {exc}"[:200]) from exc
    if not isinstance(data, dict):
        raise ModelFailure("not_an_answer", "the JSON is not an object")
    values: dict[str, str] = {}
    for key, limit in READING_FIELDS.items():
        value = data.get(key)
        if value is None:
            value = ""
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            raise ModelFailure("not_an_answer", f"{key} is not a string")
        value = " ".join(_CONTROL.sub(" ", value).split())
        if len(value) > limit:
            raise ModelFailure("not_an_answer", f"{key} is longer than {limit} characters")
        values[key] = "" if value.lower().strip(".") in _UNKNOWN else value
    reading = Reading(**values)
    if not any(values.values()):
        raise ModelFailure("not_an_answer", "the photo showed nothing readable")
    return reading


def read_image(
    provider: Provider,
    *,
    organisation: Organisation,
    data: bytes,
    mime_type: str,
    language: str = "es",
    conversation_id: int | None = None,
) -> Reading:
    """Ask the provider's vision model what the photo shows. Raises ModelFailure (the call's own
    faults, or an answer that is not a valid reading); the call is recorded either way."""
    if not provider.vision_model:
        raise ModelFailure("bad_request", "this provider reads no images")
    url = f"data:{mime_type};base64,{base64.b64encode(data).decode('ascii')}"
    said = "Spanish (Argentina)" if language != "en" else "English"
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": VISION_PROMPT},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": f"Language for the symptom: {said}."},
                {"type": "image_url", "image_url": {"url": url}},
            ],
        },
    ]
    client = ChatClient(provider, organisation=organisation, conversation_id=conversation_id)
    completion = client.complete(
        messages, purpose=ModelCall.Purpose.VISION, model=provider.vision_model,
        max_tokens=VISION_MAX_TOKENS,
    )  # fmt: skip
    return parse_reading(completion.text)


def transcribe(
    provider: Provider,
    *,
    organisation: Organisation,
    data: bytes,
    mime_type: str,
    filename: str,
    conversation_id: int | None = None,
) -> str:
    """The voice note's words, through `POST {base}/audio/transcriptions` (the `openai` SDK's
    `audio.transcriptions.create`), retried like a chat call (429, 5xx, refused connection,
    within the provider's retries and budget). Raises ModelFailure; one ModelCall row either way."""
    if not provider.transcription_model:
        raise ModelFailure("bad_request", "this provider transcribes no audio")
    sdk = sdk_client(provider)
    started = time.monotonic()
    retries, waited = 0, 0.0
    failure: ModelFailure | None = None
    text = ""
    while True:
        try:
            result = sdk.audio.transcriptions.create(
                model=provider.transcription_model, file=(filename, data, mime_type),
                response_format="json",
            )  # fmt: skip
            text = str(getattr(result, "text", result) or "")
            failure = None
            break
        except openai.OpenAIError as error:
            failure = _request_failure(error)
        wait = _retry_wait(provider, failure, retries, waited)
        if wait is None:
            break
        time.sleep(wait)
        waited += wait
        retries += 1
    text = " ".join(_CONTROL.sub(" ", text).split())
    if failure is None and not text:
        failure = ModelFailure("not_an_answer", "the transcript is empty")
    _save({
        "organisation": organisation, "conversation_id": conversation_id,
        "purpose": ModelCall.Purpose.TRANSCRIPTION, "model": provider.transcription_model,
        "source": provider.source, "latency_ms": (time.monotonic() - started) * 1000,
        "ok": failure is None, "error_kind": failure.kind if failure else "",
        "error": failure.detail if failure else "", "retries": retries,
        "created_at": timezone.now(),
    })  # fmt: skip
    if failure is not None:
        raise failure
    return text[:TRANSCRIPT_MAX_CHARS]


def _retry_wait(
    provider: Provider, failure: ModelFailure, retries: int, waited: float
) -> float | None:
    if not failure.retryable or retries >= provider.max_retries:
        return None
    left = provider.retry_budget_s - waited
    if failure.retry_after is not None:
        return failure.retry_after if failure.retry_after <= left else None
    backoff = min(8.0, 0.5 * 2**retries) * random.uniform(0.75, 1.0)
    return min(backoff, left) if left > 0 else None
