"""The read-only approvals queue: managers see their organisation's held actions, nobody else."""

from __future__ import annotations

from django.test import Client

from approvals.models import PendingAction
from tests.conftest import Cast


def _held(cast: Cast, org: object, tool: str) -> PendingAction:
    return PendingAction.objects.create(
        organisation=org, agent="scheduling", intent="cancel_job", tool=tool,
        category="execute", arguments={"job_id": 1}, summary=f"{tool}(job_id=1)",
        requested_by=cast.operator,
    )  # fmt: skip


def _get(user: object, url: str = "/approvals/") -> object:
    client = Client()
    client.force_login(user)  # type: ignore[arg-type]
    return client.get(url)


def test_a_manager_sees_the_held_actions_of_their_organisation(cast: Cast) -> None:
    _held(cast, cast.org, "job_cancel")
    _held(cast, cast.other_org, "invoice_create")
    response = _get(cast.manager)
    assert response.status_code == 200
    body = response.content.decode()
    assert "job_cancel" in body
    assert "invoice_create" not in body  # another organisation's


def test_an_operator_cannot_open_the_queue(cast: Cast) -> None:
    assert _get(cast.operator).status_code == 403


def test_the_outsider_sees_none_of_the_first_organisations_actions(cast: Cast) -> None:
    _held(cast, cast.org, "job_cancel")
    response = _get(cast.outsider)
    assert response.status_code == 200
    assert "job_cancel" not in response.content.decode()


def test_a_status_filter_shows_only_that_status(cast: Cast) -> None:
    done = _held(cast, cast.org, "technician_dispatch")
    done.status = PendingAction.Status.EXPIRED
    done.save()
    _held(cast, cast.org, "job_cancel")
    body = _get(cast.manager, "/approvals/?status=expired").content.decode()
    assert "technician_dispatch" in body and "job_cancel" not in body
