"""Try an utterance (D1): the reading, each step against its threshold, and what the handlers
would do — with the agent page's unsaved edits when it sends them — and nothing written."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from agents.models import Agent, ToolCall
from agents.services import agents_install_defaults
from approvals.models import PendingAction
from business.models import Job
from copilot import router_cache
from tests import factories
from tests.conftest import Cast

pytestmark = pytest.mark.django_db

BOOKING = "agendale a Juan Pérez un service de split para el lunes a las 10"


@pytest.fixture(autouse=True)
def registry(cast: Cast) -> None:
    router_cache.forget()
    agents_install_defaults(organisation=cast.org)
    factories.make_customer(cast.org, "Juan Pérez")
    factories.make_technician(cast.org, "Carlos Gómez")


def _as(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _try(user: Any, text: str, **form: Any) -> str:
    response = _as(user).post("/agents/try/", {"text": text, **form}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    return response.content.decode()


def test_it_shows_the_reading_and_what_the_handler_would_do_and_writes_nothing(
    cast: Cast,
) -> None:
    page = _try(cast.admin, BOOKING)
    assert 'data-intent="book_job"' in page and "scheduling" in page
    assert "job_book" in page and "✓" in page  # the real tool ran…
    assert not Job.objects.filter(organisation=cast.org).exists()  # …and nothing stayed
    assert not ToolCall.objects.filter(organisation=cast.org).exists()


def test_a_held_action_is_shown_but_never_filed(cast: Cast) -> None:
    customer = factories.make_customer(cast.org, "Ana Gómez")
    job = factories.make_job(cast.org, customer)
    page = _try(cast.admin, f"cancelá el trabajo #{job.pk}")
    assert 'data-intent="cancel_job"' in page
    assert "Esperaría la aprobación de un gerente." in page
    assert not PendingAction.objects.exists()
    job.refresh_from_db()
    assert job.status == Job.Status.SCHEDULED


def test_unsaved_edits_of_the_agent_page_are_what_is_tried(cast: Cast) -> None:
    scheduling = Agent.objects.get(organisation=cast.org, name="scheduling")
    intents = list(scheduling.intents.all())
    form: dict[str, Any] = {
        "with_edits": "1",
        "name": "scheduling",
        "min_confidence": "0,999",  # as typed in a Spanish admin
        "enabled": "on",
        "intents-TOTAL_FORMS": str(len(intents)),
    }
    for i, intent in enumerate(intents):
        form[f"intents-{i}-name"] = intent.name
        form[f"intents-{i}-examples_es"] = intent.examples_es
        form[f"intents-{i}-examples_en"] = intent.examples_en
    page = _try(cast.admin, BOOKING, **form)
    assert "con los cambios sin guardar de esta página" in page
    assert ">0,999 " in page  # the edited threshold, unsaved
    scheduling.refresh_from_db()
    assert scheduling.min_confidence != 0.999  # nothing saved

    form["enabled"] = ""  # switched off on the page: its intents are not learnt for this try
    page = _try(cast.admin, BOOKING, **form)
    assert 'data-intent="book_job"' not in page
    assert Agent.objects.get(pk=scheduling.pk).enabled


def test_only_admins_of_the_organisation_try(cast: Cast) -> None:
    assert _as(cast.operator).post("/agents/try/", {"text": BOOKING}).status_code == 403
    assert _as(cast.manager).post("/agents/try/", {"text": BOOKING}).status_code == 403
    # An admin of another organisation tries against their own registry, never ours.
    page = _as(cast.outsider).post("/agents/try/", {"text": BOOKING}, HTTP_HX_REQUEST="true")
    assert page.status_code == 200
    assert "al menos dos intenciones" in page.content.decode()  # none installed
    agents_install_defaults(organisation=cast.other_org)
    body = _try(cast.outsider, BOOKING)
    assert 'data-intent="book_job"' in body
    assert "customer #" not in body  # our Juan Pérez is not theirs to find
    assert "No encontré ningún cliente «Juan Pérez»" in body  # theirs has no Juan Pérez
    assert not Job.objects.exists()


def test_bad_text_gets_a_clear_error(cast: Cast) -> None:
    page = _try(cast.admin, "hola\x00")
    assert "Ese texto no se puede probar" in page


def test_the_agent_page_has_the_box(cast: Cast) -> None:
    from django.contrib.auth.models import Permission

    cast.admin.is_staff = True
    cast.admin.save()
    cast.admin.user_permissions.set(Permission.objects.all())
    scheduling = Agent.objects.get(organisation=cast.org, name="scheduling")
    page = _as(cast.admin).get(f"/admin/agents/agent/{scheduling.pk}/change/").content.decode()
    assert 'id="try-utterance"' in page and "js/try.js" in page
    assert 'data-agent="scheduling"' in page  # the name is read-only there: the box sends it
