"""Operators' feedback on answers and cases from real conversations (V5).

An operator marks a copilot answer good or bad and may say which agent should have answered; it is
stored with the answer and its turn (one verdict per person and answer, changed by clicking
again). A manager's queue turns a verdict — or any message an operator wrote — into a case of a
dataset in one click: the operator's message with its personal data masked by the privacy
guard's detectors (phones, emails, CUIT/CUIL, DNI, cards, addresses become `[TEL_1]`…) and the
names of the people in the organisation's records (`[NOMBRE_1]`, business.selectors.people_names:
without case or accents), the
intents the copilot routed when the answer was right, or the intent of the agent it should have
been (the router's best intent of that agent for the text) when it was not.
"""

from __future__ import annotations

import datetime
import uuid
import zoneinfo
from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from agents.models import Agent, AgentIntent
from business.models import Organisation
from business.selectors import people_names
from copilot.models import Conversation, Message, Turn
from copilot.router_cache import router_for
from copilot.selectors import get_conversation_for_user
from evaluation.datasets import DatasetError, case_add
from evaluation.models import Case, Dataset, Feedback
from nlu.privacy import CATEGORIES, Vault
from nlu.values import Context


class FeedbackError(Exception):
    """The feedback or the case cannot be taken; the message says why."""


def masking(organisation: Organisation) -> Callable[[str], str]:
    """A mask for the organisation's texts: every kind of personal data the guard knows and the
    names of its people replaced by placeholders (the names read once, for a whole page)."""
    names = people_names(organisation)
    return lambda text: Vault(categories=CATEGORIES, names=names).mask(text)


def answer_for_user(user: Any, message_id: int) -> Message:
    """A copilot answer in a conversation this user may open; Message.DoesNotExist else."""
    message = Message.objects.select_related("conversation").get(
        pk=message_id, role=Message.Role.ASSISTANT
    )
    try:
        get_conversation_for_user(user, message.conversation_id)
    except Conversation.DoesNotExist as exc:
        raise Message.DoesNotExist from exc
    return message


def feedback_record(*, user: Any, message: Message, rating: str, should_be: str) -> Feedback | None:
    """Store (or change) this person's verdict on the answer; neither a rating nor an agent
    takes it back (None)."""
    if rating not in ("", *Feedback.Rating.values):
        raise FeedbackError(_("Unknown rating."))
    if (
        should_be
        and not Agent.objects.filter(
            organisation_id=message.organisation_id, name=should_be
        ).exists()
    ):
        raise FeedbackError(_("Unknown agent."))
    if not rating and not should_be:
        Feedback.objects.filter(message=message, user=user, state=Feedback.State.NEW).delete()
        return None
    if should_be and not rating:
        rating = Feedback.Rating.DOWN  # "it should have been …" says it was not right
    with transaction.atomic():
        feedback, _created = Feedback.objects.select_for_update().get_or_create(
            message=message, user=user,
            defaults={"organisation_id": message.organisation_id,
                      "turn_id": str(message.trace.get("turn_id", ""))[:36]},
        )  # fmt: skip
        feedback.rating, feedback.should_be = rating, should_be
        feedback.state, feedback.updated_at = Feedback.State.NEW, timezone.now()
        feedback.save()
    return feedback


# --- from feedback or a message to a case ------------------------------------------------------


def question_of(answer: Message) -> Message | None:
    """The operator's message an answer answers: its turn's, else the user message before it."""
    turn_id = answer.trace.get("turn_id")
    if turn_id:
        turn = (
            Turn.objects.filter(pk=turn_id, organisation_id=answer.organisation_id)
            .select_related("message")
            .first()
            if _is_uuid(str(turn_id))
            else None
        )
        if turn is not None:
            return turn.message
    return (
        Message.objects.filter(
            conversation_id=answer.conversation_id,
            role=Message.Role.USER,
            created_at__lte=answer.created_at,
        )  # fmt: skip
        .exclude(pk__gt=answer.pk)
        .order_by("-created_at", "-pk")
        .first()
    )


def answer_of(question: Message) -> Message | None:
    turn = Turn.objects.filter(message=question).select_related("answer").first()
    return turn.answer if turn is not None else None


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def routed(answer: Message | None) -> list[tuple[str, str]]:
    """(agent, intent) of each step the answer's turn ran, in order."""
    if answer is None:
        return []
    return [
        (str(step.get("agent", "")), str(step.get("intent", "")))
        for step in answer.trace.get("consulted", [])
        if step.get("agent") and step.get("intent")
    ]


def best_intent(organisation: Organisation, agent_name: str, text: str) -> str:
    """The agent's intent the router scores highest for `text`; its first intent else."""
    owned = list(
        AgentIntent.objects.filter(agent__organisation=organisation, agent__name=agent_name)
        .order_by("pk")
        .values_list("name", flat=True)
    )
    if not owned:
        raise FeedbackError(_("Agent %s has no intents.") % agent_name)
    now = timezone.localtime(timezone.now(), zoneinfo.ZoneInfo(organisation.timezone))
    reading = router_for(organisation).understand(
        text, Context(today=now.date(), now=now, tz=organisation.timezone)
    )
    for task in reading.tasks:
        for intent, _score in [(task.intent, task.confidence), *task.candidates]:
            if intent in owned:
                return intent
    return owned[0]


def _case_data(
    organisation: Organisation,
    question: Message,
    steps: list[tuple[str, str]],
    agent: str,
    tag: str,
) -> dict[str, Any]:
    text = masking(organisation)(question.text)
    if agent:
        steps = [(agent, best_intent(organisation, agent, text))]
    if not steps:
        raise FeedbackError(_("The answer routed no agent: choose the agent it should have been."))
    return {
        "input": text,
        "expected_intents": [intent for _agent, intent in steps],
        "expected_agents": [a for a, _intent in steps],
        "lang": question.language or "",
        "tags": [tag],
    }


def _dataset_of(organisation: Organisation, dataset_id: int) -> Dataset:
    dataset = Dataset.objects.filter(organisation=organisation, pk=dataset_id).first()
    if dataset is None:
        raise FeedbackError(_("No such dataset."))
    return dataset


@transaction.atomic
def feedback_to_case(*, feedback: Feedback, dataset_id: int, agent: str = "") -> Case:
    """One click: the verdict's question as a case (the agent it should have been, or what the
    copilot routed when the answer was good)."""
    organisation = feedback.organisation
    dataset = _dataset_of(organisation, dataset_id)
    question = question_of(feedback.message)
    if question is None:
        raise FeedbackError(_("The question of this answer is gone."))
    agent = agent or feedback.should_be
    if not agent and feedback.rating == Feedback.Rating.DOWN:
        raise FeedbackError(_("A bad answer needs the agent it should have been."))
    data = _case_data(organisation, question, routed(feedback.message), agent, "feedback")
    try:
        case = case_add(dataset, data, source=Case.Source.FEEDBACK)
    except DatasetError as exc:
        raise FeedbackError("; ".join(exc.problems)) from exc
    feedback.state, feedback.case, feedback.updated_at = (
        Feedback.State.CONVERTED, case, timezone.now()
    )  # fmt: skip
    feedback.save(update_fields=["state", "case", "updated_at"])
    return case


@transaction.atomic
def message_to_case(*, question: Message, dataset_id: int, agent: str = "") -> Case:
    """One click: an operator's message from a real conversation as a case."""
    organisation = question.organisation
    dataset = _dataset_of(organisation, dataset_id)
    data = _case_data(organisation, question, routed(answer_of(question)), agent, "conversation")
    try:
        return case_add(dataset, data, source=Case.Source.CONVERSATION)
    except DatasetError as exc:
        raise FeedbackError("; ".join(exc.problems)) from exc


def feedback_dismiss(feedback: Feedback) -> None:
    feedback.state, feedback.updated_at = Feedback.State.DISMISSED, timezone.now()
    feedback.save(update_fields=["state", "updated_at"])


def feedback_misroutes(
    organisation: Organisation, start: datetime.datetime, end: datetime.datetime
) -> dict[str, int]:
    """Misroutes per agent from operators' "this should have been …" in [start, end): the answer's
    first routed agent is charged when the agent named is not among those the turn ran. Feedback is
    a few rows a day, so the answers' traces are read here rather than in SQL."""
    counts: dict[str, int] = {}
    verdicts = (
        Feedback.objects.filter(
            organisation=organisation, created_at__gte=start, created_at__lt=end
        )
        .exclude(should_be="")
        .select_related("message")
        .only("should_be", "message__trace")
    )
    for verdict in verdicts:
        agents = [agent for agent, _intent in routed(verdict.message)]
        if agents and verdict.should_be not in agents:
            counts[agents[0]] = counts.get(agents[0], 0) + 1
    return counts
