"""The registry's codes as people name them (issue 28.1): the tool catalogue, an approval's page
and the admin's agent runs, held actions and agent intents show an intent, a tool, a category
and an agent by their labels in the reader's language, the code kept as a `title` or in <code>;
the conversation's admin page shows the working memory in the reader's words, not the model's
English summary. Another organisation's rows stay out of the admin's lists."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from agents.models import Agent
from approvals.models import PendingAction
from copilot.models import AgentRun, Conversation
from copilot.services import conversation_create
from tests import factories
from tests.capataz.test_one_language import SNAKE, hits, visible
from tests.conftest import Cast

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(cast: Cast) -> Any:
    return _staff(cast.admin)


def _staff(user: Any) -> Any:
    """A staff member who may read agent runs, held actions and conversations in the admin (of
    the organisations where they are an admin: the admin scopes the rows)."""
    user.is_staff = True
    user.save()
    models = ("agentrun", "pendingaction", "conversation")
    user.user_permissions.add(
        *Permission.objects.filter(codename__in=[f"view_{m}" for m in models])
    )
    return user


def _page(user: Any, url: str, language: str) -> str:
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200, url
    return str(response.content.decode())


def _ids_in_prose(url: str, html: str, language: str) -> list[str]:
    return [
        hit.split("«")[1].split("»")[0]
        for hit in hits(visible(url, html, language), SNAKE, prose=True)
    ]


@pytest.mark.parametrize(
    ("language", "parameter_sentence"),
    [
        ("es-ar", "<code>dry_run</code>=false lo aplica"),
        ("en", "<code>dry_run</code>=false applies it"),
    ],
)
def test_the_tool_catalogue_shows_parameters_as_code(
    cast: Cast, staff: Any, agents: dict[str, Agent], language: str, parameter_sentence: str
) -> None:
    html = _page(cast.manager, reverse("agents:tools"), language)
    row = html.split('id="tool-jobs_bulk_reschedule"')[1].split("</tr>")[0]
    assert parameter_sentence in row
    assert _ids_in_prose("/agents/tools/", html, language) == []
    # The admin's catalogue too, its agents by their labels.
    admin_page = _page(staff, reverse("admin:agents_agent_tools"), language)
    assert parameter_sentence in admin_page
    assert _ids_in_prose("/admin/agents/agent/tools/", admin_page, language) == []
    scheduling = agents["scheduling"]
    assert f'title="scheduling">{scheduling.label(language)}</span>' in admin_page


@pytest.mark.parametrize(
    ("language", "words"),
    [
        ("es-ar", ["Agenda", "Cancelar el trabajo", "Cancela un trabajo abierto", "ejecución"]),
        ("en", ["Scheduling", "Cancel the job", "Cancel an open job", "execute"]),
    ],
)
def test_a_held_action_is_named_in_the_readers_language(
    cast: Cast, staff: Any, agents: dict[str, Agent], language: str, words: list[str]
) -> None:
    action = _held(cast, cast.org)
    foreign = _held(cast, cast.other_org, summary="Acción de otra organización")
    # An admin's page: the technical details (the agent, the tool, its category) are theirs.
    detail = _page(cast.admin, reverse("approval_detail", args=[action.pk]), language)
    change = _page(
        staff, reverse("admin:approvals_pendingaction_change", args=[action.pk]), language
    )
    changelist = _page(staff, reverse("admin:approvals_pendingaction_changelist"), language)
    for url, html, named in (
        ("/approvals/", detail, words[:1] + words[2:]),
        ("/admin/", change, words),
    ):
        shown = visible(url, html, language).prose
        assert all(word in shown for word in named), (url, shown)
        assert _ids_in_prose(url, html, language) == []
    assert "<code>job_cancel</code>" in detail  # the technical details keep the code, as code
    assert 'title="job_cancel"' in change and 'title="cancel_job"' in change
    assert action.summary in changelist and foreign.summary not in changelist
    outsider = Client()
    outsider.force_login(cast.outsider)
    assert outsider.get(reverse("approval_detail", args=[action.pk])).status_code == 404


def _held(cast: Cast, org: Any, summary: str = "Cancelar el trabajo #1") -> PendingAction:
    return PendingAction.objects.create(
        organisation=org,
        agent="scheduling",
        intent="cancel_job",
        tool="job_cancel",
        category="execute",
        arguments={"job_id": 1},
        summary=summary,
        requested_by=cast.operator,
    )


@pytest.mark.parametrize(
    ("language", "words"),
    [("es-ar", ["Agenda", "Agendar el trabajo"]), ("en", ["Scheduling", "Book the job"])],
)
def test_the_admins_agent_runs_name_agents_and_intents(
    cast: Cast, staff: Any, agents: dict[str, Agent], language: str, words: list[str]
) -> None:
    run = AgentRun.objects.create(
        organisation=cast.org, turn_id="t-1", agent="scheduling", intent="book_job", latency_ms=40
    )
    other = factories.make_user(cast.other_org, "operator", "ajena")
    AgentRun.objects.create(
        organisation=cast.other_org,
        turn_id="t-2",
        agent="fleet",
        intent="fleet_status",
        latency_ms=1,
        error=f"{other.username} ran this",
    )
    changelist = _page(staff, reverse("admin:copilot_agentrun_changelist"), language)
    change = _page(staff, reverse("admin:copilot_agentrun_change", args=[run.pk]), language)
    for url, html in (("/admin/list/", changelist), ("/admin/change/", change)):
        shown = visible(url, html, language).prose
        assert all(word in shown for word in words), (url, shown)
        assert _ids_in_prose(url, html, language) == []
    assert "ajena ran this" not in changelist  # another organisation's run


@pytest.mark.parametrize(
    ("language", "heading"), [("es-ar", "Agendar el trabajo"), ("en", "Book the job")]
)
def test_an_agents_intents_are_headed_by_their_phrases(
    cast: Cast, staff: Any, agents: dict[str, Agent], language: str, heading: str
) -> None:
    agent = agents["scheduling"]
    html = _page(staff, reverse("admin:agents_agent_change", args=[agent.pk]), language)
    assert re.search(rf'<span class="inline_label">{heading}\s*</span>', html)
    assert "scheduling.book_job" not in html
    assert 'value="book_job"' in html  # the name stays in its form field


@pytest.mark.parametrize(
    ("language", "lines"),
    [
        (
            "es-ar",
            [
                "Cliente del que se habla:</strong> <span>Nora Gómez</span>",
                "Pediste (dar de alta al cliente)",
            ],
        ),
        (
            "en",
            [
                "Customer under discussion:</strong> <span>Nora Gómez</span>",
                "Asked (register the customer)",
            ],
        ),
    ],
)
def test_the_conversation_admin_shows_the_memory_in_the_readers_language(
    cast: Cast, staff: Any, agents: dict[str, Agent], language: str, lines: list[str]
) -> None:
    customer = factories.make_customer(cast.org, "Nora Gómez")
    conversation = _remembering(cast, customer.pk)
    html = _page(
        staff, reverse("admin:copilot_conversation_change", args=[conversation.pk]), language
    )
    assert all(line in html for line in lines), html.split("chat-memory-lines")[1][:600]
    assert "asked: alta de Gómez" not in html and "create_customer" not in html
    outsider = Client()
    outsider.force_login(_staff(cast.outsider))
    url = reverse("admin:copilot_conversation_change", args=[conversation.pk])
    assert "Nora Gómez" not in outsider.get(url, follow=True).content.decode()


def _remembering(cast: Cast, customer_id: int) -> Conversation:
    conversation = conversation_create(organisation=cast.org, user=cast.operator, channel="panel")
    conversation.summary = "asked: alta de Gómez [create_customer]"
    conversation.state = {"customer_id": customer_id, "customer_label": "Nora Gómez"}
    conversation.save()
    return conversation
