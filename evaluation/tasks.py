"""The evaluation's Celery task: one run over its dataset (evaluation/runs.py)."""

from __future__ import annotations

import functools
import logging
from typing import Any

from celery import shared_task
from django.db import transaction

from evaluation.models import Run
from evaluation.runs import run_create, run_execute

logger = logging.getLogger(__name__)


@shared_task(name="evaluation.run", ignore_result=True, acks_late=True)
def run_evaluation(run_id: int) -> str:
    return run_execute(run_id)


def dispatch(run_id: int) -> bool:
    """Hand the run to a worker; False (the run marked failed, with why) when the job queue
    cannot be reached."""
    try:
        run_evaluation.delay(run_id)
    except Exception as exc:
        logger.warning("could not enqueue evaluation run %s: %s", run_id, exc)
        Run.objects.filter(pk=run_id, status=Run.Status.QUEUED).update(
            status=Run.Status.FAILED, error=f"the job queue cannot be reached: {exc}"[:2000]
        )
        return False
    return True


def run_start(**kwargs: Any) -> Run:
    """`run_create`, then the job once the run is committed."""
    run = run_create(**kwargs)
    transaction.on_commit(functools.partial(dispatch, run.pk))
    return run
