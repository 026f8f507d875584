"""A customer asking about their own jobs in their own words (issue 14.3): "¿qué trabajos tengo?",
"¿cuándo viene el técnico?", "is my visit confirmed?" are read as search_customer by a router
trained on the shipped registry, the organisations' existing copies of the intent learn them
(agents 0014), and on WhatsApp the answer lists the customer's own upcoming job with its day and
time and nothing of another customer's."""

from __future__ import annotations

import datetime
import importlib
import json
import zoneinfo
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.utils import timezone

from agents.defaults import default_specs
from agents.models import AgentIntent
from agents.phrasing import day
from agents.services import agents_install_defaults
from business.models import Customer, Job
from copilot.models import Conversation
from nlu import Context, Example, Router, Vocabulary, build_router
from testing.fake_graph import FakeGraph
from tests import factories
from tests.conftest import Cast
from tests.whatsapp.test_customers import SENDER, STORED, _turn

DEFAULTS = Path(__file__).resolve().parents[2] / "agents" / "data" / "default_agents.json"
TZ = "America/Argentina/Buenos_Aires"
NOW = datetime.datetime(2026, 11, 18, 10, 0, tzinfo=zoneinfo.ZoneInfo(TZ))
migration = importlib.import_module("agents.migrations.0014_search_customer_first_person")


# --- the router, trained on the shipped registry ------------------------------------------------


@pytest.fixture(scope="module")
def router() -> Router:
    registry = json.loads(DEFAULTS.read_text(encoding="utf-8"))
    return build_router(
        [
            Example(text, intent["name"], agent["name"], lang)
            for agent in registry
            for intent in agent["intents"]
            for lang in ("es", "en")
            for text in intent.get(f"examples_{lang}", [])
        ],
        specs=list(default_specs().values()),
    )


def _reading(router: Router, text: str) -> list[str]:
    ctx = Context(today=NOW.date(), now=NOW, tz=TZ, vocabulary=Vocabulary())
    return [task.intent for task in router.understand(text, ctx).tasks]


@pytest.mark.parametrize(
    "text",
    [
        # Read before as follow_up 0.18, cancel_job 0.26, bulk_reschedule 0.38,
        # check_availability 0.73 and 0.45.
        "¿qué trabajos tengo?",
        "¿tengo algún turno agendado?",
        "mis trabajos",
        "¿cuándo viene el técnico?",
        "when is the technician coming?",
        "what jobs do I have?",
        "¿tengo algún turno?",
        "mis turnos",
        "¿a qué hora vienen mañana?",
        "¿está confirmada mi visita?",
        "¿cuándo es mi turno?",
        "do I have any appointment booked?",
        "my appointments",
        "is my visit confirmed?",
        "when is my appointment?",
        "what time are you coming tomorrow?",
    ],
)
def test_a_first_person_question_about_ones_jobs_is_the_customers_history(
    router: Router, text: str
) -> None:
    assert _reading(router, text) == ["search_customer"]


@pytest.mark.parametrize(
    ("text", "intent"),
    [
        ("¿hay lugar el jueves?", "check_availability"),
        ("¿cuándo podrían venir a revisar el calefón?", "check_availability"),
        ("¿Qué técnicos están libres mañana a la tarde?", "check_availability"),
        ("is there a free slot on Friday morning?", "check_availability"),
        ("¿a qué hora abren el sábado?", "hours"),
        ("cancelá mi turno del jueves", "cancel_job"),
        ("pasá mi visita al viernes", "reschedule"),
    ],
)
def test_availability_hours_and_changes_to_a_visit_keep_their_reading(
    router: Router, text: str, intent: str
) -> None:
    assert _reading(router, text) == [intent]


# --- the organisations' existing copies ---------------------------------------------------------


def _copy(org: Any) -> AgentIntent:
    return AgentIntent.objects.get(agent__organisation=org, name="search_customer")


def test_every_organisations_copy_gets_the_examples_once_and_keeps_its_own(cast: Cast) -> None:
    for org in (cast.org, cast.other_org):
        agents_install_defaults(organisation=org)
    ours = set(migration.EXAMPLES_ES) | set(migration.EXAMPLES_EN)
    # As the copies were before: without the new lines, and one an admin wrote themselves.
    for org in (cast.org, cast.other_org):
        intent = _copy(org)
        for field in ("examples_es", "examples_en"):
            lines = [line for line in getattr(intent, field).splitlines() if line not in ours]
            setattr(intent, field, "\n".join(lines))
        intent.save()
    own = _copy(cast.org)
    own.examples_es += "\n¿qué onda con lo mío?\n\n"
    own.save()
    before = _copy(cast.other_org).examples_es.splitlines()

    migration.add_examples(apps, None)
    migration.add_examples(apps, None)  # run twice: nothing is added twice

    for org in (cast.org, cast.other_org):
        intent = _copy(org)
        spanish, english = intent.examples_es.splitlines(), intent.examples_en.splitlines()
        assert all(spanish.count(text) == 1 for text in migration.EXAMPLES_ES)
        assert all(english.count(text) == 1 for text in migration.EXAMPLES_EN)
        assert "" not in spanish and "" not in english
    assert "¿qué onda con lo mío?" in _copy(cast.org).examples_es.splitlines()
    after = _copy(cast.other_org).examples_es.splitlines()
    assert after[: len(before)] == before  # appended, the organisation's own order untouched
    # Another intent is not touched.
    availability = AgentIntent.objects.get(agent__organisation=cast.org, name="check_availability")
    assert not set(availability.examples_es.splitlines()) & ours

    migration.remove_examples(apps, None)
    mine = _copy(cast.org)
    assert not set(mine.examples_es.splitlines() + mine.examples_en.splitlines()) & ours
    assert "¿qué onda con lo mío?" in mine.examples_es.splitlines()


# --- on WhatsApp, end to end --------------------------------------------------------------------


@pytest.fixture
def jobs(cast: Cast) -> tuple[Customer, Job, Job]:
    """Marta writes; she has a visit tomorrow at 10:00; Bianchi has one at the same time."""
    marta = factories.make_customer(cast.org, "Marta Gómez", phone=STORED)
    bianchi = factories.make_customer(cast.org, "Roberto Bianchi", phone="+541144443333")
    local = timezone.localtime(timezone.now(), zoneinfo.ZoneInfo(cast.org.timezone))
    tomorrow = (local + datetime.timedelta(days=1)).replace(
        hour=10, minute=0, second=0, microsecond=0
    )
    mine = factories.make_job(cast.org, marta, start=tomorrow, service="Service de split",
                              status=Job.Status.SCHEDULED)  # fmt: skip
    theirs = factories.make_job(cast.org, bianchi, start=tomorrow, service="Caldera Bianchi",
                                status=Job.Status.SCHEDULED)  # fmt: skip
    return marta, mine, theirs


@pytest.mark.django_db(transaction=True)  # the runner reopens its connection
@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("¿qué trabajos tengo?", "es"),
        ("¿cuándo viene el técnico?", "es"),
        ("when is the technician coming?", "en"),
    ],
)
def test_a_customer_asking_for_their_jobs_gets_their_upcoming_visit_and_no_one_elses(
    cast: Cast, agents: Any, account: Any, dispatched: list[Any], graph: FakeGraph,
    jobs: tuple[Customer, Job, Job], django_capture_on_commit_callbacks: Any,
    text: str, language: str,
) -> None:  # fmt: skip
    marta, mine, theirs = jobs
    reply = _turn(cast, text, django_capture_on_commit_callbacks)
    assert Conversation.objects.get(contact=SENDER).customer == marta
    start = timezone.localtime(mine.scheduled_start, zoneinfo.ZoneInfo(cast.org.timezone))
    # Written to her (issue 27.3): the visit, its day and time window, and no record numbers.
    assert "(service de split)" in reply and "#" not in reply, reply
    assert day(start.date(), language) in reply, reply
    assert "10:00" in reply and "12:00" in reply
    for secret in (f"#{theirs.pk} ", "Caldera", "Bianchi", "4444-3333"):
        assert secret not in reply, (secret, reply)
    sent = " ".join(json.dumps(request.body) for request in graph.requests)
    assert "service de split" in sent and "Bianchi" not in sent and "Caldera" not in sent
