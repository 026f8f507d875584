"""Suggestions (P2): listed for the organisation, accepted through a turn that runs the proposed
call once (Runner and approval gate included), dismissed with a reason — and nothing of them for
another organisation's members."""

from __future__ import annotations

import datetime
import re
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from agents.models import Agent, Detector, Suggestion, ToolCall
from agents.proactive.services import detector_run
from approvals.models import PendingAction
from approvals.services import actions_abandoned
from business.models import Job, JobEvent
from copilot import runner
from copilot.models import Conversation, Message, Turn
from tests import factories
from tests.conftest import Cast

# Runners have their own connections (a drain closes the old ones), as in production.
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("dispatched"),  # turns run by the test itself
    pytest.mark.usefixtures("agents"),  # the organisation's shipped agents
]

State = Suggestion.State


def _client(user: Any, language: str = "en") -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(user)
    return client


def _follow_up(cast: Cast) -> tuple[Suggestion, Job]:
    customer = factories.make_customer(cast.org)
    start = timezone.now() - datetime.timedelta(days=5)
    job = factories.make_job(cast.org, customer, start, status=Job.Status.DONE,
                             completed_at=start)  # fmt: skip
    detector_run(detector=Detector.FOLLOW_UPS, organisation_id=cast.org.pk)
    return Suggestion.objects.get(organisation=cast.org), job


def _maintenance(cast: Cast) -> Suggestion:
    factories.make_technician(cast.org, work_days=[0, 1, 2, 3, 4, 5, 6])
    customer = factories.make_customer(cast.org, "Marta Gil")
    last = timezone.localdate() - datetime.timedelta(days=400)
    factories.make_equipment(cast.org, customer, last_service_on=last)
    detector_run(detector=Detector.MAINTENANCE, organisation_id=cast.org.pk)
    return Suggestion.objects.get(organisation=cast.org)


def _drain(dispatched: list[tuple[int, int]]) -> list[Any]:
    return [r for org, conv in dispatched for r in runner.drain(org, conv).results]


def test_the_page_says_why_in_the_readers_language_with_the_proposed_action(cast: Cast) -> None:
    _follow_up(cast)
    page = _client(cast.operator).get("/suggestions/").content.decode()
    assert "and nobody has called them since" in page
    assert "Record the follow-up call" in page
    listed = _client(cast.operator).get("/suggestions/?part=list")
    assert listed.status_code == 200 and "<html" not in listed.content.decode()
    badge = _client(cast.operator).get("/suggestions/?part=badge").content.decode()
    assert re.search(r"data-suggestions-number>1<", badge)


def test_the_list_costs_the_same_few_queries_however_many_suggestions(
    cast: Cast, django_assert_max_num_queries: Any
) -> None:
    for name in ("Ana", "Beto", "Carla", "Dario"):
        customer = factories.make_customer(cast.org, name)
        factories.make_equipment(cast.org, customer, last_service_on=datetime.date(2024, 1, 1))
    detector_run(detector=Detector.MAINTENANCE, organisation_id=cast.org.pk)
    client = _client(cast.manager)
    client.get("/suggestions/?part=list")  # the session and the membership, warmed
    with django_assert_max_num_queries(8):
        page = client.get("/suggestions/?part=list").content.decode()
    assert page.count('class="suggestion suggestion-new"') == 4


def test_accepting_runs_the_call_once_as_a_turn_even_on_a_double_click(
    cast: Cast, dispatched: list[tuple[int, int]]
) -> None:
    suggestion, job = _follow_up(cast)
    client = _client(cast.operator)
    url = f"/suggestions/{suggestion.pk}/accept/"
    first = client.post(url, {"note": "Anda perfecto"}, HTTP_HX_REQUEST="true")
    second = client.post(url, {"note": "Anda perfecto"}, HTTP_HX_REQUEST="true")
    assert first.status_code == second.status_code == 200
    assert len(dispatched) == 1
    results = _drain(dispatched)

    assert [r.ok for r in results] == [True]
    notes = JobEvent.objects.filter(job=job, data__follow_up=True)
    assert [n.note for n in notes] == ["Anda perfecto"]
    assert ToolCall.objects.filter(organisation=cast.org, tool="follow_up_record").count() == 1
    suggestion.refresh_from_db()
    assert suggestion.state == State.DONE and suggestion.acted_by == cast.operator
    conversation = Conversation.objects.get(pk=suggestion.conversation_id)
    assert conversation.user == cast.operator
    roles = list(conversation.messages.values_list("role", flat=True))
    assert roles == [Message.Role.SYSTEM, Message.Role.ASSISTANT]
    assert Turn.objects.get(pk=suggestion.turn_id).status == Turn.Status.DONE


def test_a_booking_offers_concrete_slots_and_books_the_one_picked(
    cast: Cast, dispatched: list[tuple[int, int]]
) -> None:
    suggestion = _maintenance(cast)
    client = _client(cast.operator)
    form = client.get(f"/suggestions/{suggestion.pk}/accept/").content.decode()
    starts = re.findall(r'name="start" value="([^"]+)"', form)
    assert 1 <= len(starts) <= 3

    client.post(f"/suggestions/{suggestion.pk}/accept/", {"start": starts[-1]})
    _drain(dispatched)
    job = Job.objects.get(organisation=cast.org, customer=suggestion.customer)
    assert job.scheduled_start == datetime.datetime.fromisoformat(starts[-1])
    suggestion.refresh_from_db()
    assert suggestion.state == State.DONE


def test_a_slot_not_offered_is_refused_and_nothing_is_claimed(
    cast: Cast, dispatched: list[tuple[int, int]]
) -> None:
    suggestion = _maintenance(cast)
    response = _client(cast.operator).post(
        f"/suggestions/{suggestion.pk}/accept/", {"start": "2020-01-01T10:00:00+00:00"}
    )
    assert response.status_code == 409 and not dispatched
    suggestion.refresh_from_db()
    assert suggestion.state == State.NEW


def test_a_call_that_needs_approval_is_held_not_run(
    cast: Cast, dispatched: list[tuple[int, int]]
) -> None:
    Agent.objects.filter(organisation=cast.org, name="proactive").update(
        requires_approval_for=["follow_up_record"]
    )
    suggestion, job = _follow_up(cast)
    _client(cast.operator).post(f"/suggestions/{suggestion.pk}/accept/", {"note": "Bien"})
    _drain(dispatched)

    held = PendingAction.objects.get(organisation=cast.org, tool="follow_up_record")
    assert held.status == PendingAction.Status.PENDING and held.requested_by == cast.operator
    assert not JobEvent.objects.filter(job=job, data__follow_up=True).exists()
    suggestion.refresh_from_db()
    assert suggestion.state == State.ACCEPTED and f"#{held.pk}" in suggestion.outcome


def test_the_managers_decision_on_the_held_call_settles_the_suggestion(
    cast: Cast, dispatched: list[tuple[int, int]]
) -> None:
    Agent.objects.filter(organisation=cast.org, name="proactive").update(
        requires_approval_for=["follow_up_record"]
    )
    suggestion, job = _follow_up(cast)
    _client(cast.operator).post(f"/suggestions/{suggestion.pk}/accept/", {"note": "Bien"})
    _drain(dispatched)
    held = PendingAction.objects.get(organisation=cast.org, tool="follow_up_record")

    decided = _client(cast.manager).post(f"/approvals/{held.pk}/decide/", {"decision": "approve"})
    assert decided.status_code == 302
    _drain(dispatched[1:])

    assert [e.note for e in JobEvent.objects.filter(job=job, data__follow_up=True)] == ["Bien"]
    suggestion.refresh_from_db()
    assert suggestion.state == State.DONE


def test_a_held_call_abandoned_without_any_decision_turn_reopens_the_suggestion(
    cast: Cast, dispatched: list[tuple[int, int]]
) -> None:
    """Approved, but its decision turn never ran it: the schedule fails it, no turn follows —
    the suggestion must not stay "accepted" (hidden, and never offered again)."""
    Agent.objects.filter(organisation=cast.org, name="proactive").update(
        requires_approval_for=["follow_up_record"]
    )
    suggestion, _job = _follow_up(cast)
    _client(cast.operator).post(f"/suggestions/{suggestion.pk}/accept/", {"note": "Bien"})
    _drain(dispatched)
    held = PendingAction.objects.get(organisation=cast.org, tool="follow_up_record")
    PendingAction.objects.filter(pk=held.pk).update(
        status=PendingAction.Status.APPROVED,
        decided_at=timezone.now() - datetime.timedelta(hours=2),
    )

    assert actions_abandoned(older_than=datetime.timedelta(minutes=5)) == 1

    suggestion.refresh_from_db()
    assert suggestion.state == State.NEW and f"#{held.pk} failed" in suggestion.outcome


def test_a_suggestion_turn_that_crashes_reopens_the_suggestion(
    cast: Cast, dispatched: list[tuple[int, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from copilot import kinds as turn_module

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the database went away")

    monkeypatch.setattr(turn_module, "run_proposal", broken)
    suggestion, _job = _follow_up(cast)
    _client(cast.operator).post(f"/suggestions/{suggestion.pk}/accept/", {"note": "Bien"})
    [result] = _drain(dispatched)

    assert not result.ok
    suggestion.refresh_from_db()
    assert suggestion.state == State.NEW and "the database went away" in suggestion.outcome


def test_a_proposal_whose_record_was_deleted_ends_cleanly_and_stays_open(
    cast: Cast, dispatched: list[tuple[int, int]]
) -> None:
    suggestion, job = _follow_up(cast)
    job.delete()
    _client(cast.operator).post(f"/suggestions/{suggestion.pk}/accept/", {"note": "Bien"})
    results = _drain(dispatched)

    assert [r.ok for r in results] == [True]  # the turn answered: it could not run
    suggestion.refresh_from_db()
    assert suggestion.state == State.NEW and "not found" in suggestion.outcome


def test_dismissing_keeps_the_reason_and_happens_once(cast: Cast) -> None:
    suggestion, _job = _follow_up(cast)
    client = _client(cast.operator)
    assert "reason" in client.get(f"/suggestions/{suggestion.pk}/dismiss/").content.decode()
    client.post(f"/suggestions/{suggestion.pk}/dismiss/", {"reason": "Ya lo llamé"})
    client.post(f"/suggestions/{suggestion.pk}/dismiss/", {"reason": "otra cosa"})
    suggestion.refresh_from_db()
    assert (suggestion.state, suggestion.dismiss_reason) == (State.DISMISSED, "Ya lo llamé")
    assert suggestion.acted_by == cast.operator and suggestion.acted_at is not None


def test_another_organisations_manager_sees_and_acts_on_nothing(
    cast: Cast, dispatched: list[tuple[int, int]]
) -> None:
    suggestion, _job = _follow_up(cast)
    outsider = _client(cast.outsider)
    page = outsider.get("/suggestions/").content.decode()
    assert f'data-suggestion="{suggestion.pk}"' not in page
    for action in ("accept", "dismiss"):
        url = f"/suggestions/{suggestion.pk}/{action}/"
        assert outsider.get(url).status_code == 404
        assert outsider.post(url, {"reason": "x", "note": "x"}).status_code == 404
    suggestion.refresh_from_db()
    assert suggestion.state == State.NEW and not dispatched


def test_managers_see_the_acceptance_rate_per_kind(cast: Cast) -> None:
    suggestion, _job = _follow_up(cast)
    _client(cast.operator).post(f"/suggestions/{suggestion.pk}/dismiss/", {"reason": ""})
    managed = _client(cast.manager).get("/suggestions/").content.decode()
    assert 'data-kind="follow_up"' in managed and "0%" in managed
    operated = _client(cast.operator).get("/suggestions/").content.decode()
    assert 'data-kind="follow_up"' not in operated


def test_the_dashboard_and_the_panel_load_the_suggestions_from_above(cast: Cast) -> None:
    client = _client(cast.operator)
    assert 'hx-get="/suggestions/?part=list"' in client.get("/").content.decode()
    conversation = Conversation.objects.create(organisation=cast.org, user=cast.operator)
    panel = client.get(f"/chat/{conversation.pk}/").content.decode()
    assert "/suggestions/?part=badge" in panel and "/suggestions/?part=list" in panel


# --- what the operator reads when they act (issue 28, point 4) ----------------------------------


@pytest.mark.parametrize(
    ("language", "accepted", "done"),
    [
        ("es-ar", "Aceptada: registrar la llamada de seguimiento para Juan Pérez.",
         "Listo: registré el seguimiento del trabajo #{job}."),
        ("en", "Accepted: record the follow-up call for Juan Pérez.",
         "Done: recorded the follow-up of job #{job}."),
    ],
)  # fmt: skip
def test_accepting_says_so_in_place_of_the_card_with_a_link_to_its_conversation(
    cast: Cast, dispatched: list[tuple[int, int]], language: str, accepted: str, done: str
) -> None:
    suggestion, job = _follow_up(cast)
    client = _client(cast.operator, language)
    before = client.get("/suggestions/?part=list").content.decode()
    assert accepted not in before and 'class="suggestion-actions"' in before

    response = client.post(
        f"/suggestions/{suggestion.pk}/accept/", {"note": "Bien"}, HTTP_HX_REQUEST="true"
    ).content
    suggestion.refresh_from_db()
    chat = f'href="/chat/{suggestion.conversation_id}/"'
    assert accepted in response.decode() and chat in response.decode()
    assert 'role="status"' in response.decode()
    # The socket reloads the list right after: the confirmation stays, the buttons do not.
    reloaded = client.get("/suggestions/?part=list").content.decode()
    assert accepted in reloaded and chat in reloaded
    assert 'class="suggestion-actions"' not in reloaded
    others = _client(cast.manager, language).get("/suggestions/?part=list").content.decode()
    assert accepted not in others  # the confirmation is the one who acted's

    _drain(dispatched)  # the turn answers in the accepting operator's language, not the tool's
    reply = Message.objects.get(conversation_id=suggestion.conversation_id, role="assistant")
    assert reply.text == done.format(job=job.pk)


@pytest.mark.parametrize(
    ("language", "dismissed"),
    [
        ("es-ar", "Descartada: registrar la llamada de seguimiento para Juan Pérez. "
                  "Motivo: Ya lo llamé."),
        ("en", "Dismissed: record the follow-up call for Juan Pérez. Reason: Ya lo llamé."),
    ],
)  # fmt: skip
def test_dismissing_says_so_in_place_of_the_card(cast: Cast, language: str, dismissed: str) -> None:
    suggestion, _job = _follow_up(cast)
    client = _client(cast.operator, language)

    url = f"/suggestions/{suggestion.pk}/dismiss/"
    response = client.post(url, {"reason": "Ya lo llamé"}, HTTP_HX_REQUEST="true")

    assert dismissed in response.content.decode()
    assert dismissed in client.get("/suggestions/?part=list").content.decode()
    again = client.post(url, {"reason": "otra cosa"}, HTTP_HX_REQUEST="true")
    assert dismissed in again.content.decode()  # a second click reads the same, changes nothing


def test_without_javascript_accepting_is_a_page_then_back_to_the_list(
    cast: Cast, dispatched: list[tuple[int, int]]
) -> None:
    """The card's links work as plain links: the step is a whole page (a title, the page's
    language, the row in a list), and its form goes back to the list, where the card says so."""
    suggestion, _job = _follow_up(cast)
    client = _client(cast.operator, "es-ar")
    url = f"/suggestions/{suggestion.pk}/accept/"
    page = client.get(url).content.decode()
    assert page.lower().startswith("<!doctype html>") and '<html lang="es-ar"' in page
    assert '<ul class="list suggestions">' in page and f'id="suggestion-{suggestion.pk}"' in page
    response = client.post(url, {"note": "Bien"})
    assert response.status_code == 302 and response["Location"] == "/suggestions/"
    assert "Aceptada" in client.get("/suggestions/").content.decode()
    assert len(dispatched) == 1
