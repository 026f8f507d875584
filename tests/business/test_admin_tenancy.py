"""The admin's tenancy chokepoint (issue 10): an organisation admin with staff status and every
model permission sees, picks and writes only their organisation's rows; superusers see all."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from business.models import (
    Absence,
    Customer,
    EscalationTicket,
    Job,
    Membership,
    Organisation,
    Payment,
    PriceItem,
    Technician,
)
from tests import factories
from tests.conftest import Cast

pytestmark = pytest.mark.django_db

FOREIGN_NAMES = ("Cliente Ajeno", "Técnico Ajeno", "Frío Norte", "intruso", "AJ999ZZ")


@dataclass
class World:
    cast: Cast
    customer: Customer
    technician: Technician
    job: Job
    foreign_customer: Customer
    foreign_technician: Technician
    foreign_job: Job


@pytest.fixture
def world(cast: Cast) -> World:
    customer = factories.make_customer(cast.org, "Cliente Propio")
    technician = factories.make_technician(cast.org, "Técnico Propio")
    foreign_customer = factories.make_customer(cast.other_org, "Cliente Ajeno")
    foreign_technician = factories.make_technician(cast.other_org, "Técnico Ajeno")
    factories.make_vehicle(cast.other_org, "AJ999ZZ", technician=foreign_technician)
    foreign_job = factories.make_job(
        cast.other_org, foreign_customer, technician=foreign_technician
    )
    invoice = factories.make_invoice(cast.other_org, foreign_customer)
    factories.make_payment(cast.other_org, invoice, "1000", reference="Cliente Ajeno")
    factories.make_absence(cast.other_org, foreign_technician, datetime.date(2030, 1, 7))
    factories.make_price_item(cast.other_org, "Cliente Ajeno carga de gas", "5000")
    EscalationTicket.objects.create(
        organisation=cast.other_org, customer=foreign_customer, reason="complaint", summary="x"
    )
    return World(
        cast=cast,
        customer=customer,
        technician=technician,
        job=factories.make_job(cast.org, customer, technician=technician),
        foreign_customer=foreign_customer,
        foreign_technician=foreign_technician,
        foreign_job=foreign_job,
    )


@pytest.fixture
def org_admin(client: Client, cast: Cast) -> Client:
    """The attacker of the issue: staff, every model permission, admin of one organisation."""
    cast.admin.is_staff = True
    cast.admin.save()
    cast.admin.user_permissions.set(Permission.objects.all())
    client.force_login(cast.admin)
    return client


@pytest.fixture
def root(client: Client) -> Client:
    client.force_login(get_user_model().objects.create_superuser("root", "r@example.com", "pw"))
    return client


def _url(model: type, view: str = "changelist", *args: Any) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def _errors(response: Any) -> dict[str, list[str]]:
    assert response.status_code == 200, response.status_code  # the form came back
    form = response.context["adminform"].form
    return {key: [e.code or "" for e in errs] for key, errs in form.errors.as_data().items()}


def _split(moment: datetime.datetime) -> dict[str, str]:
    return {"0": moment.strftime("%Y-%m-%d"), "1": moment.strftime("%H:%M:%S")}


def _stamp(name: str, moment: datetime.datetime) -> dict[str, str]:
    return {f"{name}_{part}": value for part, value in _split(moment).items()}


NOW = datetime.datetime(2030, 1, 7, 10, 0)


# --- what an organisation admin sees ---------------------------------------------------------


def test_no_changelist_shows_another_organisations_rows_even_searched(
    org_admin: Client, world: World
) -> None:
    pages = 0
    for model in admin.site._registry:
        for query in ("", "?q=Ajeno", "?q=a"):
            response = org_admin.get(_url(model) + query)
            assert response.status_code in (200, 403), (model, query, response.status_code)
            page = response.content.decode()
            leaked = [name for name in FOREIGN_NAMES if name in page]
            assert not leaked, (model, query, leaked)
            pages += response.status_code == 200
    assert pages >= 3 * 15  # the records, the users, the organisation and the copilot's


def test_every_admin_search_works_for_a_superuser(root: Client, world: World) -> None:
    for model in admin.site._registry:
        response = root.get(_url(model) + "?q=Aj")
        assert response.status_code == 200, model


def test_the_job_form_offers_only_the_organisations_technicians_and_fixes_the_organisation(
    org_admin: Client, world: World
) -> None:
    page = org_admin.get(_url(Job, "add")).content.decode()

    assert "Técnico Propio" in page
    assert "Técnico Ajeno" not in page and "Frío Norte" not in page and "AJ999ZZ" not in page
    assert 'name="organisation"' in page and "disabled" in page.split('name="organisation"')[1][:80]


def test_the_absence_form_and_filters_list_only_the_organisations_technicians(
    org_admin: Client, world: World
) -> None:
    form = org_admin.get(_url(Absence, "add")).content.decode()
    changelist = org_admin.get(_url(Job)).content.decode()

    assert "Técnico Propio" in form and "Técnico Ajeno" not in form
    assert "Técnico Propio" in changelist  # the technician filter
    assert "Técnico Ajeno" not in changelist and "Frío Norte" not in changelist


def test_customer_autocomplete_answers_only_the_organisations_customers(
    org_admin: Client, world: World
) -> None:
    response = org_admin.get(
        reverse("admin:autocomplete"),
        {"app_label": "business", "model_name": "job", "field_name": "customer", "term": "Cliente"},
    )

    assert response.status_code == 200
    assert [r["text"] for r in response.json()["results"]] == ["Cliente Propio"]


def test_the_user_admin_lists_members_only_and_keeps_superuser_status_out_of_reach(
    org_admin: Client, world: World
) -> None:
    cast = world.cast
    page = org_admin.get(_url(get_user_model())).content.decode()
    assert "gerente" in page and "intruso" not in page
    foreign = org_admin.get(_url(get_user_model(), "change", cast.outsider.pk))
    assert foreign.status_code == 302  # "does not exist" for another organisation's user

    own = org_admin.get(_url(get_user_model(), "change", cast.manager.pk)).content.decode()
    assert 'name="is_superuser"' not in own


def test_a_user_an_organisation_admin_adds_joins_their_organisation(
    org_admin: Client, world: World
) -> None:
    data = {"username": "nueva", "password1": "Unaclave-larga-9", "password2": "Unaclave-larga-9"}
    data["usable_password"] = "true"

    response = org_admin.post(_url(get_user_model(), "add"), data)

    assert response.status_code == 302
    user = get_user_model().objects.get(username="nueva")
    assert [(m.organisation, m.role) for m in Membership.objects.filter(user=user)] == [
        (world.cast.org, "operator")
    ]


def test_organisation_admins_cannot_create_organisations(org_admin: Client, world: World) -> None:
    assert org_admin.get(_url(Organisation, "add")).status_code == 403


# --- what an organisation admin writes -------------------------------------------------------


def _customer_data(**overrides: str) -> dict[str, str]:
    data = {"name": "Nuevo", "kind": "person", "cuit": "", "phone": "", "phone_alt": ""}
    data |= {"email": "", "notes": "", **_stamp("created_at", NOW)}
    return data | overrides


def test_a_new_customer_goes_to_the_admins_organisation_whatever_the_form_says(
    org_admin: Client, world: World
) -> None:
    other = world.cast.other_org
    response = org_admin.post(_url(Customer, "add"), _customer_data(organisation=str(other.pk)))

    assert response.status_code == 302
    assert Customer.objects.get(name="Nuevo").organisation == world.cast.org
    assert not Customer.objects.filter(organisation=other, name="Nuevo").exists()


def test_a_customer_does_not_move_to_another_organisation(org_admin: Client, world: World) -> None:
    url = _url(Customer, "change", world.customer.pk)
    data = _customer_data(name="Cliente Propio", organisation=str(world.cast.other_org.pk))

    assert org_admin.post(url, data).status_code == 302
    world.customer.refresh_from_db()
    assert world.customer.organisation == world.cast.org


def test_another_organisations_customer_cannot_be_opened(org_admin: Client, world: World) -> None:
    response = org_admin.get(_url(Customer, "change", world.foreign_customer.pk))
    assert response.status_code == 302  # redirected: "does not exist"


def _ticket_data(customer: Customer, **overrides: str) -> dict[str, str]:
    data = {"customer": str(customer.pk), "job": "", "priority": "normal", "reason": "complaint"}
    data |= {"summary": "Reclamo", "status": "open", "conversation_id": "", "created_by": ""}
    return data | _stamp("created_at", NOW) | overrides


def test_a_ticket_pointing_at_another_organisations_customer_is_refused(
    org_admin: Client, world: World
) -> None:
    before = EscalationTicket.objects.count()

    response = org_admin.post(_url(EscalationTicket, "add"), _ticket_data(world.foreign_customer))

    assert _errors(response) == {"customer": ["invalid_choice"]}
    assert EscalationTicket.objects.count() == before


def test_a_ticket_for_an_own_customer_is_saved_in_the_organisation(
    org_admin: Client, world: World
) -> None:
    data = _ticket_data(world.customer, created_by=str(world.cast.operator.pk))
    response = org_admin.post(_url(EscalationTicket, "add"), data)

    assert response.status_code == 302
    ticket = EscalationTicket.objects.get(summary="Reclamo")
    assert (ticket.organisation, ticket.customer) == (world.cast.org, world.customer)


def test_a_ticket_cannot_name_another_organisations_user(org_admin: Client, world: World) -> None:
    data = _ticket_data(world.customer, created_by=str(world.cast.outsider.pk))
    assert _errors(org_admin.post(_url(EscalationTicket, "add"), data)) == {
        "created_by": ["invalid_choice"]
    }


def _job_data(world: World, **overrides: str) -> dict[str, str]:
    data = {"customer": str(world.customer.pk), "address": "", "service": "Service de split"}
    data |= {"skill": "ac", "status": "scheduled", "technician": "", "vehicle": "", "notes": ""}
    data |= _stamp("scheduled_start", NOW) | _stamp("scheduled_end", NOW.replace(hour=12))
    data |= {"completed_at_0": "", "completed_at_1": ""}
    return data | _stamp("created_at", NOW) | _stamp("updated_at", NOW) | overrides


def test_a_job_with_another_organisations_customer_or_technician_is_refused(
    org_admin: Client, world: World
) -> None:
    data = _job_data(
        world,
        customer=str(world.foreign_customer.pk),
        technician=str(world.foreign_technician.pk),
    )
    before = Job.objects.count()

    errors = _errors(org_admin.post(_url(Job, "add"), data))

    assert errors == {"customer": ["invalid_choice"], "technician": ["invalid_choice"]}
    assert Job.objects.count() == before


def test_an_absence_of_another_organisations_technician_is_refused(
    org_admin: Client, world: World
) -> None:
    data = {"technician": str(world.foreign_technician.pk), "reason": "Licencia"}
    data |= {"start_date": "2030-02-01", "end_date": "2030-02-02"}

    assert _errors(org_admin.post(_url(Absence, "add"), data)) == {"technician": ["invalid_choice"]}
    assert not Absence.objects.filter(reason="Licencia").exists()


# --- superusers keep the global view, and the model still keeps records consistent ------------


def test_a_superuser_sees_every_organisation(root: Client, world: World) -> None:
    page = root.get(_url(Customer)).content.decode()
    form = root.get(_url(Job, "add")).content.decode()

    assert "Cliente Propio" in page and "Cliente Ajeno" in page
    assert "Técnico Propio" in form and "Técnico Ajeno" in form


def test_even_a_superuser_cannot_tie_a_record_to_another_organisations_rows(
    root: Client, world: World
) -> None:
    data = _job_data(world, organisation=str(world.cast.org.pk))
    data["technician"] = str(world.foreign_technician.pk)

    assert _errors(root.post(_url(Job, "add"), data)) == {"technician": ["other_organisation"]}


def test_a_superuser_picks_the_organisation_of_a_new_row(root: Client, world: World) -> None:
    other = world.cast.other_org
    response = root.post(_url(Customer, "add"), _customer_data(organisation=str(other.pk)))

    assert response.status_code == 302
    assert Customer.objects.get(name="Nuevo").organisation == other


# --- the field rules, through the admin ------------------------------------------------------


@pytest.mark.parametrize(
    ("cuit", "code"),
    [("20-12345678-0", "check_digit"), ("hola que tal", "not_digits"), ("2012345", "length")],
)
def test_the_admin_refuses_an_invalid_cuit(
    org_admin: Client, world: World, cuit: str, code: str
) -> None:
    response = org_admin.post(_url(Customer, "add"), _customer_data(cuit=cuit))

    assert _errors(response) == {"cuit": [code]}
    assert not Customer.objects.filter(name="Nuevo").exists()


def test_the_admin_formats_a_valid_cuit_and_stores_phones_in_e164(
    org_admin: Client, world: World
) -> None:
    data = _customer_data(cuit="20123456786", phone="011 4567-8901", phone_alt="+54 9 11 2345-6789")

    assert org_admin.post(_url(Customer, "add"), data).status_code == 302
    saved = Customer.objects.get(name="Nuevo")
    assert (saved.cuit, saved.phone, saved.phone_alt) == (
        "20-12345678-6",
        "+541145678901",
        "+5491123456789",
    )


@pytest.mark.parametrize(
    ("fields", "errors"),
    [
        ({"cuit": "20123456786"}, {"cuit": ["duplicate_cuit"]}),
        ({"phone": "llamame"}, {"phone": ["invalid"]}),
    ],
)
def test_the_admin_refuses_a_duplicate_cuit_and_a_bad_phone(
    org_admin: Client, world: World, fields: dict[str, str], errors: dict[str, list[str]]
) -> None:
    factories.make_customer(world.cast.org, "Ya Estaba", cuit="20-12345678-6")

    assert _errors(org_admin.post(_url(Customer, "add"), _customer_data(**fields))) == errors
    assert not Customer.objects.filter(name="Nuevo").exists()


def test_the_admin_refuses_a_negative_payment(org_admin: Client, world: World) -> None:
    invoice = factories.make_invoice(world.cast.org, world.customer)
    data = {"invoice": str(invoice.pk), "amount": "-5000", "method": "cash"}
    data |= {"received_on": "2030-01-07", "reference": ""}

    assert _errors(org_admin.post(_url(Payment, "add"), data)) == {"amount": ["min_value"]}
    assert not Payment.objects.filter(invoice=invoice).exists()


@pytest.mark.parametrize(
    ("price", "iva", "errors"),
    [
        ("-1", "21", {"unit_price": ["min_value"]}),
        ("100", "-21", {"iva_rate": ["min_value"]}),
        ("100", "30", {"iva_rate": ["max_value"]}),
    ],
)
def test_the_admin_refuses_negative_prices_and_impossible_vat(
    org_admin: Client, world: World, price: str, iva: str, errors: dict[str, list[str]]
) -> None:
    data = {"code": "nuevo", "name": "Nuevo", "name_en": "", "category": "", "keywords": ""}
    data |= {"unit_price": price, "iva_rate": iva}

    assert _errors(org_admin.post(_url(PriceItem, "add"), data)) == errors
    assert not PriceItem.objects.filter(code="nuevo").exists()


def test_the_admin_refuses_an_absence_that_ends_before_it_starts(
    org_admin: Client, world: World
) -> None:
    data = {"technician": str(world.technician.pk), "reason": "Licencia"}
    data |= {"start_date": "2030-02-10", "end_date": "2030-02-01"}

    assert _errors(org_admin.post(_url(Absence, "add"), data)) == {"end_date": ["period"]}


def test_the_admin_refuses_text_the_database_cannot_store(org_admin: Client, world: World) -> None:
    data = {"name": "Nuevo", "phone": "", "zone": "Sur", "skills": '["ac\\u0000"]'}
    data |= {"work_start": "08:00", "work_end": "17:00", "work_days": "[0, 1]", "active": "on"}

    errors = _errors(org_admin.post(_url(Technician, "add"), data))

    assert errors == {"skills": ["unstorable"]}
    assert not Technician.objects.filter(name="Nuevo").exists()


def test_the_price_list_keeps_one_code_per_organisation(org_admin: Client, world: World) -> None:
    factories.make_price_item(world.cast.org, "Carga", "100", code="carga")
    data = {"code": "carga", "name": "Otra", "name_en": "", "category": "", "keywords": ""}
    data |= {"unit_price": "10", "iva_rate": "21"}

    errors = _errors(org_admin.post(_url(PriceItem, "add"), data))

    assert errors == {"__all__": ["unique_together"]}
    assert PriceItem.objects.filter(code="carga").count() == 1


def test_a_decimal_rule_holds_for_a_superuser_too(root: Client, world: World) -> None:
    invoice = factories.make_invoice(world.cast.org, world.customer)
    data = {"invoice": str(invoice.pk), "amount": "-5000", "method": "cash"}
    data |= {"received_on": "2030-01-07", "reference": "", "organisation": str(world.cast.org.pk)}

    assert _errors(root.post(_url(Payment, "add"), data)) == {"amount": ["min_value"]}
    assert Payment.objects.filter(amount=Decimal("-5000")).count() == 0
