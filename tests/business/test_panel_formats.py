"""One phone format and one address format on every page, and the admin's model names in the
office's language (issue 16.7)."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib import admin
from django.test import Client
from django.urls import reverse
from django.utils.translation import override

from business.models import Address
from business.templatetags.capataz import address_line, phone
from business.validators import format_phone
from tests import factories
from tests.conftest import Cast
from tests.panel_i18n import spanish_catalogue  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        ("+541145678901", "+54 11 4567-8901"),
        ("+5491155550000", "+54 9 11 5555-0000"),
        ("+543514567890", "+54 351 456-7890"),
        ("+542966123456", "+54 2966 12-3456"),
        ("+34911234567", "+34911234567"),  # not Argentine: as stored
        ("", ""),
        ("011 4567-8901", "011 4567-8901"),  # not E.164 (an old row): as it is, never mangled
    ],
)
def test_a_phone_is_shown_one_way(stored: str, shown: str) -> None:
    assert format_phone(stored) == shown
    assert phone(stored) == shown


def test_an_address_in_caba_does_not_say_caba_twice(cast: Cast) -> None:
    customer = factories.make_customer(cast.org, "Rocío Almada", zone="CABA")
    address = Address.objects.get(customer=customer)
    address.street, address.unit, address.city = "Av. Cabildo 3500", "4B", "CABA"
    assert str(address) == "Av. Cabildo 3500 4B, CABA"
    address.zone = "Belgrano"
    assert address_line(address) == "Av. Cabildo 3500 4B, CABA (Belgrano)"
    address.zone = "caba"  # the same place, however it is written
    assert address_line(address) == "Av. Cabildo 3500 4B, CABA"
    assert address_line(None) == ""


def test_the_customer_pages_show_the_one_phone_format(client: Client, cast: Cast) -> None:
    customer = factories.make_customer(cast.org, "Gómez", phone="+541145678901", zone="CABA")
    client.force_login(cast.operator)
    detail = client.get(reverse("customer_detail", args=[customer.pk])).content.decode()
    listing = client.get(reverse("customers")).content.decode()
    for page in (detail, listing):
        assert "+54 11 4567-8901" in page and "+541145678901" not in page
    assert "CABA (CABA)" not in detail


ADMIN_APPS = {"agents", "approvals", "business", "copilot", "llm"}


def test_every_model_in_the_admin_has_a_translatable_name() -> None:
    shown = [m for m in admin.site._registry if m._meta.app_label in ADMIN_APPS]
    assert shown
    for model in shown:
        meta = model._meta
        for name in (meta.verbose_name, meta.verbose_name_plural):
            # gettext_lazy: a lazy object, not the class name Django makes up by itself.
            assert type(name).__name__ == "__proxy__", f"{meta.label}: {name!r}"


@pytest.mark.usefixtures("spanish_catalogue")
def test_the_admin_names_read_in_spanish() -> None:
    with override("es-ar"):
        assert str(apps.get_model("copilot", "AgentRun")._meta.verbose_name_plural) == (
            "ejecuciones de agentes"
        )
        assert str(apps.get_model("business", "Job")._meta.verbose_name_plural) == "trabajos"
    with override("en"):
        assert str(apps.get_model("copilot", "AgentRun")._meta.verbose_name_plural) == (
            "agent runs"
        )


@pytest.mark.usefixtures("spanish_catalogue")
def test_the_admin_index_lists_the_models_in_spanish(client: Client, cast: Cast) -> None:
    cast.admin.is_staff = cast.admin.is_superuser = True  # sees every model in the index
    cast.admin.save(update_fields=["is_staff", "is_superuser"])
    client.force_login(cast.admin)
    response = client.get(reverse("admin:index"), HTTP_ACCEPT_LANGUAGE="es-ar")
    assert response.status_code == 200
    page = response.content.decode()
    assert "Ejecuciones de agentes" in page and "Agent runs" not in page
