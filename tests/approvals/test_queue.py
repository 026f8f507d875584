"""The approvals queue: managers see their organisation's held actions in plain words, filter them
by state, decide them (with htmx or a plain form); nobody else sees or decides anything."""

from __future__ import annotations

from django.test import Client

from approvals.models import PendingAction
from tests import factories
from tests.conftest import Cast


def _held(cast: Cast, org: object, tool: str) -> PendingAction:
    return PendingAction.objects.create(
        organisation=org, agent="scheduling", intent="cancel_job", tool=tool,
        category="execute", arguments={"job_id": 1}, summary=f"Acción {tool}",
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


def test_the_operator_who_asked_reads_the_action_a_manager_decides(cast: Cast) -> None:
    """The chip of the operator's answer links to the action: theirs to read, not to decide;
    another operator's is not theirs, and another organisation's does not exist for them."""
    action = _held(cast, cast.org, "job_cancel")
    url = f"/approvals/{action.pk}/"
    mine = _get(cast.operator, url)
    assert mine.status_code == 200
    body = mine.content.decode()
    assert 'name="decision"' not in body and 'href="/approvals/"' not in body
    assert 'name="decision"' in _get(cast.manager, url).content.decode()
    assert _get(factories.make_user(cast.org, "operator", "otra"), url).status_code == 403
    assert _get(cast.outsider, url).status_code == 404


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
    body = _get(cast.manager, "/approvals/?state=expired").content.decode()
    assert "technician_dispatch" in body and "job_cancel" not in body


def test_a_decision_with_htmx_swaps_the_row_and_a_second_click_is_told_it_was_decided(
    cast: Cast,
) -> None:
    action = _held(cast, cast.org, "job_cancel")
    client = Client()
    client.force_login(cast.manager)
    url = f"/approvals/{action.pk}/decide/"
    first = client.post(url, {"decision": "reject", "reason": "no"}, HTTP_HX_REQUEST="true")
    second = client.post(url, {"decision": "approve"}, HTTP_HX_REQUEST="true")

    action.refresh_from_db()
    assert action.status == PendingAction.Status.REJECTED
    assert first.status_code == 200 and f'id="approval-{action.pk}"' in first.content.decode()
    assert "decide-form" not in first.content.decode()  # decided: no buttons any more
    assert (
        "ya fue decidida" in second.content.decode() or "already decided" in second.content.decode()
    )
    assert action.events.filter(kind="rejected").count() == 1


def test_a_bad_decision_value_changes_nothing(cast: Cast) -> None:
    action = _held(cast, cast.org, "job_cancel")
    client = Client()
    client.force_login(cast.manager)
    response = client.post(f"/approvals/{action.pk}/decide/", {"decision": "maybe"})
    assert response.status_code == 302
    action.refresh_from_db()
    assert action.status == PendingAction.Status.PENDING


def test_the_sidebar_counts_what_waits_for_managers_only(cast: Cast) -> None:
    _held(cast, cast.org, "job_cancel")
    _held(cast, cast.org, "invoice_create")
    manager_page = _get(cast.manager, "/jobs/").content.decode()
    operator_page = _get(cast.operator, "/jobs/").content.decode()
    assert "data-pending-count" in manager_page and ">2</span>" in manager_page
    assert "data-pending-count" not in operator_page


def test_the_live_refresh_returns_the_rows_with_their_wrapper(cast: Cast) -> None:
    _held(cast, cast.org, "job_cancel")
    client = Client()
    client.force_login(cast.manager)
    body = client.get("/approvals/?state=pending", HTTP_HX_REQUEST="true").content.decode()
    assert "{#" not in body and "{% comment" not in body
    assert 'id="approval-rows"' in body and "Acción job_cancel" in body


def test_the_detail_reads_the_snapshot_in_words_and_hides_internals_from_managers(
    cast: Cast,
) -> None:
    action = _held(cast, cast.org, "job_cancel")
    PendingAction.objects.filter(pk=action.pk).update(
        snapshot={"job": {"id": 7, "status": "scheduled", "start": "2026-11-30T10:00:00-03:00"}}
    )
    manager_view = _get(cast.manager, f"/approvals/{action.pk}/").content.decode()
    admin_view = _get(cast.admin, f"/approvals/{action.pk}/").content.decode()
    assert "{&#x27;job&#x27;" not in manager_view and "Programado" in manager_view
    assert "30/11/2026" in manager_view
    # The technical details, for whoever edits agents: the tool's code as code, by its label.
    code = "(<code>job_cancel</code>)"
    assert code not in manager_view and code in admin_view
