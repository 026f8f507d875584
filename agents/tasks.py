"""The agents app's Celery tasks (found by capataz/celery.py's autodiscovery): the proactive
agent's schedules live in its folder."""

from __future__ import annotations

from agents.proactive.tasks import (
    collections,
    follow_ups,
    maintenance_due,
    opportunities,
    seasonal_campaigns,
)

__all__ = ["collections", "follow_ups", "maintenance_due", "opportunities", "seasonal_campaigns"]
