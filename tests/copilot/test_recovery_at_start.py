"""A restarted web process answers what its previous run left behind as it starts, with no
socket connected (the embedded default runs turns on daphne's threads): queued turns run, the
turn cut short is interrupted."""

from __future__ import annotations

import datetime
import time
from typing import Any

import pytest
from django.utils import timezone

from capataz import asgi
from copilot import tasks
from copilot.intake import accept_message
from copilot.models import Conversation, Message, Turn
from tests.conftest import Cast
from tests.copilot.conftest import ScriptedRouter, task

pytestmark = [
    pytest.mark.django_db(transaction=True),  # recovery runs on a runner thread
    pytest.mark.usefixtures("registry", "handlers"),
]

UNFINISHED = (Turn.Status.QUEUED, Turn.Status.RUNNING)


@pytest.fixture
def fresh_process(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """This process as daphne just started it: nothing recovered yet, runner threads local."""
    settings.COPILOT_TURN_RUNNER = "local"
    settings.COPILOT_RECOVER_AT_START = True
    monkeypatch.setattr(tasks, "_recovered", False)


def _settled(conversation: Conversation, seconds: float = 15) -> bool:
    """Every turn finished and the runner gone (its lease given up after its last turn)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        unfinished = Turn.objects.filter(conversation=conversation, status__in=UNFINISHED)
        leased = Conversation.objects.filter(pk=conversation.pk).exclude(lease_owner="")
        if not unfinished.exists() and not leased.exists():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.usefixtures("fresh_process")
def test_start_up_runs_the_turns_a_dead_process_left_without_any_socket(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    router.script["hola"] = [task("greeting", 1.0)]
    cut = accept_message(conversation=conversation, user_id=cast.operator.pk, text="hola")
    queued = [
        accept_message(conversation=conversation, user_id=cast.operator.pk, text="hola")
        for _ in range(3)
    ]
    # The previous run died mid-turn; its lease has lapsed since.
    Turn.objects.filter(pk=cut.turn_id).update(status=Turn.Status.RUNNING, runner="dead")
    lapsed = timezone.now() - datetime.timedelta(seconds=1)
    Conversation.objects.filter(pk=conversation.pk).update(lease_owner="dead", lease_until=lapsed)
    assert Turn.objects.filter(conversation=conversation, status__in=UNFINISHED).count() == 4

    asgi.start_up()  # what importing capataz.asgi does when daphne starts

    assert _settled(conversation)
    assert Turn.objects.get(pk=cut.turn_id).status == Turn.Status.INTERRUPTED
    done = Turn.objects.filter(pk__in=[a.turn_id for a in queued], status=Turn.Status.DONE)
    assert done.count() == 3
    assert Message.objects.filter(conversation=conversation, role="assistant").count() == 4


@pytest.mark.usefixtures("fresh_process")
def test_start_up_waits_out_a_lease_the_dead_run_still_held(
    cast: Cast, conversation: Conversation, router: ScriptedRouter, settings: Any
) -> None:
    router.script["hola"] = [task("greeting", 1.0)]
    settings.COPILOT_LEASE_SECONDS = 0.5
    accepted = accept_message(conversation=conversation, user_id=cast.operator.pk, text="hola")
    held = timezone.now() + datetime.timedelta(seconds=0.5)  # a restart quicker than a lease
    Conversation.objects.filter(pk=conversation.pk).update(lease_owner="dead", lease_until=held)

    asgi.start_up()

    assert _settled(conversation)
    assert Turn.objects.get(pk=accepted.turn_id).status == Turn.Status.DONE


def test_start_up_recovers_nothing_when_turned_off_or_on_celery(
    cast: Cast, conversation: Conversation, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    accepted = accept_message(conversation=conversation, user_id=cast.operator.pk, text="hola")
    for runner, on in (("local", False), ("celery", True)):
        settings.COPILOT_TURN_RUNNER, settings.COPILOT_RECOVER_AT_START = runner, on
        monkeypatch.setattr(tasks, "_recovered", False)
        asgi.start_up()
        time.sleep(0.3)
        assert Turn.objects.get(pk=accepted.turn_id).status == Turn.Status.QUEUED
