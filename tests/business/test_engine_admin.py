"""The organisation admin says which engine turns really run (issue 4, point 8)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from business.models import Organisation
from llm.models import ProviderSettings
from tests.conftest import Cast

pytestmark = pytest.mark.django_db


@pytest.fixture
def superuser_client(client: Client) -> Client:
    user = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(user)
    return client


def _page(client: Client, org: Organisation) -> str:
    url = reverse("admin:business_organisation_change", args=[org.pk])
    response = client.get(url, HTTP_ACCEPT_LANGUAGE="en")
    assert response.status_code == 200
    return response.content.decode()


def test_an_llm_organisation_without_a_key_is_shown_running_embedded(
    cast: Cast, superuser_client: Client, settings: Any
) -> None:
    settings.OPENAI_API_KEY = ""
    cast.org.engine = Organisation.Engine.LLM
    cast.org.save()

    page = _page(superuser_client, cast.org)

    assert "Embedded (offline) (no API key is set)" in page
    assert 'name="engine"' in page  # the choice itself stays editable


def test_with_the_organisations_own_key_the_chosen_engine_runs(
    cast: Cast, superuser_client: Client, settings: Any
) -> None:
    settings.OPENAI_API_KEY = ""
    cast.org.engine = Organisation.Engine.HYBRID
    cast.org.save()
    own = ProviderSettings(organisation=cast.org, base_url="http://127.0.0.1:9/v1")
    own.api_key = "sk-own"
    own.save()

    page = _page(superuser_client, cast.org)

    assert "no API key is set" not in page
    assert ">Hybrid<" in page
