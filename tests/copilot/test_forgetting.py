"""The right to be forgotten, everywhere (capataz/forgetting.py): after `customer_forget` no
text or JSON column of any table names the customer, the trace chain says who redacted which
seals and when, a later edit is still a break, and another organisation keeps its rows."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.apps import apps
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import models
from django.test import Client

from agents.models import ToolCall
from approvals.models import PendingAction
from business.models import Customer, EscalationTicket
from capataz.forgetting import PLACEHOLDER, customer_forget
from common.text import fold
from copilot.ledger import verify_chain
from copilot.models import Conversation, Message, TraceSeal
from copilot.services import conversation_create
from evaluation.models import Case, Dataset
from llm.models import ModelCall
from tests import factories
from tests.conftest import Cast
from tests.copilot.conftest import ScriptedRouter, job_under_discussion, task
from tests.copilot.turns import answer

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("registry", "handlers"),
    pytest.mark.usefixtures("dispatched"),  # turns run by the test itself
]

NAME = "Claudia Bianchi"


def rows_naming(needle: str) -> dict[str, int]:
    """Every row of every model whose text or JSON columns hold `needle` (accents and case
    aside), by model — read through the app registry, so no table is left out."""
    wanted, found = fold(needle), {}
    for model in apps.get_models():
        names = [
            f.name for f in model._meta.concrete_fields
            if isinstance(f, models.CharField | models.TextField | models.JSONField)
        ]  # fmt: skip
        if not names:
            continue
        count = 0
        for values in model._default_manager.values_list(*names):
            texts = (v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for v in values)
            count += any(wanted in fold(text) for text in texts)
        if count:
            found[model._meta.label] = count
    return found


@pytest.fixture
def talked_about(cast: Cast, conversation: Conversation, router: ScriptedRouter) -> Customer:
    """A customer the copilot talked about (a cancellation held and its turn sealed) and whose
    personal data also sits in the organisation's other free text."""
    job = job_under_discussion(cast, conversation, NAME)
    customer = job.customer
    Customer.objects.filter(pk=customer.pk).update(
        phone="+5491158246166", email="claudia.bianchi@hotmail.com", cuit="27-34219689-1"
    )
    customer.refresh_from_db()
    router.script["cancelalo"] = [task("cancel_job", 0.9)]
    router.script[f"¿qué tiene {NAME}?"] = [task("search_customer", 0.9, customer=NAME)]
    assert answer(conversation, cast.operator.pk, "cancelalo").result.ok
    assert answer(conversation, cast.operator.pk, f"¿qué tiene {NAME}?").result.ok
    Conversation.objects.filter(pk=conversation.pk).update(
        summary=f"Hablamos de {NAME.upper()} (11 5824-6166, claudia.bianchi@hotmail.com)"
    )
    ModelCall.objects.create(
        organisation=cast.org, purpose="answer", model="m", error="timeout for 'Claudia Bianchí'"
    )  # fmt: skip
    dataset = Dataset.objects.create(organisation=cast.org, name="feedback")
    Case.objects.create(
        organisation=cast.org, dataset=dataset, input=f"cancelá lo de {NAME}",
        expected_entities={"customer": NAME, "cuit": "27342196891"},
    )  # fmt: skip
    EscalationTicket.objects.create(
        organisation=cast.org, customer=customer, summary=f"{NAME} llamó: +54 9 11 5824-6166"
    )  # fmt: skip
    LogEntry.objects.create(
        user=cast.admin, content_type=ContentType.objects.get_for_model(Customer),
        object_id=str(customer.pk), object_repr=NAME, action_flag=CHANGE,
    )  # fmt: skip
    return customer


def _verify() -> str:
    out = io.StringIO()
    call_command("verify_trace", stdout=out)
    return out.getvalue()


def test_forgetting_leaves_the_name_in_no_row_of_any_table(
    cast: Cast, talked_about: Customer
) -> None:
    before = rows_naming(NAME)
    assert before["copilot.Message"] >= 2 and before["agents.ToolCall"] >= 1
    assert {"copilot.TraceSeal", "copilot.Conversation", "llm.ModelCall", "evaluation.Case",
            "business.EscalationTicket", "admin.LogEntry"} <= set(before)  # fmt: skip

    forgotten = customer_forget(organisation=cast.org, customer=talked_about, actor=cast.manager)

    assert rows_naming(NAME) == {}
    for data in ("claudia.bianchi@hotmail.com", "5824-6166", "58246166", "34219689"):
        assert rows_naming(data) == {}, data
    assert forgotten.rows["copilot.Message"] == before["copilot.Message"]
    summary = Conversation.objects.get(organisation=cast.org).summary
    assert summary == f"Hablamos de {PLACEHOLDER} ({PLACEHOLDER}, {PLACEHOLDER})"
    assert EscalationTicket.objects.get().summary == f"{PLACEHOLDER} llamó: {PLACEHOLDER}"
    talked_about.refresh_from_db()
    assert talked_about.phone == "" and NAME not in talked_about.name


def test_the_trace_says_who_redacted_which_seals_and_when(
    cast: Cast, talked_about: Customer
) -> None:
    assert verify_chain(cast.org.pk).intact
    forgotten = customer_forget(organisation=cast.org, customer=talked_about, actor=cast.manager)

    verdict = verify_chain(cast.org.pk)
    entry = forgotten.redaction
    assert entry is not None and entry.kind == TraceSeal.Kind.REDACTION
    assert verdict.intact and verdict.redacted
    assert {r.by for r in verdict.redacted} == {"gerente"}
    assert {r.entry for r in verdict.redacted} == {entry.seq}
    assert any(row.startswith("messages #") for r in verdict.redacted for row in r.rows)
    out = _verify()
    assert "clima-sur: intact" in out
    when = verdict.redacted[0].at
    assert f"redacted by gerente at {when}" in out
    assert out.count("redacted by") == len(verdict.redacted)


def test_an_edit_after_the_redaction_is_still_a_break(cast: Cast, talked_about: Customer) -> None:
    customer_forget(organisation=cast.org, customer=talked_about, actor=cast.manager)
    redacted = verify_chain(cast.org.pk).redacted[0]

    message = Message.objects.filter(organisation=cast.org, text__contains=PLACEHOLDER).first()
    assert message is not None
    Message.objects.filter(pk=message.pk).update(text=message.text + " (y algo más)")
    [found] = verify_chain(cast.org.pk).breaks
    assert (found.reason, found.detail) == ("rows", f"messages #{message.pk}: text")
    Message.objects.filter(pk=message.pk).update(text=message.text)  # put back
    assert verify_chain(cast.org.pk).intact

    seal = TraceSeal.objects.get(organisation=cast.org, turn_id=redacted.turn_id)
    restored = seal.content.replace(PLACEHOLDER, NAME)  # the seal as it was: its rows differ
    TraceSeal.objects.filter(pk=seal.pk).update(content=restored)
    assert {b.reason for b in verify_chain(cast.org.pk).breaks} == {"rows"}
    forged = seal.content.replace(PLACEHOLDER, "Otra Persona")
    TraceSeal.objects.filter(pk=seal.pk).update(content=forged)
    breaks = verify_chain(cast.org.pk).breaks
    assert [(b.seq, b.reason) for b in breaks] == [(redacted.seq, "digest")]


def test_a_rewritten_seal_without_a_redaction_record_is_a_break(
    cast: Cast, talked_about: Customer
) -> None:
    customer_forget(organisation=cast.org, customer=talked_about, actor=cast.manager)
    entry = TraceSeal.objects.get(organisation=cast.org, kind=TraceSeal.Kind.REDACTION)
    entry.delete()  # the record gone: the rewritten seals vouch for nothing
    reasons = {b.reason for b in verify_chain(cast.org.pk).breaks}
    assert "digest" in reasons


def test_forgetting_leaves_another_organisations_namesake_alone(
    cast: Cast, talked_about: Customer, router: ScriptedRouter
) -> None:
    theirs = factories.make_customer(cast.other_org, NAME, phone="+5491158246166")
    their_chat = conversation_create(
        organisation=cast.other_org, user=cast.outsider, channel="panel"
    )
    router.script[f"hola {NAME}"] = [task("greeting", 0.9)]
    answer(their_chat, cast.outsider.pk, f"hola {NAME}")
    their_rows = _snapshot(cast.other_org.pk)

    customer_forget(organisation=cast.org, customer=talked_about, actor=cast.manager)

    assert _snapshot(cast.other_org.pk) == their_rows
    theirs.refresh_from_db()
    assert theirs.name == NAME and theirs.phone == "+5491158246166"
    assert verify_chain(cast.other_org.pk).intact and not verify_chain(cast.other_org.pk).redacted


def test_another_customers_shared_email_stays_on_their_record(
    cast: Cast, talked_about: Customer
) -> None:
    building = factories.make_customer(cast.org, "Consorcio Mitre", email=talked_about.email)
    customer_forget(organisation=cast.org, customer=talked_about, actor=cast.manager)
    building.refresh_from_db()
    assert building.email == "claudia.bianchi@hotmail.com"


def test_an_organisation_admin_forgets_through_the_admin_action(
    cast: Cast, talked_about: Customer
) -> None:
    cast.admin.is_staff = True
    cast.admin.save()
    cast.admin.user_permissions.set(Permission.objects.all())
    client = Client()
    client.force_login(cast.admin)
    response = client.post(
        "/admin/business/customer/",
        {"action": "forget_customers", "_selected_action": [talked_about.pk]},
    )
    assert response.status_code == 302
    assert rows_naming(NAME) == {}
    assert {r.by for r in verify_chain(cast.org.pk).redacted} == {"admin"}


def _snapshot(organisation_id: int) -> dict[str, Any]:
    return {
        "messages": list(Message.objects.filter(organisation_id=organisation_id).values()),
        "tool_calls": list(ToolCall.objects.filter(organisation_id=organisation_id).values()),
        "actions": list(PendingAction.objects.filter(organisation_id=organisation_id).values()),
        "seals": list(TraceSeal.objects.filter(organisation_id=organisation_id).values()),
        "customers": list(Customer.objects.filter(organisation_id=organisation_id).values()),
    }
