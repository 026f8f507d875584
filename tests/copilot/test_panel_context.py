"""The panel around the conversation (issue 16: 3, 5, 6): the record under discussion beside
the chat, the actions under an answer (approve inline, undo, copy, open) and the Agenda by
technician with its free slots."""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qs, unquote_plus, urlparse
from zoneinfo import ZoneInfo

import pytest
from django.test import Client
from django.utils import timezone

from agents.models import Agent, ToolCall
from approvals.models import ApprovalEvent, PendingAction
from business.agenda import agenda_board
from business.models import Job
from business.profiles import customer_profile_edit
from copilot import panel, runner, tasks
from copilot.models import Conversation, Message, Turn
from copilot.orchestration import nodes
from copilot.services import conversation_create, message_add
from tests import factories
from tests.conftest import Cast
from tests.copilot.conftest import (  # noqa: F401  (fixtures)
    ScriptedRouter,
    add_intent,
    fresh_routers,
    handlers,
    registry,
    task,
)
from tests.copilot.turns import answer

Status = PendingAction.Status


def _client(user: Any, language: str = "en") -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(user)
    return client


# --- 5. the side panel -------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_side_panel_shows_the_customer_under_discussion_and_nothing_to_an_outsider(
    cast: Cast,
) -> None:
    customer = factories.make_customer(cast.org, "Claudia Bianchi", phone="+5491155550000")
    job = factories.make_job(cast.org, customer, service="Instalación de split")
    factories.make_equipment(cast.org, customer, kind="Split", brand="Surrey")
    factories.make_invoice(cast.org, customer, amount=Decimal("35600"))
    customer_profile_edit(
        organisation=cast.org, customer=customer, values={"preferred_days": "martes"},
        actor=cast.manager,
    )  # fmt: skip
    conversation = conversation_create(organisation=cast.org, user=cast.operator)
    url = f"/chat/{conversation.pk}/context/"

    empty = _client(cast.operator).get(url)
    assert empty.status_code == 200
    assert "Claudia" not in empty.content.decode()

    conversation.state = {"job_id": job.pk, "customer_id": customer.pk}
    conversation.save()
    page = _client(cast.operator).get(url).content.decode()
    shown = [
        "Claudia Bianchi",
        "+54 9 11 5555-0000",
        "tel:+5491155550000",
        "Instalación de split",
        "Surrey",
        "martes",
    ]
    shown += [f"/jobs/{job.pk}/", f"/customers/{customer.pk}/", "1 open job"]
    for text in shown:
        assert text in page, text
    assert "43,076.00" in page.split('data-testid="context-balance"')[1][:200]

    # The chat page carries the panel (loaded with htmx) beside the conversation.
    chat = _client(cast.operator).get(f"/chat/{conversation.pk}/").content.decode()
    assert f'hx-get="{url}"' in chat

    # Another organisation's admin, a colleague who may not read it: a 404, nothing shown.
    assert _client(cast.outsider).get(url).status_code == 404
    colleague = factories.make_user(cast.org, "operator", "colega")
    assert _client(colleague).get(url).status_code == 404


@pytest.mark.django_db
def test_the_side_panel_ignores_state_that_names_another_organisations_records(
    cast: Cast,
) -> None:
    foreign = factories.make_customer(cast.other_org, "Secreto Ajeno")
    conversation = conversation_create(organisation=cast.org, user=cast.operator)
    conversation.state = {"customer_id": foreign.pk, "job_id": "garbage"}
    conversation.save()
    page = _client(cast.operator).get(f"/chat/{conversation.pk}/context/").content.decode()
    assert "Secreto" not in page


# --- 6. the Agenda by technician ---------------------------------------------------------------


def _next_weekday() -> datetime.date:
    day = timezone.localdate() + datetime.timedelta(days=1)
    while day.weekday() >= 5:
        day += datetime.timedelta(days=1)
    return day


@pytest.mark.django_db
def test_the_agenda_shows_jobs_by_technician_and_links_each_free_hour_to_the_chat(
    cast: Cast,
) -> None:
    day = _next_weekday()
    carlos = factories.make_technician(cast.org, "Carlos Gómez")
    factories.make_technician(cast.org, "Ana Ruiz")
    factories.make_technician(cast.other_org, "Técnico Ajeno")
    customer = factories.make_customer(cast.org, "Claudia Bianchi")
    start = timezone.make_aware(datetime.datetime.combine(day, datetime.time(10)))
    job = factories.make_job(cast.org, customer, start=start, hours=2, technician=carlos)

    board = agenda_board(cast.org, day, 1, now=start - datetime.timedelta(days=1))
    names = [row.technician.name for row in board.rows]
    assert names == ["Ana Ruiz", "Carlos Gómez"]  # only this organisation's, by name
    row = board.rows[1]
    by_hour = {cell.start.hour: cell for cell in row.cells}
    assert [j.pk for j in by_hour[10].jobs] == [job.pk]
    assert by_hour[10].free == [] and by_hour[11].free == []  # busy 10–12
    assert by_hour[10].span == 2 and by_hour[11].covered  # one block over both hours
    assert by_hour[9].free and by_hour[12].free  # free around it
    assert all(cell.free for cell in board.rows[0].cells if not cell.off)  # Ana: free all day

    client = _client(cast.operator, "en")
    page = client.get(f"/jobs/board/?date={day.isoformat()}").content.decode()
    assert "Carlos Gómez" in page and "Técnico Ajeno" not in page
    assert f'data-job="{job.pk}"' in page and 'colspan="2"' in page
    link = page.split('class="agenda-free" href="')[1].split('"')[0].replace("&amp;", "&")
    prefill = parse_qs(urlparse(link).query)["prefill"][0]
    assert urlparse(link).path == "/chat/"
    assert prefill.startswith("Book a job for Ana Ruiz on " + day.strftime("%d/%m/%Y") + " at ")

    # The chat keeps the message to prefill when it opens the latest conversation.
    conversation = conversation_create(organisation=cast.org, user=cast.operator)
    opened = client.get(link)
    assert opened.status_code == 302
    assert opened["Location"].startswith(f"/chat/{conversation.pk}/?prefill=")

    week = client.get(f"/jobs/board/?span=week&date={day.isoformat()}").content.decode()
    assert f'data-job="{job.pk}"' in week and "agenda-free" in week


@pytest.mark.django_db
def test_the_agenda_past_hours_are_not_free_and_a_bad_date_says_so(cast: Cast) -> None:
    day = _next_weekday()
    factories.make_technician(cast.org, "Carlos Gómez")
    noon = timezone.make_aware(datetime.datetime.combine(day, datetime.time(12)))
    board = agenda_board(cast.org, day, 1, now=noon)
    assert all(moment >= noon for cell in board.rows[0].cells for moment in cell.free)
    assert any(cell.free for cell in board.rows[0].cells)

    page = _client(cast.operator, "en").get("/jobs/board/?date=not-a-date")
    assert page.status_code == 200
    assert "is not a date" in page.content.decode()
    assert _client(cast.outsider).get("/jobs/board/").status_code == 200  # their own org
    assert "Carlos" not in _client(cast.outsider).get("/jobs/board/").content.decode()


# --- 3. actions on answers: approve inline, undo -----------------------------------------------


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> ScriptedRouter:
    """The router's answers written down by the test (tests/copilot/conftest.py)."""
    router = ScriptedRouter()
    monkeypatch.setattr(nodes, "router_for", lambda organisation: router)
    return router


@pytest.fixture
def no_dispatch(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """Conversations handed to a runner: the tests drain them themselves."""
    calls: list[tuple[int, int]] = []

    def handed(organisation_id: int, conversation_id: int) -> bool:
        calls.append((organisation_id, conversation_id))
        return True

    monkeypatch.setattr(tasks, "dispatch", handed)
    return calls


def _booked(cast: Cast, scripted: ScriptedRouter) -> tuple[Conversation, Message, int]:
    """The operator booked a job for a customer through the chat."""
    factories.make_technician(cast.org, "Carlos Gómez")
    customer = factories.make_customer(cast.org, "Claudia Bianchi")
    conversation = conversation_create(organisation=cast.org, user=cast.operator)
    conversation.state = {"customer_id": customer.pk}
    conversation.save()
    scripted.script["agendale"] = [task("book_job", 0.9, service="service de aire")]
    turn = answer(conversation, cast.operator.pk, "agendale")
    assert turn.result.ok and turn.result.assistant_message_id is not None, turn.result
    reply = Message.objects.get(pk=turn.result.assistant_message_id)
    job = Job.objects.get(organisation=cast.org, customer=customer)
    return conversation, reply, job.pk


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("registry", "handlers", "no_dispatch")
def test_undo_cancels_the_booking_through_the_tools_and_the_gate(
    cast: Cast, scripted: ScriptedRouter
) -> None:
    conversation, reply, job_id = _booked(cast, scripted)
    client = _client(cast.operator, "en")
    page = client.get(f"/chat/{conversation.pk}/").content.decode()
    undo_url = f"/chat/{conversation.pk}/answers/{reply.pk}/undo/"
    assert f'hx-post="{undo_url}"' in page and "Copy" in page
    assert f'href="/jobs/{job_id}/">Open job #{job_id}<' in page

    done = client.post(undo_url, HTTP_HX_REQUEST="true")
    assert done.status_code == 200
    assert f"job #{job_id}" in done.content.decode()
    # A new turn, not a write: the job is still booked until the gate's decision.
    note = Message.objects.get(conversation=conversation, client_id=f"undo-{reply.pk}")
    assert note.role == Message.Role.SYSTEM
    runner.drain(cast.org.pk, conversation.pk)
    assert Job.objects.get(pk=job_id).status == Job.Status.SCHEDULED
    held = PendingAction.objects.get(organisation=cast.org, tool="job_cancel")
    assert held.arguments["job_id"] == job_id and held.status == Status.PENDING
    call = ToolCall.objects.get(organisation=cast.org, tool="job_cancel")
    assert call.approval_id == held.pk and call.conversation_id == conversation.pk
    assert Turn.objects.get(message=note).status == Turn.Status.WAITING

    # Once: a second click is refused, and no second turn is queued.
    again = client.post(undo_url, HTTP_HX_REQUEST="true")
    assert again.status_code == 409
    assert Message.objects.filter(conversation=conversation, role="system").count() == 1
    # The manager approves on the card; the decision turn runs the cancellation once.
    _client(cast.manager).post(
        f"/chat/approvals/{held.pk}/decide/", {"decision": "approve"}, HTTP_HX_REQUEST="true"
    )
    runner.drain(cast.org.pk, conversation.pk)
    assert Job.objects.get(pk=job_id).status == Job.Status.CANCELLED
    assert PendingAction.objects.get(pk=held.pk).status == Status.EXECUTED


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("registry", "handlers", "no_dispatch")
@pytest.mark.parametrize("undone_by", ["void_booking", ""])
def test_the_registry_says_which_answers_offer_an_undo_and_which_intent_runs_it(
    cast: Cast, scripted: ScriptedRouter, undone_by: str
) -> None:
    """The registry's `undone_by`, not the name "book_job": an admin who points the booking at
    an inverse intent of theirs gets that intent's undo; one who clears it gets none."""
    scheduling = Agent.objects.get(organisation=cast.org, name="scheduling")
    book = scheduling.intents.get(name="book_job")
    add_intent(
        scheduling, name="book_job", description=book.description, examples_es=book.examples_es,
        examples_en=book.examples_en, undone_by=undone_by,
    )  # fmt: skip
    add_intent(scheduling, name="void_booking", examples_es="anulá el turno", tool="job_cancel")
    conversation, reply, job_id = _booked(cast, scripted)
    undo_url = f"/chat/{conversation.pk}/answers/{reply.pk}/undo/"
    page = _client(cast.operator).get(f"/chat/{conversation.pk}/").content.decode()
    assert (f'hx-post="{undo_url}"' in page) is bool(undone_by)
    if not undone_by:
        assert _client(cast.operator).post(undo_url, HTTP_HX_REQUEST="true").status_code == 409
        return

    assert _client(cast.operator).post(undo_url, HTTP_HX_REQUEST="true").status_code == 200
    runner.drain(cast.org.pk, conversation.pk)
    call = ToolCall.objects.get(organisation=cast.org, tool="job_cancel")
    assert (call.intent, call.arguments["job_id"]) == ("void_booking", job_id)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("registry", "handlers", "no_dispatch")
def test_undo_is_refused_to_anyone_but_the_author(cast: Cast, scripted: ScriptedRouter) -> None:
    conversation, reply, job_id = _booked(cast, scripted)
    undo_url = f"/chat/{conversation.pk}/answers/{reply.pk}/undo/"
    # The manager supervises the conversation (read-only): no undo button, and a refusal.
    supervised = _client(cast.manager).get(f"/chat/{conversation.pk}/").content.decode()
    assert undo_url not in supervised
    refused = _client(cast.manager).post(undo_url, HTTP_HX_REQUEST="true")
    assert refused.status_code == 403
    # A colleague and an outsider cannot even see it.
    colleague = factories.make_user(cast.org, "operator", "colega")
    assert _client(colleague).post(undo_url).status_code == 404
    assert _client(cast.outsider).post(undo_url).status_code == 404
    # The service itself refuses another user, whatever the page showed.
    with pytest.raises(panel.UndoRefused):
        panel.undo_request(conversation, reply, user=cast.manager, language="es")
    assert not Message.objects.filter(conversation=conversation, role="system").exists()
    assert not PendingAction.objects.filter(tool="job_cancel").exists()
    assert Job.objects.get(pk=job_id).status == Job.Status.SCHEDULED
    # An answer that booked nothing offers no undo.
    scripted.script["hola"] = [task("greeting", 0.9)]
    greeting = answer(conversation, cast.operator.pk, "hola")
    assert greeting.result.assistant_message_id is not None
    other = f"/chat/{conversation.pk}/answers/{greeting.result.assistant_message_id}/undo/"
    assert _client(cast.operator).post(other, HTTP_HX_REQUEST="true").status_code == 409


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("registry", "handlers", "no_dispatch")
def test_a_manager_approves_inline_on_the_card_twice_and_it_is_decided_once(
    cast: Cast, scripted: ScriptedRouter
) -> None:
    customer = factories.make_customer(cast.org, "Claudia Bianchi")
    job = factories.make_job(cast.org, customer)
    conversation = conversation_create(organisation=cast.org, user=cast.manager)
    conversation.state = {"job_id": job.pk, "customer_id": customer.pk}
    conversation.save()
    scripted.script["cancelalo"] = [task("cancel_job", 0.9)]
    turn = answer(conversation, cast.manager.pk, "cancelalo")
    held = PendingAction.objects.get(organisation=cast.org, tool="job_cancel")
    decide_url = f"/chat/approvals/{held.pk}/decide/"

    page = _client(cast.manager).get(f"/chat/{conversation.pk}/").content.decode()
    assert 'data-testid="approval-card"' in page and f'hx-post="{decide_url}"' in page
    # The live answer's actions carry the same card.
    actions = _client(cast.manager).get(
        f"/chat/{conversation.pk}/answers/{turn.result.assistant_message_id}/actions/"
    )
    assert decide_url in actions.content.decode()

    manager = _client(cast.manager)
    first = manager.post(decide_url, {"decision": "approve"}, HTTP_HX_REQUEST="true")
    second = manager.post(decide_url, {"decision": "approve"}, HTTP_HX_REQUEST="true")
    assert "Approved" in first.content.decode()
    assert "already decided" in second.content.decode()
    assert decide_url not in second.content.decode()  # no buttons left on a decided card
    assert ApprovalEvent.objects.filter(action=held, kind="approved").count() == 1
    assert Turn.objects.filter(conversation=conversation, kind=Turn.Kind.DECISION).count() == 1
    runner.drain(cast.org.pk, conversation.pk)
    assert Job.objects.get(pk=job.pk).status == Job.Status.CANCELLED

    # A bad choice loses nothing and says why.
    bad = manager.post(decide_url, {"decision": "maybe"}, HTTP_HX_REQUEST="true")
    assert "Choose approve or reject" in bad.content.decode()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("registry", "handlers", "no_dispatch")
def test_an_operator_sees_the_card_read_only_and_cannot_decide_it(
    cast: Cast, scripted: ScriptedRouter
) -> None:
    customer = factories.make_customer(cast.org, "Claudia Bianchi")
    job = factories.make_job(cast.org, customer)
    conversation = conversation_create(organisation=cast.org, user=cast.operator)
    conversation.state = {"job_id": job.pk, "customer_id": customer.pk}
    conversation.save()
    scripted.script["cancelalo"] = [task("cancel_job", 0.9)]
    answer(conversation, cast.operator.pk, "cancelalo")
    held = PendingAction.objects.get(organisation=cast.org, tool="job_cancel")
    decide_url = f"/chat/approvals/{held.pk}/decide/"

    page = _client(cast.operator).get(f"/chat/{conversation.pk}/").content.decode()
    assert 'data-testid="approval-card"' in page and decide_url not in page
    refused = _client(cast.operator).post(
        decide_url, {"decision": "approve"}, HTTP_HX_REQUEST="true"
    )
    assert "cannot decide" in refused.content.decode()
    assert PendingAction.objects.get(pk=held.pk).status == Status.PENDING
    # Another organisation's manager: a 404 for the card and the decision.
    outsider = _client(cast.outsider)
    assert outsider.get(f"/chat/approvals/{held.pk}/").status_code == 404
    assert outsider.post(decide_url, {"decision": "approve"}).status_code == 404
    assert PendingAction.objects.get(pk=held.pk).status == Status.PENDING


@pytest.mark.django_db
def test_answer_actions_are_the_conversations_own_and_survive_odd_traces(cast: Cast) -> None:
    conversation = conversation_create(organisation=cast.org, user=cast.operator)
    asked = message_add(conversation=conversation, role="user", text="hola")
    odd = message_add(
        conversation=conversation, role="assistant", text="Respuesta vieja",
        trace={"turn_id": "earlier-turn"},
    )  # fmt: skip
    page = _client(cast.operator).get(f"/chat/{conversation.pk}/")
    assert page.status_code == 200 and "Respuesta vieja" in page.content.decode()
    url = f"/chat/{conversation.pk}/answers/{odd.pk}/actions/"
    assert _client(cast.operator).get(url).status_code == 200
    # A user's message has no actions; another organisation sees nothing.
    mine = f"/chat/{conversation.pk}/answers/{asked.pk}/actions/"
    assert _client(cast.operator).get(mine).status_code == 404
    assert _client(cast.outsider).get(url).status_code == 404
    other = conversation_create(organisation=cast.other_org, user=cast.outsider)
    assert (
        _client(cast.outsider).get(f"/chat/{other.pk}/answers/{odd.pk}/actions/").status_code == 404
    )


@pytest.mark.django_db
def test_the_agenda_reads_on_the_organisations_clock(cast: Cast) -> None:
    cast.org.timezone = "Europe/Madrid"
    cast.org.save()
    day = _next_weekday()
    carlos = factories.make_technician(cast.org, "Carlos Gómez")
    customer = factories.make_customer(cast.org, "Claudia Bianchi")
    madrid = ZoneInfo("Europe/Madrid")
    start = datetime.datetime.combine(day, datetime.time(10), tzinfo=madrid)
    job = factories.make_job(cast.org, customer, start=start, hours=2, technician=carlos)
    page = _client(cast.operator, "en").get(f"/jobs/board/?date={day.isoformat()}")
    text = page.content.decode()
    assert f'data-job="{job.pk}">#{job.pk} 10:00–12:00' in text
    assert "Carlos Gómez on " + day.strftime("%d/%m/%Y") + " at 08:00" in unquote_plus(text)
