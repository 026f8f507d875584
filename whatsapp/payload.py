"""The webhook's body: read (size, JSON, an object) and each message's fields checked on their
own into typed values — a message with a bad field becomes a `Rejected` with its reason, and the
other messages of the delivery are kept (issue 23: one bad message must not make Meta retry the
whole delivery forever).

Pure functions: nothing here touches the database."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import time
from dataclasses import dataclass, field, replace
from typing import Any

MAX_BODY = 512 * 1024
# Meta's deepest message (an interactive list reply, an order's items) is 4 levels below the
# message object; deeper than this is not a message we know how to read.
MAX_MESSAGE_DEPTH = 8
# Patterns are ASCII on purpose: `\d` would let other scripts' digits into a URL or a number.
GRAPH_ID = re.compile(r"[0-9]{1,32}")  # a phone-number id or a media id: Graph ids are digits
SENDER = re.compile(r"[0-9]{6,15}")  # a wa_id: the number in E.164, without the "+"
MESSAGE_ID = re.compile(r"[A-Za-z0-9._:=+/-]{1,128}")  # "wamid.HBgL...AA=="
KIND = re.compile(r"[a-z_]{1,32}")
CHOICE_REPLIES = ("button_reply", "list_reply")  # interactive replies that pick an option
EARLIEST = 1_230_768_000  # 2009-01-01: before WhatsApp; anything older is not a real timestamp
FUTURE_SLACK = 24 * 3600  # a sender's clock a day ahead is odd; further is not a timestamp
TEXT_LIMIT = 4096  # the Cloud API's longest text; the webhook cuts further to the panel's limit
STORED_ID = 64  # the message-id columns: a longer (valid) id is kept cut, as it always was
FLOW_RESPONSE_LIMIT = 8192  # a flow's `response_json` kept (and read) up to this many characters
FLOW_FIELDS = 30  # a flow's answered fields read into the message (all are kept raw)
ORDER_ITEMS = 30  # Meta's cart holds at most 30 different products


class BadPayload(ValueError):
    """The body is not a webhook delivery we can read, nor attribute to an account whose secret
    could check it (HTTP 400, nothing stored)."""


class Invalid(ValueError):
    """One field of one message is not what the Cloud API sends."""

    def __init__(self, field: str, reason: str, value: object) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason  # copilot.models.WhatsAppRejection.Reason's values
        self.excerpt = excerpt(value)


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
    # An event about another message — a reaction, an edit, a deletion ("revoke") — names it.
    target_id: str = ""
    emoji: str = ""  # a reaction's emoji; "" when the customer took their reaction back
    # What kind of system message, unsupported message, interactive reply or edited message.
    subtype: str = ""
    new_sender: str = ""  # a number change (`system`): the customer's new wa_id
    answer: str = ""  # a call-permission reply: "accept" or "reject"
    # A tapped reply button or list row (`interactive`), or a template's quick reply (`button`):
    # the id we gave the option (whatsapp/choices.py); `text` is the title the customer saw.
    choice_id: str = ""
    address: str = ""  # a shared location's address, as WhatsApp gives it
    # A `contacts` message: each shared contact's name and phone (its wa_id when it has one).
    shared: tuple[tuple[str, str], ...] = ()
    # What Meta says it could not give of the message (an `unsupported` one: "131051 Message type
    # unknown: …"), each error's code, title and details.
    errors: str = ""
    # Where it came from: the message of ours it replies to (`context.id`), forwarded, or the
    # click-to-WhatsApp ad that opened the chat (`referral`: "ad: headline — source URL").
    reply_to: str = ""
    forwarded: bool = False
    referral: str = ""
    # A flow's answer (`interactive` `nfm_reply`): Meta's `response_json` as sent, cut, and its
    # answered fields (name as the customer would say it, value: text, or a checkbox's boolean).
    flow_response: str = ""
    flow_fields: tuple[tuple[str, str | bool], ...] = ()
    # An `order` from the catalog: its id and each product's retailer id, quantity, unit price and
    # currency, as sent; `text` is the note the customer added to the cart.
    catalog_id: str = ""
    items: tuple[tuple[str, str, str, str], ...] = ()


@dataclass(frozen=True)
class Rejected:
    """A message (or status) of the delivery that is not stored, and why."""

    phone_number_id: str
    field: str
    reason: str
    excerpt: str  # the offending value, escaped and cut: safe to store and to show
    message_id: str = ""  # when the id itself was valid


@dataclass(frozen=True)
class StatusUpdate:
    phone_number_id: str
    message_id: str  # the provider's id of our outgoing message
    status: str  # sent, delivered, read, failed
    error: str = ""  # each error's code, title and `error_data.details`
    code: int = 0  # the first error's code (131047: the 24-hour window had closed)


# Changes about the WhatsApp Business Account rather than one number: named by the entry's id.
ACCOUNT_FIELDS = (
    "message_template_status_update", "message_template_quality_update",
    "template_category_update", "account_update",
)  # fmt: skip


@dataclass(frozen=True)
class AccountEvent:
    """A template's status, quality or category changed, or the account itself (a restriction,
    a ban): what Meta's `value` says, every text escaped and cut."""

    business_account_id: str
    field: str  # one of ACCOUNT_FIELDS
    event: str  # APPROVED, PAUSED, ACCOUNT_RESTRICTION, ... (a quality update: the new score)
    key: str  # the change's digest: a redelivery is the same event
    template_name: str = ""
    template_language: str = ""
    template_id: str = ""
    category: str = ""  # a template's (new) category
    detail: str = ""  # the reason, restrictions, ban state or Meta's explanation


@dataclass(frozen=True)
class ProblemReport:
    """A system-, app- or account-level error Meta reports on a number (`value.errors`, no
    message with it): a request it could not process (130429 rate limit, 131000, ...)."""

    phone_number_id: str
    code: int
    detail: str  # each error's code, title and details, escaped and cut
    key: str  # the same report redelivered is the same key


@dataclass
class Delivery:
    messages: list[Incoming] = field(default_factory=list)
    statuses: list[StatusUpdate] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    account_events: list[AccountEvent] = field(default_factory=list)
    problems: list[ProblemReport] = field(default_factory=list)

    def phone_number_ids(self) -> set[str]:
        return (
            {m.phone_number_id for m in self.messages}
            | {s.phone_number_id for s in self.statuses}
            | {r.phone_number_id for r in self.rejected}
            | {p.phone_number_id for p in self.problems}
        )

    def business_account_ids(self) -> set[str]:
        return {e.business_account_id for e in self.account_events}


def signature_valid(secret: str, body: bytes, header: str) -> bool:
    """`X-Hub-Signature-256` is "sha256=" + HMAC-SHA256(app secret, raw body)."""
    if not secret or not header.startswith("sha256="):
        return False
    expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, header.removeprefix("sha256=").strip().lower())


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def parse(body: bytes, now: float | None = None) -> Delivery:
    """The delivery's messages and statuses, each checked on its own. BadPayload only for what
    names no account we could check the signature with: not JSON, not an object, a malformed
    phone-number id."""
    if len(body) > MAX_BODY:
        raise BadPayload("too large")
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as exc:  # a raw NUL, or nested past the parser's limit
        raise BadPayload("not json") from exc
    if not isinstance(data, dict):
        raise BadPayload("shape")
    clock = time.time() if now is None else now
    delivery = Delivery()
    for entry in _list(data.get("entry")):
        for change in _list(_dict(entry).get("changes")):
            value = _dict(_dict(change).get("value"))
            raw_number = _dict(value.get("metadata")).get("phone_number_id")
            if raw_number is None or raw_number == "":  # a template's status, an account update
                kind = _dict(change).get("field")
                if kind in ACCOUNT_FIELDS:
                    business = _graph_id(_dict(entry).get("id"))
                    delivery.account_events.append(account_event(business, str(kind), value))
                continue
            number = _graph_id(raw_number)
            names = _names(value)
            for raw in _list(value.get("messages")):
                _add(delivery, _incoming(number, raw, names, clock))
            for raw in _list(value.get("statuses")):
                _add(delivery, _status(number, raw))
            if errors := [_dict(e) for e in _list(value.get("errors"))]:
                delivery.problems.append(_problem(number, errors))
    # One delivery may batch several messages: answered in the order they were written.
    delivery.messages.sort(key=lambda m: m.timestamp)
    return delivery


def _graph_id(value: object) -> str:
    try:
        return _match(value, GRAPH_ID, "phone_number_id")
    except Invalid as exc:
        raise BadPayload("phone_number_id") from exc


def _add(delivery: Delivery, item: Incoming | StatusUpdate | Rejected) -> None:
    if isinstance(item, Incoming):
        delivery.messages.append(item)
    elif isinstance(item, StatusUpdate):
        delivery.statuses.append(item)
    else:
        delivery.rejected.append(item)


def excerpt(value: object, limit: int = 120) -> str:
    """The value as it can be stored and shown: lone surrogates and NUL written as escapes."""
    if isinstance(value, str):
        escaped = value[:limit].encode("utf-8", "backslashreplace").decode()
        return escaped.replace("\x00", "\\x00")[:limit]
    if value is None or isinstance(value, bool | int | float):
        return repr(value)[:limit]
    return f"<{type(value).__name__}>"  # never str() a nested value: it may be very deep


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


def _names(value: dict[str, Any]) -> dict[str, object]:
    """Each contact's profile name by wa_id, as sent (checked with the message that uses it)."""
    names: dict[str, object] = {}
    for raw in _list(value.get("contacts")):
        contact = _dict(raw)
        wa_id = contact.get("wa_id")
        if isinstance(wa_id, str):
            names[wa_id] = _dict(contact.get("profile")).get("name")
    return names


def _match(value: object, pattern: re.Pattern[str], name: str) -> str:
    """A required identifier: text (or a whole number) that matches `pattern` entirely."""
    if value is None or value == "":
        raise Invalid(name, "missing", value)
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise Invalid(name, "format", value)
    _well_formed(value, name)
    if "\x00" in value:
        raise Invalid(name, "nul", value)
    if not pattern.fullmatch(value):
        raise Invalid(name, "format", value)
    return value


def _well_formed(value: str, name: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate ("\\ud800"), which JSON can carry
        raise Invalid(name, "surrogate", value) from exc


def _text(value: object, name: str, limit: int) -> str:
    """Free text (optional): well-formed, NUL characters dropped (a text column cannot hold
    them; the rest is what the customer wrote), cut at `limit`."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise Invalid(name, "format", value)
    _well_formed(value, name)
    return value.replace("\x00", "")[:limit]


def _timestamp(value: object, now: float) -> int:
    raw = _match(value, re.compile(r"[0-9]{1,12}"), "timestamp")
    stamp = int(raw)
    if not EARLIEST <= stamp <= now + FUTURE_SLACK:
        raise Invalid("timestamp", "range", value)
    return stamp


def _incoming(
    number: str, raw: object, names: dict[str, object], now: float
) -> Incoming | Rejected:
    message = _dict(raw)
    message_id = ""
    try:
        if not isinstance(raw, dict) or _depth(raw) > MAX_MESSAGE_DEPTH:
            raise Invalid("message", "nesting" if isinstance(raw, dict) else "format", raw)
        message_id = _match(message.get("id"), MESSAGE_ID, "id")[:STORED_ID]
        return _fields(number, message, message_id, names, now)
    except Invalid as bad:
        return Rejected(number, bad.field, bad.reason, bad.excerpt, message_id)


def _fields(
    number: str, raw: dict[str, Any], message_id: str, names: dict[str, object], now: float
) -> Incoming:
    sender = _match(raw.get("from"), SENDER, "from")
    kind = _match(raw.get("type"), KIND, "type")
    media = _dict(raw.get(kind)) if kind != "text" else {}
    media_id = media.get("id")
    body = _dict(raw.get("text")).get("body") if kind == "text" else None
    incoming = Incoming(
        phone_number_id=number, message_id=message_id, sender=sender,
        timestamp=_timestamp(raw.get("timestamp"), now), type=kind,
        text=_text(body, "text", TEXT_LIMIT),
        name=_text(names.get(sender), "name", 80),
        media_id=_match(media_id, GRAPH_ID, "media_id") if media_id is not None else "",
        mime_type=_text(media.get("mime_type"), "mime_type", 100),
        caption=_text(media.get("caption"), "caption", 1024),
        filename=_text(media.get("filename"), "filename", 200),
        voice=media.get("voice") is True,
    )  # fmt: skip
    if errors := [_dict(e) for e in _list(raw.get("errors"))]:
        incoming = replace(incoming, errors=_error_lines(errors))
    incoming = replace(incoming, **_origin(_dict(raw.get("context")), _dict(raw.get("referral"))))
    if kind == "contacts":
        return replace(incoming, shared=_shared(raw.get("contacts")))
    if kind == "order":
        return replace(incoming, **_order(media))
    return replace(incoming, **_event_fields(kind, media))


def _origin(context: dict[str, Any], referral: dict[str, Any]) -> dict[str, Any]:
    """What the message replies to, whether it was forwarded, and the ad that brought it — only
    informative: a malformed value is left out, never a reason to reject the message."""
    found: dict[str, Any] = {}
    reply_to = context.get("id")
    if isinstance(reply_to, str) and MESSAGE_ID.fullmatch(reply_to):
        found["reply_to"] = reply_to[:STORED_ID]
    if context.get("forwarded") is True or context.get("frequently_forwarded") is True:
        found["forwarded"] = True
    if referral:
        parts = [_plain(referral.get(k)) for k in ("source_type", "headline", "source_url")]
        found["referral"] = excerpt(" — ".join(p for p in parts if p), 300)
    return found


def _shared(contacts: object) -> tuple[tuple[str, str], ...]:
    """The first few shared contacts with a name or a phone: (formatted name, phone)."""
    found = []
    for raw in _list(contacts)[:5]:
        contact = _dict(raw)
        name = _text(_dict(contact.get("name")).get("formatted_name"), "contact.name", 120)
        phone = _dict((_list(contact.get("phones")) or [{}])[0])
        wa_id = phone.get("wa_id")
        number = wa_id if isinstance(wa_id, str) and SENDER.fullmatch(wa_id) else ""
        number = number or _text(phone.get("phone"), "contact.phone", 32)
        if name.strip() or number.strip():
            found.append((name.strip(), number.strip()))
    return tuple(found)


def _event_fields(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    """What an event or a message that is not text adds, as the Cloud API's webhook reference
    shapes it: a reaction's `message_id` and `emoji` (no emoji: taken back), an edit's and a
    revoke's `original_message_id` (an edit carries the new `message`), a system message's
    `type` and new `wa_id` (`new_wa_id` before Graph v12), the `type` an unsupported message or
    an interactive reply names, a location's `address`."""
    if kind == "reaction":
        return {"target_id": _target(body.get("message_id"), "reaction.message_id"),
                "emoji": _text(body.get("emoji"), "emoji", 32)}  # fmt: skip
    if kind in ("edit", "revoke"):
        found = {"target_id": _target(body.get("original_message_id"), f"{kind}.message_id")}
        return found | (_edited(_dict(body.get("message"))) if kind == "edit" else {})
    if kind == "system":
        new = body.get("wa_id") or body.get("new_wa_id")
        return {"subtype": _kind(body.get("type")),
                "new_sender": _match(new, SENDER, "system.wa_id") if new else "",
                "text": _text(body.get("body"), "text", 500)}  # fmt: skip
    if kind == "interactive" and _kind(body.get("type")) in CHOICE_REPLIES:
        subtype = _kind(body.get("type"))
        picked = _dict(body.get(subtype))
        return {"subtype": subtype, "choice_id": _text(picked.get("id"), "choice_id", 256),
                "text": _text(picked.get("title"), "text", 100)}  # fmt: skip
    if kind == "button":  # a quick reply of one of our templates
        return {"choice_id": _text(body.get("payload"), "choice_id", 256),
                "text": _text(body.get("text"), "text", 100)}  # fmt: skip
    if kind == "interactive" and _kind(body.get("type")) == "nfm_reply":
        return _flow_reply(_dict(body.get("nfm_reply")))
    if kind in ("unsupported", "interactive"):
        subtype = _kind(body.get("type"))
        reply = _dict(body.get("call_permission_reply"))
        return {"subtype": subtype, "answer": _kind(reply.get("response"))}
    if kind == "location":
        return {"address": _text(body.get("address"), "address", 300)}
    return {}


def _flow_reply(reply: dict[str, Any]) -> dict[str, Any]:
    """A flow's answer: `response_json` (a JSON object, as a string) kept as sent, and its
    answered fields — the `flow_token` (our own) left out. A response that is not an object
    has no fields: the message is then one the channel cannot read."""
    raw = _text(reply.get("response_json"), "response_json", FLOW_RESPONSE_LIMIT)
    try:
        fields = json.loads(raw) if raw else {}
    except (ValueError, RecursionError):
        fields = {}
    answered = tuple(
        (_field_name(name), shown)
        for name, value in list(_dict(fields).items())[:FLOW_FIELDS]
        if name != "flow_token" and (shown := _field_value(value)) != ""
    )
    return {"subtype": "nfm_reply", "flow_response": raw, "flow_fields": answered}


def _field_name(name: str) -> str:
    """ "fecha_visita" → "fecha visita": a flow's field as the customer would say it."""
    return excerpt(name, 60).replace("_", " ").strip()


def _field_value(value: object) -> str | bool:
    """A field's answer: a string or number as text, a list of them joined (a checkbox group),
    a boolean (a single checkbox, worded by the webhook); anything else (an object, null) ""
    — left out of the text, kept in the raw response."""
    if isinstance(value, bool):
        return value
    if isinstance(value, list):
        return ", ".join(
            shown for item in value[:20] if isinstance(shown := _field_value(item), str) and shown
        )
    if isinstance(value, str):
        return excerpt(value.strip(), 500)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return excerpt(value)
    return ""


def _order(order: dict[str, Any]) -> dict[str, Any]:
    """An order from the catalog: each product's retailer id (its SKU), quantity, unit price and
    currency (Meta sends numbers or strings), and the note the customer added. A product without
    a retailer id is left out."""
    items = []
    for raw in _list(order.get("product_items"))[:ORDER_ITEMS]:
        item = _dict(raw)
        product = _text(_plain(item.get("product_retailer_id")), "product_retailer_id", 100)
        if product.strip():
            items.append((product.strip(), excerpt(_plain(item.get("quantity")), 12),
                          excerpt(_plain(item.get("item_price")), 20),
                          excerpt(_plain(item.get("currency")), 3)))  # fmt: skip
    return {"catalog_id": excerpt(_plain(order.get("catalog_id")), 32), "items": tuple(items),
            "text": _text(order.get("text"), "text", TEXT_LIMIT)}  # fmt: skip


def _edited(message: dict[str, Any]) -> dict[str, Any]:
    """An edit's new message: its text, or a media message's new caption."""
    subtype = _kind(message.get("type"))
    part = _dict(message.get(subtype)) if subtype else {}
    value = part.get("body") if subtype == "text" else part.get("caption")
    return {"subtype": subtype, "text": _text(value, "text", TEXT_LIMIT)}


def _target(value: object, name: str) -> str:
    return _match(value, MESSAGE_ID, name)[:STORED_ID]


def _kind(value: object) -> str:
    """A subtype: a word, or "" (absent or unlike any the API sends: it only informs, so it
    never rejects the message)."""
    word = value.lower() if isinstance(value, str) else ""
    return word if KIND.fullmatch(word) else ""


def account_event(business: str, kind: str, value: dict[str, Any]) -> AccountEvent:
    """Meta's template and account webhooks, as their references shape them (free text escaped:
    it is shown to the organisation's admins)."""
    key = hashlib.sha256(json.dumps([business, kind, value], sort_keys=True).encode()).hexdigest()
    event = value.get("event") or value.get("new_quality_score") or value.get("new_category")
    category = value.get("new_category") or value.get("message_template_category")
    return AccountEvent(
        business_account_id=business, field=kind, event=excerpt(_plain(event), 60).upper(),
        key=key, template_name=excerpt(_plain(value.get("message_template_name")), 200),
        template_language=excerpt(_plain(value.get("message_template_language")), 15),
        template_id=excerpt(_plain(value.get("message_template_id")), 32),
        category=excerpt(_plain(category), 16).upper(),
        detail=excerpt(_account_detail(value), 1000),
    )  # fmt: skip


def _account_detail(value: dict[str, Any]) -> str:
    """What an admin needs to read: the reason, Meta's explanation, restrictions, the ban."""
    info = _dict(value.get("other_info"))
    ban = _dict(value.get("ban_info"))
    parts = [
        _plain(value.get("reason")) if value.get("reason") not in (None, "NONE") else "",
        _plain(info.get("title")), _plain(info.get("description")),
        _plain(_dict(value.get("violation_info")).get("violation_type")),
        " ".join(_plain(ban.get(k)) for k in ("waba_ban_state", "waba_ban_date") if ban.get(k)),
        *(f"{_plain(_dict(r).get('restriction_type'))} {_plain(_dict(r).get('expiration'))}".strip()
          for r in _list(value.get("restriction_info"))),
    ]  # fmt: skip
    return "; ".join(part for part in parts if part)


def _status(number: str, raw: object) -> StatusUpdate | Rejected:
    status = _dict(raw)
    message_id = ""
    try:
        message_id = _match(status.get("id"), MESSAGE_ID, "id")
        state = _match(status.get("status"), KIND, "status")
    except Invalid as bad:
        return Rejected(number, f"status.{bad.field}", bad.reason, bad.excerpt, message_id)
    errors = [_dict(e) for e in _list(status.get("errors"))]
    return StatusUpdate(
        phone_number_id=number, message_id=message_id, status=state,
        error=_error_lines(errors), code=_code(errors),
    )  # fmt: skip


def _error_lines(errors: list[dict[str, Any]]) -> str:
    return "; ".join(excerpt(_error_line(e), 500) for e in errors)


def _code(errors: list[dict[str, Any]]) -> int:
    """The first error's code (0 when it has none that is a whole number)."""
    code = errors[0].get("code") if errors else 0
    return code if isinstance(code, int) and not isinstance(code, bool) else 0


def _problem(number: str, errors: list[dict[str, Any]]) -> ProblemReport:
    key = hashlib.sha256(json.dumps([number, errors], sort_keys=True).encode()).hexdigest()
    return ProblemReport(number, _code(errors), excerpt(_error_lines(errors), 1000), key)


def _error_line(error: dict[str, Any]) -> str:
    """ "131047 Re-engagement message: Message failed to send because more than 24 hours…" —
    the code, the title and `error_data.details`, which says what to do."""
    line = f"{_plain(error.get('code'))} {_plain(error.get('title') or error.get('message'))}"
    details = _plain(_dict(error.get("error_data")).get("details") or error.get("details"))
    return f"{line.strip()}: {details}" if details else line.strip()


def _plain(value: object) -> str:
    return value if isinstance(value, str) else excerpt(value) if value is not None else ""
