"""Every webhook payload shape the WhatsApp Cloud API documents, replayed (issue 27.6): the JSON
files of tests/whatsapp/payloads/ (written for this test, shaped as Meta's references shape them)
are posted to the real webhook view with the X-Hub-Signature-256 header Meta computes — HMAC-SHA256
of the exact body with the app secret — after a real exchange (the customer wrote, we answered
with options and the fake Graph API took the answer as `OUT`). Each shape's outcome is asserted
against the table below, which the README's WhatsApp section reproduces: what is stored, whether
the customer gets nothing, one line of the channel's, or a turn, and what error is kept."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from business.models import Customer
from copilot import runner
from copilot.models import Conversation, Message, Turn
from copilot.services import message_add
from testing.fake_graph import FakeGraph
from tests.conftest import Cast
from tests.whatsapp.conftest import CUSTOMER, SECRET
from tests.whatsapp.test_customers import _customer
from whatsapp import outbox, replies
from whatsapp.models import (
    IncomingMedia,
    OutgoingMessage,
    WhatsAppAccount,
    WhatsAppAlert,
    WhatsAppRejection,
    WhatsAppTemplate,
)

pytestmark = [
    pytest.mark.usefixtures("registry"),
    pytest.mark.django_db(transaction=True),  # the runner closes and reopens its connection
]

PAYLOADS = Path(__file__).parent / "payloads"
WABA = "1029384756"  # the entry id of the account and template webhooks
PRIOR = "wamid.SEJnThUCABIYFjU0OTExNTU1NTAwMDBQUklPUjBBMUIyQzNENEU1Rg=="  # her earlier message
OUT = "wamid.SEJnThUCABIYFjU0OTExNTU1NTAwMDBPVVQ5RjhFN0Q2QzVCNEEz"  # our reply, as Graph named it
NEW_NUMBER = "5491166667777"
SLOTS = (
    "¿Cuál de estos turnos te queda bien?\n"
    "- jueves 03/12 10:00 con Lucas Fernández\n"
    "- jueves 03/12 15:00 con Diego Sosa\n"
    "- viernes 04/12 11:00 con Lucas Fernández\n"
    "- viernes 04/12 16:00 con Diego Sosa"
)
CONFIRM = "¿Te agendo el service para el jueves 03/12 a las 15:00?\n- Sí, agendalo\n- Otro día"
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x11" * 2000
OGG = b"OggS\x00\x02" + b"\x22" * 3000
PDF = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n" + b"0" * 1500 + b"\n%%EOF\n"
MEDIA = {"7788990011223344": (JPEG, "image/jpeg"), "7788990011223345": (JPEG, "image/jpeg"),
         "7788990011223346": (OGG, "audio/ogg"),
         "7788990011223348": (PDF, "application/pdf")}  # fmt: skip


@dataclass(frozen=True)
class Outcome:
    stored: str  # what the webhook keeps (the README's column)
    reply: str  # "none", "line" (one line of the channel's, no turn), "turn" or "welcome"
    error: str = ""  # the error kept, where there is one


ORDERED = "the products and quantities as the customer's message, the cart in its trace"
FLOW = "the flow's answered fields as the customer's message, the response in its trace"
TABLE: dict[str, Outcome] = {
    "text": Outcome("the customer's message", "turn"),
    "text_reply_to_ours": Outcome("the customer's message", "turn"),
    "text_forwarded": Outcome("the customer's message", "turn"),
    "text_from_an_ad": Outcome("the customer's message, the ad in its trace", "turn"),
    "image": Outcome("the photo (IncomingMedia) and its line in the conversation", "line"),
    "image_with_caption": Outcome("the photo, and the caption as the customer's message", "turn"),
    "audio_voice_note": Outcome("the voice note (IncomingMedia) and its line", "line"),
    "document": Outcome("the PDF (IncomingMedia) and its line", "line"),
    "video": Outcome("a line in the conversation ([video received])", "line"),
    "sticker": Outcome("a line in the conversation ([sticker received])", "line"),
    "location": Outcome("a line in the conversation (the address, when one is asked for)", "line"),
    "order": Outcome(ORDERED, "turn"),
    "order_two_products": Outcome(ORDERED, "turn"),
    "interactive_flow_reply": Outcome(FLOW, "turn"),
    "interactive_flow_reply_fields": Outcome(FLOW, "turn"),
    "unsupported": Outcome("a line in the conversation", "line", "131051"),
    "unknown": Outcome("a line in the conversation", "line", "131051"),
    "contacts": Outcome("the shared contact, offered to the office in a note", "none"),
    "interactive_button_reply": Outcome(
        "the option's whole line as the customer's message", "turn"
    ),
    "interactive_list_reply": Outcome("the option's whole line as the customer's message", "turn"),
    "button_template_quick_reply": Outcome("the button's text as the customer's message", "turn"),
    "reaction": Outcome("the emoji on the message it reacts to", "none"),
    "reaction_removed": Outcome("the reaction taken off that message", "none"),
    "edit": Outcome("the new text on her message, the old one in its trace", "none"),
    "revoke": Outcome("her message marked deleted", "none"),
    "unsupported_edit": Outcome("a note (an edit Cloud API does not show)", "none"),
    "system_user_changed_number": Outcome(
        "the conversation moved to the new number, a note", "none"
    ),  # fmt: skip
    "system_identity_changed": Outcome("a note", "none"),
    "call_permission_reply": Outcome("a note", "none"),
    "request_welcome": Outcome("a note (the chat opened) and the welcome message, once", "welcome"),
    "status_sent": Outcome("the outgoing row's status", "none"),
    "status_delivered": Outcome("the outgoing row's status", "none"),
    "status_read": Outcome("the outgoing row's status", "none"),
    "status_failed_undeliverable": Outcome("the row failed, with Meta's error", "none", "131026"),
    # 131047 (the window had closed): the text never reached her; sent again as the template.
    "status_failed_window_closed": Outcome("the row sent again as the approved template", "none"),
    "errors": Outcome("an alert for the organisation's admins", "none", "130429"),
    "template_status_paused": Outcome("the template paused, an alert", "none"),
    "account_update_restriction": Outcome("an alert for the organisation's admins", "none"),
    # Meta batches: a reaction, a text and a status in one delivery, each applied as alone.
    "batch_reaction_text_and_status": Outcome("each as alone", "turn"),
}
MESSAGES = {name for name, outcome in TABLE.items() if outcome.reply != "none"}


def _body(shape: str) -> bytes:
    """The payload with its timestamps moved to now (their order kept): the replay runs on any
    day, inside the 24-hour window."""
    data = json.loads((PAYLOADS / f"{shape}.json").read_text())
    items = [
        item
        for entry in data["entry"]
        for change in entry["changes"]
        for item in [*change["value"].get("messages", []), *change["value"].get("statuses", [])]
    ]
    if items:
        shift = int(time.time()) - 5 - max(int(item["timestamp"]) for item in items)
        for item in items:
            item["timestamp"] = str(int(item["timestamp"]) + shift)
    return json.dumps(data, ensure_ascii=False).encode()


def _post(body: bytes) -> Any:
    signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    return Client().post(
        "/whatsapp/webhook/", data=body, content_type="application/json",
        HTTP_X_HUB_SIGNATURE_256=signature,
    )  # fmt: skip


@dataclass
class World:
    marta: Customer
    conversation: Conversation
    asked: Message  # her earlier message (PRIOR)
    answer: Message  # our reply with options, sent as OUT
    last_pk: int  # the last message before the replay


@pytest.fixture
def world(
    cast: Cast, agents: Any, account: WhatsAppAccount, graph: FakeGraph, dispatched: list[Any],
    told: Any, settings: Any, tmp_path: Path, django_capture_on_commit_callbacks: Any,
    request: pytest.FixtureRequest,
) -> World:  # fmt: skip
    """Marta, a customer on file, wrote; we answered with options; the Graph API took it."""
    settings.MEDIA_ROOT = tmp_path
    account.business_account_id = WABA
    account.save()
    WhatsAppTemplate.objects.create(organisation=cast.org, name="seguimiento", language="es_AR",
                                    status="APPROVED", variables=["name", "text"])  # fmt: skip
    for media_id, (data, mime) in MEDIA.items():
        graph.add_media(media_id, data, mime, token=account.access_token)
    marta = _customer(cast)
    stamp = str(int(time.time()) - 120)
    earlier = {"from": CUSTOMER, "id": PRIOR, "timestamp": stamp, "type": "text",
               "text": {"body": "quiero un service para el jueves"}}  # fmt: skip
    value = {"messaging_product": "whatsapp",
             "metadata": {"display_phone_number": "5491143210000", "phone_number_id": "1100220033"},
             "contacts": [{"profile": {"name": "Marta Gómez"}, "wa_id": CUSTOMER}],
             "messages": [earlier]}  # fmt: skip
    delivery = {
        "object": "whatsapp_business_account",
        "entry": [{"id": WABA, "changes": [{"field": "messages", "value": value}]}],
    }
    assert _post(json.dumps(delivery).encode()).status_code == 200
    conversation = Conversation.objects.get(organisation=cast.org, contact=CUSTOMER)
    Turn.objects.filter(conversation=conversation).update(status=Turn.Status.DONE)
    callspec = getattr(request.node, "callspec", None)
    shape = callspec.params.get("shape", "") if callspec is not None else ""
    graph.add(200, message_id=OUT)
    with django_capture_on_commit_callbacks(execute=True):
        answer = message_add(
            conversation=conversation, role=Message.Role.ASSISTANT, language="es",
            text=CONFIRM if shape == "interactive_button_reply" else SLOTS,
        )  # fmt: skip
    row = OutgoingMessage.objects.get(message=answer)
    assert (row.status, row.provider_message_id) == (OutgoingMessage.Status.SENT, OUT)
    asked = Message.objects.get(conversation=conversation, client_id=PRIOR)
    return World(marta, conversation, asked, answer, answer.pk)


@pytest.mark.parametrize("shape", sorted(TABLE))
def test_every_payload_shape_has_the_outcome_the_table_says(
    cast: Cast, world: World, graph: FakeGraph, dispatched: list[Any], shape: str,
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    capture, expected = django_capture_on_commit_callbacks, TABLE[shape]
    sent_before, turns_before = len(graph.requests), Turn.objects.count()

    with capture(execute=True):
        assert _post(_body(shape)).status_code == 200
    for conversation in Conversation.objects.filter(organisation=cast.org):
        with capture(execute=True):
            runner.drain(cast.org.pk, conversation.pk)

    new = Message.objects.filter(organisation=cast.org, pk__gt=world.last_pk).order_by("pk")
    customer_lines = list(new.filter(role=Message.Role.USER))
    answers = list(new.filter(role=Message.Role.ASSISTANT))
    notes = list(new.filter(role=Message.Role.SYSTEM))
    turns = Turn.objects.filter(conversation__organisation=cast.org).count() - turns_before
    got = [r.body for r in graph.requests[sent_before:] if r.body.get("type") != "template"]
    cannot_read = replies.cannot_read("es")

    # The reply, by kind: a turn answers a message; a line is the channel's own; none is none.
    if expected.reply == "turn":
        assert turns == 1 and len(customer_lines) == 1
        turn = Turn.objects.get(message=customer_lines[0])
        assert turn.status == Turn.Status.DONE and answers, (shape, turn.error)
        assert all(a.text != cannot_read for a in answers)
    elif expected.reply == "line":
        assert turns == 0 and len(answers) == 1 and len(customer_lines) == 1, shape
    elif expected.reply == "welcome":  # the organisation's welcome, no turn, no customer line
        assert turns == 0 and len(answers) == 1 and not customer_lines, shape
        assert answers[0].text != cannot_read
    else:
        assert turns == 0 and not answers and not customer_lines[1:], shape
        assert shape == "contacts" or not customer_lines  # a contact is the customer's message
    assert len(got) == len(answers)  # every answer reached the customer, nothing else did
    if shape not in MESSAGES:  # 0 "solo texto" replies to what is not a message
        assert not any(a.text == cannot_read for a in answers)
    assert not WhatsAppRejection.objects.exists()  # every shape is read, none refused
    _stored(shape, world, customer_lines, answers, notes, graph)
    if expected.error:
        assert _errors_kept(cast) and expected.error in _errors_kept(cast)


def _errors_kept(cast: Cast) -> str:
    rows = OutgoingMessage.objects.filter(organisation=cast.org).values_list(
        "last_error", flat=True
    )
    alerts = WhatsAppAlert.objects.filter(organisation=cast.org).values_list("detail", "event")
    kept = Message.objects.filter(organisation=cast.org, trace__whatsapp__has_key="errors")
    return " | ".join([*rows, *(" ".join(a) for a in alerts),
                       *(m.trace["whatsapp"]["errors"] for m in kept)])  # fmt: skip


def _stored(
    shape: str, world: World, customer_lines: list[Message], answers: list[Message],
    notes: list[Message], graph: FakeGraph,
) -> None:  # fmt: skip
    """What each shape leaves behind, beyond the reply."""
    conversation, org = world.conversation, world.conversation.organisation_id
    written = customer_lines[0].text if customer_lines else ""
    answer = Message.objects.get(pk=world.answer.pk)
    row = OutgoingMessage.objects.get(message=world.answer)
    if shape.startswith("batch"):
        assert written == "gracias! y el viernes a qué hora pasan?"
        assert answer.trace["whatsapp_reaction"]["emoji"] == "\U0001f44d" and row.status == "read"
    elif shape.startswith("text"):
        data = json.loads((PAYLOADS / f"{shape}.json").read_text())
        body = data["entry"][0]["changes"][0]["value"]["messages"][0]["text"]["body"]
        assert written == body
        meta = customer_lines[0].trace["whatsapp"]
        origin = {"text": {}, "text_reply_to_ours": {"reply_to": OUT[:64]},
                  "text_forwarded": {"forwarded": True},
                  "text_from_an_ad": {"referral": "ad — Service de aire acondicionado — "
                                                  "https://fb.me/3kQ9xZ2pL"}}[shape]  # fmt: skip
        assert {k: meta[k] for k in ("reply_to", "forwarded", "referral") if k in meta} == origin
    elif shape == "interactive_button_reply":
        assert written == "Sí, agendalo"
    elif shape == "interactive_list_reply":
        assert written == "viernes 04/12 11:00 con Lucas Fernández"
    elif shape == "button_template_quick_reply":
        assert written == "Confirmo la visita"
    elif shape in ("image", "audio_voice_note", "document", "image_with_caption"):
        media = IncomingMedia.objects.get(organisation_id=org)
        assert media.status == IncomingMedia.Status.STORED and media.message is not None
        if shape == "image_with_caption":
            assert written.startswith("así está la unidad de afuera")
    elif shape.startswith("order"):
        data = json.loads((PAYLOADS / f"{shape}.json").read_text())
        order = data["entry"][0]["changes"][0]["value"]["messages"][0]["order"]
        assert written == {
            "order": "¿Cuánto sale este pedido del catálogo? 1 × carga-gas-3000\n"
                     "lo quiero para el jueves",
            "order_two_products": "¿Cuánto sale este pedido del catálogo? "
                                  "2 × limpieza-split; 1 × carga-gas-3000",
        }[shape]  # fmt: skip
        kept = customer_lines[0].trace["whatsapp"]["order"]
        assert kept["catalog_id"] == order["catalog_id"]
        assert [item["product_retailer_id"] for item in kept["product_items"]] == [
            item["product_retailer_id"] for item in order["product_items"]
        ]  # fmt: skip
    elif shape.startswith("interactive_flow_reply"):
        data = json.loads((PAYLOADS / f"{shape}.json").read_text())
        sent = data["entry"][0]["changes"][0]["value"]["messages"][0]["interactive"]
        assert written == {
            "interactive_flow_reply": "franja: tarde",
            "interactive_flow_reply_fields": "fecha visita: 2026-12-03\nfranja: tarde\n"
                                             "equipos: split living, split dormitorio\n"
                                             "comentario: el portero abre hasta las 18\n"
                                             "acepta terminos: sí",
        }[shape]  # fmt: skip
        kept = customer_lines[0].trace["whatsapp"]["flow_response"]
        assert kept == sent["nfm_reply"]["response_json"]
    elif shape in ("video", "sticker", "location"):
        assert written.startswith("[") and answers[0].text == replies.cannot_read("es")
    elif shape in ("unsupported", "unknown"):
        assert answers[0].text == replies.cannot_read("es")
    elif shape == "contacts":
        assert customer_lines[0].trace["whatsapp_contacts"] == [
            {"name": "Jorge Ferraro", "phone": "5491144332211"}
        ]
        assert len(notes) == 1 and "Jorge Ferraro" in notes[0].text
    elif shape == "reaction":
        assert answer.trace["whatsapp_reaction"]["emoji"] == "\u2764\ufe0f"
    elif shape == "reaction_removed":
        assert "whatsapp_reaction" not in answer.trace
    elif shape == "edit":
        asked = Message.objects.get(pk=world.asked.pk)
        assert asked.text == "el jueves a la tarde, después de las 15"
        assert asked.trace["whatsapp_edits"][0]["was"] == "quiero un service para el jueves"
    elif shape == "revoke":
        assert Message.objects.get(pk=world.asked.pk).trace["whatsapp_deleted"]
    elif shape == "system_user_changed_number":
        conversation.refresh_from_db()
        assert conversation.contact == NEW_NUMBER and len(notes) == 1
    elif shape in ("unsupported_edit", "system_identity_changed", "call_permission_reply"):
        assert len(notes) == 1
    elif shape == "request_welcome":  # noted (it opens the window), welcomed in her register
        assert len(notes) == 1 and notes[0].trace["whatsapp_opened"]
        assert answers[0].trace["whatsapp_welcome"] == notes[0].client_id
        assert "podés" in answers[0].text
    elif shape.startswith("status_"):
        state = {"status_sent": "sent", "status_delivered": "delivered", "status_read": "read",
                 "status_failed_undeliverable": "failed"}.get(shape)  # fmt: skip
        if state is not None:
            assert row.status == state
        else:  # 131047: the text never reached her; the template carries it
            assert row.status == OutgoingMessage.Status.SENT and row.as_template
            assert graph.requests[-1].body["type"] == "template"
    elif shape == "errors":
        alert = WhatsAppAlert.objects.get(organisation_id=org)
        assert alert.kind == "account" and "Rate limit hit" in alert.detail
    elif shape == "template_status_paused":
        template = WhatsAppTemplate.objects.get(organisation_id=org, name="recordatorio_visita")
        assert template.status == "PAUSED"
        assert WhatsAppAlert.objects.filter(organisation_id=org, kind="template").exists()
    elif shape == "account_update_restriction":
        alert = WhatsAppAlert.objects.get(organisation_id=org, kind="account")
        assert "RESTRICTED_CUSTOMER_INITIATED_MESSAGING" in alert.detail
    else:
        pytest.fail(f"no check for {shape}")


def test_the_table_names_every_payload_file() -> None:
    assert {path.stem for path in PAYLOADS.glob("*.json")} == set(TABLE)


def test_a_redelivery_of_any_shape_changes_nothing(
    cast: Cast, world: World, graph: FakeGraph, django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    """Meta redelivers until it gets a 200, sometimes after it got one: every shape twice is
    what every shape once was."""
    for shape in sorted(TABLE):
        body = _body(shape)
        with django_capture_on_commit_callbacks(execute=True):
            assert _post(body).status_code == 200
        counts = (Message.objects.count(), OutgoingMessage.objects.count(), Turn.objects.count(),
                  WhatsAppAlert.objects.count(), len(graph.requests))  # fmt: skip
        with django_capture_on_commit_callbacks(execute=True):
            assert _post(body).status_code == 200
        again = (Message.objects.count(), OutgoingMessage.objects.count(), Turn.objects.count(),
                 WhatsAppAlert.objects.count(), len(graph.requests))  # fmt: skip
        assert again == counts, shape


def test_the_fake_graph_fails_the_calls_it_is_told_to_and_the_outbox_copes(
    cast: Cast, world: World, graph: FakeGraph, django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    """The test kit (issue 27.6): errors aimed at one kind of call — the text refused with
    131047, the template that replaces it rate-limited once, then taken with the id a status
    callback names — and the outbox's answer to each."""
    is_text = lambda body: body.get("type") == "text"  # noqa: E731
    is_template = lambda body: body.get("type") == "template"  # noqa: E731
    graph.add(429, retry_after=1, when=is_template)
    graph.add(400, code=131047, when=is_text)
    graph.add(200, message_id="wamid.template-1", when=is_template)
    with django_capture_on_commit_callbacks(execute=True):
        reply = message_add(conversation=world.conversation, role=Message.Role.ASSISTANT,
                            text="Listo, te espero el jueves.", language="es")  # fmt: skip
    row = OutgoingMessage.objects.get(message=reply)
    assert [r.body["type"] for r in graph.requests[-2:]] == ["text", "template"]
    assert row.status == OutgoingMessage.Status.QUEUED and "429" in row.last_error

    outbox.deliver(row.pk, now=row.next_attempt_at)

    row.refresh_from_db()
    assert (row.status, row.as_template, row.provider_message_id) == (
        OutgoingMessage.Status.SENT, True, "wamid.template-1"
    )  # fmt: skip
    assert graph.requests[-1].body["template"]["name"] == "seguimiento"
