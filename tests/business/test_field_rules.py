"""The field rules live in the model layer (issue 10): services, forms and the admin judge a CUIT,
a phone, an amount, a rate and a period alike; bad query parameters never reach the database."""

from __future__ import annotations

import datetime
import importlib
from decimal import Decimal
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth.models import Permission
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from business import services
from business.models import Absence, Customer, Job, Payment, PriceItem, QuoteLine, Technician
from tests import factories
from tests.conftest import Cast

pytestmark = pytest.mark.django_db


def _codes(record: Any) -> dict[str, list[str]]:
    with pytest.raises(ValidationError) as exc:
        record.full_clean()
    return {key: [e.code or "" for e in errs] for key, errs in exc.value.error_dict.items()}


def test_a_payment_must_be_positive(cast: Cast) -> None:
    customer = factories.make_customer(cast.org)
    invoice = factories.make_invoice(cast.org, customer)
    payment = Payment(organisation=cast.org, invoice=invoice, amount=Decimal("-5000"))

    assert _codes(payment) == {"amount": ["min_value"]}
    with pytest.raises(ValidationError):
        services.payment_record(organisation=cast.org, invoice=invoice, amount="-5000")
    assert not Payment.objects.exists()


def test_prices_and_rates_are_bounded(cast: Cast) -> None:
    item = PriceItem(organisation=cast.org, code="x", name="X", unit_price=Decimal("-1"))
    item.iva_rate = Decimal("28")
    line = QuoteLine(description="x", quantity=Decimal("0"), unit_price=Decimal("-3"))
    line.iva_rate = Decimal("-1")

    assert _codes(item) == {"unit_price": ["min_value"], "iva_rate": ["max_value"]}
    codes = _codes(line)
    assert {key: codes[key] for key in ("quantity", "unit_price", "iva_rate")} == {
        "quantity": ["min_value"],
        "unit_price": ["min_value"],
        "iva_rate": ["min_value"],
    }


def test_an_exempt_and_a_27_percent_rate_are_valid(cast: Cast) -> None:
    for rate in ("0", "27"):
        PriceItem(
            organisation=cast.org, code="x", name="X", unit_price=1, iva_rate=rate
        ).full_clean()


def test_periods_run_forwards(cast: Cast) -> None:
    technician = factories.make_technician(cast.org)
    absence = Absence(organisation=cast.org, technician=technician)
    absence.start_date, absence.end_date = datetime.date(2030, 2, 10), datetime.date(2030, 2, 1)
    technician.work_start, technician.work_end = datetime.time(18), datetime.time(8)

    assert _codes(absence) == {"end_date": ["period"]}
    assert _codes(technician) == {"work_end": ["period"]}
    with pytest.raises(ValidationError):
        services.technician_absence_record(
            organisation=cast.org,
            technician=technician,
            start_date=absence.start_date,
            end_date=absence.end_date,
        )


def test_a_record_pointing_at_another_organisation_is_invalid(cast: Cast) -> None:
    foreign = factories.make_customer(cast.other_org, "Ajeno")
    start = datetime.datetime(2030, 1, 7, 10, tzinfo=datetime.UTC)
    job = Job(organisation=cast.org, customer=foreign, service="x", scheduled_start=start)
    job.scheduled_end = start - datetime.timedelta(hours=1)

    codes = _codes(job)

    assert codes["customer"] == ["other_organisation"]


@pytest.mark.parametrize(
    ("cuit", "code"),
    [("20-12345678-0", "check_digit"), ("basura", "not_digits"), ("99-12345678-6", "prefix")],
)
def test_the_same_cuit_rule_for_the_model_and_the_service(cast: Cast, cuit: str, code: str) -> None:
    customer = Customer(organisation=cast.org, name="X", cuit=cuit)

    assert _codes(customer) == {"cuit": [code]}
    with pytest.raises(ValidationError) as exc:
        services.customer_create(organisation=cast.org, name="X", cuit=cuit)
    assert exc.value.error_dict["cuit"][0].code == code


def test_the_model_stores_phones_as_the_services_do(cast: Cast) -> None:
    customer = Customer(organisation=cast.org, name="X", phone="+54 9 11 4512-3387")
    customer.phone_alt = "011 4567-8901"
    customer.full_clean()
    made = services.customer_create(organisation=cast.org, name="Y", phone="+54 9 11 4512-3387")

    assert (customer.phone, customer.phone_alt) == ("+5491145123387", "+541145678901")
    assert made.phone == customer.phone


def test_the_migration_puts_existing_phones_in_e164(cast: Cast) -> None:
    readable = factories.make_customer(cast.org, "Legible", phone="+54 9 11 4512-3387")
    odd = factories.make_technician(cast.org, "Raro", phone="interno 12")
    migration = importlib.import_module("business.migrations.0002_field_rules")

    migration.phones_to_e164(apps, None)

    readable.refresh_from_db()
    odd.refresh_from_db()
    assert readable.phone == "+5491145123387"
    assert odd.phone == "interno 12"  # left for a person to fix


# --- bad query parameters --------------------------------------------------------------------


@pytest.fixture
def operator(client: Client, cast: Cast) -> Client:
    client.force_login(cast.operator)
    return client


def test_a_nul_in_the_customer_search_is_ignored_with_a_message(
    operator: Client, cast: Cast
) -> None:
    factories.make_customer(cast.org, "Juan Pérez")

    response = operator.get(reverse("customers"), {"q": "Juan\x00"}, HTTP_ACCEPT_LANGUAGE="en")

    assert response.status_code == 200
    assert "cannot be searched for" in response.content.decode()
    assert "Juan Pérez" in response.content.decode()  # the search was dropped, not the page


def test_a_date_out_of_the_calendar_is_ignored_with_a_message(operator: Client, cast: Cast) -> None:
    response = operator.get(reverse("jobs"), {"date": "9999-12-31"}, HTTP_ACCEPT_LANGUAGE="en")

    assert response.status_code == 200
    assert "Pick a date between 1900 and 2999." in response.content.decode()


def test_a_phone_search_finds_the_e164_number_by_its_local_digits(
    operator: Client, cast: Cast
) -> None:
    factories.make_customer(cast.org, "Con Celular", phone="+5491145678901")

    for query in ("4567-8901", "011 4567 8901", "+54 9 11 4567-8901"):
        page = operator.get(reverse("customers"), {"q": query}).content.decode()
        assert "Con Celular" in page, query


def test_a_nul_in_an_admin_search_is_ignored(client: Client, cast: Cast) -> None:
    cast.admin.is_staff = True
    cast.admin.save()
    cast.admin.user_permissions.set(Permission.objects.all())
    client.force_login(cast.admin)

    for model in (Customer, Technician):
        url = reverse(f"admin:business_{model._meta.model_name}_changelist")
        assert client.get(url, {"q": "\x00", "organisation__id__exact": "\x00"}).status_code == 200
