"""Every write service: the happy path and each error a user can hit, asserting that a failed
call leaves the records exactly as they were."""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import translation

from business import services
from business.models import (
    Absence,
    Address,
    Customer,
    EscalationTicket,
    Invoice,
    Job,
    JobEvent,
    Payment,
    Quote,
)
from business.services import LineInput
from business.validators import normalise_phone
from tests import factories
from tests.business.conftest import at

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("english")]

VALID_CUIT = "20123456786"
COMPANY_CUIT = "30-71234567-1"


def snapshot() -> dict[str, int]:
    models = (Customer, Address, Job, JobEvent, Absence, Quote, Invoice, Payment, EscalationTicket)
    return {model.__name__: model.objects.count() for model in models}


def errors(exc: pytest.ExceptionInfo[ValidationError]) -> dict[str, list[str]]:
    return exc.value.message_dict


def codes(exc: pytest.ExceptionInfo[ValidationError], field: str) -> list[str | None]:
    return [e.code for e in exc.value.error_dict[field]]


# --- Customers -------------------------------------------------------------------------------


def test_customer_create_normalises_and_places_the_address(org) -> None:
    customer = services.customer_create(
        organisation=org,
        name="  María   Gómez ",
        phone="011 4567-8901",
        email="Maria@Example.com",
        street="Av. Hipólito Yrigoyen 1234",
        city="Lanús",
    )
    assert customer.name == "María Gómez"
    assert customer.phone == "+541145678901"
    assert customer.email == "maria@example.com"
    address = customer.primary_address
    assert address is not None and (address.zone, address.city) == ("Sur", "Lanús")


def test_customer_create_company_stores_formatted_cuit(org) -> None:
    customer = services.customer_create(
        organisation=org, name="Frigorífico SA", kind="company", cuit="30.71234567.1"
    )
    assert customer.cuit == COMPANY_CUIT
    assert customer.kind == Customer.Kind.COMPANY
    assert customer.addresses.count() == 0


@pytest.mark.parametrize(
    ("kwargs", "field", "code"),
    [
        ({"name": "  "}, "name", "required"),
        ({"cuit": "20-12345678-0"}, "cuit", "check_digit"),
        ({"cuit": "1234"}, "cuit", "length"),
        ({"cuit": "99-12345678-6"}, "cuit", "prefix"),
        ({"email": "no-es-un-mail"}, "email", "invalid"),
        ({"phone": "llamame"}, "phone", "invalid"),
        ({"phone": "123"}, "phone", "invalid"),
        ({"kind": "alien"}, "kind", "invalid"),
        ({"street": "Calle 1", "city": "Rosario"}, "zone", "zone_unknown"),
        ({"zone": "Sur"}, "street", "required"),
    ],
)
def test_customer_create_rejects_bad_input_and_writes_nothing(
    org, kwargs: dict[str, Any], field: str, code: str
) -> None:
    before = snapshot()
    data = {"name": "Juan Pérez", **kwargs}
    with pytest.raises(ValidationError) as exc:
        services.customer_create(organisation=org, **data)
    assert codes(exc, field) == [code]
    assert errors(exc)[field][0]
    assert snapshot() == before


def test_customer_create_rejects_a_cuit_already_in_the_organisation(cast) -> None:
    factories.make_customer(cast.org, "Primero", cuit="20-12345678-6")
    with pytest.raises(ValidationError) as exc:
        services.customer_create(organisation=cast.org, name="Segundo", cuit=VALID_CUIT)
    assert codes(exc, "cuit") == ["duplicate_cuit"]
    assert "Primero" in errors(exc)["cuit"][0]
    other = services.customer_create(organisation=cast.other_org, name="Otro", cuit=VALID_CUIT)
    assert other.cuit == "20-12345678-6"


def test_customer_update_changes_only_the_fields_given(org) -> None:
    customer = factories.make_customer(
        org, "Juan Pérez", phone="+541145678901", email="juan@example.com"
    )
    services.customer_update(organisation=org, customer=customer, email="", cuit=VALID_CUIT)
    customer.refresh_from_db()
    assert (customer.name, customer.phone) == ("Juan Pérez", "+541145678901")
    assert (customer.email, customer.cuit) == ("", "20-12345678-6")


def test_customer_update_moves_the_primary_address(org) -> None:
    customer = factories.make_customer(org, zone="Sur")
    services.customer_update(
        organisation=org, customer=customer, street="Cabildo 2000", city="Belgrano"
    )
    address = Address.objects.get(customer=customer)
    assert (address.street, address.city, address.zone) == ("Cabildo 2000", "Belgrano", "CABA")
    services.customer_update(organisation=org, customer=customer, zone="zona norte")
    address.refresh_from_db()
    assert (address.city, address.zone) == ("Belgrano", "Norte")


def test_customer_update_adds_an_address_when_there_was_none(org) -> None:
    customer = services.customer_create(organisation=org, name="Sin Dirección")
    services.customer_update(organisation=org, customer=customer, street="Mitre 10", zone="Oeste")
    assert customer.primary_address is not None
    assert customer.primary_address.zone == "Oeste"


def test_customer_update_rejects_bad_values_and_keeps_the_old_ones(org) -> None:
    factories.make_customer(org, "Dueña", cuit="20-12345678-6")
    customer = factories.make_customer(org, "Juan", email="juan@example.com")
    for kwargs in ({"cuit": VALID_CUIT}, {"name": ""}, {"email": "x@"}, {"street": " "}):
        with pytest.raises(ValidationError):
            services.customer_update(organisation=org, customer=customer, **kwargs)
    fresh = Customer.objects.get(pk=customer.pk)
    assert (fresh.name, fresh.cuit, fresh.email) == ("Juan", "", "juan@example.com")
    assert (customer.name, customer.cuit, customer.email) == ("Juan", "", "juan@example.com")
    with pytest.raises(ValidationError) as exc:
        services.customer_update(
            organisation=org, customer=customer, name="Juan Carlos", phone_alt="x"
        )
    assert codes(exc, "phone_alt") == ["invalid"]
    assert customer.name == "Juan" and Customer.objects.get(pk=customer.pk).name == "Juan"
    assert fresh.addresses.get().street.startswith("Av. Mitre")


def test_customer_update_refuses_another_organisations_customer(cast) -> None:
    foreign = factories.make_customer(cast.other_org, "Ajeno")
    with pytest.raises(ValidationError) as exc:
        services.customer_update(organisation=cast.org, customer=foreign, name="Mío")
    assert codes(exc, "customer") == ["not_found"]
    foreign.refresh_from_db()
    assert foreign.name == "Ajeno"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("011 4567-8901", "+541145678901"),
        ("4567-8901", "+541145678901"),
        ("(0221) 412-3456", "+542214123456"),
        ("+54 9 11 2345-6789", "+5491123456789"),
        ("0054 11 4567 8901", "+541145678901"),
        ("5491123456789", "+5491123456789"),
    ],
)
def test_normalise_phone(raw: str, expected: str) -> None:
    assert normalise_phone(raw) == expected


# --- Booking -----------------------------------------------------------------------------------


@pytest.fixture
def customer(org):
    return factories.make_customer(org, "Juan Pérez", zone="Sur")


@pytest.fixture
def tech(org):
    return factories.make_technician(org, "Carlos Gómez", zone="Sur")


def test_job_book_with_a_technician_records_the_creation(org, customer, tech, monday) -> None:
    job = services.job_book(
        organisation=org,
        customer=customer,
        service="Service de aire acondicionado",
        start=at(monday, 10),
        technician=tech,
        actor=None,
    )
    assert (job.technician, job.skill, job.status) == (tech, "ac", Job.Status.SCHEDULED)
    assert job.scheduled_end - job.scheduled_start == datetime.timedelta(hours=2)
    assert job.address == customer.primary_address
    event = job.events.get()
    assert event.kind == JobEvent.Kind.CREATED
    assert event.data["technician"] == tech.pk


def test_job_book_takes_its_length_from_the_service(org, customer, tech, monday, cast) -> None:
    install = services.job_book(
        organisation=org,
        customer=customer,
        service="Instalación de split 3000 frigorías",
        start=at(monday, 8),
        actor=cast.operator,
    )
    assert install.scheduled_end == at(monday, 12)
    assert install.events.get().actor == cast.operator
    quick = services.job_book(
        organisation=org,
        customer=customer,
        service="Revisión de caldera",
        start=at(monday, 13),
        technician=tech,
    )
    assert (quick.skill, quick.scheduled_end) == ("heating", at(monday, 14))


def test_job_book_without_technician_picks_the_closest_free_one(org, customer, monday) -> None:
    factories.make_technician(org, "Norteño", zone="Norte")
    local = factories.make_technician(org, "Sureño", zone="Sur")
    job = services.job_book(
        organisation=org, customer=customer, service="Service", start=at(monday, 9)
    )
    assert job.technician == local


def test_job_book_checks_the_pick_again_only_where_another_writer_could_come_between(
    org, customer, monday
) -> None:
    """PostgreSQL: the technician picked is locked and their calendar read again (a concurrent
    booking may have taken the hour; tests/business/test_concurrency.py races it). SQLite's
    `BEGIN IMMEDIATE` holds the write lock from the first read, so it reads the calendar once."""
    local = factories.make_technician(org, "Sureño", zone="Sur")
    with CaptureQueriesContext(connection) as seen:
        job = services.job_book(
            organisation=org, customer=customer, service="Service", start=at(monday, 9)
        )
    calendar_reads = [
        q["sql"] for q in seen.captured_queries
        if q["sql"].startswith("SELECT") and 'FROM "business_job"' in q["sql"]
    ]  # fmt: skip
    assert job.technician == local
    assert len(calendar_reads) == (1 if connection.vendor == "sqlite" else 2)


def test_job_book_with_nobody_free_says_so_and_books_nothing(org, customer, tech, monday) -> None:
    factories.make_job(org, customer, at(monday, 9), technician=tech)
    before = snapshot()
    with pytest.raises(ValidationError) as exc:
        services.job_book(
            organisation=org, customer=customer, service="Service split", start=at(monday, 10)
        )
    assert codes(exc, "technician") == ["no_technician_free"]
    assert snapshot() == before


@pytest.mark.parametrize(
    ("setup", "hour", "expected"),
    [
        ({"active": False}, 10, "not an active technician"),
        ({"skills": ["plumbing"]}, 10, "does not do that kind of work"),
        ({"work_days": [3, 4]}, 10, "does not work on"),
        ({}, 16, "outside"),
        ({"absent": True}, 10, "absent"),
        ({"busy": True}, 10, "already has a job"),
    ],
)
def test_job_book_checks_the_technician_given(
    org, customer, monday, setup: dict[str, Any], hour: int, expected: str
) -> None:
    absent, busy = setup.pop("absent", False), setup.pop("busy", False)
    tech = factories.make_technician(org, "Elegido", **setup)
    if absent:
        factories.make_absence(org, tech, monday)
    if busy:
        factories.make_job(org, customer, at(monday, 11), technician=tech)
    before = snapshot()
    with pytest.raises(ValidationError) as exc:
        services.job_book(
            organisation=org,
            customer=customer,
            service="Service de aire",
            start=at(monday, hour),
            technician=tech,
        )
    assert expected in errors(exc)["technician"][0]
    assert snapshot() == before


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"service": " "}, "service"),
        ({"start": datetime.datetime(2020, 1, 6, 10, tzinfo=datetime.UTC)}, "start"),
        ({"start": datetime.datetime(2099, 1, 5, 10)}, "start"),
        ({"duration": datetime.timedelta(hours=13)}, "duration"),
        ({"skill": "carpentry"}, "skill"),
    ],
)
def test_job_book_rejects_bad_input(org, customer, tech, monday, kwargs, field) -> None:
    data = {"service": "Service", "start": at(monday, 10), "technician": tech, **kwargs}
    before = snapshot()
    with pytest.raises(ValidationError) as exc:
        services.job_book(organisation=org, customer=customer, **data)
    assert field in errors(exc)
    assert snapshot() == before


def test_job_book_refuses_foreign_customers_and_addresses(cast, customer, tech, monday) -> None:
    foreign = factories.make_customer(cast.other_org, "Ajeno")
    with pytest.raises(ValidationError) as exc:
        services.job_book(
            organisation=cast.org, customer=foreign, service="Service", start=at(monday, 10)
        )
    assert codes(exc, "customer") == ["not_found"]
    with pytest.raises(ValidationError) as exc:
        services.job_book(
            organisation=cast.org,
            customer=customer,
            service="Service",
            start=at(monday, 10),
            address=foreign.primary_address,
        )
    assert codes(exc, "address") == ["not_found"]
    assert Job.objects.count() == 0


# --- Changing a job -------------------------------------------------------------------------


@pytest.fixture
def job(org, customer, tech, monday) -> Job:
    return services.job_book(
        organisation=org,
        customer=customer,
        service="Service split",
        start=at(monday, 9),
        technician=tech,
    )


def test_job_reschedule_keeps_the_length_and_logs_from_and_to(org, job, monday) -> None:
    tuesday = monday + datetime.timedelta(days=1)
    services.job_reschedule(organisation=org, job=job, start=at(tuesday, 14))
    job.refresh_from_db()
    assert (job.scheduled_start, job.scheduled_end) == (at(tuesday, 14), at(tuesday, 16))
    event = job.events.get(kind=JobEvent.Kind.RESCHEDULED)
    assert event.data["from"] == at(monday, 9).isoformat()
    assert event.data["to"] == at(tuesday, 14).isoformat()


def test_job_reschedule_into_a_clash_fails_and_leaves_the_job(
    org, customer, job, tech, monday
) -> None:
    factories.make_job(org, customer, at(monday, 14), technician=tech)
    before = snapshot()
    with pytest.raises(ValidationError) as exc:
        services.job_reschedule(organisation=org, job=job, start=at(monday, 15))
    assert codes(exc, "technician") == ["technician_busy"]
    job.refresh_from_db()
    assert job.scheduled_start == at(monday, 9)
    assert snapshot() == before


def test_job_reschedule_can_change_or_reassign_the_technician(
    org, customer, job, tech, monday
) -> None:
    other = factories.make_technician(org, "Otra", zone="Sur")
    factories.make_job(org, customer, at(monday, 14), technician=tech)
    services.job_reschedule(organisation=org, job=job, start=at(monday, 15), reassign_if_busy=True)
    assert job.technician == other
    services.job_reschedule(organisation=org, job=job, start=at(monday, 8), technician=tech)
    job.refresh_from_db()
    assert job.technician == tech
    event = job.events.filter(kind=JobEvent.Kind.RESCHEDULED).last()
    assert (event.data["technician_from"], event.data["technician_to"]) == (other.pk, tech.pk)


def test_job_reschedule_checks_the_vehicle_too(org, customer, job, monday) -> None:
    van = factories.make_vehicle(org)
    services.job_assign_vehicle(organisation=org, job=job, vehicle=van)
    helper = factories.make_technician(org, "Ayudante")
    factories.make_job(org, customer, at(monday, 14), technician=helper, vehicle=van)
    with pytest.raises(ValidationError) as exc:
        services.job_reschedule(organisation=org, job=job, start=at(monday, 13))
    assert codes(exc, "vehicle") == ["vehicle_busy"]
    job.refresh_from_db()
    assert job.scheduled_start == at(monday, 9)


def test_job_cancel_closes_the_job_once(org, job) -> None:
    services.job_cancel(organisation=org, job=job, reason="El cliente viaja")
    job.refresh_from_db()
    assert job.status == Job.Status.CANCELLED
    assert job.events.get(kind=JobEvent.Kind.CANCELLED).note == "El cliente viaja"
    before = snapshot()
    with pytest.raises(ValidationError) as exc:
        services.job_cancel(organisation=org, job=job, reason="otra vez")
    assert codes(exc, "job") == ["not_open"]
    assert snapshot() == before
    with pytest.raises(ValidationError):
        services.job_reschedule(organisation=org, job=job, start=job.scheduled_start)


def test_job_assign_technician_checks_and_logs(org, customer, job, monday) -> None:
    other = factories.make_technician(org, "Otra")
    services.job_assign_technician(organisation=org, job=job, technician=other)
    assert Job.objects.get(pk=job.pk).technician == other
    assert job.events.get(kind=JobEvent.Kind.ASSIGNED).data["to"] == other.pk
    busy = factories.make_technician(org, "Ocupada")
    factories.make_job(org, customer, at(monday, 10), technician=busy)
    with pytest.raises(ValidationError):
        services.job_assign_technician(organisation=org, job=job, technician=busy)
    assert Job.objects.get(pk=job.pk).technician == other


def test_job_assign_vehicle_refuses_busy_or_inactive_vans(cast, org, customer, job, monday) -> None:
    van, old = factories.make_vehicle(org), factories.make_vehicle(org, active=False)
    other_job = factories.make_job(org, customer, at(monday, 10))
    services.job_assign_vehicle(organisation=org, job=other_job, vehicle=van)
    for vehicle, code in ((van, "vehicle_busy"), (old, "vehicle_busy")):
        with pytest.raises(ValidationError) as exc:
            services.job_assign_vehicle(organisation=org, job=job, vehicle=vehicle)
        assert codes(exc, "vehicle") == [code]
    foreign = factories.make_vehicle(cast.other_org)
    with pytest.raises(ValidationError) as exc:
        services.job_assign_vehicle(organisation=org, job=job, vehicle=foreign)
    assert codes(exc, "vehicle") == ["not_found"]
    assert Job.objects.get(pk=job.pk).vehicle is None
    later = factories.make_job(org, customer, at(monday, 14))
    services.job_assign_vehicle(organisation=org, job=later, vehicle=van)
    assert later.events.get(kind=JobEvent.Kind.VEHICLE).data["plate"] == van.plate


def test_job_complete_marks_done_and_dates_the_equipment(org, customer, job) -> None:
    split = factories.make_equipment(org, customer, last_service_on=datetime.date(2025, 1, 10))
    services.job_complete(
        organisation=org, job=job, notes="Carga de gas", serviced_equipment=[split]
    )
    job.refresh_from_db()
    split.refresh_from_db()
    assert job.status == Job.Status.DONE and job.completed_at is not None
    assert (
        split.last_service_on
        == job.completed_at.astimezone(datetime.timezone(datetime.timedelta(hours=-3))).date()
    )
    with pytest.raises(ValidationError):
        services.job_complete(organisation=org, job=job)


def test_job_follow_up_record_only_for_finished_jobs(org, job) -> None:
    with pytest.raises(ValidationError):
        services.job_follow_up_record(organisation=org, job=job, note="Todo bien")
    services.job_complete(organisation=org, job=job)
    with pytest.raises(ValidationError):
        services.job_follow_up_record(organisation=org, job=job, note=" ")
    event = services.job_follow_up_record(organisation=org, job=job, note="Todo bien")
    assert event.data == {"follow_up": True}


# --- Absences, redistribution, bulk moves --------------------------------------------------------


def test_technician_absence_record_and_its_errors(org, tech, monday) -> None:
    absence = services.technician_absence_record(
        organisation=org,
        technician=tech,
        start_date=monday,
        end_date=monday + datetime.timedelta(days=2),
        reason="Gripe",
    )
    assert (absence.start_date, absence.reason) == (monday, "Gripe")
    before = snapshot()
    with pytest.raises(ValidationError) as exc:
        services.technician_absence_record(
            organisation=org, technician=tech, start_date=monday + datetime.timedelta(days=1)
        )
    assert codes(exc, "start_date") == ["already_absent"]
    with pytest.raises(ValidationError) as exc:
        services.technician_absence_record(
            organisation=org,
            technician=tech,
            start_date=monday,
            end_date=monday - datetime.timedelta(days=1),
        )
    assert "end_date" in errors(exc)
    assert snapshot() == before


def _sick_day(org, customer, monday):
    sick = factories.make_technician(org, "Enfermo", zone="Sur")
    near = factories.make_technician(org, "Cercana", zone="Sur")
    far = factories.make_technician(org, "Lejano", zone="CABA")
    jobs = [factories.make_job(org, customer, at(monday, h), technician=sick) for h in (9, 11, 14)]
    factories.make_job(org, customer, at(monday, 11), technician=near)
    factories.make_job(org, customer, at(monday, 14), technician=near)
    factories.make_job(org, customer, at(monday, 14), technician=far)
    absence = services.technician_absence_record(
        organisation=org, technician=sick, start_date=monday
    )
    return sick, near, far, jobs, absence


def test_jobs_redistribute_moves_to_the_nearest_free_colleague(org, customer, monday) -> None:
    sick, near, far, jobs, absence = _sick_day(org, customer, monday)
    report = services.jobs_redistribute(organisation=org, absence=absence)
    assert [(m.job, m.new_technician) for m in report.moved] == [(jobs[0], near), (jobs[1], far)]
    assert [s.job for s in report.not_moved] == [jobs[2]]
    assert [Job.objects.get(pk=j.pk).technician for j in jobs] == [near, far, sick]
    assert JobEvent.objects.filter(kind=JobEvent.Kind.ASSIGNED).count() == 2


def test_jobs_redistribute_dry_run_proposes_without_saving(org, customer, monday) -> None:
    sick, near, far, jobs, absence = _sick_day(org, customer, monday)
    before = snapshot()
    report = services.jobs_redistribute(organisation=org, absence=absence, dry_run=True)
    assert report.dry_run and [m.new_technician for m in report.moved] == [near, far]
    assert snapshot() == before
    assert {Job.objects.get(pk=j.pk).technician for j in jobs} == {sick}
    assert {j.technician for j in jobs} == {sick}


def test_jobs_bulk_reschedule_shifts_a_day_keeping_times(org, customer, tech, monday) -> None:
    tuesday = monday + datetime.timedelta(days=1)
    mon = factories.make_job(org, customer, at(monday, 9), technician=tech)
    tue = factories.make_job(org, customer, at(tuesday, 9), technician=tech)
    report = services.jobs_bulk_reschedule(organisation=org, jobs=[mon, tue], shift_days=1)
    assert [(m.old_start, m.new_start) for m in report.moved] == [
        (at(monday, 9), at(tuesday, 9)),
        (at(tuesday, 9), at(monday + datetime.timedelta(days=2), 9)),
    ]
    assert report.not_moved == []
    assert Job.objects.get(pk=mon.pk).scheduled_start == at(tuesday, 9)


def test_jobs_bulk_reschedule_reports_conflicts_per_job(org, customer, tech, monday) -> None:
    wednesday = monday + datetime.timedelta(days=2)
    movable = factories.make_job(org, customer, at(monday, 9), technician=tech)
    stuck = factories.make_job(org, customer, at(monday, 14), technician=tech)
    factories.make_job(org, customer, at(wednesday, 15), technician=tech)
    report = services.jobs_bulk_reschedule(
        organisation=org, jobs=[movable, stuck], to_date=wednesday
    )
    assert [m.job for m in report.moved] == [movable]
    assert [s.job for s in report.not_moved] == [stuck]
    assert "already has a job" in report.not_moved[0].reason
    assert Job.objects.get(pk=stuck.pk).scheduled_start == at(monday, 14)
    assert stuck.events.filter(kind=JobEvent.Kind.RESCHEDULED).count() == 0


def test_jobs_bulk_reschedule_can_reassign_and_dry_run(org, customer, tech, monday) -> None:
    tuesday = monday + datetime.timedelta(days=1)
    other = factories.make_technician(org, "Reemplazo")
    job = factories.make_job(org, customer, at(monday, 9), technician=tech)
    factories.make_absence(org, tech, tuesday)
    before = snapshot()
    report = services.jobs_bulk_reschedule(
        organisation=org, jobs=[job], to_date=tuesday, reassign_if_busy=True, dry_run=True
    )
    assert [m.new_technician for m in report.moved] == [other]
    assert snapshot() == before
    assert Job.objects.get(pk=job.pk).scheduled_start == at(monday, 9)
    assert job.scheduled_start == at(monday, 9)


@pytest.mark.parametrize(
    "kwargs", [{}, {"shift_days": 1, "to_date": datetime.date(2099, 1, 1)}, {"shift_days": 0}]
)
def test_jobs_bulk_reschedule_needs_one_target(org, job, kwargs) -> None:
    with pytest.raises(ValidationError):
        services.jobs_bulk_reschedule(organisation=org, jobs=[job], **kwargs)


# --- Quotes, invoices, payments ---------------------------------------------------------


def test_quote_create_from_price_list_and_free_lines(org, customer) -> None:
    factories.make_price_item(org, "Service split", "45000", code="service-split")
    quote = services.quote_create(
        organisation=org,
        customer=customer,
        lines=[
            LineInput(price_item="service-split", quantity=2),
            LineInput(description="Materiales", unit_price="1000", iva_rate="10.5"),
        ],
    )
    assert quote.number == "P-000001"
    totals = quote.totals()
    assert totals["net"] == Decimal("91000.00")
    assert totals["iva"] == {"21": Decimal("18900.00"), "10.5": Decimal("105.00")}
    assert quote.valid_until is not None
    second = services.quote_create(
        organisation=org, customer=customer, lines=[LineInput("X", 1, 10)]
    )
    assert second.number == "P-000002"


@pytest.mark.parametrize(
    "lines",
    [
        [],
        [LineInput(description="Algo", unit_price=100, iva_rate=27)],
        [LineInput(description="Algo", unit_price=100, quantity=0)],
        [LineInput(description="", unit_price=100)],
        [LineInput(description="Sin precio")],
        [LineInput(description="Raro", unit_price="mucho")],
        [LineInput(price_item="no-existe")],
    ],
)
def test_quote_create_rejects_bad_lines(org, customer, lines) -> None:
    before = snapshot()
    with pytest.raises(ValidationError) as exc:
        services.quote_create(organisation=org, customer=customer, lines=lines)
    assert "lines" in errors(exc)
    assert snapshot() == before


def test_quote_numbers_are_per_organisation_and_continue_the_sequence(cast, customer) -> None:
    Quote.objects.create(organisation=cast.org, customer=customer, number="P-000099")
    quote = services.quote_create(
        organisation=cast.org, customer=customer, lines=[LineInput("A", 1, 1)]
    )
    assert quote.number == "P-000100"
    other_customer = factories.make_customer(cast.other_org)
    other = services.quote_create(
        organisation=cast.other_org, customer=other_customer, lines=[LineInput("A", 1, 1)]
    )
    assert other.number == "P-000001"


def test_numbers_stay_unique_over_many_sequential_documents(org, customer) -> None:
    numbers = [
        services.quote_create(
            organisation=org, customer=customer, lines=[LineInput("A", 1, 1)]
        ).number
        for _ in range(25)
    ]
    assert len(set(numbers)) == 25
    assert numbers[-1] == "P-000025"


def test_numbering_retries_when_a_concurrent_writer_took_the_number(
    org, customer, monkeypatch
) -> None:
    services.quote_create(organisation=org, customer=customer, lines=[LineInput("A", 1, 1)])
    real = services._next_number
    calls: list[str] = []

    def stale_once(*args: Any) -> str:
        calls.append("x")
        return "P-000001" if len(calls) == 1 else real(*args)

    monkeypatch.setattr(services, "_next_number", stale_once)
    quote = services.quote_create(organisation=org, customer=customer, lines=[LineInput("B", 1, 1)])
    assert quote.number == "P-000002" and len(calls) == 2
    assert Quote.objects.count() == 2


def test_invoice_create_from_the_jobs_quote(org, customer, job) -> None:
    company = services.customer_update(
        organisation=org, customer=customer, kind="company", cuit=COMPANY_CUIT
    )
    services.quote_create(
        organisation=org, customer=company, job=job, lines=[LineInput("Service", 1, 50000)]
    )
    invoice = services.invoice_create(
        organisation=org, job=job, issued_on=datetime.date(2026, 11, 23)
    )
    assert (invoice.number, invoice.letter, invoice.customer) == ("0001-00000001", "A", company)
    assert invoice.due_on == datetime.date(2026, 12, 8)
    assert invoice.totals()["total"] == Decimal("60500.00")
    before = snapshot()
    with pytest.raises(ValidationError) as exc:
        services.invoice_create(organisation=org, job=job)
    assert codes(exc, "job") == ["already_invoiced"]
    assert snapshot() == before


def test_a_quote_without_a_job_is_invoiced_once(org, customer) -> None:
    quote = services.quote_create(
        organisation=org, customer=customer, lines=[LineInput("Instalación", 1, 80000)]
    )
    invoice = services.invoice_create(organisation=org, quote=quote)
    assert invoice.quote == quote and invoice.job is None
    before = snapshot()
    with pytest.raises(ValidationError) as exc:
        services.invoice_create(organisation=org, quote=quote)
    assert codes(exc, "quote") == ["already_invoiced"]
    assert snapshot() == before


def test_invoice_create_for_a_person_is_letter_b(org, customer) -> None:
    invoice = services.invoice_create(
        organisation=org, customer=customer, lines=[LineInput("Visita", 1, 20000, "10.5")]
    )
    assert (invoice.letter, invoice.status) == ("B", Invoice.Status.ISSUED)
    second = services.invoice_create(
        organisation=org, customer=customer, lines=[LineInput("Otra", 1, 1)]
    )
    assert second.number == "0001-00000002"


def test_invoice_create_needs_something_to_invoice(cast, customer, job) -> None:
    foreign = factories.make_customer(cast.other_org)
    before = snapshot()
    with pytest.raises(ValidationError) as exc:
        services.invoice_create(organisation=cast.org, job=job)
    assert "lines" in errors(exc)
    with pytest.raises(ValidationError) as exc:
        services.invoice_create(organisation=cast.org, lines=[LineInput("A", 1, 1)])
    assert "customer" in errors(exc)
    with pytest.raises(ValidationError) as exc:
        services.invoice_create(
            organisation=cast.org, customer=foreign, lines=[LineInput("A", 1, 1)]
        )
    assert codes(exc, "customer") == ["not_found"]
    assert snapshot() == before


def test_payment_record_up_to_the_balance(org, customer) -> None:
    invoice = factories.make_invoice(org, customer, Decimal("1000"))  # 1210 with IVA
    services.payment_record(organisation=org, invoice=invoice, amount="210", method="cash")
    assert invoice.balance() == Decimal("1000.00")
    before = snapshot()
    for amount, field in (
        ("1000.01", "amount"),
        ("0", "amount"),
        ("-5", "amount"),
        ("abc", "amount"),
    ):
        with pytest.raises(ValidationError) as exc:
            services.payment_record(organisation=org, invoice=invoice, amount=amount)
        assert field in errors(exc)
    with pytest.raises(ValidationError) as exc:
        services.payment_record(organisation=org, invoice=invoice, amount="10", method="bitcoin")
    assert "method" in errors(exc)
    assert snapshot() == before
    services.payment_record(organisation=org, invoice=invoice, amount=Decimal("1000"))
    assert invoice.balance() == Decimal("0.00")


def test_payment_record_refuses_void_invoices(org, customer) -> None:
    invoice = factories.make_invoice(org, customer, status=Invoice.Status.VOID)
    with pytest.raises(ValidationError) as exc:
        services.payment_record(organisation=org, invoice=invoice, amount="10")
    assert codes(exc, "invoice") == ["not_issued"]
    assert Payment.objects.count() == 0


# --- Tickets -------------------------------------------------------------------------------------


def test_ticket_create_and_update_status(org, customer, job, cast) -> None:
    ticket = services.ticket_create(
        organisation=org,
        reason="complaint",
        priority="high",
        summary="El técnico llegó tarde",
        job=job,
        conversation_id=42,
        actor=cast.operator,
    )
    assert (ticket.customer, ticket.created_by, ticket.status) == (customer, cast.operator, "open")
    services.ticket_update_status(organisation=org, ticket=ticket, status="resolved")
    assert EscalationTicket.objects.get(pk=ticket.pk).status == "resolved"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"reason": "boredom"}, "reason"),
        ({"priority": "whenever"}, "priority"),
        ({"summary": "  "}, "summary"),
    ],
)
def test_ticket_create_rejects_bad_input(org, kwargs, field) -> None:
    data = {"reason": "emergency", "priority": "urgent", "summary": "Pérdida de gas", **kwargs}
    with pytest.raises(ValidationError) as exc:
        services.ticket_create(organisation=org, **data)
    assert field in errors(exc)
    assert EscalationTicket.objects.count() == 0


def test_ticket_services_refuse_other_organisations_rows(cast) -> None:
    foreign = EscalationTicket.objects.create(
        organisation=cast.other_org, reason="complaint", summary="Ajeno"
    )
    with pytest.raises(ValidationError):
        services.ticket_update_status(organisation=cast.org, ticket=foreign, status="resolved")
    with pytest.raises(ValidationError):
        services.ticket_create(
            organisation=cast.org,
            reason="complaint",
            summary="x",
            customer=factories.make_customer(cast.other_org),
        )
    with pytest.raises(ValidationError):
        services.ticket_update_status(organisation=cast.org, ticket=foreign, status="nope")
    assert EscalationTicket.objects.get(pk=foreign.pk).status == "open"


def test_messages_follow_the_active_language(org, customer, monday) -> None:
    tech = factories.make_technician(org, "Rita", active=False)
    with translation.override("es-ar"), pytest.raises(ValidationError) as exc:
        services.job_book(
            organisation=org,
            customer=customer,
            service="Service",
            start=at(monday, 9),
            technician=tech,
        )
    assert errors(exc)["technician"] == ["Rita no es un técnico activo."]
