"""The live approvals queue's socket: every manager of the organisation hears each change with
the pending count; operators and other organisations' managers hear nothing."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from approvals.models import PendingAction
from approvals.services import action_decide
from capataz.asgi import application
from copilot import eventlog
from tests import factories
from tests.conftest import Cast
from tests.copilot.test_consumer import HOST, ORIGIN, _session_cookie
from tests.websocket import WebsocketCommunicator

pytestmark = pytest.mark.django_db(transaction=True)


async def _open(user: Any) -> tuple[WebsocketCommunicator, bool, int | None]:
    cookie = await sync_to_async(_session_cookie)(user)
    communicator = WebsocketCommunicator(
        application,
        "/ws/approvals/",
        headers=[(b"host", HOST), (b"origin", ORIGIN), (b"cookie", cookie)],
    )
    connected, code = await communicator.connect()
    return communicator, connected, code


def _held(org: Any) -> PendingAction:
    return PendingAction.objects.create(
        organisation=org, agent="scheduling", intent="cancel_job", tool="job_cancel",
        category="execute", arguments={"job_id": 1}, summary="Cancelar",
    )  # fmt: skip


async def test_managers_hear_each_decision_with_the_pending_count(cast: Cast) -> None:
    eventlog.use_loop(asyncio.get_running_loop())
    action = await sync_to_async(_held)(cast.org)
    await sync_to_async(_held)(cast.org)
    second_manager = await sync_to_async(factories.make_user)(cast.org, "manager", "gerente2")
    first, ok_first, _ = await _open(cast.manager)
    second, ok_second, _ = await _open(second_manager)
    assert ok_first and ok_second
    hello = [json.loads(await c.receive_from(10)) for c in (first, second)]
    assert [h["pending"] for h in hello] == [2, 2]

    await sync_to_async(action_decide)(
        organisation_id=cast.org.pk, action_id=action.pk, actor=cast.manager, approve=False
    )
    heard = [json.loads(await c.receive_from(10)) for c in (first, second)]

    assert all(h["action"] == action.pk and h["status"] == "rejected" for h in heard)
    assert [h["pending"] for h in heard] == [1, 1]
    await first.disconnect()
    await second.disconnect()


async def test_an_operator_is_refused_and_another_organisation_hears_nothing(cast: Cast) -> None:
    eventlog.use_loop(asyncio.get_running_loop())
    _, connected, code = await _open(cast.operator)
    assert not connected and code == 4403
    foreign_manager = await sync_to_async(factories.make_user)(cast.other_org, "manager", "g_n")
    foreign, ok, _ = await _open(foreign_manager)
    assert ok
    assert json.loads(await foreign.receive_from(10))["pending"] == 0
    action = await sync_to_async(_held)(cast.org)
    await sync_to_async(action_decide)(
        organisation_id=cast.org.pk, action_id=action.pk, actor=cast.manager, approve=True
    )
    assert await foreign.receive_nothing(timeout=0.5)
    await foreign.disconnect()
