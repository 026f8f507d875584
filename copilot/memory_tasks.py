"""The jobs of the working memory and the customer profiles: the model's summary after a turn
(O9, llm engine), profile extraction at a farewell and for conversations gone idle (P3).

Apart from copilot/tasks.py because the turn enqueues them and copilot/tasks.py
runs turns (it imports the turn): one module would be an import cycle. copilot/tasks.py
re-exports them, so the worker's autodiscovery registers them as the project's other tasks.

Thin, ids in: the work is copilot/summaries.py and copilot/profiles.py. Idempotent: extracting
twice stores the same fields; a conversation or customer deleted meanwhile is skipped.
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.db import transaction
from django.utils import timezone

from copilot import profiles, summaries

logger = logging.getLogger(__name__)


@shared_task(name="copilot.extract_profiles", ignore_result=True, max_retries=3)
def extract_profiles(organisation_id: int, conversation_id: int) -> int:
    """The profiles of the customers a conversation was about, from it and from the records."""
    return len(profiles.extract_for_conversation(organisation_id, conversation_id))


@shared_task(name="copilot.sweep_idle_conversations", ignore_result=True)
def sweep_idle_conversations() -> int:
    """Conversations gone quiet without a farewell get their extraction too (claimed once)."""
    claimed = profiles.claim_idle(timezone.now())
    for organisation_id, conversation_id in claimed:
        enqueue(organisation_id, conversation_id)
    return len(claimed)


def extract_after_commit(organisation_id: int, conversation_id: int) -> None:
    """A farewell: claim the conversation and extract once the turn's writes are committed."""
    if profiles.claim_for_extraction(organisation_id, conversation_id):
        transaction.on_commit(lambda: enqueue(organisation_id, conversation_id))


def enqueue(organisation_id: int, conversation_id: int) -> None:
    try:
        extract_profiles.delay(organisation_id, conversation_id)
    except Exception as exc:  # the broker is down: released, the idle sweep comes back to it
        logger.warning("profiles of conversation %s not extracted: %s", conversation_id, exc)
        profiles.release_claim(conversation_id)


@shared_task(name="copilot.refresh_summary", ignore_result=True)
def refresh_summary(organisation_id: int, conversation_id: int, based_on: str) -> bool:
    """The model's gist in the conversation's summary, unless a newer turn rewrote it."""
    return summaries.refresh_with_model(organisation_id, conversation_id, based_on)


def summarize_after_commit(organisation_id: int, conversation_id: int, based_on: str) -> None:
    def send() -> None:
        try:
            refresh_summary.delay(organisation_id, conversation_id, based_on)
        except Exception as exc:  # the extractive summary stands
            logger.warning("summary of conversation %s not refreshed: %s", conversation_id, exc)

    transaction.on_commit(send)
