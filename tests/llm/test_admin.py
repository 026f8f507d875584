"""Admin for the model seam: provider settings with a write-only key, prices, read-only calls."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from llm.models import ModelCall, ModelPrice, ProviderSettings
from tests.conftest import Cast

pytestmark = pytest.mark.django_db

KEY = "sk-live-abcdef0123456789"


def _settings_row(organisation: Any, key: str = KEY) -> ProviderSettings:
    row = ProviderSettings(organisation=organisation, default_model="gpt-4o-mini")
    row.api_key = key
    row.save()
    return row


def _form(organisation: Any, **changes: str) -> dict[str, str]:
    """What the provider settings form posts when the user leaves everything else as is."""
    data = {
        "organisation": str(organisation.pk),
        "base_url": "",
        "default_model": "gpt-4o-mini",
        "api_key": "",
        "timeout_s": "",
        "max_retries": "",
        "retry_budget_s": "",
    }
    return {**data, **changes}


def _change_url(row: ProviderSettings) -> str:
    return reverse("admin:llm_providersettings_change", args=[row.pk])


def test_pages_render_for_a_superuser(client: Client, superuser: Any, cast: Cast) -> None:
    row = _settings_row(cast.org)
    call = ModelCall.objects.create(
        organisation=cast.org, purpose="agent", model="gpt-4o-mini", tokens_in=3, cost=Decimal(1)
    )
    client.force_login(superuser)

    for name in ("providersettings", "modelprice", "modelcall"):
        response = client.get(reverse(f"admin:llm_{name}_changelist"))
        assert response.status_code == 200, name
    assert client.get(reverse("admin:llm_providersettings_add")).status_code == 200
    page = client.get(_change_url(row)).content.decode()
    # The admin speaks es-AR by default.
    assert "clave cargada" in page and KEY not in page and row.api_key_encrypted not in page
    call_page = client.get(reverse("admin:llm_modelcall_change", args=[call.pk]))
    assert call_page.status_code == 200
    assert 'name="_save"' not in call_page.content.decode()  # read-only
    prices = client.get(reverse("admin:llm_modelprice_changelist")).content.decode()
    assert "gpt-4o-mini" in prices


def test_the_key_is_write_only(client: Client, staff_admin: Any, cast: Cast) -> None:
    row = _settings_row(cast.org)
    client.force_login(staff_admin)
    url = _change_url(row)
    page = client.get(url).content.decode()
    assert 'name="api_key"' in page and KEY not in page  # an empty field, never the key

    data = _form(cast.org, default_model="gpt-4.1-mini")
    assert client.post(url, data).status_code == 302  # blank keeps the stored key
    row.refresh_from_db()
    assert row.api_key == KEY and row.default_model == "gpt-4.1-mini"

    data["api_key"] = "  sk-replacement  "
    assert client.post(url, data).status_code == 302
    row.refresh_from_db()
    assert row.api_key == "sk-replacement"

    data["api_key"], data["clear_api_key"] = "", "on"
    assert client.post(url, data).status_code == 302
    row.refresh_from_db()
    assert not row.has_api_key
    listing = client.get(reverse("admin:llm_providersettings_changelist"))
    assert "sin clave" in listing.content.decode()


def test_an_organisation_admin_adds_settings_only_for_their_organisation(
    client: Client, staff_admin: Any, cast: Cast
) -> None:
    client.force_login(staff_admin)
    url = reverse("admin:llm_providersettings_add")
    assert client.get(url).status_code == 200
    data = _form(cast.other_org, api_key=KEY, timeout_s="15")

    response = client.post(url, data)

    # The organisation comes from the user, never from the form: the other one's id is ignored.
    assert response.status_code == 302
    assert not ProviderSettings.objects.filter(organisation=cast.other_org).exists()
    row = ProviderSettings.objects.get(organisation=cast.org)
    assert row.api_key == KEY and row.timeout_s == 15.0
    again = client.post(url, data)  # one row per organisation: a second is refused, not a 500
    assert again.status_code == 200 and "organisation" in again.context["adminform"].form.errors


def test_an_outsider_never_sees_another_organisations_settings_or_calls(
    client: Client, cast: Cast
) -> None:
    row = _settings_row(cast.org)
    ModelCall.objects.create(organisation=cast.org, purpose="agent", model="secret-model")
    cast.outsider.is_staff = True
    cast.outsider.save()
    client.force_login(cast.outsider)

    listing = client.get(reverse("admin:llm_providersettings_changelist"))
    assert listing.status_code == 200 and list(listing.context["cl"].result_list) == []
    assert client.get(_change_url(row)).status_code == 302  # "does not exist" redirect
    calls = client.get(reverse("admin:llm_modelcall_changelist"))
    assert calls.status_code == 200 and list(calls.context["cl"].result_list) == []


def test_an_operator_with_staff_flag_cannot_open_the_provider_settings(
    client: Client, cast: Cast
) -> None:
    row = _settings_row(cast.org)
    cast.operator.is_staff = True
    cast.operator.save()
    client.force_login(cast.operator)

    assert client.get(reverse("admin:llm_providersettings_changelist")).status_code == 403
    assert client.get(_change_url(row)).status_code in (302, 403)


def test_prices_are_editable(client: Client, superuser: Any) -> None:
    price = ModelPrice.objects.get(model_prefix="gpt-4o-mini")
    client.force_login(superuser)
    url = reverse("admin:llm_modelprice_change", args=[price.pk])
    assert client.get(url).status_code == 200
    data = {"model_prefix": "gpt-4o-mini", "input_per_million": "0.2", "output_per_million": "0.6"}

    assert client.post(url, data).status_code == 302
    price.refresh_from_db()
    assert price.input_per_million == Decimal("0.2")
