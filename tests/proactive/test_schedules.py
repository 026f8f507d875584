"""The proactive schedules (P1, E3): installed per organisation on its clock, editable by its
admins, each run recorded; what they find becomes one suggestion per period, never twice, and
never another organisation's."""

from __future__ import annotations

import datetime
import json
from decimal import Decimal
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.test import Client
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from agents.models import Detector, ProactiveSchedule, ScheduleRun, Suggestion
from agents.proactive import tasks
from agents.proactive.detect import DETECTORS, Moment
from agents.proactive.services import detector_run, schedule_update, suggestions_record
from business.models import Job, Quote
from business.selectors import org_today
from business.services import job_follow_up_record
from capataz.celery import app
from tests import factories
from tests.conftest import Cast

pytestmark = pytest.mark.django_db

Kind, State = Suggestion.Kind, Suggestion.State


def _months_ago(months: int) -> datetime.date:
    return timezone.localdate() - datetime.timedelta(days=30 * months)


def _run(org: Any, detector: str) -> ScheduleRun:
    run = detector_run(detector=detector, organisation_id=org.pk)
    assert run is not None
    assert run.status == ScheduleRun.Status.OK, run.error
    return run


def test_each_organisation_gets_its_schedules_on_its_own_clock(cast: Cast) -> None:
    far = factories.make_org("Frío Oeste", timezone="America/Argentina/Mendoza")
    app.loader.import_default_modules()
    for org in (cast.org, far):
        schedules = ProactiveSchedule.objects.filter(organisation=org)
        assert sorted(s.detector for s in schedules) == sorted(Detector.values)
        for schedule in schedules:
            task = schedule.periodic_task
            assert task is not None and task.enabled and task.task in app.tasks
            assert json.loads(task.args) == [org.pk]
            assert str(task.crontab.timezone) == org.timezone
    assert PeriodicTask.objects.filter(task__startswith="proactive.").count() == 3 * 5


def test_an_admins_change_reaches_the_beat_entry(cast: Cast) -> None:
    schedule = ProactiveSchedule.objects.get(organisation=cast.org, detector=Detector.COLLECTIONS)
    schedule.hour, schedule.minute, schedule.weekdays, schedule.enabled = 6, 15, "*", False
    schedule_update(schedule=schedule)
    task = PeriodicTask.objects.get(pk=schedule.periodic_task_id)
    assert (task.crontab.hour, task.crontab.minute, task.crontab.day_of_week) == ("6", "15", "*")
    assert not task.enabled


def test_maintenance_due_is_suggested_once_however_often_it_runs(cast: Cast) -> None:
    customer = factories.make_customer(cast.org)
    split = factories.make_equipment(cast.org, customer, last_service_on=_months_ago(14))
    factories.make_equipment(cast.org, customer, last_service_on=_months_ago(2))
    first, second = _run(cast.org, Detector.MAINTENANCE), _run(cast.org, Detector.MAINTENANCE)

    assert (first.found, first.created, second.found, second.created) == (1, 1, 1, 0)
    suggestion = Suggestion.objects.get(organisation=cast.org)
    assert suggestion.kind == Kind.MAINTENANCE and suggestion.state == State.NEW
    assert suggestion.records == {"customer": customer.pk, "equipment": split.pk}
    assert suggestion.tool == "job_book" and suggestion.arguments["customer_id"] == customer.pk
    assert suggestion.facts["days_overdue"] > 0 and first.duration_ms >= 0


def test_follow_ups_wait_their_days_and_stop_once_followed_up(cast: Cast) -> None:
    customer = factories.make_customer(cast.org)
    start = timezone.now() - datetime.timedelta(days=6)
    done = factories.make_job(cast.org, customer, start, status=Job.Status.DONE,
                              completed_at=start + datetime.timedelta(hours=2))  # fmt: skip
    recent = timezone.now() - datetime.timedelta(days=1)
    factories.make_job(cast.org, customer, recent, status=Job.Status.DONE, completed_at=recent)

    assert _run(cast.org, Detector.FOLLOW_UPS).created == 1
    assert Suggestion.objects.get().records["job"] == done.pk
    job_follow_up_record(organisation=cast.org, job=done, note="Todo bien")
    again = _run(cast.org, Detector.FOLLOW_UPS)
    assert (again.found, again.expired) == (0, 1)
    assert Suggestion.objects.get().state == State.EXPIRED


def test_collections_find_invoices_overdue_by_the_schedules_days(cast: Cast) -> None:
    customer = factories.make_customer(cast.org)
    today = org_today(cast.org)
    late = factories.make_invoice(cast.org, customer, issued_on=today - datetime.timedelta(50))
    factories.make_invoice(cast.org, customer, issued_on=today - datetime.timedelta(5))
    paid = factories.make_invoice(cast.org, customer, issued_on=today - datetime.timedelta(90))
    factories.make_payment(cast.org, paid, paid.totals()["total"])

    run = _run(cast.org, Detector.COLLECTIONS)
    assert (run.found, run.created) == (1, 1)
    suggestion = Suggestion.objects.get()
    assert suggestion.records == {"customer": customer.pk, "invoice": late.pk}
    assert Decimal(suggestion.facts["balance"]) > 0 and suggestion.facts["days_overdue"] == 50
    assert _run(cast.org, Detector.COLLECTIONS).created == 0


def test_opportunities_old_equipment_and_a_price_asked_without_a_quote(cast: Cast) -> None:
    customer = factories.make_customer(cast.org)
    old = factories.make_equipment(cast.org, customer, installed_on=_months_ago(12 * 13))
    factories.make_equipment(cast.org, customer, installed_on=_months_ago(12 * 3))
    asker = factories.make_customer(cast.org, "Ana Ruiz")
    start = timezone.now() - datetime.timedelta(days=3)
    visit = factories.make_job(cast.org, asker, start, service="Split no enfría: diagnóstico",
                               status=Job.Status.DONE, completed_at=start)  # fmt: skip

    run = _run(cast.org, Detector.OPPORTUNITIES)
    kinds = dict(Suggestion.objects.values_list("kind", "records"))
    assert kinds == {
        Kind.REPLACEMENT: {"customer": customer.pk, "equipment": old.pk},
        Kind.QUOTE_MISSING: {"customer": asker.pk, "job": visit.pk},
    }
    assert run.details["kinds"] == {Kind.REPLACEMENT: 1, Kind.QUOTE_MISSING: 1}
    assert f"quote_missing:customer={asker.pk},job={visit.pk}" in run.details["found"]
    Quote.objects.create(organisation=cast.org, customer=asker, number="P-1")
    _run(cast.org, Detector.OPPORTUNITIES)
    assert Suggestion.objects.get(kind=Kind.QUOTE_MISSING).state == State.EXPIRED


def test_seasonal_campaigns_before_summer_and_regulars_not_booked(cast: Cast) -> None:
    customer = factories.make_customer(cast.org)
    split = factories.make_equipment(cast.org, customer, last_service_on=datetime.date(2025, 9, 1))
    factories.make_equipment(cast.org, customer, kind="Caldera", skill="heating")
    last_spring = timezone.make_aware(datetime.datetime(2025, 11, 10, 10))
    factories.make_job(cast.org, customer, last_spring, status=Job.Status.DONE,
                       completed_at=last_spring)  # fmt: skip
    nov_now = timezone.make_aware(datetime.datetime(2026, 11, 2, 9))
    november = Moment(today=datetime.date(2026, 11, 2), now=nov_now, days=0)
    july = Moment(today=datetime.date(2026, 7, 1), now=november.now, days=0)

    seasonal = DETECTORS[Detector.SEASONAL](cast.org, november)
    assert [(f.records["equipment"], f.period) for f in seasonal] == [(split.pk, "summer_ac-2026")]
    regulars = [f for f in DETECTORS[Detector.OPPORTUNITIES](cast.org, november)
                if f.kind == Kind.SEASONAL_REGULAR]  # fmt: skip
    assert [(f.records, f.facts["last_season_year"]) for f in regulars] == [
        ({"customer": customer.pk}, 2025)
    ]
    assert DETECTORS[Detector.SEASONAL](cast.org, july) == []


def test_an_organisations_schedules_never_see_another_ones_records(cast: Cast) -> None:
    theirs = factories.make_customer(cast.other_org)
    factories.make_equipment(cast.other_org, theirs, last_service_on=_months_ago(20))
    long_ago = org_today(cast.org) - datetime.timedelta(99)
    factories.make_invoice(cast.other_org, theirs, issued_on=long_ago)
    for detector in Detector.values:
        assert _run(cast.org, detector).found == 0
    _run(cast.other_org, Detector.MAINTENANCE)
    assert not Suggestion.objects.filter(organisation=cast.org).exists()
    assert Suggestion.objects.filter(organisation=cast.other_org).count() == 1


def test_a_task_given_a_deleted_organisation_ends_cleanly(cast: Cast) -> None:
    gone = factories.make_org("Cerrada")
    gone_id = gone.pk
    gone.delete()
    assert PeriodicTask.objects.filter(args=f"[{gone_id}]").count() == len(Detector.values)
    for task in tasks.BY_DETECTOR.values():
        assert task.delay(gone_id).get(disable_sync_subtasks=False) is None
    assert not ScheduleRun.objects.exists()
    assert not PeriodicTask.objects.filter(args=f"[{gone_id}]").exists()  # beat stops calling


def test_a_failing_detector_is_recorded_with_its_error(cast: Cast, monkeypatch: Any) -> None:
    def broken(*args: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setitem(DETECTORS, Detector.MAINTENANCE, broken)
    run = detector_run(detector=Detector.MAINTENANCE, organisation_id=cast.org.pk)
    assert run is not None and run.status == ScheduleRun.Status.FAILED
    assert "boom" in run.error and run.finished_at is not None


def test_an_admin_runs_a_schedule_now_and_sees_only_their_runs(cast: Cast) -> None:
    cast.admin.is_staff = cast.outsider.is_staff = True
    cast.admin.save()
    cast.outsider.save()
    cast.outsider.user_permissions.set(Permission.objects.all())
    schedule = ProactiveSchedule.objects.get(organisation=cast.org, detector=Detector.COLLECTIONS)
    admin, outsider = Client(), Client()
    admin.force_login(cast.admin)
    outsider.force_login(cast.outsider)
    page = "/admin/agents/proactiveschedule/"
    form = {"action": "run_now", "_selected_action": [schedule.pk]}

    outsider.post(page, form)
    assert not ScheduleRun.objects.filter(organisation=cast.org).exists()
    assert admin.post(page, form).status_code == 302
    run = ScheduleRun.objects.get(organisation=cast.org)
    assert run.trigger == "admin"
    assert f"/{schedule.pk}/" not in outsider.get(page).content.decode()
    runs = "/admin/agents/schedulerun/"
    assert f"{runs}{run.pk}/" in admin.get(runs).content.decode()
    assert f"{runs}{run.pk}/" not in outsider.get(runs).content.decode()
    assert outsider.get(f"{runs}{run.pk}/change/").status_code == 302  # to the index: not theirs


def test_manage_py_runs_the_schedules_now(cast: Cast) -> None:
    customer = factories.make_customer(cast.org)
    factories.make_equipment(cast.org, customer, last_service_on=_months_ago(14))
    out = StringIO()
    call_command("proactive_run", cast.org.slug, stdout=out)
    assert "maintenance_due: ok, found 1, new 1" in out.getvalue()
    assert ScheduleRun.objects.filter(organisation=cast.org, trigger="command").count() == 5


def test_an_admin_edits_the_time_in_the_admin_and_bad_values_are_refused(cast: Cast) -> None:
    cast.admin.is_staff = True
    cast.admin.save()
    schedule = ProactiveSchedule.objects.get(organisation=cast.org, detector=Detector.SEASONAL)
    client = Client()
    client.force_login(cast.admin)
    url = f"/admin/agents/proactiveschedule/{schedule.pk}/change/"
    assert client.get(url).status_code == 200
    form = {"hour": "25", "minute": "0", "weekdays": "lunes", "days": "0", "enabled": "on"}
    assert client.post(url, form).status_code == 200  # the form again, with its errors
    assert client.post(url, {**form, "hour": "6", "weekdays": "1,3-5"}).status_code == 302
    task = PeriodicTask.objects.get(pk=schedule.periodic_task_id)
    assert (task.crontab.hour, task.crontab.day_of_week) == ("6", "1,3-5")


@pytest.mark.usefixtures("clock")  # the detectors' "now" and the November moment below agree
def test_equipment_due_and_in_the_campaign_is_offered_one_visit(cast: Cast) -> None:
    customer = factories.make_customer(cast.org)
    factories.make_equipment(cast.org, customer, last_service_on=_months_ago(14))
    assert _run(cast.org, Detector.MAINTENANCE).created == 1
    nov_now = timezone.make_aware(datetime.datetime(2026, 11, 2, 9))
    november = Moment(today=datetime.date(2026, 11, 2), now=nov_now, days=0)
    found = DETECTORS[Detector.SEASONAL](cast.org, november)
    assert len(found) == 1
    created, _expired = suggestions_record(
        organisation=cast.org, run=None, found=found, kinds=(Kind.SEASONAL,)
    )
    assert created == 0 and Suggestion.objects.count() == 1


def _as_posted(form: Any) -> dict[str, Any]:
    """A bound admin form's current values as the browser would post them (split date-times)."""
    data: dict[str, Any] = {}
    for name in form.fields:
        value = form[name].value()
        if isinstance(value, datetime.datetime):
            local = timezone.localtime(value)
            data[form.add_prefix(f"{name}_0")] = f"{local:%Y-%m-%d}"
            data[form.add_prefix(f"{name}_1")] = f"{local:%H:%M:%S}"
        elif isinstance(value, dict | list):
            data[form.add_prefix(name)] = json.dumps(value)
        elif value is not None:
            data[form.add_prefix(name)] = value
    return data


def test_the_schedules_follow_the_organisation_to_another_timezone(cast: Cast) -> None:
    root = get_user_model().objects.create_superuser("root", "root@example.com", "x")
    client = Client()
    client.force_login(root)
    url = f"/admin/business/organisation/{cast.org.pk}/change/"
    page = client.get(url)
    data = _as_posted(page.context["adminform"].form)
    for inline in page.context["inline_admin_formsets"]:
        for form in [inline.formset.management_form, *inline.formset.forms]:
            data.update(_as_posted(form))
    data["timezone"] = "America/Argentina/Mendoza"
    response = client.post(url, data)
    assert response.status_code == 302
    zones = {
        str(s.periodic_task.crontab.timezone)
        for s in ProactiveSchedule.objects.filter(organisation=cast.org)
    }
    assert zones == {"America/Argentina/Mendoza"}


def test_a_schedules_last_run_is_shown_in_the_organisations_timezone(cast: Cast) -> None:
    """Issue 28.1: times in the organisation's zone, not the server's (Buenos Aires) nor UTC —
    an organisation in Madrid sees its run at 13:00, with the detector and status as words."""
    cast.org.timezone = "Europe/Madrid"  # UTC+1 in November; the server's zone is UTC-3
    cast.org.save()
    cast.admin.is_staff = True
    cast.admin.save()
    started = datetime.datetime(2026, 11, 20, 12, 0, tzinfo=datetime.UTC)
    ScheduleRun.objects.create(
        organisation=cast.org, detector=Detector.MAINTENANCE, trigger="admin",
        status="ok", started_at=started,
    )  # fmt: skip
    client = Client(HTTP_ACCEPT_LANGUAGE="es-ar")
    client.force_login(cast.admin)

    page = client.get("/admin/agents/proactiveschedule/").content.decode()

    assert "20/11/2026 13:00" in page
    assert "09:00" not in page and "20/11/2026 12:00" not in page
    assert "maintenance_due" not in page.split("<tbody>")[1]
