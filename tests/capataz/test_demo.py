"""`manage.py load_demo`: the demo organisation is complete, consistent and idempotent."""

from __future__ import annotations

import datetime
from collections import defaultdict
from io import StringIO
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from business.cuit import is_valid_cuit
from business.models import (
    Customer,
    Equipment,
    EscalationTicket,
    Invoice,
    Job,
    JobEvent,
    Membership,
    Organisation,
    Payment,
    Quote,
    Technician,
)
from capataz.demo import demo_counts, load_demo
from tests import factories

BA = ZoneInfo("America/Argentina/Buenos_Aires")
MINIMUMS = {
    "Customer": 45,
    "Technician": 10,
    "Absence": 1,
    "Vehicle": 7,
    "Job": 180,
    "PriceItem": 18,
    "Equipment": 45,
    "Quote": 10,
    "Invoice": 50,
    "Payment": 30,
    "EscalationTicket": 3,
}


def run(*args: str) -> str:
    out = StringIO()
    call_command("load_demo", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.fixture
def demo(db: None) -> Organisation:
    run()
    return Organisation.objects.get(slug="demo")


def local(moment: datetime.datetime) -> datetime.datetime:
    return moment.astimezone(BA)


def test_it_loads_at_least_the_promised_records(demo: Organisation) -> None:
    counts = demo_counts(demo)
    short = {label: counts[label] for label, low in MINIMUMS.items() if counts[label] < low}
    assert short == {}
    assert demo.timezone == "America/Argentina/Buenos_Aires" and demo.language == "es"
    assert demo.business_hours["sat"] == ["09:00", "13:00"] and demo.business_hours["sun"] == []
    statuses = set(Quote.objects.filter(organisation=demo).values_list("status", flat=True))
    assert {"draft", "sent", "accepted"} <= statuses
    assert {"21.00", "10.50"} <= {f"{item.iva_rate}" for item in demo.price_items.all()}


def test_a_second_run_changes_nothing(demo: Organisation) -> None:
    before = demo_counts(demo)
    starts = list(Job.objects.filter(organisation=demo).values_list("scheduled_start", "status"))
    hashes = dict(get_user_model().objects.values_list("username", "password"))

    output = run()

    assert "sin cambios" in output
    assert Organisation.objects.filter(slug="demo").count() == 1
    assert demo_counts(demo) == before
    assert (
        list(Job.objects.filter(organisation=demo).values_list("scheduled_start", "status"))
        == starts
    )
    assert dict(get_user_model().objects.values_list("username", "password")) == hashes


def test_reset_reloads_the_demo_and_leaves_other_organisations_alone(demo: Organisation) -> None:
    other = factories.make_org("Frío Norte", slug="frio-norte")
    factories.make_customer(other, "Ana Torres")
    before = demo_counts(demo)

    run("--reset")

    reloaded = Organisation.objects.get(slug="demo")
    assert reloaded.pk != demo.pk
    assert demo_counts(reloaded)["Customer"] == before["Customer"]
    assert list(Customer.objects.filter(organisation=other).values_list("name", flat=True)) == [
        "Ana Torres"
    ]


def test_the_same_clock_gives_the_same_data(db: None) -> None:
    now = datetime.datetime(2026, 11, 18, 15, 30, tzinfo=BA)

    def fingerprint() -> list[tuple[object, ...]]:
        jobs = Job.objects.filter(organisation__slug="demo").order_by("scheduled_start", "pk")
        return list(
            jobs.values_list(
                "customer__name", "technician__name", "service", "scheduled_start", "status"
            )
        )

    load_demo(now=now)
    first = fingerprint()
    load_demo(reset=True, now=now)

    assert fingerprint() == first


def test_every_cuit_is_valid_and_some_customers_have_none(demo: Organisation) -> None:
    cuits = list(Customer.objects.filter(organisation=demo).values_list("cuit", flat=True))
    given = [cuit for cuit in cuits if cuit]
    assert [cuit for cuit in given if not is_valid_cuit(cuit)] == []
    assert len(set(given)) == len(given)
    assert 0 < len(given) < len(cuits)


def test_every_row_belongs_to_the_demo_organisation(demo: Organisation) -> None:
    jobs = Job.objects.filter(organisation=demo)
    assert not jobs.exclude(customer__organisation=demo).exists()
    assert not jobs.exclude(address__organisation=demo).exists()
    assert not jobs.exclude(technician__organisation=demo).exists()
    assert not jobs.filter(vehicle__isnull=False).exclude(vehicle__organisation=demo).exists()
    assert not JobEvent.objects.filter(job__organisation=demo).exclude(organisation=demo).exists()
    assert (
        not Payment.objects.filter(organisation=demo).exclude(invoice__organisation=demo).exists()
    )
    assert (
        not Equipment.objects.filter(organisation=demo)
        .exclude(customer__organisation=demo)
        .exists()
    )
    assert (
        not EscalationTicket.objects.filter(organisation=demo)
        .exclude(customer__organisation=demo)
        .exists()
    )


def test_no_technician_has_overlapping_open_jobs(demo: Organisation) -> None:
    by_technician: dict[int, list[Job]] = defaultdict(list)
    for job in Job.objects.filter(organisation=demo, status__in=Job.OPEN_STATUSES):
        by_technician[job.technician_id].append(job)  # type: ignore[index]
    for jobs in by_technician.values():
        jobs.sort(key=lambda job: job.scheduled_start)
        for earlier, later in zip(jobs, jobs[1:], strict=False):
            assert earlier.scheduled_end <= later.scheduled_start, (earlier, later)


def test_jobs_fall_in_the_technicians_hours_and_never_in_an_absence(demo: Organisation) -> None:
    for tech in Technician.objects.filter(organisation=demo).prefetch_related("absences", "jobs"):
        for job in tech.jobs.all():
            start, end = local(job.scheduled_start), local(job.scheduled_end)
            assert start.weekday() in tech.work_days, job
            assert tech.work_start <= start.time() and end.time() <= tech.work_end, job
            assert start.date() == end.date(), job
            for absence in tech.absences.all():
                assert not absence.start_date <= start.date() <= absence.end_date, job
    assert Technician.objects.filter(organisation=demo, absences__isnull=False).count() == 1


def test_jobs_span_the_past_and_coming_weeks_with_a_history(demo: Organisation) -> None:
    jobs = list(Job.objects.filter(organisation=demo).prefetch_related("events"))
    today = datetime.datetime.now(BA).date()
    days = {local(job.scheduled_start).date() for job in jobs}
    assert min(days) <= today - datetime.timedelta(weeks=4)
    assert max(days) >= today + datetime.timedelta(weeks=3)
    assert today in days
    past = [job for job in jobs if local(job.scheduled_start).date() < today]
    assert {job.status for job in past} == {Job.Status.DONE, Job.Status.CANCELLED}
    assert sum(job.status == Job.Status.DONE for job in past) > 0.8 * len(past)
    future = [job for job in jobs if local(job.scheduled_start).date() > today]
    assert {job.status for job in future} <= {Job.Status.SCHEDULED, Job.Status.CANCELLED}
    for job in jobs:
        kinds = [event.kind for event in job.events.all()]
        assert kinds[0] == JobEvent.Kind.CREATED, job
        if job.status == Job.Status.DONE:
            assert kinds[-1] == JobEvent.Kind.STATUS and job.completed_at is not None, job
        if job.status == Job.Status.CANCELLED:
            assert kinds[-1] == JobEvent.Kind.CANCELLED, job


def test_invoices_are_paid_partly_paid_and_unpaid_some_overdue(demo: Organisation) -> None:
    today = datetime.datetime.now(BA).date()
    states: dict[str, int] = defaultdict(int)
    for invoice in (
        Invoice.objects.filter(organisation=demo).select_related("job").prefetch_related("lines")
    ):
        total, paid = invoice.totals()["total"], invoice.amount_paid()
        assert invoice.job is not None and invoice.job.status == Job.Status.DONE
        assert 0 <= paid <= total, invoice
        state = "paid" if paid == total else "partial" if paid else "unpaid"
        if state == "unpaid" and invoice.due_on is not None and invoice.due_on < today:
            state = "overdue"
        states[state] += 1
    assert all(states[state] > 0 for state in ("paid", "partial", "unpaid", "overdue")), states


def test_some_equipment_is_overdue_for_maintenance(demo: Organisation) -> None:
    today = datetime.datetime.now(BA).date()
    equipment = list(Equipment.objects.filter(organisation=demo))
    overdue = [e for e in equipment if e.next_service_on and e.next_service_on < today]
    assert 0.08 <= len(overdue) / len(equipment) <= 0.25


def test_the_three_users_have_their_roles(demo: Organisation) -> None:
    roles = dict(Membership.objects.filter(organisation=demo).values_list("user__username", "role"))
    assert roles == {"operadora": "operator", "gerente": "manager", "admin": "admin"}
    users = {user.username: user for user in get_user_model().objects.all()}
    assert all(users[name].check_password("capataz") for name in roles)
    assert users["admin"].is_staff and users["admin"].is_superuser
    assert not users["operadora"].is_staff and not users["gerente"].is_superuser


def test_the_command_prints_counts_then_logins(db: None) -> None:
    output = run()

    assert output.index("Job") < output.index("operadora")
    assert "capataz" in output and "/login/" in output
    for username in ("operadora", "gerente", "admin"):
        assert username in output
