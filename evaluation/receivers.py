"""What the evaluation app does when something happens elsewhere (connected in
EvaluationConfig.ready): a new organisation gets its copy of the shipped golden set once its
creation commits (426 rows are not written inside whatever transaction created it; the
evaluation pages install it too if it is still missing)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction

from business.models import Organisation
from evaluation.datasets import golden_install


def on_organisation_saved(
    sender: Any, instance: Organisation, created: bool, raw: bool = False, **kwargs: Any
) -> None:
    if created and not raw and settings.EVALUATION_GOLDEN_ON_CREATE:
        organisation_id = instance.pk
        transaction.on_commit(lambda: _install(organisation_id))


def _install(organisation_id: int) -> None:
    organisation = Organisation.objects.filter(pk=organisation_id).first()
    if organisation is not None:
        golden_install(organisation)
