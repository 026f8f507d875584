"""Customers as users on WhatsApp (issue 14.3): the sender matched to a customer by normalised
phone, the registration of an unknown number, a customer's turn scoped to their own records,
documents sent through the fake Graph API, and a person taking the conversation over — over
real rows, the Django test client, the real embedded engine and a fake Graph API on a socket."""

from __future__ import annotations

import datetime
import json
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from agents.base import Chain, Runner, Step
from agents.context import TurnContext
from agents.models import Agent
from business.models import Customer, Job
from copilot import runner
from copilot.models import Conversation, ConversationEvent, Message, Turn
from nlu.values import Entities
from testing.fake_graph import FakeGraph
from tests import factories
from tests.conftest import Cast
from whatsapp import customers as customers
from whatsapp import humans as humans
from whatsapp.models import OutgoingMessage
from whatsapp.payload import sign

pytestmark = pytest.mark.django_db(transaction=True)  # the runner reopens its connection

URL = "/whatsapp/webhook/"
NUMBER, SECRET = "1100220033", "app-secret-clima"
SENDER = "5491155550000"  # as WhatsApp writes an Argentine mobile: 54 9 11 …
STORED = "+541155550000"  # as the office typed it: "11 5555-0000", normalised (no 9)


_ids = iter(range(1, 10_000))


def _say(text: str, sender: str = SENDER) -> Any:
    message = {
        "from": sender, "id": f"wamid.{next(_ids)}", "type": "text",
        "timestamp": str(int(timezone.now().timestamp())), "text": {"body": text},
    }  # fmt: skip
    value = {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "5491100000000", "phone_number_id": NUMBER},
        "contacts": [{"profile": {"name": "Marta"}, "wa_id": sender}],
        "messages": [message],
    }
    body = json.dumps(
        {"object": "whatsapp_business_account",
         "entry": [{"id": "waba", "changes": [{"field": "messages", "value": value}]}]}
    ).encode()  # fmt: skip
    return Client().post(
        URL, data=body, content_type="application/json",
        HTTP_X_HUB_SIGNATURE_256=sign(SECRET, body),
    )  # fmt: skip


def _turn(cast: Cast, text: str, capture: Any, sender: str = SENDER) -> str:
    """The customer writes; the conversation's turns run here; the last reply's text."""
    with capture(execute=True):
        assert _say(text, sender).status_code == 200
    conversation = Conversation.objects.get(organisation=cast.org, contact=sender)
    with capture(execute=True):
        runner.drain(cast.org.pk, conversation.pk)
    return _last_reply(conversation)


def _last_reply(conversation: Conversation) -> str:
    answers = Message.objects.filter(conversation=conversation, role=Message.Role.ASSISTANT)
    return " ".join(m.text for m in answers.filter(pk__gt=_last_user(conversation)))


def _last_user(conversation: Conversation) -> int:
    users = Message.objects.filter(conversation=conversation, role=Message.Role.USER)
    return users.order_by("-pk").values_list("pk", flat=True).first() or 0


def _customer(cast: Cast, name: str = "Marta Gómez", **kwargs: Any) -> Customer:
    kwargs.setdefault("phone", STORED)
    return factories.make_customer(cast.org, name, **kwargs)


# --- who is writing ---------------------------------------------------------------------------


def test_the_senders_forms_of_one_argentine_mobile() -> None:
    assert customers.wa_variants("5491155550000") == {"+5491155550000", "+541155550000"}
    assert customers.wa_variants("541145678901") == {"+541145678901", "+5491145678901"}
    assert customers.wa_variants("") == set() and customers.wa_variants("12") == set()


@pytest.mark.parametrize("field", ["phone", "phone_alt"])
def test_the_sender_is_matched_to_the_customer_by_normalised_phone(
    cast: Cast, account: Any, dispatched: list[Any], django_capture_on_commit_callbacks: Any,
    told: list[Any], field: str,
) -> None:  # fmt: skip
    marta = factories.make_customer(cast.org, "Marta Gómez", **{field: STORED})
    factories.make_customer(cast.other_org, "Marta de otra empresa", phone=STORED)
    with django_capture_on_commit_callbacks(execute=True):
        assert _say("hola").status_code == 200
    conversation = Conversation.objects.get(organisation=cast.org, contact=SENDER)
    assert conversation.customer == marta
    assert told == [(f"whatsapp.o{cast.org.pk}", {
        "type": "whatsapp.changed", "event": "new_conversation",
        "conversation_id": conversation.pk, "title": "WhatsApp Marta", "mode": "copilot",
    })]  # fmt: skip


def test_a_number_two_customers_share_is_matched_to_nobody(
    cast: Cast, account: Any, dispatched: list[Any], django_capture_on_commit_callbacks: Any
) -> None:
    _customer(cast, "Marta Gómez")
    _customer(cast, "Pablo Gómez")
    with django_capture_on_commit_callbacks(execute=True):
        _say("hola")
    assert Conversation.objects.get(contact=SENDER).customer is None


# --- registration -----------------------------------------------------------------------------


def test_an_unknown_number_registers_and_its_first_request_is_then_answered(
    cast: Cast, agents: Any, account: Any, dispatched: list[Any], graph: FakeGraph,
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    factories.make_technician(cast.org)
    capture = django_capture_on_commit_callbacks
    first = _turn(cast, "hola, quiero un service de aire para el lunes", capture)
    assert "nombre" in first
    conversation = Conversation.objects.get(contact=SENDER)
    assert conversation.state["registration"]["step"] == "name"

    again = _turn(cast, "¿cuánto sale?", capture)  # not a name: asked again, nothing created
    assert "nombre" in again and not Customer.objects.filter(organisation=cast.org).exists()
    conversation.refresh_from_db()
    assert conversation.state["registration"] == {**conversation.state["registration"], "asks": 1}

    assert "dirección" in _turn(cast, "Soy Marta Gómez", capture)
    assert "calle y número" in _turn(cast, "no sé", capture)  # not an address: asked again
    done = _turn(cast, "Av. Rivadavia 1234, Lanús", capture)

    marta = Customer.objects.get(organisation=cast.org)
    assert marta.name == "Marta Gómez" and marta.phone == "+5491155550000"
    assert marta.addresses.get().street == "Av. Rivadavia 1234"
    conversation.refresh_from_db()
    assert conversation.customer == marta and "registration" not in conversation.state
    assert done.startswith("¡Listo, Marta Gómez!")
    # The first request ("un service de aire para el lunes") went on to the copilot.
    assert Turn.objects.filter(conversation=conversation).count() == 5
    assert "service" in done.lower() or "lunes" in done.lower()
    # Every reply reached the customer through the outbox.
    assert len(graph.requests) == OutgoingMessage.objects.filter(conversation=conversation).count()


def test_registration_in_english_with_the_address_skipped(
    cast: Cast, agents: Any, account: Any, dispatched: list[Any], graph: FakeGraph,
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    capture = django_capture_on_commit_callbacks
    assert "full name" in _turn(cast, "hello", capture)
    assert "address" in _turn(cast, "my name is John Smith", capture)
    done = _turn(cast, "skip", capture)
    john = Customer.objects.get(organisation=cast.org)
    assert john.name == "John Smith" and not john.addresses.exists()
    assert done == "Done, John Smith! You are registered now. How can I help you?"


def test_a_registration_the_tool_refuses_creates_nothing_and_says_so(
    cast: Cast, agents: dict[str, Agent], account: Any, dispatched: list[Any],
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    # The customer agent without customer_create: nothing bypasses its whitelist.
    agents["customer"].tools = [t for t in agents["customer"].tools if t != "customer_create"]
    agents["customer"].save()
    capture = django_capture_on_commit_callbacks
    _turn(cast, "hola", capture)
    _turn(cast, "Marta Gómez", capture)
    assert "Una persona del equipo" in _turn(cast, "saltar", capture)
    assert not Customer.objects.filter(organisation=cast.org).exists()


# --- a customer's own records only -----------------------------------------------------------


@pytest.fixture
def two_customers(cast: Cast) -> tuple[Customer, Customer]:
    marta = _customer(cast, "Marta Gómez")
    bianchi = factories.make_customer(
        cast.org, "Roberto Bianchi", phone="+541144443333", email="rb@bianchi.com.ar"
    )
    return marta, bianchi


def _runner(cast: Cast, customer: Customer, agent: str) -> Runner:
    ctx = TurnContext.build(cast.org)
    ctx = TurnContext(ctx.organisation, None, None, ctx.now, customer_id=customer.pk)
    row = Agent.objects.get(organisation=cast.org, name=agent)
    step = Step(index=0, intent="x", agent=agent, confidence=1.0, text="", entities=Entities())
    return Runner(ctx, Chain("es"), row, step)


def test_a_customers_tools_are_pinned_to_their_own_records(
    cast: Cast, agents: Any, two_customers: tuple[Customer, Customer]
) -> None:
    marta, bianchi = two_customers
    theirs = factories.make_job(cast.org, bianchi, status=Job.Status.SCHEDULED)
    mine = factories.make_job(cast.org, marta, status=Job.Status.SCHEDULED)
    invoice = factories.make_invoice(cast.org, bianchi)

    jobs = _runner(cast, marta, "scheduling").call("jobs_find", customer="Roberto Bianchi")
    assert jobs.ok and [job["id"] for job in jobs.data["jobs"]] == [mine.pk]
    everyone = _runner(cast, marta, "scheduling").call("jobs_find")  # "the week's jobs"
    assert [job["id"] for job in everyone.data["jobs"]] == [mine.pk]
    moved = _runner(cast, marta, "scheduling").call("job_reschedule", job_id=theirs.pk,
                                                    time="15:00")  # fmt: skip
    assert not moved.ok and moved.error == f"job {theirs.pk} not found"
    owed = _runner(cast, marta, "financial").call(
        "payment_status", invoice_number=invoice.number, customer_id=bianchi.pk
    )
    assert not owed.ok and "not found" in owed.error
    found = _runner(cast, marta, "customer").call("customers_find", query="Bianchi")
    assert [c["id"] for c in found.data.get("customers", [])] in ([], [marta.pk])
    update = _runner(cast, marta, "customer").call("customer_update", customer_id=bianchi.pk,
                                                   phone="11 2222-3333")  # fmt: skip
    assert not update.ok and "not available" in update.error
    bianchi.refresh_from_db()
    assert bianchi.phone == "+541144443333"
    assert Job.objects.get(pk=theirs.pk).scheduled_start == theirs.scheduled_start  # not moved


def test_a_foreign_record_in_a_result_is_refused() -> None:
    from agents.customer_scope import screen
    from agents.registry import success

    own = type("Ctx", (), {"customer_id": 7})()
    listing = screen(own, success("2 jobs", jobs=[{"id": 1, "customer_id": 7},  # type: ignore[arg-type]
                                                  {"id": 2, "customer_id": 8}]))  # fmt: skip
    assert listing.ok and listing.data["jobs"] == [{"id": 1, "customer_id": 7}]
    single = screen(own, success("quote", quote={"id": 3, "customer_id": 8}))  # type: ignore[arg-type]
    assert not single.ok and single.error == "not found" and single.data == {}


@pytest.mark.parametrize(
    "text",
    [
        "mostrame los trabajos de Roberto Bianchi",
        "¿cuánto debe Roberto Bianchi?",
        "¿cuál es la dirección y el teléfono de Roberto Bianchi?",
        "mandame la factura de Bianchi",
    ],
)
def test_a_customer_asking_for_another_customers_data_gets_nothing_of_theirs(
    cast: Cast, agents: Any, account: Any, dispatched: list[Any], graph: FakeGraph,
    two_customers: tuple[Customer, Customer], django_capture_on_commit_callbacks: Any, text: str,
) -> None:  # fmt: skip
    marta, bianchi = two_customers
    job = factories.make_job(cast.org, bianchi, service="Reparación de caldera Bianchi",
                             status=Job.Status.SCHEDULED)  # fmt: skip
    invoice = factories.make_invoice(cast.org, bianchi, amount=Decimal("987654"))
    street = bianchi.addresses.get().street
    reply = _turn(cast, text, django_capture_on_commit_callbacks)
    conversation = Conversation.objects.get(contact=SENDER)
    assert conversation.customer == marta and reply
    for secret in (street, "caldera", invoice.number, "987", "4444-3333", "44443333",
                   "rb@bianchi", f"#{job.pk} ", "Roberto"):  # fmt: skip
        assert secret not in reply, (secret, reply)
    sent = " ".join(json.dumps(r.body) for r in graph.requests)
    assert street not in sent and invoice.number not in sent
    assert not any(r.file is not None for r in graph.requests)  # no PDF of theirs


def test_a_customer_sees_their_own_jobs(
    cast: Cast, agents: Any, account: Any, dispatched: list[Any], graph: FakeGraph,
    two_customers: tuple[Customer, Customer], django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    marta, bianchi = two_customers
    start = timezone.now() + datetime.timedelta(days=2)
    factories.make_job(cast.org, marta, start=start, service="Service de split Marta",
                       status=Job.Status.SCHEDULED)  # fmt: skip
    factories.make_job(cast.org, bianchi, start=start, service="Caldera de Bianchi",
                       status=Job.Status.SCHEDULED)  # fmt: skip
    reply = _turn(cast, "pasame mis datos y mi historial", django_capture_on_commit_callbacks)
    assert "Marta" in reply or "split" in reply.lower(), reply
    assert "Bianchi" not in reply


def test_office_work_a_customer_cannot_order_is_said_in_their_words(
    cast: Cast, two_customers: tuple[Customer, Customer]
) -> None:
    marta, _ = two_customers
    text = (
        "No pude emitir la factura: invoice_create is not available to customers\nTomé #3.\n\nOk."
    )
    shown, _linked, _hidden = customers.for_customer(text, marta, "es")
    assert shown == (
        "Ok.\n\nEso lo hace alguien de la oficina. ¿Querés que te pase con una persona de la "
        "oficina?"
    )
    assert customers.sending_documents(shown, "es") == "Ok.\n\nTe mando el PDF por acá."


def test_the_privacy_guard_hides_what_is_not_the_customers_own(
    cast: Cast, two_customers: tuple[Customer, Customer]
) -> None:
    marta, _bianchi = two_customers
    text = (
        "Tu teléfono es 11 5555-0000. El técnico: 11 4444-3333, rb@bianchi.com.ar.\n"
        "PDF: /invoices/12/pdf/"
    )
    text += "\nDe Roberto Bianchi, nada."
    shown, linked, hidden = customers.for_customer(text, marta, "es")
    assert "11 5555-0000" in shown and "4444-3333" not in shown and "rb@bianchi" not in shown
    assert "Bianchi" not in shown and "Marta" not in text  # (her own name would stay)
    assert hidden == 3 and shown.count("[dato reservado]") == 3
    assert linked == [customers.Document("invoice", 12)] and "/pdf/" not in shown


# --- documents ---------------------------------------------------------------------------------


def test_a_customer_gets_their_invoice_as_a_whatsapp_document(
    cast: Cast, agents: Any, account: Any, dispatched: list[Any], graph: FakeGraph,
    two_customers: tuple[Customer, Customer], django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    marta, bianchi = two_customers
    factories.make_invoice(cast.org, bianchi)  # newer than Marta's? no: made first
    invoice = factories.make_invoice(cast.org, marta, amount=Decimal("50000"))
    factories.make_job(cast.org, marta, status=Job.Status.DONE,
                       start=timezone.now() - datetime.timedelta(days=3))  # fmt: skip
    reply = _turn(cast, "mandame la factura por favor", django_capture_on_commit_callbacks)
    assert "Te mando el PDF por acá." in reply and "not available" not in reply, reply
    conversation = Conversation.objects.get(contact=SENDER)
    document = OutgoingMessage.objects.get(conversation=conversation, document__kind="invoice")
    assert document.document["id"] == invoice.pk and document.status == "sent"
    [upload] = [r for r in graph.requests if r.file is not None]
    assert upload.path == f"/v21.0/{NUMBER}/media" and upload.authorization == "Bearer token-clima"
    assert upload.body == {"messaging_product": "whatsapp", "type": "application/pdf"}
    assert upload.file["content"].startswith(b"%PDF")
    assert upload.file["filename"] == f"factura-{invoice.letter}-{invoice.number}.pdf"
    [sent] = [r for r in graph.requests if r.body.get("type") == "document"]
    assert sent.path == f"/v21.0/{NUMBER}/messages" and sent.body["to"] == SENDER
    assert sent.body["document"]["id"].startswith("media-fake-")
    assert sent.body["document"]["filename"] == upload.file["filename"]
    assert invoice.number in sent.body["document"]["caption"]


def test_another_customers_document_is_never_uploaded(
    cast: Cast, account: Any, graph: FakeGraph, two_customers: tuple[Customer, Customer],
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    marta, bianchi = two_customers
    theirs = factories.make_invoice(cast.org, bianchi)
    conversation = Conversation.objects.create(
        organisation=cast.org, channel="whatsapp", contact=SENDER, customer=marta
    )
    Message.objects.create(organisation=cast.org, conversation=conversation, role="user", text="x")
    assert customers.documents_add(
        conversation, [customers.Document("invoice", theirs.pk)], "es"
    ) is None  # fmt: skip
    # Even a row that names it (written by hand) fails without uploading anything.
    with django_capture_on_commit_callbacks(execute=True):
        message = Message.objects.create(
            organisation=cast.org, conversation=conversation, role="assistant", text="PDF",
            trace={"document": {"kind": "invoice", "id": theirs.pk}},
        )  # fmt: skip
        from whatsapp.outbox import outbox_add

        outbox_add(message, conversation)
    row = OutgoingMessage.objects.get(message=message)
    assert row.status == "failed" and "not this customer's" in row.last_error
    assert graph.requests == []


def test_a_failed_upload_is_retried_then_sent(
    cast: Cast, account: Any, graph: FakeGraph, two_customers: tuple[Customer, Customer]
) -> None:
    from whatsapp import outbox

    marta, _ = two_customers
    invoice = factories.make_invoice(cast.org, marta)
    conversation = Conversation.objects.create(
        organisation=cast.org, channel="whatsapp", contact=SENDER, customer=marta
    )
    Message.objects.create(organisation=cast.org, conversation=conversation, role="user", text="x")
    graph.add(503)  # the first attempt (run inline once stored) meets a 503 at /media
    attempted = timezone.now()
    message = customers.documents_add(conversation, [customers.Document("invoice", invoice.pk)],
                                      "es")  # fmt: skip
    assert message is not None
    row = OutgoingMessage.objects.get(message=message)
    assert row.status == "queued" and "media upload: HTTP 503" in row.last_error
    assert row.next_attempt_at > attempted  # later than the attempt (not "now": a busy machine)
    assert outbox.deliver(row.pk, now=timezone.now() + datetime.timedelta(seconds=3)) is None
    row.refresh_from_db()
    assert row.status == "sent"
    assert [r.path.rsplit("/", 1)[1] for r in graph.requests] == ["media", "media", "messages"]


# --- a person takes over -----------------------------------------------------------------------


def _conversation(cast: Cast, customer: Customer | None = None) -> Conversation:
    conversation = Conversation.objects.create(
        organisation=cast.org, channel="whatsapp", contact=SENDER, customer=customer,
        title="WhatsApp Marta",
    )  # fmt: skip
    return conversation


def _member(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_takeover_stops_the_copilot_and_the_operator_replies_through_the_outbox(
    cast: Cast, agents: Any, account: Any, dispatched: list[Any], graph: FakeGraph,
    told: list[Any], two_customers: tuple[Customer, Customer],
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    marta, _ = two_customers
    conversation = _conversation(cast, marta)
    operator = _member(cast.operator)
    page = operator.get(f"/chat/{conversation.pk}/").content.decode()
    assert 'data-testid="take-over"' in page and "Marta Gómez" in page
    assert "+54 9 11 5555-0000" in page  # the sender in the one phone format

    with django_capture_on_commit_callbacks(execute=True):
        response = operator.post(f"/whatsapp/conversations/{conversation.pk}/take/")
    assert response.status_code == 302
    conversation.refresh_from_db()
    assert conversation.mode == "human" and conversation.taken_by == cast.operator
    assert told[-1][0] == f"whatsapp.o{cast.org.pk}" and told[-1][1]["event"] == "taken"

    with django_capture_on_commit_callbacks(execute=True):
        assert _say("¿me agendás un service para el lunes?").status_code == 200
    stored = Message.objects.filter(conversation=conversation, role="user").get()
    assert stored.text.startswith("¿me agendás")
    assert not Turn.objects.filter(conversation=conversation).exists() and dispatched == []
    assert not OutgoingMessage.objects.filter(conversation=conversation).exists()
    assert told[-1][1]["event"] == "message"
    with django_capture_on_commit_callbacks(execute=True):
        runner.drain(cast.org.pk, conversation.pk)  # nothing queued: nothing answered
    assert not Message.objects.filter(conversation=conversation, role="assistant").exists()

    page = operator.get(f"/chat/{conversation.pk}/").content.decode()
    assert 'data-testid="operator-reply"' in page and "¿me agendás" in page
    controls = operator.get(f"/chat/{conversation.pk}/?part=whatsapp").content.decode()
    assert controls.lstrip().startswith("<div") and 'data-testid="hand-back"' in controls
    # A colleague sees the conversation is taken, and may take it in turn, but not reply yet.
    colleague = _member(cast.manager).get(f"/chat/{conversation.pk}/").content.decode()
    assert (
        'data-testid="human-mode"' in colleague and 'data-testid="operator-reply"' not in colleague
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = operator.post(
            f"/whatsapp/conversations/{conversation.pk}/reply/",
            {"text": "Hola Marta, soy Ana: el lunes a las 10."},
        )
    assert response.status_code == 302
    reply = Message.objects.get(conversation=conversation, role="assistant")
    assert reply.trace["operator"]["id"] == cast.operator.pk
    outgoing = OutgoingMessage.objects.get(message=reply)
    assert outgoing.status == "sent"
    [request] = graph.requests
    assert request.body["text"]["body"] == "Hola Marta, soy Ana: el lunes a las 10."

    with django_capture_on_commit_callbacks(execute=True):
        assert (
            operator.post(f"/whatsapp/conversations/{conversation.pk}/release/").status_code == 302
        )
    conversation.refresh_from_db()
    assert conversation.mode == "copilot" and conversation.taken_by is None
    with django_capture_on_commit_callbacks(execute=True):
        assert _say("gracias").status_code == 200
    assert Turn.objects.filter(conversation=conversation).count() == 1
    assert dispatched == [(cast.org.pk, conversation.pk)]


def test_a_reply_is_refused_unless_the_member_took_the_conversation(
    cast: Cast, account: Any, graph: FakeGraph, told: list[Any],
) -> None:  # fmt: skip
    conversation = _conversation(cast)
    manager = _member(cast.manager)
    response = manager.post(f"/whatsapp/conversations/{conversation.pk}/reply/", {"text": "hola"})
    assert response.status_code == 403
    humans.take_over(conversation, cast.operator)
    assert (
        manager.post(
            f"/whatsapp/conversations/{conversation.pk}/reply/", {"text": "hola"}
        ).status_code
        == 403
    )
    operator = _member(cast.operator)
    empty = operator.post(f"/whatsapp/conversations/{conversation.pk}/reply/", {"text": "  "})
    assert empty.status_code == 400
    assert not Message.objects.filter(conversation=conversation).exclude(role="system").exists()


def test_an_outsider_with_staff_permissions_cannot_take_over_or_reply(
    cast: Cast, account: Any, told: list[Any]
) -> None:
    conversation = _conversation(cast)
    outsider = _member(cast.outsider)
    for action in ("take", "release", "reply"):
        response = outsider.post(f"/chat/{conversation.pk}/whatsapp/{action}/", {"text": "x"})
        assert response.status_code == 404, action
    assert outsider.get(f"/chat/{conversation.pk}/").status_code == 404
    assert outsider.get(f"/chat/{conversation.pk}/?part=whatsapp").status_code == 404
    conversation.refresh_from_db()
    assert conversation.mode == "copilot" and not Message.objects.exists() and told == []
    # A member's own panel conversation is no WhatsApp one: no takeover there either.
    panel = Conversation.objects.create(organisation=cast.org, user=cast.operator)
    assert (
        _member(cast.operator).post(f"/whatsapp/conversations/{panel.pk}/take/").status_code == 404
    )


@pytest.mark.parametrize(("text", "language"), [("humano", "es"), ("Human", "en")])
def test_the_customer_asking_for_a_person_switches_to_human_mode(
    cast: Cast, account: Any, dispatched: list[Any], graph: FakeGraph, told: list[Any],
    django_capture_on_commit_callbacks: Any, text: str, language: str,
) -> None:  # fmt: skip
    _customer(cast)
    with django_capture_on_commit_callbacks(execute=True):
        assert _say(text).status_code == 200
    conversation = Conversation.objects.get(contact=SENDER)
    assert conversation.mode == "human" and dispatched == []
    assert not Turn.objects.filter(conversation=conversation).exists()
    [answer] = Message.objects.filter(conversation=conversation, role="assistant")
    assert ("persona" if language == "es" else "person") in answer.text
    assert graph.requests[0].body["text"]["body"] == answer.text
    assert [frame["event"] for _group, frame in told] == ["new_conversation", "human_requested"]
    group, frame = told[-1]
    assert group == f"whatsapp.o{cast.org.pk}" and frame["event"] == "human_requested"
    assert frame["conversation_id"] == conversation.pk
    # Its next message waits for a person too.
    with django_capture_on_commit_callbacks(execute=True):
        _say("¿hola?")
    assert not Turn.objects.filter(conversation=conversation).exists()
    assert Message.objects.filter(conversation=conversation, role="user").count() == 2


def test_operators_see_whatsapp_conversations_in_the_panel(cast: Cast) -> None:
    conversation = _conversation(cast)
    page = _member(cast.operator).get("/chat/").content.decode()
    assert f'href="/chat/{conversation.pk}/"' in page
    outsider_page = _member(cast.outsider).get("/chat/").content.decode()
    assert f'href="/chat/{conversation.pk}/"' not in outsider_page


def test_a_turn_queued_before_the_takeover_is_not_answered(
    cast: Cast, agents: Any, account: Any, dispatched: list[Any], graph: FakeGraph,
    told: list[Any], two_customers: tuple[Customer, Customer],
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    marta, _ = two_customers
    conversation = _conversation(cast, marta)
    with django_capture_on_commit_callbacks(execute=True):
        assert _say("¿cuánto debo?").status_code == 200  # queued for the copilot
    humans.take_over(conversation, cast.operator)  # before any runner picked it up
    with django_capture_on_commit_callbacks(execute=True):
        runner.drain(cast.org.pk, conversation.pk)
    turn = Turn.objects.get(conversation=conversation)
    assert turn.status == Turn.Status.DONE and turn.answer is None
    closed = ConversationEvent.objects.get(conversation=conversation, turn_id=str(turn.pk),
                                           type="completed")  # fmt: skip
    assert "una persona atiende" in closed.payload["text"]
    assert not Message.objects.filter(conversation=conversation, role="assistant").exists()
    assert graph.requests == []


async def test_the_whatsapp_socket_tells_the_organisations_members_only(cast: Cast) -> None:
    from asgiref.sync import sync_to_async

    from capataz.asgi import application
    from tests.copilot.test_consumer import HOST, ORIGIN, _session_cookie
    from tests.websocket import WebsocketCommunicator

    async def _open(user: Any) -> WebsocketCommunicator:
        cookie = await sync_to_async(_session_cookie)(user)
        communicator = WebsocketCommunicator(
            application, "/ws/whatsapp/",
            headers=[(b"host", HOST), (b"origin", ORIGIN), (b"cookie", cookie)],
        )  # fmt: skip
        connected, _code = await communicator.connect()
        assert connected
        return communicator

    operator, outsider = await _open(cast.operator), await _open(cast.outsider)
    conversation = await sync_to_async(_conversation)(cast)
    await sync_to_async(humans.human_requested)(conversation, "humano", "wamid.h", {}, "es")
    frame = json.loads(await operator.receive_from(10))
    assert frame["type"] == "whatsapp" and frame["event"] == "human_requested"
    assert frame["conversation_id"] == conversation.pk and frame["mode"] == "human"
    assert await outsider.receive_nothing(timeout=0.3)
    for communicator in (operator, outsider):
        await communicator.disconnect()


def test_the_demo_command_shows_the_registration_question(
    cast: Cast, agents: Any, account: Any, graph: FakeGraph, live_server: Any
) -> None:
    import io

    from django.core.management import call_command

    out = io.StringIO()
    call_command(
        "whatsapp_fake_send", cast.org.slug, "5491166660000", "hola, quiero un service",
        url=f"{live_server.url}{URL}", wait=30, stdout=out,
    )  # fmt: skip
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("200")
    assert any(line.startswith("← ") and "nombre y apellido" in line for line in lines), lines
