"""What the agents app does when something happens elsewhere (connected in AgentsConfig.ready):
a new organisation gets the proactive agent's schedules, and `migrate` installs them for the
organisations that existed before."""

from __future__ import annotations

from typing import Any

from agents.proactive.services import schedules_install
from business.models import Organisation


def on_organisation_saved(
    sender: Any, instance: Organisation, created: bool, raw: bool = False, **kwargs: Any
) -> None:
    if created and not raw:
        schedules_install(organisation=instance)
