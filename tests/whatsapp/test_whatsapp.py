"""The WhatsApp webhook and outbox (E2): handshake, signatures, idempotent storage, turns in
order, the outbox's retries, the 24-hour window and status callbacks — over real rows, the Django
test client and a fake Graph API on a real socket."""

from __future__ import annotations

import datetime
import io
import json
import time
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from copilot import runner
from copilot.models import Conversation, Message, Turn
from testing.fake_graph import FakeGraph
from tests.conftest import Cast
from tests.whatsapp.conftest import (
    CUSTOMER,
    NUMBER,
    OTHER_NUMBER,
    OTHER_SECRET,
    SECRET,
    TOKEN,
)
from whatsapp import outbox
from whatsapp.models import (
    OutgoingMessage,
    WhatsAppAccount,
    WhatsAppRejection,
    WhatsAppTemplate,
)
from whatsapp.payload import sign

pytestmark = [
    pytest.mark.usefixtures("registry"),
    pytest.mark.django_db(transaction=True),  # the runner closes and reopens its connection
]

URL = "/whatsapp/webhook/"


def _delivery(
    *messages: dict[str, Any], number: str = NUMBER, statuses: Any = (), contacts: Any = ()
) -> bytes:
    value: dict[str, Any] = {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "5491100000000", "phone_number_id": number},
        "contacts": [{"profile": {"name": "Marta"}, "wa_id": CUSTOMER}, *contacts],
        "messages": list(messages),
        "statuses": list(statuses),
    }
    change = {"field": "messages", "value": value}
    body = {"object": "whatsapp_business_account", "entry": [{"id": "waba", "changes": [change]}]}
    return json.dumps(body).encode()


def _text(message_id: str, text: str, sender: str = CUSTOMER) -> dict[str, Any]:
    stamp = str(int(timezone.now().timestamp()))
    return {"from": sender, "id": message_id, "timestamp": stamp, "type": "text",
            "text": {"body": text}}  # fmt: skip


def _post(body: bytes, secret: str | None = SECRET, signature: str | None = None) -> Any:
    headers = {}
    if signature is not None:
        headers["HTTP_X_HUB_SIGNATURE_256"] = signature
    elif secret is not None:
        headers["HTTP_X_HUB_SIGNATURE_256"] = sign(secret, body)
    return Client().post(URL, data=body, content_type="application/json", **headers)


def _drain(cast: Cast, django_capture_on_commit_callbacks: Any) -> Conversation:
    conversation = Conversation.objects.get(organisation=cast.org, contact=CUSTOMER)
    with django_capture_on_commit_callbacks(execute=True):
        runner.drain(cast.org.pk, conversation.pk)
    return conversation


# --- the handshake ----------------------------------------------------------------------------


def test_the_handshake_returns_the_challenge_for_a_known_token(accounts: Any) -> None:
    query = {"hub.mode": "subscribe", "hub.verify_token": TOKEN, "hub.challenge": "4242"}
    response = Client().get(URL, query)
    assert response.status_code == 200
    assert response.content == b"4242"


@pytest.mark.parametrize(
    "query",
    [
        {"hub.mode": "subscribe", "hub.verify_token": "wrong", "hub.challenge": "1"},
        {"hub.mode": "unsubscribe", "hub.verify_token": TOKEN, "hub.challenge": "1"},
        {"hub.mode": "subscribe", "hub.challenge": "1"},
    ],
)
def test_the_handshake_refuses_a_wrong_token(accounts: Any, query: dict[str, str]) -> None:
    assert Client().get(URL, query).status_code == 403


# --- signatures and bodies --------------------------------------------------------------------


def test_a_signed_text_is_stored_and_answered_on_whatsapp(
    cast: Cast, accounts: Any, graph: FakeGraph, dispatched: list[Any],
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(_delivery(_text("wamid.1", "hola, buen día")))
    assert response.status_code == 200
    conversation = Conversation.objects.get(organisation=cast.org, contact=CUSTOMER)
    assert conversation.channel == Conversation.Channel.WHATSAPP and conversation.user is None
    asked = Message.objects.get(conversation=conversation, role=Message.Role.USER)
    assert asked.client_id == "wamid.1" and asked.trace["whatsapp"]["from"] == CUSTOMER
    assert dispatched == [(cast.org.pk, conversation.pk)]

    _drain(cast, django_capture_on_commit_callbacks)

    sent = OutgoingMessage.objects.get(conversation=conversation)
    assert sent.status == OutgoingMessage.Status.SENT and sent.provider_message_id
    assert sent.to == CUSTOMER and sent.attempts == 1
    [request] = graph.requests
    assert request.path == f"/v21.0/{NUMBER}/messages"
    assert request.authorization == f"Bearer token-{NUMBER}"
    assert request.body["to"] == CUSTOMER and request.body["text"]["body"] == sent.text


@pytest.mark.parametrize("signature", ["forged", "missing", "other-secret"])
def test_a_forged_or_missing_signature_stores_nothing(
    accounts: Any, dispatched: list[Any], signature: str
) -> None:
    body = _delivery(_text("wamid.1", "hola"))
    if signature == "forged":
        response = _post(body, signature="sha256=" + "0" * 64)
    elif signature == "missing":
        response = _post(body, secret=None)
    else:
        response = _post(body, secret=OTHER_SECRET)
    assert response.status_code == 403
    assert not Message.objects.exists() and not Conversation.objects.exists()
    assert dispatched == []


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b"[" * 5000 + b"]" * 5000,  # past the JSON parser's own depth limit
        b'{"a": "\x00"}',  # a raw NUL: not JSON
        b"[]", b'"delivery"', b"1", b"null",  # not an object
        _delivery(_text("wamid.1", "hola"), number="../../x").replace(b'"../../x"', b'"\\ud800"'),
        _delivery(_text("wamid.1", "hola"), number="1100/../1"),
    ],
)  # fmt: skip
def test_a_body_that_names_no_account_it_could_be_checked_by_is_refused(
    accounts: Any, body: bytes
) -> None:
    response = _post(body)
    assert response.status_code == 400
    assert not Message.objects.exists() and not WhatsAppRejection.objects.exists()


def test_another_organisations_number_never_reaches_this_organisation(
    cast: Cast, accounts: Any, dispatched: list[Any], django_capture_on_commit_callbacks: Any
) -> None:
    body = _delivery(_text("wamid.9", "hola"), number=OTHER_NUMBER)
    assert _post(body, secret=SECRET).status_code == 403  # this org's secret: not theirs
    with django_capture_on_commit_callbacks(execute=True):
        assert _post(body, secret=OTHER_SECRET).status_code == 200
    assert not Conversation.objects.filter(organisation=cast.org).exists()
    assert Conversation.objects.filter(organisation=cast.other_org, contact=CUSTOMER).count() == 1
    assert dispatched == [(cast.other_org.pk, Conversation.objects.get().pk)]


def test_an_unknown_number_is_refused(accounts: Any) -> None:
    body = _delivery(_text("wamid.1", "hola"), number="555")
    assert _post(body).status_code == 403
    assert not Message.objects.exists()


# --- idempotence and order --------------------------------------------------------------------


def test_a_redelivered_message_is_stored_and_answered_once(
    cast: Cast, accounts: Any, graph: FakeGraph, dispatched: list[Any],
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    body = _delivery(_text("wamid.1", "hola"))
    with django_capture_on_commit_callbacks(execute=True):
        assert _post(body).status_code == 200
        assert _post(body).status_code == 200
    conversation = _drain(cast, django_capture_on_commit_callbacks)
    assert Message.objects.filter(conversation=conversation, role="user").count() == 1
    assert Turn.objects.filter(conversation=conversation).count() == 1
    assert OutgoingMessage.objects.filter(conversation=conversation).count() >= 1
    with django_capture_on_commit_callbacks(execute=True):
        assert _post(body).status_code == 200  # redelivered after it was answered
    _drain(cast, django_capture_on_commit_callbacks)
    assert Turn.objects.filter(conversation=conversation).count() == 1
    assert len(graph.requests) == OutgoingMessage.objects.count()


def test_a_burst_of_messages_is_answered_in_order(
    cast: Cast, accounts: Any, graph: FakeGraph, dispatched: list[Any],
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    texts = ["hola", "¿a qué hora abren?", "gracias"]
    with django_capture_on_commit_callbacks(execute=True):
        for number, text in enumerate(texts):
            assert _post(_delivery(_text(f"wamid.{number}", text))).status_code == 200
    conversation = _drain(cast, django_capture_on_commit_callbacks)
    assert Conversation.objects.filter(organisation=cast.org).count() == 1
    turns = list(Turn.objects.filter(conversation=conversation).order_by("started_at"))
    assert [t.message.text for t in turns] == texts
    assert all(t.status == Turn.Status.DONE for t in turns)
    answers = [t.answer_id for t in turns]
    assert answers == sorted(answers)  # each answered after the one before
    sent = list(OutgoingMessage.objects.filter(conversation=conversation).order_by("pk"))
    assert [o.message_id for o in sent][-1] == answers[-1]
    assert [r.body["text"]["body"] for r in graph.requests] == [o.text for o in sent]


def test_an_image_is_stored_and_answered_asking_for_text(
    cast: Cast, accounts: Any, graph: FakeGraph, dispatched: list[Any],
    django_capture_on_commit_callbacks: Any, settings: Any, tmp_path: Any,
) -> None:  # fmt: skip
    # On the embedded engine (reading it through a model: tests/whatsapp/test_media.py).
    settings.MEDIA_ROOT = tmp_path
    graph.add_media("770001", b"\xff\xd8\xff" + b"0" * 64, "image/jpeg")
    # Written now: an old timestamp would put the answer outside the 24-hour window.
    image = {"from": CUSTOMER, "id": "wamid.img", "timestamp": str(int(time.time())),
             "type": "image", "image": {"id": "770001", "mime_type": "image/jpeg"}}  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        assert _post(_delivery(image)).status_code == 200
        assert _post(_delivery(image)).status_code == 200
    conversation = Conversation.objects.get(organisation=cast.org, contact=CUSTOMER)
    roles = list(conversation.messages.values_list("role", flat=True))
    assert roles == ["user", "assistant"]
    assert not Turn.objects.exists() and dispatched == []
    [request] = graph.requests
    assert "no puedo leer fotos" in request.body["text"]["body"]


# --- the outbox ---------------------------------------------------------------------------------


def _queued(cast: Cast, *, customer_wrote: datetime.timedelta = datetime.timedelta(0)) -> int:
    conversation = Conversation.objects.create(
        organisation=cast.org, channel="whatsapp", contact=CUSTOMER
    )
    Message.objects.create(
        organisation=cast.org, conversation=conversation, role="user", text="hola",
        created_at=timezone.now() - customer_wrote,
    )  # fmt: skip
    reply = Message.objects.create(
        organisation=cast.org, conversation=conversation, role="assistant", text="¡Hola!"
    )
    # The row as `outbox_add` writes it, without the job it starts (the test makes the attempts).
    row = OutgoingMessage.objects.create(
        organisation=cast.org, conversation=conversation, message=reply, to=CUSTOMER,
        text=reply.text,
    )  # fmt: skip
    return row.pk


def test_the_outbox_retries_500s_and_429s_then_sends(
    cast: Cast, accounts: Any, graph: FakeGraph
) -> None:
    outgoing_id = _queued(cast)
    graph.add(500).add(429, retry_after=7)
    now = timezone.now()
    assert outbox.deliver(outgoing_id, now=now) == 2.0  # back-off base
    assert outbox.deliver(outgoing_id, now=now) is None  # not due yet: nothing sent
    row = OutgoingMessage.objects.get(pk=outgoing_id)
    assert row.status == "queued" and row.attempts == 1 and "500" in row.last_error
    assert outbox.deliver(outgoing_id, now=now + datetime.timedelta(seconds=3)) == 7.0
    assert outbox.deliver(outgoing_id, now=now + datetime.timedelta(seconds=11)) is None
    row.refresh_from_db()
    assert row.status == "sent" and row.attempts == 3 and row.provider_message_id
    assert len(graph.requests) == 3


def test_the_outbox_gives_up_as_failed(cast: Cast, accounts: Any, graph: FakeGraph) -> None:
    outgoing_id = _queued(cast)
    graph.add(503, times=10)
    moment = timezone.now()
    while (delay := outbox.deliver(outgoing_id, now=moment)) is not None:
        moment += datetime.timedelta(seconds=delay + 1)
    row = OutgoingMessage.objects.get(pk=outgoing_id)
    assert row.status == "failed" and row.attempts == 4 and "503" in row.last_error
    assert len(graph.requests) == 4


def test_a_connection_error_is_retried(cast: Cast, accounts: Any, settings: Any) -> None:
    settings.WHATSAPP_GRAPH_URL = "http://127.0.0.1:9"  # nobody listens
    outgoing_id = _queued(cast)
    assert outbox.deliver(outgoing_id) == settings.WHATSAPP_RETRY_BASE_SECONDS
    assert OutgoingMessage.objects.get(pk=outgoing_id).status == "queued"


def test_outside_the_window_without_a_template_it_fails(
    cast: Cast, accounts: Any, graph: FakeGraph
) -> None:
    outgoing_id = _queued(cast, customer_wrote=datetime.timedelta(hours=25))
    assert outbox.deliver(outgoing_id) is None
    row = OutgoingMessage.objects.get(pk=outgoing_id)
    assert row.status == "failed" and row.last_error.startswith(outbox.OUTSIDE_WINDOW)
    assert graph.requests == []


def test_outside_the_window_the_template_is_sent(
    cast: Cast, accounts: Any, graph: FakeGraph
) -> None:
    WhatsAppAccount.objects.filter(organisation=cast.org).update(template_name="seguimiento")
    WhatsAppTemplate.objects.create(
        organisation=cast.org, name="seguimiento", language="es_AR", status="APPROVED",
        variables=["text"],
    )  # fmt: skip
    outgoing_id = _queued(cast, customer_wrote=datetime.timedelta(hours=25))
    assert outbox.deliver(outgoing_id) is None
    row = OutgoingMessage.objects.get(pk=outgoing_id)
    assert row.status == "sent" and row.template == "seguimiento"
    [request] = graph.requests
    assert request.body["type"] == "template"
    assert request.body["template"]["name"] == "seguimiento"
    [body] = request.body["template"]["components"]  # the reply's text arrives (issue 27.5)
    assert body["parameters"] == [{"type": "text", "text": "¡Hola!"}]


def test_status_callbacks_update_the_outgoing_row(
    cast: Cast, accounts: Any, graph: FakeGraph
) -> None:
    outgoing_id = _queued(cast)
    outbox.deliver(outgoing_id)
    provider_id = OutgoingMessage.objects.get(pk=outgoing_id).provider_message_id

    def callback(status: str, secret: str = SECRET, number: str = NUMBER, **extra: Any) -> None:
        update = {"id": provider_id, "status": status, "recipient_id": CUSTOMER, **extra}
        assert _post(_delivery(number=number, statuses=[update]), secret=secret).status_code == 200

    callback("read")
    callback("delivered")  # late: never goes back
    assert OutgoingMessage.objects.get(pk=outgoing_id).status == "read"
    callback("failed", errors=[{"code": 131047, "title": "Re-engagement message"}])
    row = OutgoingMessage.objects.get(pk=outgoing_id)
    assert row.status == "failed" and "131047" in row.last_error
    # Another organisation's number naming this row's id changes nothing.
    OutgoingMessage.objects.filter(pk=outgoing_id).update(status="sent")
    callback("read", secret=OTHER_SECRET, number=OTHER_NUMBER)
    assert OutgoingMessage.objects.get(pk=outgoing_id).status == "sent"


def test_a_panel_conversation_writes_no_outbox_row(cast: Cast, accounts: Any) -> None:
    conversation = Conversation.objects.create(organisation=cast.org, user=cast.operator)
    reply = Message.objects.create(
        organisation=cast.org, conversation=conversation, role="assistant", text="ok"
    )
    assert outbox.outbox_add(reply, conversation) is None


def test_the_sweep_sends_rows_no_job_holds(cast: Cast, accounts: Any, graph: FakeGraph) -> None:
    waiting = _queued(cast)
    stuck = _queued(cast)
    long_ago = timezone.now() - datetime.timedelta(minutes=5)
    OutgoingMessage.objects.filter(pk=stuck).update(status="sending", updated_at=long_ago)
    assert outbox.flush_outbox() == 2
    assert set(OutgoingMessage.objects.values_list("status", flat=True)) == {"sent"}
    assert {r.body["to"] for r in graph.requests} == {CUSTOMER} and len(graph.requests) == 2
    assert waiting != stuck


def test_the_demo_command_posts_a_signed_delivery(
    cast: Cast, accounts: Any, dispatched: list[Any], live_server: Any
) -> None:
    out = io.StringIO()
    call_command(
        "whatsapp_fake_send", "clima-sur", CUSTOMER, "hola", url=f"{live_server.url}{URL}",
        stdout=out, wait=0,
    )  # fmt: skip
    assert out.getvalue().startswith("200")
    [asked] = Message.objects.filter(organisation=cast.org, role="user")
    assert asked.text == "hola" and asked.conversation.contact == CUSTOMER


def test_the_demo_command_needs_an_account(cast: Cast) -> None:
    with pytest.raises(CommandError):
        call_command("whatsapp_fake_send", "clima-sur", CUSTOMER, "hola")


# --- the panel ------------------------------------------------------------------------------


def test_the_panel_lists_whatsapp_conversations_with_the_delivery_status(
    cast: Cast, accounts: Any, graph: FakeGraph
) -> None:
    outgoing_id = _queued(cast)
    graph.add(400)
    outbox.deliver(outgoing_id)
    conversation = OutgoingMessage.objects.get(pk=outgoing_id).conversation
    manager = Client()
    manager.force_login(cast.manager)
    page = manager.get(f"/chat/{conversation.pk}/").content.decode()
    assert f'href="/chat/{conversation.pk}/"' in page and "chat-whatsapp" in page
    # In the reader's words; the technical detail is the admin outbox's.
    assert 'data-outgoing-status="failed"' in page and "WhatsApp lo rechazó" in page
    assert "HTTP 400" not in page
    assert OutgoingMessage.objects.get(pk=outgoing_id).last_error.startswith("HTTP 400")
    outsider = Client()
    outsider.force_login(cast.outsider)
    assert outsider.get(f"/chat/{conversation.pk}/").status_code == 404


def test_a_burst_through_the_real_runners_is_answered_once_each_in_order(
    cast: Cast, accounts: Any, graph: FakeGraph
) -> None:
    # No stand-in for dispatch: each delivery hands the conversation to this process's runner
    # threads, which race for its lease; one of them answers the three turns, in order.
    texts = ["hola", "¿a qué hora abren?", "gracias"]
    for number, text in enumerate(texts):
        assert _post(_delivery(_text(f"wamid.b{number}", text))).status_code == 200
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        # The row is marked sent after the Graph API answers, so wait for that too.
        done = Turn.objects.filter(status=Turn.Status.DONE).count() == 3
        unsent = OutgoingMessage.objects.exclude(status="sent").exists()
        if done and len(graph.requests) >= 3 and not unsent:
            break
        time.sleep(0.1)
    turns = list(Turn.objects.order_by("started_at"))
    assert [t.message.text for t in turns] == texts
    assert [t.status for t in turns] == [Turn.Status.DONE] * 3
    answers = [t.answer_id for t in turns]
    assert answers == sorted(answers)
    sent = OutgoingMessage.objects.order_by("pk")
    assert [r.body["text"]["body"] for r in graph.requests] == [o.text for o in sent]
    assert {o.status for o in sent} == {"sent"}


# --- the admin ------------------------------------------------------------------------------


def test_the_admin_keeps_the_secrets_write_only(cast: Cast, django_user_model: Any) -> None:
    root = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    client = Client()
    client.force_login(root)
    response = client.post(
        "/admin/whatsapp/whatsappaccount/add/",
        {"organisation": cast.org.pk, "active": "on", "template_language": "es_AR",
         "phone_number_id": NUMBER, "app_secret": SECRET, "verify_token": TOKEN,
         "access_token": "EAAB-secret"},
    )  # fmt: skip
    assert response.status_code == 302
    account = WhatsAppAccount.objects.get(organisation=cast.org)
    assert account.app_secret == SECRET and account.phone_number_id == NUMBER
    assert SECRET not in account.app_secret_encrypted
    assert WhatsAppAccount.objects.filter(phone_number_digest=account.digest_of(NUMBER)).exists()
    page = client.get(f"/admin/whatsapp/whatsappaccount/{account.pk}/change/").content.decode()
    assert SECRET not in page and TOKEN not in page and NUMBER not in page and "EAAB" not in page
    # A blank field keeps what is stored.
    client.post(
        f"/admin/whatsapp/whatsappaccount/{account.pk}/change/",
        {"organisation": cast.org.pk, "active": "on", "template_language": "es_AR",
         "template_name": "seguimiento"},
    )  # fmt: skip
    account.refresh_from_db()
    assert account.app_secret == SECRET and account.template_name == "seguimiento"
    listing = client.get("/admin/whatsapp/outgoingmessage/")
    assert listing.status_code == 200


def test_a_batched_delivery_is_stored_in_the_order_it_was_written(
    cast: Cast, accounts: Any, dispatched: list[Any]
) -> None:
    later, earlier = _text("wamid.late", "segundo"), _text("wamid.early", "primero")
    earlier["timestamp"] = str(int(later["timestamp"]) - 5)
    assert _post(_delivery(later, earlier)).status_code == 200
    stored = Message.objects.filter(role="user").order_by("pk").values_list("text", flat=True)
    assert list(stored) == ["primero", "segundo"]
    assert Turn.objects.count() == 2


def test_a_later_reply_waits_for_an_earlier_one_in_back_off(
    cast: Cast, accounts: Any, graph: FakeGraph
) -> None:
    first = _queued(cast)
    conversation = OutgoingMessage.objects.get(pk=first).conversation
    reply = Message.objects.create(
        organisation=cast.org, conversation=conversation, role="assistant", text="¿Algo más?"
    )
    second = OutgoingMessage.objects.create(
        organisation=cast.org, conversation=conversation, message=reply, to=CUSTOMER,
        text=reply.text,
    ).pk  # fmt: skip
    graph.add(500)
    assert outbox.deliver(first) == 2.0
    assert outbox.deliver(second) is None  # waits: nothing sent out of order
    assert OutgoingMessage.objects.get(pk=second).attempts == 0
    outbox.deliver(first, now=timezone.now() + datetime.timedelta(seconds=3))  # then the second
    assert [r.body["text"]["body"] for r in graph.requests] == ["¡Hola!", "¡Hola!", "¿Algo más?"]
    assert set(OutgoingMessage.objects.values_list("status", flat=True)) == {"sent"}


# --- faults inside an attempt, and sending again ------------------------------------------------


def test_a_broken_attempt_goes_back_to_the_queue_and_is_failed_once_its_attempts_are_spent(
    cast: Cast, accounts: Any, graph: FakeGraph, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(**kwargs: Any) -> Any:
        raise RuntimeError("secrets could not be read")

    outgoing_id = _queued(cast)
    monkeypatch.setattr(outbox.graph, "send", broken)
    for attempt in range(1, settings.WHATSAPP_MAX_ATTEMPTS + 1):
        OutgoingMessage.objects.filter(pk=outgoing_id).update(next_attempt_at=timezone.now())
        delay = outbox.deliver(outgoing_id)
        row = OutgoingMessage.objects.get(pk=outgoing_id)
        assert "secrets could not be read" in row.last_error and row.attempts == attempt
        if attempt < settings.WHATSAPP_MAX_ATTEMPTS:
            assert delay is not None and row.status == "queued"
    assert row.status == "failed"  # never left "sending" for ever, holding up the next reply


def test_a_row_left_sending_with_its_attempts_spent_fails_at_the_sweep(
    cast: Cast, accounts: Any, graph: FakeGraph, settings: Any
) -> None:
    outgoing_id = _queued(cast)
    OutgoingMessage.objects.filter(pk=outgoing_id).update(
        status="sending", attempts=settings.WHATSAPP_MAX_ATTEMPTS,
        updated_at=timezone.now() - datetime.timedelta(hours=1),
    )  # fmt: skip
    outbox.flush_outbox()
    assert OutgoingMessage.objects.get(pk=outgoing_id).status == "failed"


def test_failed_rows_are_sent_again_on_request_and_only_the_organisations(
    cast: Cast, accounts: Any, graph: FakeGraph, settings: Any
) -> None:
    outgoing_id = _queued(cast)
    OutgoingMessage.objects.filter(pk=outgoing_id).update(
        status="failed", attempts=settings.WHATSAPP_MAX_ATTEMPTS
    )
    assert outbox.outgoing_resend(organisation_id=cast.other_org.pk, ids=[outgoing_id]) == 0
    assert OutgoingMessage.objects.get(pk=outgoing_id).status == "failed"  # not theirs to send
    # Queued again from its first attempt, and its job (eager here) sends it at once.
    assert outbox.outgoing_resend(organisation_id=cast.org.pk, ids=[outgoing_id]) == 1
    row = OutgoingMessage.objects.get(pk=outgoing_id)
    assert (row.status, row.attempts) == ("sent", 1)


# --- one bad message in a signed delivery (issue 23) ------------------------------------------
# json.dumps writes a lone surrogate as "\\ud800": the body is what an attacker (or a broken
# relay) would sign and send.

OTHER_CUSTOMER = "5491166660000"


def _mixed(bad: dict[str, Any], contacts: Any = ()) -> bytes:
    return _delivery(_text("wamid.good", "hola, se me rompió el aire"), bad, contacts=contacts)


def _assert_only_the_good_one_stored(cast: Cast, dispatched: list[Any]) -> None:
    [message] = Message.objects.all()
    assert message.text == "hola, se me rompió el aire" and message.client_id == "wamid.good"
    conversation = Conversation.objects.get()
    assert conversation.organisation == cast.org and conversation.contact == CUSTOMER
    assert dispatched == [(cast.org.pk, conversation.pk)]


def test_a_mixed_delivery_stores_the_valid_message_and_records_the_bad_one(
    cast: Cast, accounts: Any, dispatched: list[Any], django_capture_on_commit_callbacks: Any
) -> None:
    assert not WhatsAppRejection.objects.exists()
    bad = _text("wamid.bad", "hola", sender="../../etc<script>")
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(_mixed(bad))
    assert response.status_code == 200
    _assert_only_the_good_one_stored(cast, dispatched)
    [rejection] = WhatsAppRejection.objects.all()
    assert rejection.organisation == cast.org and rejection.message_id == "wamid.bad"
    assert (rejection.field, rejection.reason) == ("from", "format")
    assert rejection.excerpt == "../../etc<script>"
    assert not Conversation.objects.filter(contact__contains="etc").exists()


@pytest.mark.parametrize(
    ("bad", "contacts", "field"),
    [
        ({"from": "549115555\ud800"}, (), "from"),
        ({"id": "wamid.\udc00x"}, (), "id"),
        ({"text": {"body": "hola \ud83d"}}, (), "text"),
        ({"from": OTHER_CUSTOMER}, [{"profile": {"name": "Ana \udfff"}, "wa_id": OTHER_CUSTOMER}],
         "name"),
        ({"type": "image", "image": {"id": "1234", "mime_type": "image/jpeg",
                                     "caption": "mirá \ud800"}}, (), "caption"),
    ],
)  # fmt: skip
def test_a_lone_surrogate_in_any_field_rejects_that_message_only(
    cast: Cast, accounts: Any, dispatched: list[Any], django_capture_on_commit_callbacks: Any,
    bad: dict[str, Any], contacts: Any, field: str,
) -> None:  # fmt: skip
    message = {**_text("wamid.bad", "hola"), **bad}
    body = _mixed(message, contacts)
    assert b"\\ud" in body
    with django_capture_on_commit_callbacks(execute=True):
        assert _post(body).status_code == 200
    _assert_only_the_good_one_stored(cast, dispatched)
    [rejection] = WhatsAppRejection.objects.all()
    assert (rejection.field, rejection.reason) == (field, "surrogate")
    assert "\\ud" in rejection.excerpt  # written as an escape: storable and shown


@pytest.mark.parametrize(
    ("stamp", "reason"),
    [("0", "range"), ("99999999999", "range"), ("-5", "format"), ("12abc", "format"),
     (None, "missing"), ("1e30", "format"), ("999999999999999999999999", "format")],
)  # fmt: skip
def test_a_timestamp_out_of_range_rejects_that_message_only(
    cast: Cast, accounts: Any, dispatched: list[Any], django_capture_on_commit_callbacks: Any,
    stamp: str | None, reason: str,
) -> None:  # fmt: skip
    bad = {**_text("wamid.bad", "hola"), "timestamp": stamp}
    with django_capture_on_commit_callbacks(execute=True):
        assert _post(_mixed(bad)).status_code == 200
    _assert_only_the_good_one_stored(cast, dispatched)
    assert list(WhatsAppRejection.objects.values_list("field", "reason")) == [("timestamp", reason)]


def test_a_timestamp_two_days_ahead_is_out_of_range(
    cast: Cast, accounts: Any, dispatched: list[Any], django_capture_on_commit_callbacks: Any
) -> None:
    ahead = str(int((timezone.now() + datetime.timedelta(days=2)).timestamp()))
    with django_capture_on_commit_callbacks(execute=True):
        assert _post(_mixed({**_text("wamid.bad", "hola"), "timestamp": ahead})).status_code == 200
    _assert_only_the_good_one_stored(cast, dispatched)
    assert WhatsAppRejection.objects.get().reason == "range"


@pytest.mark.parametrize(
    "sender",
    ["../../etc<script>", "+5491155550000", "12345", "5491155550000" * 2,
     "５４９１１５５５５００００", {"a": 1}, ["5491155550000"], True, ""],
)  # fmt: skip
def test_a_sender_that_is_not_a_phone_number_rejects_that_message_only(
    cast: Cast, accounts: Any, dispatched: list[Any], django_capture_on_commit_callbacks: Any,
    sender: Any,
) -> None:  # fmt: skip
    bad = {**_text("wamid.bad", "hola"), "from": sender}
    with django_capture_on_commit_callbacks(execute=True):
        assert _post(_mixed(bad)).status_code == 200
    _assert_only_the_good_one_stored(cast, dispatched)
    [rejection] = WhatsAppRejection.objects.all()
    assert rejection.field == "from" and rejection.reason in ("format", "missing")


def test_nul_characters_are_dropped_from_text_and_reject_an_id(
    cast: Cast, accounts: Any, dispatched: list[Any], django_capture_on_commit_callbacks: Any
) -> None:
    nul_text = _text("wamid.nul-text", "ho\u0000la")
    nul_id = _text("wamid.\u0000x", "chau")
    body = _delivery(nul_text, nul_id)
    assert body.count(b"\\u0000") == 2
    with django_capture_on_commit_callbacks(execute=True):
        assert _post(body).status_code == 200
    [message] = Message.objects.all()
    assert message.text == "hola" and message.client_id == "wamid.nul-text"
    [rejection] = WhatsAppRejection.objects.all()
    assert (rejection.field, rejection.reason) == ("id", "nul")
    assert rejection.excerpt == "wamid.\\x00x"


def test_a_deeply_nested_message_is_rejected_and_the_rest_stored(
    cast: Cast, accounts: Any, dispatched: list[Any], django_capture_on_commit_callbacks: Any
) -> None:
    deep: Any = "x"
    for _ in range(400):
        deep = {"d": [deep]}
    bad = {**_text("wamid.bad", "hola"), "context": deep}
    body = json.loads(_mixed(bad))
    body["entry"][0]["extra"] = deep  # deep where nothing is read: ignored
    with django_capture_on_commit_callbacks(execute=True):
        assert _post(json.dumps(body).encode()).status_code == 200
    _assert_only_the_good_one_stored(cast, dispatched)
    [rejection] = WhatsAppRejection.objects.all()
    assert (rejection.field, rejection.reason) == ("message", "nesting")


@pytest.mark.parametrize(
    "bad",
    [{"text": {"body": {"nested": "x"}}}, {"type": "<b>"}, {"id": "wamid/../x y"},
     {"type": "image", "image": {"id": "../../../../internal/admin?x=1#"}}, "not a message"],
)  # fmt: skip
def test_fields_of_the_wrong_shape_reject_that_message_only(
    cast: Cast, accounts: Any, dispatched: list[Any], django_capture_on_commit_callbacks: Any,
    bad: Any,
) -> None:  # fmt: skip
    message = {**_text("wamid.bad", "hola"), **bad} if isinstance(bad, dict) else bad
    with django_capture_on_commit_callbacks(execute=True):
        assert _post(_mixed(message)).status_code == 200
    _assert_only_the_good_one_stored(cast, dispatched)
    assert WhatsAppRejection.objects.get().reason == "format"


def test_a_bad_status_is_recorded_and_the_good_one_applied(
    cast: Cast, accounts: Any, graph: FakeGraph
) -> None:
    outgoing_id = _queued(cast)
    outbox.deliver(outgoing_id)
    row = OutgoingMessage.objects.get(pk=outgoing_id)
    assert row.status == "sent"
    statuses = [{"id": row.provider_message_id, "status": "delivered"},
                {"id": "wamid.x", "status": "\ud800"}]  # fmt: skip
    assert _post(_delivery(statuses=statuses)).status_code == 200
    row.refresh_from_db()
    assert row.status == "delivered"
    [rejection] = WhatsAppRejection.objects.all()
    assert (rejection.field, rejection.reason) == ("status.status", "surrogate")


def test_a_forged_delivery_with_a_bad_message_records_nothing(accounts: Any) -> None:
    body = _mixed(_text("wamid.bad", "hola", sender="../../etc<script>"))
    assert _post(body, signature="sha256=" + "0" * 64).status_code == 403
    assert not WhatsAppRejection.objects.exists() and not Message.objects.exists()


def test_the_admin_shows_rejections_to_their_organisation_only(
    cast: Cast, accounts: Any, dispatched: list[Any], django_user_model: Any
) -> None:
    _post(_mixed(_text("wamid.bad", "hola", sender="../../etc<script>")))
    rejection = WhatsAppRejection.objects.get()
    root = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    admin = Client()
    admin.force_login(root)
    assert "wamid.bad" in admin.get("/admin/whatsapp/whatsapprejection/").content.decode()
    url = f"/admin/whatsapp/whatsapprejection/{rejection.pk}/change/"
    page = admin.get(url).content.decode()
    assert "../../etc&lt;script&gt;" in page and "../../etc<script>" not in page
    assert admin.post(url, {"field": "x"}).status_code == 403  # read-only
    cast.outsider.is_staff = True
    cast.outsider.save()
    cast.outsider.user_permissions.set(Permission.objects.all())
    outsider = Client()
    outsider.force_login(cast.outsider)
    listing = outsider.get("/admin/whatsapp/whatsapprejection/")
    assert listing.status_code == 200 and "wamid.bad" not in listing.content.decode()
    assert outsider.get(url).status_code in (302, 404)
