"""The tamper-evident trace (T1): every ended turn is sealed into its conversation's hash chain,
anchored into its organisation's chain, and `verify_trace` finds each kind of tampering (an
edited, removed or back-dated row; an edited, removed or inserted seal; an edited or removed
anchor; a chain cut after its anchor) or an unsealed turn, at the right place. Turns go the way
every entry point's do (stored, queued, drained); seals written before the conversation chains
(turn seals in the organisation's chain) still verify."""

from __future__ import annotations

import io
import json
import uuid
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from agents.customer_scope import NOT_FOR_CUSTOMERS
from agents.models import ToolCall
from approvals.models import PendingAction
from copilot import ledger, runner, services, tasks
from copilot.ledger import verify_chain
from copilot.models import AgentRun, Conversation, Message, TraceSeal, Turn
from copilot.services import conversation_create
from tests.conftest import Cast
from tests.copilot.conftest import ScriptedRouter, job_under_discussion, task
from tests.copilot.turns import answer

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("registry", "handlers"),
    pytest.mark.usefixtures("dispatched"),  # turns run by the test itself
]


@pytest.fixture
def approved(cast: Cast, conversation: Conversation, router: ScriptedRouter) -> PendingAction:
    """A cancellation held, approved by a manager and carried out: three turns' worth of trace
    (the request, the paused turn's tool call, the decision turn)."""
    job_under_discussion(cast, conversation, "Claudia Bianchi")
    router.script["cancelalo"] = [task("cancel_job", 0.9)]
    assert answer(conversation, cast.operator.pk, "cancelalo").result.ok
    action = PendingAction.objects.get(organisation=cast.org, tool="job_cancel")
    client = Client()
    client.force_login(cast.manager)
    assert (
        client.post(f"/approvals/{action.pk}/decide/", {"decision": "approve"}).status_code == 302
    )
    runner.drain(cast.org.pk, conversation.pk)
    action.refresh_from_db()
    assert action.status == PendingAction.Status.EXECUTED
    return action


def _verify(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    try:
        call_command("verify_trace", *args, stdout=out)
    except SystemExit as exc:
        return int(exc.code or 0), out.getvalue()
    return 0, out.getvalue()


def test_every_ended_turn_is_sealed_in_order_and_the_chain_verifies(
    cast: Cast, conversation: Conversation, approved: PendingAction
) -> None:
    seals = list(TraceSeal.objects.filter(organisation=cast.org).order_by("seq"))
    turns = Turn.objects.filter(organisation=cast.org)
    assert [(s.chain, s.seq) for s in seals] == [(conversation.pk, 1), (conversation.pk, 2)]
    assert {s.turn_id for s in seals} == {str(t.pk) for t in turns}
    assert seals[0].previous == "" and seals[1].previous == seals[0].digest
    assert all(len(s.digest) == 64 for s in seals)
    # The paused turn's seal vouches for the request as it was made; the decision's for the
    # decision and the tool call it ran.
    paused = next(s for s in seals if s.turn_id == approved.turn_id)
    decided = next(s for s in seals if s.turn_id != approved.turn_id)
    assert '"tool":"job_cancel"' in paused.content
    assert '"approvals_requested":[{' in paused.content
    assert '"decision":{' in decided.content and '"approved":true' in decided.content
    assert '"approved":true' in decided.content and '"tool_calls":[{' in decided.content
    assert verify_chain(cast.org.pk).intact
    code, out = _verify()  # anchors the conversation's chain first
    assert code == 0 and "clima-sur: intact (3 seals)" in out
    anchor = TraceSeal.objects.get(organisation=cast.org, chain=None)
    assert (anchor.kind, anchor.seq, anchor.previous) == (TraceSeal.Kind.ANCHOR, 1, "")
    head = {"conversation": conversation.pk, "seq": 2, "digest": seals[1].digest}
    assert json.loads(anchor.content) == {"anchor": {"heads": [head]}}
    assert ledger.anchor_chains(cast.org.pk) is None  # nothing grew since


def test_an_edited_tool_call_is_found_at_its_seal_and_row(
    cast: Cast, approved: PendingAction
) -> None:
    call = ToolCall.objects.get(organisation=cast.org, tool="job_cancel", approved=True)
    ToolCall.objects.filter(pk=call.pk).update(arguments={"job_id": 999999})
    verdict = verify_chain(cast.org.pk)
    assert not verdict.intact
    [found] = verdict.breaks
    assert found.turn_id == call.turn_id and found.reason == "rows"
    assert found.detail == f"tool_calls #{call.pk}: arguments"
    code, out = _verify("--organisation", "clima-sur")
    assert code == 1 and f"seal #{found.seq}" in out and "tool_calls" in out


def test_an_edited_answer_or_removed_run_is_found(cast: Cast, approved: PendingAction) -> None:
    paused = Turn.objects.get(pk=approved.turn_id)
    Message.objects.filter(pk=paused.answer_id).update(text="todo bien, nada que ver")
    run = AgentRun.objects.filter(organisation=cast.org, turn_id=approved.turn_id).first()
    assert run is not None
    removed = run.pk
    run.delete()
    details = [b.detail for b in verify_chain(cast.org.pk).breaks]
    assert f"messages #{paused.answer_id}: text" in details
    assert f"agent_runs #{removed}: removed" in details


def test_a_row_back_dated_into_a_turn_is_found(cast: Cast, approved: PendingAction) -> None:
    paused = Turn.objects.get(pk=approved.turn_id)
    forged = ToolCall.objects.create(
        organisation=cast.org, turn_id=approved.turn_id, agent="scheduling", tool="job_book",
        category="write", created_at=paused.created_at,
    )  # fmt: skip
    details = [b.detail for b in verify_chain(cast.org.pk).breaks]
    assert details == [f"tool_calls #{forged.pk}: added afterwards"]


def test_an_edited_or_removed_seal_breaks_the_chain_there(
    cast: Cast, approved: PendingAction
) -> None:
    first, second = TraceSeal.objects.filter(organisation=cast.org).order_by("seq")
    TraceSeal.objects.filter(pk=first.pk).update(content=first.content.replace("job_cancel", "x"))
    [found] = verify_chain(cast.org.pk, first_only=True).breaks
    assert (found.chain, found.seq, found.reason) == (first.chain, 1, "digest")

    TraceSeal.objects.filter(pk=first.pk).update(content=first.content)  # put back
    assert verify_chain(cast.org.pk).intact
    TraceSeal.objects.filter(pk=first.pk).update(digest="0" * 64)
    assert [(b.seq, b.reason) for b in verify_chain(cast.org.pk).breaks] == [
        (1, "digest"), (2, "link"),
    ]  # fmt: skip
    TraceSeal.objects.filter(pk=first.pk).update(digest=first.digest)
    first.delete()
    reasons = {(b.seq, b.reason) for b in verify_chain(cast.org.pk).breaks}
    assert reasons == {(2, "gap"), (2, "link")}
    assert second.turn_id  # the remaining seal is the one that no longer follows


def _chain(cast: Cast) -> list[TraceSeal]:
    return list(
        TraceSeal.objects.filter(organisation=cast.org, chain__isnull=False).order_by("seq")
    )


def test_a_seal_inserted_into_a_chain_is_found(cast: Cast, approved: PendingAction) -> None:
    first, second = _chain(cast)
    TraceSeal.objects.filter(pk=second.pk).update(seq=3)  # room for the forged one
    forged = TraceSeal.objects.create(
        organisation=cast.org, chain=first.chain, seq=2, turn_id=str(uuid.uuid4()),
        content=first.content, previous=first.digest,
        digest=ledger.digest_of(first.digest, first.content),
    )  # fmt: skip
    breaks = [(b.seq, b.turn_id, b.reason) for b in verify_chain(cast.org.pk).breaks]
    assert breaks == [(2, forged.turn_id, "missing_turn"), (3, second.turn_id, "link")]


def test_a_seal_forged_with_its_rows_and_digests_is_caught_by_its_anchor(
    cast: Cast, approved: PendingAction
) -> None:
    ledger.anchor_chains(cast.org.pk)
    call = ToolCall.objects.get(organisation=cast.org, tool="job_cancel", approved=True)
    ToolCall.objects.filter(pk=call.pk).update(summary="nada")  # the row, the seal, the chain
    previous = ""
    for seal in _chain(cast):
        turn = Turn.objects.get(pk=seal.turn_id)
        content = ledger.canonical(ledger.turn_content(turn, seal.sealed_at))
        digest = ledger.digest_of(previous, content)
        TraceSeal.objects.filter(pk=seal.pk).update(
            content=content, previous=previous, digest=digest
        )
        previous = digest
    [found] = verify_chain(cast.org.pk).breaks
    assert (found.seq, found.reason) == (2, "anchor")
    assert found.detail == "not the seal anchor #1 vouched for"


def test_an_edited_or_removed_anchor_is_found(
    cast: Cast, conversation: Conversation, approved: PendingAction, router: ScriptedRouter
) -> None:
    first = ledger.anchor_chains(cast.org.pk)
    router.script["hola"] = [task("greeting", 0.9)]
    assert answer(conversation, cast.operator.pk, "hola").result.ok
    second = ledger.anchor_chains(cast.org.pk)
    assert first is not None and second is not None
    assert (second.seq, second.previous) == (2, first.digest)
    TraceSeal.objects.filter(pk=first.pk).update(
        content=first.content.replace('"seq":2', '"seq":1')
    )
    [found] = verify_chain(cast.org.pk, first_only=True).breaks
    assert (found.chain, found.seq, found.reason) == (None, 1, "digest")
    TraceSeal.objects.filter(pk=first.pk).update(content=first.content)  # put back
    assert verify_chain(cast.org.pk).intact

    first.delete()
    assert {(b.chain, b.seq, b.reason) for b in verify_chain(cast.org.pk).breaks} == {
        (None, 2, "gap"), (None, 2, "link"),
    }  # fmt: skip
    second.delete()  # the last anchor: the seals it flagged are left vouched for by none
    [found] = verify_chain(cast.org.pk).breaks
    assert (found.chain, found.seq, found.reason) == (conversation.pk, 3, "anchor")


def test_a_chain_cut_after_its_last_anchor_is_found(
    cast: Cast, conversation: Conversation, approved: PendingAction
) -> None:
    ledger.anchor_chains(cast.org.pk)
    last = _chain(cast)[-1]
    last.delete()
    verdict = verify_chain(cast.org.pk)
    assert [(b.chain, b.seq, b.reason) for b in verdict.breaks] == [(conversation.pk, 2, "cut")]
    assert verdict.unsealed == [last.turn_id]
    code, out = _verify()
    assert code == 1 and f"conversation {conversation.pk} seal #2: cut" in out


def test_seals_written_before_the_conversation_chains_still_verify(
    cast: Cast, conversation: Conversation, approved: PendingAction, router: ScriptedRouter
) -> None:
    previous = ""  # the organisation's chain as it was written: every turn sealed into it
    for seq, seal in enumerate(_chain(cast), start=1):
        digest = ledger.digest_of(previous, seal.content)
        TraceSeal.objects.filter(pk=seal.pk).update(
            chain=None, seq=seq, previous=previous, digest=digest
        )
        previous = digest
    router.script["hola"] = [task("greeting", 0.9)]
    assert answer(conversation, cast.operator.pk, "hola").result.ok  # sealed the new way
    code, out = _verify()
    assert code == 0 and "clima-sur: intact (4 seals)" in out
    anchor = TraceSeal.objects.get(organisation=cast.org, kind=TraceSeal.Kind.ANCHOR)
    assert (anchor.seq, anchor.previous) == (3, previous)  # after the old seals
    call = ToolCall.objects.get(organisation=cast.org, tool="job_cancel", approved=True)
    ToolCall.objects.filter(pk=call.pk).update(ok=False)
    [found] = verify_chain(cast.org.pk).breaks
    assert (found.chain, found.turn_id, found.reason) == (None, call.turn_id, "rows")


def test_a_seal_locks_no_organisation_row_and_seals_the_messages_the_turn_holds(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    router.script["hola"] = [task("greeting", 0.9)]
    assert answer(conversation, cast.operator.pk, "hola").result.ok
    done = answer(conversation, cast.operator.pk, "hola").result
    turn = Turn.objects.select_related("message", "answer").get(pk=done.turn_id)
    TraceSeal.objects.filter(turn_id=done.turn_id).delete()  # sealed again, counted
    with CaptureQueriesContext(connection) as queries:
        services.turn_seal(turn)
    tables = " ".join(q["sql"] for q in queries.captured_queries)
    assert "business_organisation" not in tables and "copilot_message" not in tables
    assert len(queries.captured_queries) == 8  # savepoint, 4 trace tables, head, insert, release
    assert TraceSeal.objects.get(turn_id=done.turn_id).seq == 2
    assert verify_chain(cast.org.pk).intact  # what the turn held is what a read returns


def test_a_turn_that_ran_seals_the_rows_it_holds_and_a_check_reads_them_all(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    router.script["buscá a Juan"] = [task("search_customer", 0.9, customer="Juan")]
    with CaptureQueriesContext(connection) as queries:
        done = answer(conversation, cast.operator.pk, "buscá a Juan").result
    content = json.loads(TraceSeal.objects.get(turn_id=done.turn_id).content)
    assert [call["tool"] for call in content["tool_calls"]] == ["customers_find"]
    assert [run["agent"] for run in content["agent_runs"]] == ["customer"]
    assert content["model_calls"] == content["approvals_requested"] == []
    read = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("SELECT")]
    for table in (
        "copilot_agentrun",
        "agents_toolcall",
        "llm_modelcall",
        "approvals_pendingaction",
    ):
        assert not [sql for sql in read if f'FROM "{table}"' in sql], table
    assert verify_chain(cast.org.pk).intact  # what the turn held is what a read returns

    ToolCall.objects.filter(turn_id=done.turn_id).update(summary="otra cosa")
    verdict = verify_chain(cast.org.pk)
    assert not verdict.intact
    assert (verdict.breaks[0].turn_id, verdict.breaks[0].reason) == (done.turn_id, "rows")


def test_the_scheduled_job_anchors_each_organisation_into_its_own_chain(
    cast: Cast, conversation: Conversation, approved: PendingAction, router: ScriptedRouter
) -> None:
    theirs = conversation_create(organisation=cast.other_org, user=cast.outsider, channel="panel")
    router.script["hola"] = [task("greeting", 0.9)]
    assert answer(theirs, cast.outsider.pk, "hola").result.ok
    assert tasks.anchor_trace_chains() == 2
    for org, chat, seq in ((cast.org, conversation, 2), (cast.other_org, theirs, 1)):
        anchor = TraceSeal.objects.get(organisation=org, kind=TraceSeal.Kind.ANCHOR)
        [head] = json.loads(anchor.content)["anchor"]["heads"]
        assert (head["conversation"], head["seq"]) == (chat.pk, seq)
    assert not TraceSeal.objects.filter(chain__isnull=False, anchored=False).exists()
    assert tasks.anchor_trace_chains() == 0


def test_seals_are_append_only_through_the_orm(cast: Cast, approved: PendingAction) -> None:
    seal = TraceSeal.objects.filter(organisation=cast.org).first()
    assert seal is not None
    seal.content = "{}"
    with pytest.raises(ValueError, match="append-only"):
        seal.save()


def test_a_seal_that_cannot_be_written_costs_no_answer_and_shows_as_unsealed(
    cast: Cast, conversation: Conversation, router: ScriptedRouter, monkeypatch: Any
) -> None:
    router.script["hola"] = [task("greeting", 0.9)]
    assert answer(conversation, cast.operator.pk, "hola").result.ok  # sealed: the chain starts

    def broken(turn: Turn) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(services, "seal_turn", broken)
    second = answer(conversation, cast.operator.pk, "hola")
    assert second.result.ok and second.result.text
    assert Turn.objects.get(pk=second.result.turn_id).status == Turn.Status.DONE
    verdict = verify_chain(cast.org.pk)
    assert verdict.unsealed == [second.result.turn_id] and not verdict.intact


def test_a_steps_error_is_read_in_the_managers_language_with_its_code_as_the_title(
    cast: Cast, conversation: Conversation, approved: PendingAction
) -> None:
    code = f"invoice_create {NOT_FOR_CUSTOMERS}"
    answer = Turn.objects.get(pk=approved.turn_id).answer
    assert answer is not None and answer.trace["steps"]
    trace = {**answer.trace, "steps": [{**answer.trace["steps"][0], "error": code}]}
    Message.objects.filter(pk=answer.pk).update(trace=trace)  # as a refused step stores it
    body = _as(cast.manager).get(f"/chat/traces/turn/{approved.turn_id}/").content.decode()
    assert "Un cliente no puede pedir esto por WhatsApp: " in body
    assert code not in body


def test_each_organisation_has_its_own_chain_and_an_outsider_sees_none_of_ours(
    cast: Cast, approved: PendingAction, router: ScriptedRouter
) -> None:
    theirs = conversation_create(organisation=cast.other_org, user=cast.outsider, channel="panel")
    router.script["hola"] = [task("greeting", 0.9)]
    answer(theirs, cast.outsider.pk, "hola")
    [their_seal] = TraceSeal.objects.filter(organisation=cast.other_org)
    assert their_seal.seq == 1 and their_seal.previous == ""
    assert verify_chain(cast.org.pk).intact and verify_chain(cast.other_org.pk).intact

    cast.outsider.is_staff = True  # the attacker: staff with every model permission
    cast.outsider.save()
    cast.outsider.user_permissions.set(Permission.objects.all())
    client = Client()
    client.force_login(cast.outsider)
    listing = client.get("/admin/copilot/traceseal/")
    assert listing.status_code == 200
    ours = TraceSeal.objects.filter(organisation=cast.org)
    body = listing.content.decode()
    assert str(their_seal.turn_id) in body
    assert not any(seal.turn_id in body for seal in ours)
    opened = client.get(f"/admin/copilot/traceseal/{ours[0].pk}/change/")
    assert opened.status_code == 302  # to the admin index: not theirs


def test_the_admin_action_says_where_the_chain_breaks(cast: Cast, approved: PendingAction) -> None:
    cast.admin.is_staff = True
    cast.admin.save()
    cast.admin.user_permissions.set(Permission.objects.all())
    client = Client()
    client.force_login(cast.admin)
    call = ToolCall.objects.get(organisation=cast.org, tool="job_cancel", approved=True)
    ToolCall.objects.filter(pk=call.pk).update(ok=False)
    seals = TraceSeal.objects.filter(organisation=cast.org)
    response = client.post(
        "/admin/copilot/traceseal/",
        {"action": "verify", "_selected_action": [s.pk for s in seals]},
        follow=True,
    )
    text = response.content.decode()
    assert response.status_code == 200
    assert f"tool_calls #{call.pk}: ok" in text
    assert ledger.digest_of("", "{}") != ledger.digest_of("x", "{}")


# --- the trace browser (D5) -----------------------------------------------------------------


def _as(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_manager_reads_a_turns_trace_with_its_seal(
    cast: Cast, conversation: Conversation, approved: PendingAction
) -> None:
    manager = _as(cast.manager)
    listing = manager.get("/chat/traces/")
    assert listing.status_code == 200
    assert f'data-conversation="{conversation.pk}"' in listing.content.decode()
    turns = manager.get(f"/chat/traces/{conversation.pk}/").content.decode()
    assert f'data-turn="{approved.turn_id}"' in turns and "cancelalo" in turns

    page = manager.get(f"/chat/traces/turn/{approved.turn_id}/")
    body = page.content.decode()
    assert page.status_code == 200
    assert "cancel_job" in body  # the understanding
    assert "job_cancel" in body and f"#{approved.pk}" in body  # the held call and its approval
    assert 'data-seal="intact"' in body
    # The engine and what chose the chain in the reader's words, never their codes.
    assert "motor: Integrado (sin conexión)" in body
    assert "ruteado por: la lectura integrada" in body
    assert "embedded" not in body.split("<main", 1)[-1]

    call = ToolCall.objects.get(organisation=cast.org, tool="job_cancel", approved=True)
    ToolCall.objects.filter(pk=call.pk).update(summary="nada")
    tampered = manager.get(f"/chat/traces/turn/{call.turn_id}/").content.decode()
    assert 'data-seal="broken"' in tampered and f"tool_calls #{call.pk}: summary" in tampered


def test_the_footer_counts_agents_and_steps_and_links_supervisors_to_the_trace(
    cast: Cast, conversation: Conversation, approved: PendingAction
) -> None:
    manager_view = _as(cast.manager).get(f"/chat/{conversation.pk}/").content.decode()
    operator_view = _as(cast.operator).get(f"/chat/{conversation.pk}/").content.decode()
    turns = Turn.objects.filter(conversation=conversation).select_related("answer")
    footed = [t for t in turns if t.answer is not None and t.answer.trace.get("consulted")]
    assert footed  # the agenda was consulted
    for turn in footed:
        link = f'href="/chat/traces/turn/{turn.pk}/"'
        assert link in manager_view and link not in operator_view
    assert manager_view.count("1 agente · 1 paso") == len(footed)
    assert operator_view.count("1 agente · 1 paso") == len(footed)


def test_operators_and_outsiders_read_no_trace(
    cast: Cast, conversation: Conversation, approved: PendingAction
) -> None:
    operator = _as(cast.operator)
    assert operator.get("/chat/traces/").status_code == 403
    assert operator.get(f"/chat/traces/turn/{approved.turn_id}/").status_code == 403

    outsider = _as(cast.outsider)  # an admin of another organisation
    assert (
        f'data-conversation="{conversation.pk}"'
        not in outsider.get("/chat/traces/").content.decode()
    )
    assert outsider.get(f"/chat/traces/{conversation.pk}/").status_code == 404
    assert outsider.get(f"/chat/traces/turn/{approved.turn_id}/").status_code == 404
    assert outsider.get("/chat/traces/turn/not-a-uuid/").status_code == 404
