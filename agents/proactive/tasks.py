"""The proactive agent's schedules as Celery tasks (P1, E3): one per detector, each taking the
organisation's id and recording its run (agents/proactive/services.py). The beat entries are
installed per organisation by `schedules_install`, on the organisation's clock; admins edit
them as "Proactive schedules". A deleted organisation's id ends the task cleanly."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from agents.models import Detector
from agents.proactive.services import detector_run


def _run(detector: str, organisation_id: int, trigger: str) -> int | None:
    run = detector_run(detector=detector, organisation_id=organisation_id, trigger=trigger)
    return run.pk if run is not None else None


@shared_task(name="proactive.maintenance_due", ignore_result=True)
def maintenance_due(organisation_id: int, trigger: str = "schedule") -> int | None:
    return _run(Detector.MAINTENANCE, organisation_id, trigger)


@shared_task(name="proactive.follow_ups", ignore_result=True)
def follow_ups(organisation_id: int, trigger: str = "schedule") -> int | None:
    return _run(Detector.FOLLOW_UPS, organisation_id, trigger)


@shared_task(name="proactive.seasonal", ignore_result=True)
def seasonal_campaigns(organisation_id: int, trigger: str = "schedule") -> int | None:
    return _run(Detector.SEASONAL, organisation_id, trigger)


@shared_task(name="proactive.collections", ignore_result=True)
def collections(organisation_id: int, trigger: str = "schedule") -> int | None:
    return _run(Detector.COLLECTIONS, organisation_id, trigger)


@shared_task(name="proactive.opportunities", ignore_result=True)
def opportunities(organisation_id: int, trigger: str = "schedule") -> int | None:
    return _run(Detector.OPPORTUNITIES, organisation_id, trigger)


BY_DETECTOR: dict[str, Any] = {
    Detector.MAINTENANCE: maintenance_due,
    Detector.FOLLOW_UPS: follow_ups,
    Detector.SEASONAL: seasonal_campaigns,
    Detector.COLLECTIONS: collections,
    Detector.OPPORTUNITIES: opportunities,
}
