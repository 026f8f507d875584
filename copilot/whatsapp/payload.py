"""The webhook's body: checked (size, NUL bytes, nesting, JSON) and read into typed values.

Pure functions: nothing here touches the database."""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass, field
from typing import Any

MAX_BODY = 512 * 1024
MAX_DEPTH = 16


class BadPayload(ValueError):
    """The body is not a webhook delivery we can read (HTTP 400, nothing stored)."""


@dataclass(frozen=True)
class Incoming:
    phone_number_id: str
    message_id: str
    sender: str  # the customer's wa_id
    timestamp: int
    type: str  # text, image, audio, ...
    text: str = ""
    name: str = ""  # the contact's profile name
    # A photo, voice note, document, ...: the Graph API's id of the file and what it says of it.
    media_id: str = ""
    mime_type: str = ""
    caption: str = ""
    filename: str = ""
    voice: bool = False  # an audio recorded as a voice note


@dataclass(frozen=True)
class StatusUpdate:
    phone_number_id: str
    message_id: str  # the provider's id of our outgoing message
    status: str  # sent, delivered, read, failed
    error: str = ""


@dataclass
class Delivery:
    messages: list[Incoming] = field(default_factory=list)
    statuses: list[StatusUpdate] = field(default_factory=list)

    def phone_number_ids(self) -> set[str]:
        return {m.phone_number_id for m in self.messages} | {
            s.phone_number_id for s in self.statuses
        }


def signature_valid(secret: str, body: bytes, header: str) -> bool:
    """`X-Hub-Signature-256` is "sha256=" + HMAC-SHA256(app secret, raw body)."""
    if not secret or not header.startswith("sha256="):
        return False
    expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, header.removeprefix("sha256=").strip().lower())


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def parse(body: bytes) -> Delivery:
    if len(body) > MAX_BODY:
        raise BadPayload("too large")
    # A NUL byte (raw or escaped) cannot be stored in a text column: refused before parsing.
    if b"\x00" in body or b"\\u0000" in body.lower():
        raise BadPayload("nul")
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise BadPayload("not json") from exc
    if _depth(data) > MAX_DEPTH or not isinstance(data, dict):
        raise BadPayload("shape")
    delivery = Delivery()
    for entry in _list(data.get("entry")):
        for change in _list(_dict(entry).get("changes")):
            value = _dict(_dict(change).get("value"))
            number = str(_dict(value.get("metadata")).get("phone_number_id") or "")
            if not number:
                continue
            names = _names(value)
            for raw in _list(value.get("messages")):
                delivery.messages.append(_incoming(number, _dict(raw), names))
            for raw in _list(value.get("statuses")):
                delivery.statuses.append(_status(number, _dict(raw)))
    # One delivery may batch several messages: answered in the order they were written.
    delivery.messages = sorted(
        (m for m in delivery.messages if m.message_id and m.sender), key=lambda m: m.timestamp
    )
    delivery.statuses = [s for s in delivery.statuses if s.message_id and s.status]
    return delivery


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(item, dict):
            stack += [(child, depth + 1) for child in item.values()]
        elif isinstance(item, list):
            stack += [(child, depth + 1) for child in item]
    return deepest


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _names(value: dict[str, Any]) -> dict[str, str]:
    names: dict[str, str] = {}
    for raw in _list(value.get("contacts")):
        contact = _dict(raw)
        name = _dict(contact.get("profile")).get("name") or ""
        names[str(contact.get("wa_id") or "")] = str(name)
    return names


def _incoming(number: str, raw: dict[str, Any], names: dict[str, str]) -> Incoming:
    kind = str(raw.get("type") or "")
    sender = str(raw.get("from") or "")
    try:
        timestamp = int(str(raw.get("timestamp") or "0"))
    except ValueError:
        timestamp = 0
    media = _dict(raw.get(kind)) if kind and kind != "text" else {}
    return Incoming(
        phone_number_id=number, message_id=str(raw.get("id") or "")[:64], sender=sender[:32],
        timestamp=timestamp, type=kind,
        text=str(_dict(raw.get("text")).get("body") or "") if kind == "text" else "",
        name=names.get(sender, "")[:80],
        media_id=str(media.get("id") or "")[:128],
        mime_type=str(media.get("mime_type") or "")[:100],
        caption=str(media.get("caption") or "")[:1024],
        filename=str(media.get("filename") or "")[:200],
        voice=media.get("voice") is True,
    )  # fmt: skip


def _status(number: str, raw: dict[str, Any]) -> StatusUpdate:
    errors = [_dict(e) for e in _list(raw.get("errors"))]
    error = "; ".join(
        f"{e.get('code', '')} {e.get('title') or e.get('message') or ''}".strip() for e in errors
    )
    return StatusUpdate(
        phone_number_id=number, message_id=str(raw.get("id") or ""),
        status=str(raw.get("status") or ""), error=error,
    )  # fmt: skip
