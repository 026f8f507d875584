"""The demo organisation gets its schedules when it is loaded, and they find work in its data —
each thing once, however often they run."""

from __future__ import annotations

import pytest
from django_celery_beat.models import PeriodicTask

from agents.models import Detector, ProactiveSchedule, Suggestion
from agents.proactive.services import detector_run, schedules_install_all
from business.models import Organisation
from capataz.demo import load_demo

pytestmark = pytest.mark.django_db


def test_the_demo_gets_its_schedules_and_they_find_work_once() -> None:
    demo = load_demo().organisation
    schedules = ProactiveSchedule.objects.filter(organisation=demo)
    assert sorted(s.detector for s in schedules) == sorted(Detector.values)
    assert {str(s.periodic_task.crontab.timezone) for s in schedules} == {demo.timezone}

    first = {d: detector_run(detector=d, organisation_id=demo.pk) for d in Detector.values}
    second = {d: detector_run(detector=d, organisation_id=demo.pk) for d in Detector.values}

    for detector in Detector.values:
        one, two = first[detector], second[detector]
        assert one is not None and two is not None and not one.error and not two.error
        # Fewer new than found only where another kind already offers the same visit.
        assert one.created <= one.found and (two.found, two.created) == (one.found, 0), detector
    for detector in (Detector.MAINTENANCE, Detector.FOLLOW_UPS, Detector.OPPORTUNITIES):
        assert first[detector].found > 0, detector  # type: ignore[union-attr]
    assert Suggestion.objects.filter(organisation=demo).count() == sum(
        run.created  # type: ignore[union-attr]
        for run in first.values()
    )


def test_migrate_installs_the_schedules_of_organisations_that_had_none() -> None:
    (older,) = Organisation.objects.bulk_create([Organisation(name="Antigua", slug="antigua")])
    assert not ProactiveSchedule.objects.filter(organisation=older).exists()
    schedules_install_all()
    schedules_install_all()
    assert ProactiveSchedule.objects.filter(organisation=older).count() == len(Detector.values)
    assert PeriodicTask.objects.filter(args=f"[{older.pk}]").count() == len(Detector.values)
