"""Feedback on answers (V5): operators' thumbs and "this should have been …" stored with the
answer and its turn, the buttons in the panel, and the managers' queue that makes dataset cases
of verdicts and real messages in one click, personal data masked; outsiders see nothing."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agents.models import AgentIntent
from copilot.models import Conversation, Message, Turn
from evaluation.models import Case, Dataset, Feedback
from tests import factories
from tests.conftest import Cast

pytestmark = pytest.mark.django_db

QUESTION = (
    "agendame una visita para Juan Pérez el lunes, su cel es 11 5555-1234 y el mail "
    "juan.perez@example.com, CUIT 20-12345678-6"
)


def _exchange(org: Any, user: Any, text: str = QUESTION, routed: str = "book_job") -> Message:
    """An operator's message, its turn and the copilot's answer; the answer."""
    conversation = Conversation.objects.create(organisation=org, user=user)
    question = Message.objects.create(
        organisation=org, conversation=conversation, role=Message.Role.USER, text=text,
        language="es",
    )  # fmt: skip
    turn_id = uuid.uuid4()
    agent = "scheduling" if routed in ("book_job", "cancel_job") else "general"
    answer = Message.objects.create(
        organisation=org, conversation=conversation, role=Message.Role.ASSISTANT,
        text="Listo, agendado.", language="es",
        trace={"turn_id": str(turn_id),
               "consulted": [{"agent": agent, "label": agent, "intent": routed, "success": True}]},
    )  # fmt: skip
    Turn.objects.create(
        id=turn_id, organisation=org, conversation=conversation, message=question,
        user=user, status=Turn.Status.DONE, answer=answer,
    )  # fmt: skip
    return answer


def _feedback_url(answer: Message) -> str:
    return reverse("evaluation:answer_feedback", args=[answer.pk])


def _dataset(org: Any) -> Dataset:
    return Dataset.objects.create(organisation=org, name="from-operators")


# --- the panel's buttons -----------------------------------------------------------------------


def test_an_operator_rates_an_answer_and_it_is_stored_with_its_turn(
    client: Client, registry: Cast
) -> None:
    answer = _exchange(registry.org, registry.operator)
    client.force_login(registry.operator)
    page = client.get(reverse("chat_detail", args=[answer.conversation_id])).content.decode()
    assert f'data-feedback-for="{answer.pk}"' in page and 'id="feedback-template"' in page
    assert "feedback.js" in page

    response = client.post(_feedback_url(answer), {"rating": "up"})
    assert response.status_code == 200 and 'aria-pressed="true"' in response.content.decode()
    feedback = Feedback.objects.get(message=answer)
    assert feedback.rating == "up" and feedback.user == registry.operator
    assert feedback.turn_id == answer.trace["turn_id"] and feedback.organisation == registry.org

    # "This should have been …": a bad answer, one verdict per person and answer.
    client.post(_feedback_url(answer), {"rating": "", "should_be": "customer"})
    feedback = Feedback.objects.get(message=answer)
    assert (feedback.rating, feedback.should_be) == ("down", "customer")
    page = client.get(reverse("chat_detail", args=[answer.conversation_id])).content.decode()
    assert '<option value="customer" selected>' in page
    # Neither: taken back.
    client.post(_feedback_url(answer), {"rating": "", "should_be": ""})
    assert not Feedback.objects.filter(message=answer).exists()


def test_bad_feedback_is_refused_and_changes_nothing(client: Client, registry: Cast) -> None:
    answer = _exchange(registry.org, registry.operator)
    client.force_login(registry.operator)
    client.post(_feedback_url(answer), {"rating": "up"})
    for data in ({"rating": "meh"}, {"rating": "down", "should_be": "nobody"}):
        response = client.post(_feedback_url(answer), data)
        assert response.status_code == 400 and response.content
    assert Feedback.objects.get(message=answer).rating == "up"
    question = Message.objects.get(role=Message.Role.USER)
    assert client.post(_feedback_url(question), {"rating": "up"}).status_code == 404


def test_nobody_rates_an_answer_they_may_not_read(client: Client, registry: Cast) -> None:
    answer = _exchange(registry.org, registry.manager)  # a manager's own conversation
    for user in (registry.outsider, registry.operator):  # another org's admin; a lower colleague
        client.force_login(user)
        assert client.post(_feedback_url(answer), {"rating": "down"}).status_code == 404
    assert not Feedback.objects.exists()


# --- the managers' queue -----------------------------------------------------------------------


def test_a_bad_answer_becomes_a_case_with_its_personal_data_masked(
    client: Client, registry: Cast
) -> None:
    factories.make_customer(registry.org, "Juan Pérez")  # in the records: his name is masked
    answer = _exchange(registry.org, registry.operator, routed="hours")  # misrouted
    dataset = _dataset(registry.org)
    client.force_login(registry.operator)
    client.post(_feedback_url(answer), {"rating": "down", "should_be": "scheduling"})
    feedback = Feedback.objects.get(message=answer)

    client.force_login(registry.manager)
    queue = client.get(reverse("evaluation:feedback")).content.decode()
    assert f'data-feedback="{feedback.pk}"' in queue
    shown = queue.split('data-testid="feedback-rows"')[1]
    assert "5555-1234" not in shown and "[NOMBRE_1]" in shown  # shown masked
    response = client.post(
        reverse("evaluation:feedback_case", args=[feedback.pk]), {"dataset": dataset.pk}
    )
    assert response.status_code == 302
    case = Case.objects.get(dataset=dataset)
    for secret in ("5555", "juan.perez@example.com", "20-12345678-6", "Juan", "Pérez"):
        assert secret not in case.input
    assert "[TEL_1]" in case.input and "[EMAIL_1]" in case.input and "[CUIT_1]" in case.input
    assert case.input.startswith("agendame una visita para [NOMBRE_1] el lunes")
    assert case.expected_agents == ["scheduling"]
    scheduling_intents = set(
        AgentIntent.objects.filter(
            agent__organisation=registry.org, agent__name="scheduling"
        ).values_list("name", flat=True)
    )
    assert (
        case.expected_intents == ["book_job"] and set(case.expected_intents) <= scheduling_intents
    )
    assert case.source == Case.Source.FEEDBACK and case.tags == ["feedback"]
    feedback.refresh_from_db()
    assert feedback.state == Feedback.State.CONVERTED and feedback.case == case


@pytest.mark.parametrize("language", ["es-ar", "en"])
def test_a_case_masks_the_names_of_the_organisation_s_people_without_case_or_accents(
    client: Client, registry: Cast, language: str
) -> None:
    org = registry.org
    factories.make_customer(org, "Graciela Ibarra")
    factories.make_customer(org, "Clima Norte SA", kind="company")
    factories.make_technician(org, "Martín Gómez")
    registry.operator.first_name, registry.operator.last_name = "Sofía", "Acuña"
    registry.operator.save()
    factories.make_customer(registry.other_org, "Lucía Benítez")  # another organisation's
    text = (
        "que MARTIN GOMEZ vaya a lo de graciela ibarra, el de Clima Norte SA, y que sofia "
        "acuna le avise a Ibarra; Lucía Benítez no"
    )
    answer = _exchange(org, registry.operator, text=text, routed="hours")
    client.force_login(registry.operator)
    client.post(_feedback_url(answer), {"rating": "down", "should_be": "scheduling"})
    feedback = Feedback.objects.get(message=answer)
    client.force_login(registry.manager)

    queue = client.get(reverse("evaluation:feedback"), HTTP_ACCEPT_LANGUAGE=language)
    client.post(reverse("evaluation:feedback_case", args=[feedback.pk]),
                {"dataset": _dataset(org).pk})  # fmt: skip

    assert Case.objects.get().input == (
        "que [NOMBRE_1] vaya a lo de [NOMBRE_2], el de [NOMBRE_3], y que [NOMBRE_4] "
        "le avise a [NOMBRE_5]; Lucía Benítez no"
    )
    assert "[NOMBRE_2]" in queue.content.decode() and "graciela" not in queue.content.decode()


def test_a_good_answer_keeps_what_was_routed_and_a_bad_one_needs_its_agent(
    client: Client, registry: Cast
) -> None:
    good = _exchange(registry.org, registry.operator, text="¿a qué hora abren?", routed="hours")
    bad = _exchange(registry.org, registry.operator, text="cancelá lo de Gómez", routed="hours")
    dataset = _dataset(registry.org)
    client.force_login(registry.operator)
    client.post(_feedback_url(good), {"rating": "up"})
    client.post(_feedback_url(bad), {"rating": "down"})
    client.force_login(registry.manager)
    for answer in (good, bad):
        feedback = Feedback.objects.get(message=answer)
        client.post(
            reverse("evaluation:feedback_case", args=[feedback.pk]), {"dataset": dataset.pk}
        )
    case = Case.objects.get(dataset=dataset)
    assert case.input == "¿a qué hora abren?" and case.expected_intents == ["hours"]
    bad_feedback = Feedback.objects.get(message=bad)
    assert bad_feedback.state == Feedback.State.NEW and bad_feedback.case is None
    # The manager picks the agent in the queue: then it is one click.
    client.post(
        reverse("evaluation:feedback_case", args=[bad_feedback.pk]),
        {"dataset": dataset.pk, "agent": "scheduling"},
    )
    assert Case.objects.filter(dataset=dataset).count() == 2
    assert Case.objects.get(input="cancelá lo de Gómez").expected_intents == ["cancel_job"]
    # A dataset of another organisation is not a target.
    other = _dataset(registry.other_org)
    feedback = Feedback.objects.get(message=good)
    feedback.state = Feedback.State.NEW
    feedback.save()
    client.post(reverse("evaluation:feedback_case", args=[feedback.pk]), {"dataset": other.pk})
    assert not Case.objects.filter(dataset=other).exists()


def test_a_real_message_becomes_a_case_in_one_click(client: Client, registry: Cast) -> None:
    answer = _exchange(registry.org, registry.operator)
    question = Message.objects.get(conversation=answer.conversation, role=Message.Role.USER)
    dataset = _dataset(registry.org)
    client.force_login(registry.manager)
    queue = client.get(reverse("evaluation:feedback")).content.decode()
    assert f'data-message="{question.pk}"' in queue
    response = client.post(
        reverse("evaluation:message_case", args=[question.pk]), {"dataset": dataset.pk}
    )
    assert response.status_code == 302
    case = Case.objects.get(dataset=dataset)
    assert case.expected_intents == ["book_job"] and case.source == Case.Source.CONVERSATION
    assert "5555" not in case.input and "[TEL_1]" in case.input
    queue = client.get(reverse("evaluation:feedback")).content.decode()
    row = queue.split(f'data-message="{question.pk}"')[1].split("</tr>")[0]
    assert "Already a case" in row or "Ya es un caso" in row


def test_outsiders_see_nothing_of_the_queue(client: Client, registry: Cast) -> None:
    answer = _exchange(registry.org, registry.operator)
    question = Message.objects.get(conversation=answer.conversation, role=Message.Role.USER)
    client.force_login(registry.operator)
    client.post(_feedback_url(answer), {"rating": "up"})
    feedback = Feedback.objects.get()
    foreign = _dataset(registry.other_org)

    client.force_login(registry.outsider)  # an admin, of another organisation
    queue = client.get(reverse("evaluation:feedback"), {"state": "new"}).content.decode()
    assert "Juan Pérez" not in queue and f'data-feedback="{feedback.pk}"' not in queue
    assert f'data-message="{question.pk}"' not in queue
    data = {"dataset": foreign.pk}
    assert (
        client.post(reverse("evaluation:feedback_case", args=[feedback.pk]), data).status_code
        == 404
    )
    assert (
        client.post(reverse("evaluation:feedback_dismiss", args=[feedback.pk])).status_code == 404
    )
    assert (
        client.post(reverse("evaluation:message_case", args=[question.pk]), data).status_code == 404
    )
    assert not Case.objects.filter(dataset=foreign).exists()
    assert Feedback.objects.get().state == Feedback.State.NEW

    client.force_login(registry.operator)  # operators give feedback; managers read the queue
    assert client.get(reverse("evaluation:feedback")).status_code == 403


def test_should_have_been_counts_as_the_routed_agents_misroute(registry: Cast) -> None:
    import datetime

    from django.utils import timezone

    from evaluation.agent_metrics import agent_metrics, period_from
    from evaluation.feedback import feedback_misroutes

    wrong = _exchange(registry.org, registry.operator)  # routed to scheduling
    right = _exchange(registry.org, registry.operator)
    outsider = _exchange(registry.other_org, registry.outsider)
    for answer, org, user, should_be in (
        (wrong, registry.org, registry.operator, "customer"),
        (right, registry.org, registry.operator, "scheduling"),  # the agent it ran: no misroute
        (outsider, registry.other_org, registry.outsider, "customer"),
    ):
        Feedback.objects.create(
            organisation=org, message=answer, user=user, rating="down", should_be=should_be
        )
    now = timezone.now()
    window = (now - datetime.timedelta(hours=1), now + datetime.timedelta(hours=1))
    assert feedback_misroutes(registry.org, *window) == {"scheduling": 1}
    assert feedback_misroutes(registry.org, now + datetime.timedelta(hours=1), now
                              + datetime.timedelta(hours=2)) == {}  # fmt: skip

    # The metrics page adds it (the source is registered when the app is ready).
    period, _errors = period_from({"period": "today"}, registry.org)
    rows = {row.agent: row for row in agent_metrics(registry.org, period).rows}
    assert rows["scheduling"].misroutes == 1
