"""Org-scoped reads: access chokepoints, search, open work, balances and proactive targets."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pytest
from django.contrib.auth.models import AnonymousUser
from django.utils import timezone

from business import selectors, services
from business.models import (
    Customer,
    Equipment,
    EscalationTicket,
    Invoice,
    Job,
    Quote,
    Technician,
    Vehicle,
)
from tests import factories
from tests.business.conftest import at

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("english")]


# --- get_<obj>_for_user ----------------------------------------------------------------------


def _one_of_each(org) -> dict[str, object]:
    customer = factories.make_customer(org)
    return {
        "customer": customer,
        "technician": factories.make_technician(org),
        "vehicle": factories.make_vehicle(org),
        "job": factories.make_job(org, customer),
        "equipment": factories.make_equipment(org, customer),
        "quote": Quote.objects.create(organisation=org, customer=customer, number="P-000001"),
        "invoice": factories.make_invoice(org, customer),
        "ticket": EscalationTicket.objects.create(
            organisation=org, reason="complaint", summary="Tarde"
        ),
    }


GETTERS = {
    "customer": (selectors.get_customer_for_user, Customer),
    "technician": (selectors.get_technician_for_user, Technician),
    "vehicle": (selectors.get_vehicle_for_user, Vehicle),
    "job": (selectors.get_job_for_user, Job),
    "equipment": (selectors.get_equipment_for_user, Equipment),
    "quote": (selectors.get_quote_for_user, Quote),
    "invoice": (selectors.get_invoice_for_user, Invoice),
    "ticket": (selectors.get_ticket_for_user, EscalationTicket),
}


@pytest.mark.parametrize("name", sorted(GETTERS))
def test_get_for_user_serves_members_and_hides_from_everyone_else(cast, name: str) -> None:
    obj = _one_of_each(cast.org)[name]
    getter, model = GETTERS[name]
    for member in (cast.operator, cast.manager, cast.admin):
        assert getter(member, obj.pk) == obj  # type: ignore[attr-defined]
    for stranger in (cast.outsider, AnonymousUser()):
        with pytest.raises(model.DoesNotExist):
            getter(stranger, obj.pk)  # type: ignore[attr-defined]
    with pytest.raises(model.DoesNotExist):
        getter(cast.operator, 987654)


def test_membership_and_organisations_for_user(cast) -> None:
    assert selectors.membership_for_user(cast.manager).role == "manager"
    assert list(selectors.organisations_for_user(cast.outsider)) == [cast.other_org]
    assert selectors.membership_for_user(AnonymousUser()) is None


# --- customers_search ------------------------------------------------------------------------


def names(customers: list[Customer]) -> list[str]:
    return [c.name for c in customers]


def test_customers_search_ignores_accents_and_case(org) -> None:
    factories.make_customer(org, "Juan Pérez")
    factories.make_customer(org, "MARÍA NÚÑEZ")
    factories.make_customer(org, "Pedro Gómez")
    assert names(selectors.customers_search(org, "perez")) == ["Juan Pérez"]
    assert names(selectors.customers_search(org, "PÉREZ")) == ["Juan Pérez"]
    assert names(selectors.customers_search(org, "maria nunez")) == ["MARÍA NÚÑEZ"]
    assert names(selectors.customers_search(org, "gomez pedro")) == ["Pedro Gómez"]


def test_customers_search_ranks_exact_then_prefix_then_contains(org) -> None:
    factories.make_customer(org, "Mariana Sosa")
    factories.make_customer(org, "Ana María López")
    factories.make_customer(org, "Ana")
    factories.make_customer(org, "Susana Ruiz")
    assert names(selectors.customers_search(org, "ana")) == [
        "Ana",
        "Ana María López",
        "Mariana Sosa",
        "Susana Ruiz",
    ]
    assert names(selectors.customers_search(org, "ana", limit=2)) == ["Ana", "Ana María López"]


def test_customers_search_by_phone_cuit_email_and_address(org) -> None:
    stored = factories.make_customer(org, "Normalizado", phone="+541145678901")
    formatted = factories.make_customer(org, "Formateado", phone="11 4567-8901")
    company = factories.make_customer(org, "Frigorífico SA", cuit="30-71234567-1")
    mail = factories.make_customer(org, "Con Mail", email="compras@frigo.com.ar")
    street = services.customer_create(
        organisation=org, name="Vecina", street="Av. Hipólito Yrigoyen 500", city="Lanús"
    )
    assert set(names(selectors.customers_search(org, "4567-8901"))) == {
        "Normalizado",
        "Formateado",
    }
    same_number = selectors.customers_search(org, "+54 11 4567 8901")
    assert set(same_number) == {stored, formatted}  # the same national number, both exact
    assert selectors.customers_search(org, "011 4567-8902") == []
    assert selectors.customers_search(org, "30712345671") == [company]
    assert selectors.customers_search(org, "compras@frigo.com.ar") == [mail]
    assert selectors.customers_search(org, "hipolito yrigoyen") == [street]
    assert selectors.customers_search(org, "vecina lanus") == [street]
    assert selectors.customers_search(org, "vecina quilmes") == []


def test_customers_search_stays_inside_the_organisation(cast) -> None:
    factories.make_customer(cast.other_org, "Juan Pérez", phone="+541145678901")
    assert selectors.customers_search(cast.org, "perez") == []
    assert selectors.customers_search(cast.org, "45678901") == []
    assert selectors.customers_search(cast.org, "") == []
    assert selectors.customers_search(cast.org, "a") == []


# --- Jobs --------------------------------------------------------------------------------------


def test_open_jobs_filters_by_day_technician_zone_and_trade(cast, monday) -> None:
    org = cast.org
    south = factories.make_customer(org, "Sur", zone="Sur")
    north = factories.make_customer(org, "Norte", zone="zona norte")
    tech = factories.make_technician(org)
    tuesday = monday + datetime.timedelta(days=1)
    a = factories.make_job(org, south, at(monday, 9), technician=tech)
    b = factories.make_job(org, north, at(monday, 23, 30), skill="gas")
    c = factories.make_job(org, south, at(tuesday, 9))
    factories.make_job(org, south, at(monday, 11), status=Job.Status.DONE)
    factories.make_job(org, south, at(monday, 12), status=Job.Status.CANCELLED)
    factories.make_job(cast.other_org, factories.make_customer(cast.other_org), at(monday, 9))
    assert list(selectors.open_jobs(org)) == [a, b, c]
    assert list(selectors.open_jobs(org, day=monday)) == [a, b]
    assert list(selectors.open_jobs(org, day=monday, day_to=tuesday)) == [a, b, c]
    assert list(selectors.open_jobs(org, technician=tech)) == [a]
    assert list(selectors.open_jobs(org, zone="Norte")) == [b]
    assert list(selectors.open_jobs(org, zone="zona sur")) == [a, c]
    assert list(selectors.open_jobs(org, skill="gas")) == [b]
    assert list(selectors.open_jobs(org, customer=north)) == [b]


def test_jobs_for_customer_newest_first(cast, monday) -> None:
    customer = factories.make_customer(cast.org)
    old = factories.make_job(cast.org, customer, at(monday, 9), status=Job.Status.DONE)
    new = factories.make_job(cast.org, customer, at(monday + datetime.timedelta(days=3), 9))
    assert list(selectors.jobs_for_customer(cast.org, customer)) == [new, old]
    assert list(selectors.jobs_for_customer(cast.org, customer, open_only=True)) == [new]
    assert list(selectors.jobs_for_customer(cast.other_org, customer)) == []


def test_technician_jobs_between_returns_overlaps(org, monday) -> None:
    tech = factories.make_technician(org)
    customer = factories.make_customer(org)
    early = factories.make_job(org, customer, at(monday, 8), technician=tech)
    factories.make_job(org, customer, at(monday, 10), technician=tech, status=Job.Status.CANCELLED)
    late = factories.make_job(org, customer, at(monday, 12), technician=tech)
    window = (at(monday, 9), at(monday, 12, 30))
    assert list(selectors.technician_jobs_between(org, tech, *window)) == [early, late]
    assert len(selectors.technician_jobs_between(org, tech, *window, open_only=False)) == 3


# --- Money -------------------------------------------------------------------------------------


def test_invoices_with_balance_sums_what_is_owed_and_since_when(cast) -> None:
    org = cast.org
    ana, beto = factories.make_customer(org, "Ana"), factories.make_customer(org, "Beto")
    old = factories.make_invoice(org, ana, Decimal("1000"), issued_on=datetime.date(2026, 9, 1))
    factories.make_payment(org, old, "210")
    recent = factories.make_invoice(org, ana, Decimal("100"), issued_on=datetime.date(2026, 11, 1))
    paid = factories.make_invoice(org, beto, Decimal("50"), issued_on=datetime.date(2026, 8, 1))
    factories.make_payment(org, paid, "60.50")
    factories.make_invoice(org, beto, Decimal("500"), status=Invoice.Status.VOID)
    factories.make_invoice(cast.other_org, factories.make_customer(cast.other_org))
    balances = selectors.invoices_with_balance(org)
    assert [row.invoice for row in balances.rows] == [old, recent]
    assert balances.owed == Decimal("1121.00")
    assert balances.owed_since == datetime.date(2026, 9, 1)
    assert selectors.invoices_with_balance(org, customer=beto).owed == Decimal("0.00")
    assert selectors.invoices_with_balance(org, customer=beto).owed_since is None
    debtors = selectors.debtors(org)
    assert [(d.customer, d.owed) for d in debtors] == [(ana, Decimal("1121.00"))]


def test_balances_read_lines_and_payments_once_however_many_invoices(
    cast, django_assert_num_queries
) -> None:
    """Three statements (invoices with their customers, all their lines, all their payments)
    for any number of invoices; the rows' totals come from the prefetched lists, which are
    plain lists (Prefetch to_attr), not a related queryset built per invoice."""
    org = cast.org
    for index in range(6):
        customer = factories.make_customer(org, f"Cliente {index}")
        invoice = factories.make_invoice(org, customer, Decimal("100") * (index + 1))
        factories.make_payment(org, invoice, "10")
    with django_assert_num_queries(3):
        balances = selectors.invoices_with_balance(org)
        assert balances.owed == Decimal("121") * 21 - Decimal("60")
        for row in balances.rows:
            assert isinstance(row.invoice.line_items(), list)
            assert row.invoice.payment_items()[0].amount == Decimal("10")
            assert row.invoice.totals()["total"] == row.total


# --- Proactive ---------------------------------------------------------------------------------


def test_maintenance_due_lists_past_and_near_service_dates(org, monday) -> None:
    customer = factories.make_customer(org, "Ana")
    booked = factories.make_customer(org, "Con turno")
    today = datetime.date(2026, 11, 22)
    overdue = factories.make_equipment(org, customer, last_service_on=datetime.date(2025, 10, 1))
    soon = factories.make_equipment(org, customer, installed_on=datetime.date(2025, 12, 10))
    factories.make_equipment(org, customer, last_service_on=datetime.date(2026, 6, 1))
    factories.make_equipment(org, customer)  # no dates: no due date
    factories.make_equipment(org, booked, last_service_on=datetime.date(2025, 1, 1))
    factories.make_job(org, booked, at(monday, 9), skill="ac")
    due = selectors.maintenance_due(org, on=today, within_days=30)
    assert [(d.equipment, d.due_on) for d in due] == [
        (overdue, datetime.date(2026, 10, 1)),
        (soon, datetime.date(2026, 12, 10)),
    ]
    assert due[0].days_overdue == 52 and due[1].days_overdue == -18
    assert len(selectors.maintenance_due(org, on=today, exclude_booked=False)) == 3


def test_the_dashboards_overdue_equipment_is_the_copilots_overdue(org, monday) -> None:
    """One definition: past its service date (not due today, not due soon), and no open job of
    its trade booked for the customer — what maintenance_due counts as overdue."""
    customer = factories.make_customer(org, "Ana")
    booked = factories.make_customer(org, "Con turno")
    today = datetime.date(2026, 11, 22)
    overdue = factories.make_equipment(org, customer, last_service_on=datetime.date(2025, 10, 1))
    factories.make_equipment(org, customer, last_service_on=datetime.date(2025, 11, 22))  # today
    factories.make_equipment(org, customer, installed_on=datetime.date(2025, 12, 10))  # soon
    factories.make_equipment(org, booked, last_service_on=datetime.date(2025, 1, 1))
    heater = factories.make_equipment(
        org, booked, kind="Caldera", skill="heating", last_service_on=datetime.date(2025, 1, 1)
    )
    factories.make_job(org, booked, at(monday, 9), skill="ac")  # the AC is taken care of
    shown = selectors.overdue_equipment(org, today)
    copilot = [d.equipment for d in selectors.maintenance_due(org, on=today) if d.days_overdue > 0]
    assert shown == copilot == [heater, overdue]


def test_recently_completed_jobs_without_follow_up(cast) -> None:
    org = cast.org
    customer = factories.make_customer(org)
    now = timezone.now()
    recent = factories.make_job(org, customer, status=Job.Status.DONE)
    recent.completed_at = now - datetime.timedelta(days=3)
    recent.save()
    followed = factories.make_job(org, customer, status=Job.Status.DONE, completed_at=now)
    services.job_follow_up_record(organisation=org, job=followed, note="Conforme")
    factories.make_job(
        org, customer, status=Job.Status.DONE, completed_at=now - datetime.timedelta(days=20)
    )
    factories.make_job(org, customer)  # still open
    assert list(selectors.recently_completed_jobs(org, now=now)) == [recent]
    assert list(selectors.recently_completed_jobs(cast.other_org, now=now)) == []


def test_seasonal_targets_follow_the_southern_hemisphere(org) -> None:
    customer = factories.make_customer(org)
    stale_ac = factories.make_equipment(org, customer, last_service_on=datetime.date(2025, 12, 1))
    never_ac = factories.make_equipment(org, customer)
    factories.make_equipment(org, customer, last_service_on=datetime.date(2026, 3, 1))
    boiler = factories.make_equipment(org, customer, kind="Caldera", skill="heating")
    heater = factories.make_equipment(
        org, customer, kind="Calefactor", skill="gas", last_service_on=datetime.date(2025, 4, 1)
    )
    spring = selectors.seasonal_targets(org, datetime.date(2026, 11, 22))
    assert [(t.equipment, t.campaign) for t in spring] == [
        (never_ac, "summer_ac"),
        (stale_ac, "summer_ac"),
    ]
    autumn = selectors.seasonal_targets(org, datetime.date(2027, 4, 10))
    assert [t.equipment for t in autumn] == [boiler, heater]
    assert {t.campaign for t in autumn} == {"winter_heating"}
    assert selectors.seasonal_targets(org, datetime.date(2027, 7, 1)) == []
    assert selectors.seasonal_campaign(datetime.date(2027, 7, 1)) is None
