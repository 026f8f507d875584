"""Templates and the account (issue 27.5 and 27.1): template and account webhooks posted as Meta
signs them, the 24-hour window counted from the message's own timestamp, the approved template
with the reply's essentials as its parameters (once per conversation), the 131047 fallback, read
receipts, shared contacts — over the real webhook, the real outbox and a fake Graph API on a real
socket; the other organisation sees none of it."""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from copilot.models import Conversation, Message
from copilot.services import message_add
from testing.fake_graph import FakeGraph
from tests.conftest import Cast
from tests.whatsapp.conftest import CUSTOMER, OTHER_SECRET
from tests.whatsapp.test_whatsapp import _delivery, _post, _text
from whatsapp import outbox
from whatsapp.models import OutgoingMessage, WhatsAppAccount, WhatsAppAlert, WhatsAppTemplate

pytestmark = [
    pytest.mark.usefixtures("registry"),
    pytest.mark.django_db(transaction=True),
]

WABA, OTHER_WABA = "1029384756", "5647382910"
DETAILS = "more than 24 hours have passed"


@pytest.fixture
def businesses(accounts: tuple[WhatsAppAccount, WhatsAppAccount]) -> None:
    for account, waba in zip(accounts, (WABA, OTHER_WABA), strict=True):
        account.business_account_id = waba
        account.save()


def _change(field: str, value: dict[str, Any], waba: str = WABA) -> bytes:
    entry = {"id": waba, "time": 1764400000, "changes": [{"field": field, "value": value}]}
    return json.dumps({"object": "whatsapp_business_account", "entry": [entry]}).encode()


def _template_update(event: str, name: str = "seguimiento", **extra: Any) -> bytes:
    value = {"event": event, "message_template_id": 778899, "message_template_name": name,
             "message_template_language": "es_AR", "reason": "NONE", **extra}  # fmt: skip
    return _change("message_template_status_update", value)


def _approved(cast: Cast, name: str = "seguimiento", **extra: Any) -> WhatsAppTemplate:
    fields = {"language": "es_AR", "status": "APPROVED", "variables": ["name", "text"], **extra}
    return WhatsAppTemplate.objects.create(organisation=cast.org, name=name, **fields)


# --- template and account webhooks ------------------------------------------------------------


def test_template_webhooks_keep_the_template_in_sync_and_a_pause_alerts_the_admins(
    cast: Cast, businesses: None
) -> None:
    assert (
        _post(_template_update("APPROVED", message_template_category="UTILITY")).status_code == 200
    )
    template = WhatsAppTemplate.objects.get(organisation=cast.org, name="seguimiento")
    assert (template.status, template.category, template.template_id) == (
        "APPROVED", "UTILITY", "778899"
    )  # fmt: skip
    quality = {"previous_quality_score": "GREEN", "new_quality_score": "YELLOW",
               "message_template_id": 778899, "message_template_name": "seguimiento",
               "message_template_language": "es_AR"}  # fmt: skip
    assert _post(_change("message_template_quality_update", quality)).status_code == 200
    paused = _template_update(
        "PAUSED", other_info={"title": "FIRST_PAUSE", "description": "Low quality: paused 3h"}
    )
    for _redelivery in range(2):
        assert _post(paused).status_code == 200
    template.refresh_from_db()
    assert (template.status, template.quality) == ("PAUSED", "YELLOW")
    [alert] = WhatsAppAlert.objects.all()  # once, however often Meta delivers it
    assert (alert.organisation, alert.kind, alert.event) == (cast.org, "template", "PAUSED")
    assert "Low quality: paused 3h" in alert.detail
    # The organisation's admin sees it on every page; its operator and the other one do not.
    client = Client()
    client.force_login(cast.admin)
    assert "FIRST_PAUSE" in client.get("/").content.decode()
    for someone in (cast.operator, cast.outsider):
        client.force_login(someone)
        assert "whatsapp-alerts" not in client.get("/").content.decode()


def test_an_account_restriction_alerts_the_admins_and_a_routine_update_does_not(
    cast: Cast, businesses: None
) -> None:
    restricted = {
        "event": "ACCOUNT_RESTRICTION",
        "restriction_info": [
            {"restriction_type": "RESTRICTED_BIZ_INITIATED_MESSAGING", "expiration": "2026-12-06"}
        ],
    }
    assert _post(_change("account_update", restricted)).status_code == 200
    assert _post(_change("account_update", {"event": "VERIFIED_ACCOUNT"})).status_code == 200
    [alert] = WhatsAppAlert.objects.all()
    assert (alert.organisation, alert.kind, alert.event) == (cast.org, "account",
                                                             "ACCOUNT_RESTRICTION")  # fmt: skip
    assert "RESTRICTED_BIZ_INITIATED_MESSAGING 2026-12-06" in alert.detail


def test_a_template_webhook_needs_the_accounts_own_signature(cast: Cast, businesses: None) -> None:
    body = _template_update("DISABLED")
    assert _post(body, secret=OTHER_SECRET).status_code == 403  # the other organisation's secret
    unknown = _change("account_update", {"event": "DISABLED_UPDATE"}, waba="42")
    assert _post(unknown).status_code == 403
    assert not WhatsAppTemplate.objects.exists() and not WhatsAppAlert.objects.exists()
    # The other organisation's account update is theirs alone.
    other = _change("account_update", {"event": "DISABLED_UPDATE"}, waba=OTHER_WABA)
    assert _post(other, secret=OTHER_SECRET).status_code == 200
    assert list(WhatsAppAlert.objects.values_list("organisation", flat=True)) == [cast.other_org.pk]


# --- the window and the template ----------------------------------------------------------------


def _reply(cast: Cast, text: str, django_capture_on_commit_callbacks: Any) -> OutgoingMessage:
    """The copilot's reply stored as a turn stores it: its outbox row sent once committed."""
    conversation = Conversation.objects.get(organisation=cast.org, contact=CUSTOMER)
    with django_capture_on_commit_callbacks(execute=True):
        message = message_add(conversation=conversation, role=Message.Role.ASSISTANT, text=text,
                              language="es")  # fmt: skip
    return OutgoingMessage.objects.get(message=message)


def _written(message_id: str, text: str, hours_ago: float) -> dict[str, Any]:
    stamp = timezone.now() - datetime.timedelta(hours=hours_ago)
    return {**_text(message_id, text), "timestamp": str(int(stamp.timestamp()))}


def test_a_30_hour_old_redelivery_does_not_open_the_window(
    cast: Cast, accounts: Any, graph: FakeGraph, dispatched: list[Any],
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    _approved(cast)
    with django_capture_on_commit_callbacks(execute=True):  # arrives now, written 30 hours ago
        assert (
            _post(_delivery(_written("wamid.old", "hola, ¿vienen mañana?", 30))).status_code == 200
        )
    row = _reply(
        cast,
        "Sí, Marta:\nmañana entre las 14   y las 18 pasa Diego.",
        django_capture_on_commit_callbacks,
    )
    row.refresh_from_db()
    assert (row.status, row.template) == ("sent", "seguimiento")
    [sent] = graph.requests
    assert sent.body["template"]["language"] == {"code": "es_AR"}
    assert sent.body["template"]["components"] == [
        {
            "type": "body",
            "parameters": [
                {"type": "text", "text": "Marta"},  # the WhatsApp profile's name: no customer yet
                {"type": "text", "text": "Sí, Marta: mañana entre las 14 y las 18 pasa Diego."},
            ],
        }
    ]
    # Written an hour ago: the window is open, the text goes as itself.
    with django_capture_on_commit_callbacks(execute=True):
        assert _post(_delivery(_written("wamid.new", "gracias", 1))).status_code == 200
    _reply(cast, "¡De nada!", django_capture_on_commit_callbacks)
    assert graph.requests[-1].body["text"]["body"] == "¡De nada!"


def test_resending_failed_rows_of_a_conversation_sends_one_template_with_their_texts(
    cast: Cast, accounts: Any, graph: FakeGraph, dispatched: list[Any],
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        assert _post(_delivery(_written("wamid.1", "hola", 48))).status_code == 200
    texts = [
        "Tu visita quedó para el jueves.",
        "Llevamos el repuesto.",
        "Cualquier cosa, escribinos.",
    ]
    rows = [_reply(cast, text, django_capture_on_commit_callbacks) for text in texts]
    assert set(OutgoingMessage.objects.values_list("status", flat=True)) == {"failed"}
    assert graph.requests == []  # no template approved yet: nothing went
    _approved(cast, variables=["text"])
    ids = [row.pk for row in rows]
    assert outbox.outgoing_resend(organisation_id=cast.other_org.pk, ids=ids) == 0
    with django_capture_on_commit_callbacks(execute=True):
        assert outbox.outgoing_resend(organisation_id=cast.org.pk, ids=ids) == 3
    [sent] = graph.requests  # one template, not three
    [body] = sent.body["template"]["components"]
    assert body["parameters"] == [{"type": "text", "text": " ".join(texts)}]
    settled = OutgoingMessage.objects.filter(pk__in=ids)
    assert {(r.status, r.template, r.provider_message_id) for r in settled} == {
        ("sent", "seguimiento", settled[0].provider_message_id)
    }


def test_a_131047_refusal_falls_back_to_the_template_and_its_details_are_kept(
    cast: Cast, accounts: Any, graph: FakeGraph, dispatched: list[Any],
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        assert _post(_delivery(_written("wamid.1", "hola", 2))).status_code == 200
    graph.add(400, code=131047)  # the Cloud API's clock says the window closed
    row = _reply(cast, "Mañana pasa Diego.", django_capture_on_commit_callbacks)
    row.refresh_from_db()
    assert row.status == "failed" and DETAILS in row.last_error  # no template: shown as Meta says
    assert "131047" in row.last_error and outbox.NO_TEMPLATE in row.last_error
    _approved(cast, variables=["text"])
    graph.add(400, code=131047)
    row = _reply(cast, "Llevamos el repuesto.", django_capture_on_commit_callbacks)
    row.refresh_from_db()
    assert (row.status, row.template, row.as_template) == ("sent", "seguimiento", True)
    text, template = graph.requests[-2:]
    assert text.body["type"] == "text" and template.body["type"] == "template"


def test_a_131047_failed_callback_sends_the_template_once(
    cast: Cast, accounts: Any, graph: FakeGraph, dispatched: list[Any],
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    _approved(cast, variables=["text"])
    with django_capture_on_commit_callbacks(execute=True):
        assert _post(_delivery(_written("wamid.1", "hola", 2))).status_code == 200
    row = _reply(cast, "Mañana pasa Diego.", django_capture_on_commit_callbacks)
    row.refresh_from_db()
    failed = {"id": row.provider_message_id, "status": "failed", "recipient_id": CUSTOMER,
              "timestamp": str(int(timezone.now().timestamp())),
              "errors": [{"code": 131047, "title": "Re-engagement message",
                          "error_data": {"details": f"Message failed: {DETAILS}."}}]}  # fmt: skip
    for _redelivery in range(2):
        with django_capture_on_commit_callbacks(execute=True):
            assert _post(_delivery(statuses=[failed])).status_code == 200
    assert [r.body["type"] for r in graph.requests] == ["text", "template"]
    row.refresh_from_db()
    assert (row.status, row.as_template) == ("sent", True)


def test_a_status_callback_keeps_metas_error_details(
    cast: Cast, accounts: Any, graph: FakeGraph, dispatched: list[Any],
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        assert _post(_delivery(_written("wamid.1", "hola", 2))).status_code == 200
    row = _reply(cast, "Mañana pasa Diego.", django_capture_on_commit_callbacks)
    row.refresh_from_db()
    failed = {"id": row.provider_message_id, "status": "failed", "recipient_id": CUSTOMER,
              "errors": [{"code": 131026, "title": "Message undeliverable",
                          "error_data": {"details": "Not on WhatsApp."}}]}  # fmt: skip
    assert _post(_delivery(statuses=[failed])).status_code == 200
    row.refresh_from_db()
    assert row.last_error == "131026 Message undeliverable: Not on WhatsApp."


# --- read receipts and shared contacts -----------------------------------------------------------


def test_a_message_is_marked_read_with_the_typing_indicator_and_a_failure_holds_nothing(
    cast: Cast, accounts: Any, graph: FakeGraph, dispatched: list[Any],
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    graph.fail_receipts(500)
    with django_capture_on_commit_callbacks(execute=True):
        assert _post(_delivery(_text("wamid.1", "hola"))).status_code == 200
        assert _post(_delivery(_text("wamid.2", "¿vienen mañana?"))).status_code == 200
        assert _post(_delivery(_text("wamid.2", "¿vienen mañana?"))).status_code == 200  # again
    assert [r.body for r in graph.receipts] == [
        {"messaging_product": "whatsapp", "status": "read", "message_id": message_id,
         "typing_indicator": {"type": "text"}}
        for message_id in ("wamid.1", "wamid.2")
    ]  # fmt: skip
    assert len(dispatched) == 2  # the failed receipt held neither turn
    assert graph.requests == []


def test_a_shared_contact_is_offered_to_the_office_as_a_new_customer(
    cast: Cast, accounts: Any, graph: FakeGraph, dispatched: list[Any],
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    contact = {
        **_text("wamid.c1", ""),
        "type": "contacts",
        "contacts": [
            {
                "name": {"formatted_name": "Juan Pérez", "first_name": "Juan"},
                "phones": [
                    {"phone": "+54 9 11 5555-1111", "wa_id": "5491155551111", "type": "CELL"}
                ],
            }
        ],
    }
    contact.pop("text")
    with django_capture_on_commit_callbacks(execute=True):
        for _redelivery in range(2):
            assert _post(_delivery(contact)).status_code == 200
    conversation = Conversation.objects.get(organisation=cast.org, contact=CUSTOMER)
    stored = conversation.messages.get(client_id="wamid.c1")
    assert stored.trace["whatsapp_contacts"] == [{"name": "Juan Pérez", "phone": "5491155551111"}]
    [note] = conversation.messages.filter(role="system")
    assert "Juan Pérez, +5491155551111" in note.text
    assert not conversation.messages.filter(role="assistant").exists()  # no "only text" line
    assert graph.requests == [] and dispatched == []
    assert not Message.objects.filter(organisation=cast.other_org).exists()
