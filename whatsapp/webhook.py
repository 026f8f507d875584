"""The WhatsApp webhook (E2): Meta's verification handshake, and deliveries — each incoming text
stored and answered through the one path every entry point takes (copilot/turn.py
`accept_message`, then copilot/tasks.py `dispatch` once it commits), idempotent per WhatsApp
message id; photos, voice notes and documents handed to whatsapp/media.py; status
callbacks applied to the outbox (whatsapp/outbox.py); template and account changes, which name
the WhatsApp Business Account rather than a number, applied to the organisation's templates
(whatsapp/approved.py) and alerts (whatsapp/alerts.py). Each message stored is marked read, with
the typing indicator when the copilot will answer it (`outbox.mark_read`, after the commit).

A delivery is read, then its signature checked against the app secret of the organisation that
owns each phone-number id it names; a forged or missing signature stores nothing. A correctly
signed delivery is always answered 200: each message's fields are checked on their own
(whatsapp/payload.py), every valid message is stored and each invalid one is recorded as a
`WhatsAppRejection` with its reason — Meta would otherwise send the whole delivery again, and fail
again, for days."""

from __future__ import annotations

import datetime
import hashlib
import hmac
import logging

from django.conf import settings
from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from business.hygiene import text_problem
from copilot import tasks
from copilot.intake import MessageRefused, accept_message
from copilot.models import Conversation, Message
from copilot.services import conversation_create, message_add
from nlu.language import detect_language
from whatsapp import alerts, approved, outbox
from whatsapp import choices as choices
from whatsapp import contacts as contacts
from whatsapp import customers as customers
from whatsapp import events as events
from whatsapp import humans as humans
from whatsapp import media as whatsapp_media
from whatsapp import orders as orders
from whatsapp import replies as wa_replies
from whatsapp import welcome as welcome
from whatsapp.models import WhatsAppAccount, WhatsAppRejection
from whatsapp.outbox import status_apply
from whatsapp.payload import (
    CHOICE_REPLIES,
    BadPayload,
    Delivery,
    Incoming,
    ProblemReport,
    Rejected,
    parse,
    signature_valid,
)

logger = logging.getLogger(__name__)


@csrf_exempt
@require_http_methods(["GET", "POST"])
def webhook(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return _handshake(request)
    try:
        delivery = parse(request.body)
    except BadPayload as exc:
        return JsonResponse({"error": "bad payload", "reason": str(exc)}, status=400)
    accounts, businesses = accounts_for(delivery), business_accounts_for(delivery)
    if accounts is None or businesses is None or not all(
        signature_valid(account.app_secret, request.body,
                        request.headers.get("X-Hub-Signature-256", ""))
        for account in [*accounts.values(), *businesses.values()]
    ):  # fmt: skip
        return JsonResponse({"error": "forbidden"}, status=403)
    webhook_receive(delivery, accounts)
    account_events_apply(delivery, businesses)
    return JsonResponse({"ok": True})


def _handshake(request: HttpRequest) -> HttpResponse:
    mode = request.GET.get("hub.mode", "")
    token = request.GET.get("hub.verify_token", "")
    challenge = request.GET.get("hub.challenge", "")
    if mode != "subscribe" or not token or not challenge or not verify_token_known(token):
        return HttpResponse("forbidden", status=403, content_type="text/plain")
    return HttpResponse(challenge[:200], content_type="text/plain")


def verify_token_known(token: str) -> bool:
    tokens = (a.verify_token for a in WhatsAppAccount.objects.filter(active=True))
    return any(known and hmac.compare_digest(known.encode(), token.encode()) for known in tokens)


def accounts_for(delivery: Delivery) -> dict[str, WhatsAppAccount] | None:
    """The active account of each phone-number id the delivery names; None when one is unknown
    (its signature cannot be checked)."""
    numbers = delivery.phone_number_ids()
    digests = {WhatsAppAccount.digest_of(number): number for number in numbers}
    found = WhatsAppAccount.objects.filter(phone_number_digest__in=digests, active=True)
    accounts = {digests[a.phone_number_digest]: a for a in found}
    return accounts if len(accounts) == len(numbers) else None


def business_accounts_for(delivery: Delivery) -> dict[str, WhatsAppAccount] | None:
    """The active account of each WhatsApp Business Account id the delivery's template and
    account changes name; None when one is unknown."""
    ids = delivery.business_account_ids()
    digests = {WhatsAppAccount.digest_of(waba): waba for waba in ids}
    found = WhatsAppAccount.objects.filter(business_account_digest__in=digests, active=True)
    accounts = {digests[a.business_account_digest]: a for a in found}
    return accounts if len(accounts) == len(ids) else None


def account_events_apply(delivery: Delivery, businesses: dict[str, WhatsAppAccount]) -> None:
    for event in delivery.account_events:
        organisation_id = businesses[event.business_account_id].organisation_id
        with transaction.atomic():
            if event.field == "account_update":
                alerts.account_event(organisation_id, event)
            else:
                approved.template_event(organisation_id, event)


def webhook_receive(delivery: Delivery, accounts: dict[str, WhatsAppAccount]) -> int:
    """Store the delivery's messages (each once), record the ones not valid and apply its
    statuses; the number of messages newly stored."""
    rejections_record(delivery.rejected, accounts)
    stored = 0
    for incoming in delivery.messages:
        stored += _receive_one(incoming, accounts[incoming.phone_number_id])
    for update in delivery.statuses:
        status_apply(accounts[update.phone_number_id].organisation_id, update)
    for problem in delivery.problems:
        problem_record(accounts[problem.phone_number_id].organisation_id, problem)
    return stored


def problem_record(organisation_id: int, problem: ProblemReport) -> bool:
    """An error Meta reports on the number with no message (`value.errors`: a rate limit hit, a
    request it could not process): an alert for the organisation's admins, once a day per error
    (a redelivery, or the same error again the same day, is the same alert)."""
    day = timezone.now().date().isoformat()
    return alerts.alert_record(
        organisation_id, kind="account", event=f"ERROR {problem.code}", subject="",
        detail=problem.detail, key=hashlib.sha256(f"{problem.key}:{day}".encode()).hexdigest(),
    )  # fmt: skip


def rejections_record(rejected: list[Rejected], accounts: dict[str, WhatsAppAccount]) -> None:
    for item in rejected:
        logger.warning(
            "WhatsApp message %r rejected: %s %s", item.message_id, item.field, item.reason
        )
    WhatsAppRejection.objects.bulk_create(
        WhatsAppRejection(
            organisation_id=accounts[item.phone_number_id].organisation_id,
            message_id=item.message_id,
            field=item.field,
            reason=item.reason,
            excerpt=item.excerpt,
        )  # fmt: skip
        for item in rejected
    )


def _receive_one(incoming: Incoming, account: WhatsAppAccount) -> bool:
    try:
        with transaction.atomic():
            if events.is_event(incoming):  # a reaction, an edit, a number change, ...
                return events.event_apply(account.organisation_id, incoming)
            if incoming.type == "request_welcome":  # the chat opened from a link: welcomed once
                conversation = _conversation_of(account, incoming)
                return welcome.welcome_send(conversation, incoming, account, _meta(incoming))
            return _store(incoming, account)
    except MessageRefused as exc:
        logger.warning("WhatsApp message %s refused: %s", incoming.message_id, exc.code)
        return False
    except IntegrityError:  # the same message from a concurrent delivery: stored there
        return False


def _store(incoming: Incoming, account: WhatsAppAccount) -> bool:
    """The message stored (False: it was before) and marked read — with the typing indicator
    when a turn will answer it, asked for before the turn is."""
    conversation = _conversation_of(account, incoming)
    if text := _written(conversation, incoming):
        # The panel refuses longer text; a customer's message is kept, cut at the limit.
        text = text[: settings.COPILOT_MAX_MESSAGE_CHARS]
        if text_problem(text) is None and (
            conversation.mode == Conversation.Mode.HUMAN or customers.asks_for_human(text)
        ):
            return _read(incoming, account, _to_a_person(conversation, incoming, text))
        accepted = accept_message(
            conversation=conversation, user_id=None, text=text,
            client_id=incoming.message_id, meta={"whatsapp": _meta(incoming)},
        )  # fmt: skip
        if accepted.duplicate:
            return False
        _read(incoming, account, True, typing=True)
        org_id, conversation_id = conversation.organisation_id, conversation.pk
        transaction.on_commit(lambda: tasks.dispatch(org_id, conversation_id))
        return True
    if incoming.type in whatsapp_media.KINDS and incoming.media_id:
        # Fetched and read by a job once this commits (whatsapp/media.py).
        stored = whatsapp_media.media_accept(conversation, incoming, _meta(incoming))
        return _read(incoming, account, stored is not None)
    if incoming.type == "contacts":  # offered to the office as a new customer's data
        return _read(incoming, account, contacts.contacts_offer(conversation, incoming,
                                                                _meta(incoming)))  # fmt: skip
    return _read(incoming, account, _acknowledge_other(conversation, incoming))  # no turn


def _conversation_of(account: WhatsAppAccount, incoming: Incoming) -> Conversation:
    conversation = conversation_for(account.organisation_id, incoming)
    if conversation.customer_id is None:  # who is writing: a customer with this number?
        customers.link_by_phone(conversation)
    return conversation


def _read(incoming: Incoming, account: WhatsAppAccount, stored: bool, typing: bool = False) -> bool:
    """A message newly stored is marked read once this commits (whatsapp/outbox.py)."""
    if stored:
        org_id, message_id = account.organisation_id, incoming.message_id
        transaction.on_commit(lambda: outbox.mark_read_enqueue(org_id, message_id, typing=typing))
    return stored


def _written(conversation: Conversation, incoming: Incoming) -> str:
    """What the customer wrote: a text's body, the option a tapped button or list row names
    (whatsapp/choices.py), a flow's answered fields, an order's products and quantities (and
    the note on the cart), or a shared location's address when the registration is asking for
    one (the registration step reads it as the address)."""
    if incoming.type == "text":
        return incoming.text if incoming.text.strip() else ""
    if incoming.flow_fields:  # `interactive` `nfm_reply`
        return wa_replies.flow_answered(incoming.flow_fields, humans.language_of(conversation))
    if incoming.type == "order" and incoming.items:
        return orders.ordered(conversation, incoming, humans.language_of(conversation))
    if incoming.type == "button" or (
        incoming.type == "interactive" and incoming.subtype in CHOICE_REPLIES
    ):
        return choices.chosen(conversation, incoming.choice_id, incoming.text).strip()
    if incoming.type == "location" and customers.asks_for_address(conversation):
        return incoming.address.strip()
    if incoming.type == "contacts" and contacts.registering_name(conversation):
        return contacts.first_name_of(incoming)  # the registration asks for a name: theirs
    return ""


def _to_a_person(conversation: Conversation, incoming: Incoming, text: str) -> bool:
    """A person handles the conversation (or the customer just asked for one): stored and shown
    live, the members told; the copilot does not answer."""
    meta = _meta(incoming)
    if conversation.mode == Conversation.Mode.HUMAN:
        return humans.incoming_store(conversation, text, incoming.message_id, meta) is not None
    language = detect_language(text)
    stored = humans.human_requested(conversation, text, incoming.message_id, meta, language)
    return stored is not None


def conversation_for(organisation_id: int, incoming: Incoming) -> Conversation:
    """The organisation's conversation with this sender (the latest), or a new one."""
    existing = _latest_with(organisation_id, incoming.sender)
    if existing is not None:  # the usual case: no lock taken
        return existing
    # Two deliveries from a new sender at once must not open two conversations: the account's
    # row is the lock, taken only to open one (a no-op on SQLite, which writes one transaction
    # at a time anyway), and the sender is looked for again under it.
    account = (
        WhatsAppAccount.objects.select_for_update()
        .select_related("organisation")
        .get(organisation_id=organisation_id)
    )
    existing = _latest_with(organisation_id, incoming.sender)
    if existing is not None:
        return existing
    created = conversation_create(
        organisation=account.organisation, user=None, channel=Conversation.Channel.WHATSAPP,
        title=f"WhatsApp {incoming.name or '+' + incoming.sender}", contact=incoming.sender,
    )  # fmt: skip
    humans.tell(created, "new_conversation")  # every open panel lists it (static/js/whatsapp.js)
    return created


def _latest_with(organisation_id: int, sender: str) -> Conversation | None:
    return (
        Conversation.objects.filter(
            organisation_id=organisation_id,
            channel=Conversation.Channel.WHATSAPP,
            contact=sender,
        )  # fmt: skip
        .order_by("-updated_at")
        .first()
    )


def _meta(incoming: Incoming) -> dict[str, object]:
    sent_at = datetime.datetime.fromtimestamp(incoming.timestamp, tz=datetime.UTC)
    meta: dict[str, object] = {
        "id": incoming.message_id, "from": incoming.sender, "type": incoming.type,
        "timestamp": sent_at.isoformat(), "name": incoming.name,
    }  # fmt: skip
    if incoming.errors:  # what Meta could not give of it ("131051 Message type unknown: …")
        meta["errors"] = incoming.errors
    if incoming.reply_to:  # the message of ours it answers (the panel may show which)
        meta["reply_to"] = incoming.reply_to
    if incoming.forwarded:
        meta["forwarded"] = True
    if incoming.referral:  # the click-to-WhatsApp ad that opened the chat
        meta["referral"] = incoming.referral
    if incoming.flow_response:  # a flow's answer as Meta sent it (the message is its fields)
        meta["flow_response"] = incoming.flow_response
    if incoming.type == "order":  # the cart as sent (the message is its products, as text)
        meta["order"] = {
            "catalog_id": incoming.catalog_id, "text": incoming.text,
            "product_items": [
                {"product_retailer_id": product, "quantity": quantity, "item_price": price,
                 "currency": currency}
                for product, quantity, price, currency in incoming.items
            ],
        }  # fmt: skip
    return meta


def _acknowledge_other(conversation: Conversation, incoming: Incoming) -> bool:
    """A message the channel cannot read (a video, a sticker, a location, an empty order):
    noted in the conversation and answered with one line, at most once a day per conversation
    (never while a person handles it). False when it was stored before."""
    if Message.objects.filter(conversation=conversation, client_id=incoming.message_id).exists():
        return False
    language = humans.language_of(conversation)
    kind = incoming.subtype if incoming.type == "unsupported" else incoming.type
    received = wa_replies.received(kind or "?", language)
    message_add(
        conversation=conversation, role=Message.Role.USER, text=received, language=language,
        client_id=incoming.message_id, trace={"whatsapp": _meta(incoming)},
    )  # fmt: skip
    if conversation.mode == Conversation.Mode.HUMAN or _acknowledged_today(conversation):
        return True
    message_add(
        conversation=conversation, role=Message.Role.ASSISTANT,
        text=wa_replies.cannot_read(language), language=language,
        trace={"whatsapp_ack": incoming.message_id, "at": timezone.now().isoformat()},
    )  # fmt: skip
    return True


def _acknowledged_today(conversation: Conversation) -> bool:
    return conversation.messages.filter(
        role=Message.Role.ASSISTANT, trace__has_key="whatsapp_ack",
        created_at__date=timezone.localdate(),
    ).exists()  # fmt: skip
