"""The suggestions socket: a member's open panel hears the count when a schedule leaves new
suggestions; another organisation's members hear nothing of it."""

from __future__ import annotations

import asyncio
import datetime
import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from agents.models import Detector
from agents.proactive.services import detector_run
from capataz.asgi import application
from tests import factories
from tests.conftest import Cast
from tests.copilot.test_consumer import HOST, ORIGIN, _session_cookie
from tests.websocket import WebsocketCommunicator

pytestmark = pytest.mark.django_db(transaction=True)


async def _open(user: Any) -> tuple[WebsocketCommunicator, bool]:
    cookie = await sync_to_async(_session_cookie)(user)
    communicator = WebsocketCommunicator(
        application,
        "/ws/suggestions/",
        headers=[(b"host", HOST), (b"origin", ORIGIN), (b"cookie", cookie)],
    )
    connected, _code = await communicator.connect()
    return communicator, connected


def _overdue_equipment(org: Any) -> None:
    customer = factories.make_customer(org)
    last = timezone.localdate() - datetime.timedelta(days=400)
    factories.make_equipment(org, customer, last_service_on=last)


async def test_a_schedules_new_suggestions_reach_the_open_panels_of_its_organisation(
    cast: Cast,
) -> None:
    await sync_to_async(_overdue_equipment)(cast.org)
    operator, ok = await _open(cast.operator)
    outsider, ok_outsider = await _open(cast.outsider)
    assert ok and ok_outsider
    hello = [json.loads(await c.receive_from(10)) for c in (operator, outsider)]
    assert hello == [{"type": "suggestions", "new": 0}] * 2

    await sync_to_async(detector_run)(detector=Detector.MAINTENANCE, organisation_id=cast.org.pk)

    assert json.loads(await operator.receive_from(10)) == {"type": "suggestions", "new": 1}
    assert await outsider.receive_nothing(timeout=0.3)
    for communicator in (operator, outsider):
        await communicator.disconnect()


async def test_nobody_signed_in_is_refused(cast: Cast) -> None:
    communicator = WebsocketCommunicator(
        application, "/ws/suggestions/", headers=[(b"host", HOST), (b"origin", ORIGIN)]
    )
    connected, code = await communicator.connect()
    assert not connected and code == 4401
    await asyncio.sleep(0)
