"""The WhatsApp outbox: a reply stored in a WhatsApp conversation gets an outgoing row in the same
transaction (`outbox_add`, called by copilot/services.py `message_add`), a job sends it once that
commits (`deliver`), retrying with exponential back-off on 429, 5xx and connection errors (the
server's Retry-After wins) and giving up after `WHATSAPP_MAX_ATTEMPTS` as *failed*.

The 24-hour customer-service window, counted from the WhatsApp `timestamp` of the customer's
latest message (a redelivery that arrives 30 hours late does not reopen it): once closed, only an
approved template may be sent (whatsapp/approved.py), its parameters the reply's essentials;
without one the row fails, saying so. A row the Cloud API refuses as text with 131047 (the window
closed before we knew: at once, or later in a failed status callback) goes as the template too.
One template per conversation at a time: the later rows waiting behind it (a resend of several
failed ones) go in it, their texts joined, and settle with it.

Incoming messages are marked read (with the typing indicator when a turn will answer) by
`mark_read`, one attempt through the same Graph client: a failure is logged, never retried, and
never holds the turn.

Rows of one conversation go out in order: a row waits while an earlier one is unsettled, and
each row that settles (sent or failed) hands the next one to a job."""

from __future__ import annotations

import dataclasses
import datetime
import functools
import logging
from typing import Any

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from business.documents import document_filename, document_language, render_document_pdf
from business.models import Invoice, Quote
from copilot.models import Conversation, Message
from copilot.orchestration.clarify import asks_yes_or_no
from whatsapp import approved, choices, graph
from whatsapp.models import OutgoingMessage, WhatsAppAccount
from whatsapp.payload import StatusUpdate
from whatsapp.voice import PERSON_OFFERED

logger = logging.getLogger(__name__)

WINDOW = datetime.timedelta(hours=24)
OUTSIDE_WINDOW = "outside the 24-hour window"
NO_TEMPLATE = "no approved template in the conversation's language"
# A note's trace key: the customer opened the chat (whatsapp/welcome.py); it opens the window.
WINDOW_OPENED = "whatsapp_opened"
REENGAGEMENT = 131047  # Meta: more than 24 hours since the customer last wrote
STUCK_SECONDS = 120  # far more than one attempt's timeout
# Callbacks may arrive out of order: a status never goes back to an earlier one.
_RANK = {"queued": 0, "sending": 1, "sent": 2, "delivered": 3, "read": 4, "failed": 5}


def outbox_add(message: Message, conversation: Conversation) -> OutgoingMessage | None:
    """An outgoing row for a reply in a WhatsApp conversation whose organisation has an account;
    sent once the caller's transaction commits."""
    if conversation.channel != Conversation.Channel.WHATSAPP or not conversation.contact:
        return None
    if not WhatsAppAccount.objects.filter(
        organisation_id=conversation.organisation_id, active=True
    ).exists():
        return None
    document = (message.trace or {}).get("document")
    outgoing = OutgoingMessage.objects.create(
        organisation_id=conversation.organisation_id, conversation=conversation,
        message=message, to=conversation.contact, text=message.text,
        document=document if isinstance(document, dict) else {},
    )  # fmt: skip
    transaction.on_commit(lambda: enqueue(outgoing.pk))
    return outgoing


def enqueue(outgoing_id: int, countdown: float = 0.0) -> None:
    try:
        send_outgoing.apply_async(args=[outgoing_id], countdown=countdown or None)
    except Exception as exc:  # the broker is down: the row stays queued for the sweep
        logger.warning("outgoing WhatsApp message %s not enqueued: %s", outgoing_id, exc)


@shared_task(name="copilot.whatsapp_send", ignore_result=True)
def send_outgoing(outgoing_id: int) -> str:
    """Try to send one outgoing row; come back later when the attempt may be retried."""
    retry_in = deliver(outgoing_id)
    if retry_in is not None and not send_outgoing.request.is_eager:
        enqueue(outgoing_id, countdown=retry_in)
    return "retry" if retry_in is not None else "done"


@shared_task(name="copilot.whatsapp_flush_outbox", ignore_result=True)
def flush_outbox() -> int:
    """Rows due (a lost job, a broker that was down) get a job now."""
    # A row left *sending* by a worker that died is tried again: the customer may get the reply
    # twice, which beats never getting it (the Cloud API takes no idempotency key).
    now = timezone.now()
    stuck = OutgoingMessage.objects.filter(
        status=OutgoingMessage.Status.SENDING,
        updated_at__lt=now - datetime.timedelta(seconds=STUCK_SECONDS),
    )
    # One whose attempts are spent is not tried again forever: it fails, and the conversation's
    # next reply goes.
    for spent in stuck.filter(attempts__gte=settings.WHATSAPP_MAX_ATTEMPTS):
        _fail(spent, spent.last_error or "the sending worker stopped", now)
    stuck.update(status=OutgoingMessage.Status.QUEUED, next_attempt_at=now)
    due = list(
        OutgoingMessage.objects.filter(
            status=OutgoingMessage.Status.QUEUED, next_attempt_at__lte=timezone.now()
        ).values_list("pk", flat=True)[:500]
    )
    for outgoing_id in due:
        enqueue(outgoing_id)
    return len(due)


def deliver(outgoing_id: int, *, now: datetime.datetime | None = None) -> float | None:
    """One attempt. None when the row is settled (sent, failed, or not ours to send now); else
    the seconds until the next attempt."""
    now = now or timezone.now()
    if _waits_for_earlier(outgoing_id):
        return None  # the earlier row's job sends this one after it (`_next`)
    claimed = OutgoingMessage.objects.filter(
        pk=outgoing_id, status=OutgoingMessage.Status.QUEUED, next_attempt_at__lte=now
    ).update(status=OutgoingMessage.Status.SENDING, attempts=F("attempts") + 1, updated_at=now)
    if claimed != 1:
        return None
    outgoing = OutgoingMessage.objects.select_related("conversation").get(pk=outgoing_id)
    try:
        return _attempt(outgoing, now)
    except Exception as exc:  # not the Graph API's answer: our side broke (database, secrets…)
        logger.exception("outgoing WhatsApp message %s: the attempt broke", outgoing_id)
        return _retry_or_fail(outgoing, f"{type(exc).__name__}: {exc}", None, now)


def _attempt(outgoing: OutgoingMessage, now: datetime.datetime) -> float | None:
    """One claimed row, sent: settled (None) or the seconds until it is tried again."""
    account = WhatsAppAccount.objects.filter(organisation_id=outgoing.organisation_id).first()
    if account is None or not account.active:
        return _fail(outgoing, "no active WhatsApp account", now)
    prepared = _body(outgoing, account, now)
    if isinstance(prepared, str):  # after a 131047, its error says why the template was needed
        earlier = outgoing.last_error if outgoing.as_template else ""
        return _fail(outgoing, f"{earlier} ({prepared})" if earlier else prepared, now)
    body, joined = prepared
    if outgoing.document and body.get("type") == "text":  # a PDF: uploaded, then sent
        uploaded = _upload(outgoing, account)
        if not uploaded.ok:
            if not uploaded.retryable:
                return _fail(outgoing, uploaded.error, now)
            return _retry_or_fail(outgoing, uploaded.error, uploaded.retry_after, now)
        body = graph.document_body(
            outgoing.to, uploaded.provider_id, str(outgoing.document.get("filename") or ""),
            outgoing.text,
        )  # fmt: skip
    sent, joined = _send(outgoing, account, body, joined)
    if sent.ok:
        _sent(outgoing, sent, joined)
        return None
    if not sent.retryable:
        return _fail(outgoing, sent.error, now)
    return _retry_or_fail(outgoing, sent.error, sent.retry_after, now)


def _send(
    outgoing: OutgoingMessage, account: WhatsAppAccount, body: dict[str, Any], joined: list[int]
) -> tuple[graph.Sent, list[int]]:
    """The body sent; refused as text with 131047 (the window closed), the template instead."""
    sent = graph.send(
        phone_number_id=account.phone_number_id, access_token=account.access_token, body=body
    )
    if sent.ok or sent.code != REENGAGEMENT or body.get("type") == "template":
        return sent, joined
    outgoing.as_template = True
    fallback = _template_body(outgoing, account)
    if isinstance(fallback, str):
        return dataclasses.replace(sent, error=f"{sent.error} ({fallback})"), []
    return _send(outgoing, account, *fallback)


def _sent(outgoing: OutgoingMessage, sent: graph.Sent, joined: list[int]) -> None:
    """The row (and the rows its template carried) sent; the conversation's next one goes."""
    fields = {
        "status": OutgoingMessage.Status.SENT, "provider_message_id": sent.provider_id,
        "template": outgoing.template, "last_error": "", "updated_at": timezone.now(),
    }  # fmt: skip
    OutgoingMessage.objects.filter(pk=outgoing.pk).update(
        **fields, as_template=outgoing.as_template
    )
    OutgoingMessage.objects.filter(pk__in=joined, status=OutgoingMessage.Status.QUEUED).update(
        **fields
    )
    _next(outgoing)


def _retry_or_fail(
    outgoing: OutgoingMessage, error: str, retry_after: float | None, now: datetime.datetime
) -> float | None:
    """Back to the queue after its back-off, or failed once its attempts are spent."""
    if outgoing.attempts >= settings.WHATSAPP_MAX_ATTEMPTS:
        return _fail(outgoing, error, now)
    delay = _backoff(outgoing.attempts, retry_after)
    # A text the Cloud API refused with 131047 whose template then hit a transient error is
    # tried again as the template: the window stays closed whatever our clock says.
    OutgoingMessage.objects.filter(pk=outgoing.pk).update(
        as_template=outgoing.as_template,
        status=OutgoingMessage.Status.QUEUED, last_error=error[:500],
        next_attempt_at=now + datetime.timedelta(seconds=delay), updated_at=timezone.now(),
    )  # fmt: skip
    return delay


def _body(
    outgoing: OutgoingMessage, account: WhatsAppAccount, now: datetime.datetime
) -> tuple[dict[str, Any], list[int]] | str:
    """What to send (and the later rows it carries), or why nothing can be."""
    wrote = customer_wrote_at(outgoing.conversation_id)
    if not outgoing.as_template and wrote is not None and now - wrote <= WINDOW:
        # Options the reply offers go out as buttons or a list (a document goes as itself).
        offered = None if outgoing.document else _as_choices(outgoing)
        return offered or graph.text_body(outgoing.to, outgoing.text), []
    return _template_body(outgoing, account)


def customer_wrote_at(conversation_id: int) -> datetime.datetime | None:
    """When the customer last wrote: the latest WhatsApp `timestamp` of their messages (never
    later than it reached us: a sender's clock may be ahead), our arrival time for one without.
    Opening the chat from a link (`request_welcome`, noted by whatsapp/welcome.py) counts."""
    opened = Q(role=Message.Role.SYSTEM, trace__has_key=WINDOW_OPENED)
    rows = (
        Message.objects.filter(Q(role=Message.Role.USER) | opened, conversation_id=conversation_id)
        .order_by("-created_at")
        .values_list("created_at", "trace")[:50]
    )
    return max((min(_written_at(trace) or arrived, arrived) for arrived, trace in rows),
               default=None)  # fmt: skip


def _written_at(trace: Any) -> datetime.datetime | None:
    whatsapp = trace.get("whatsapp") if isinstance(trace, dict) else None
    raw = whatsapp.get("timestamp") if isinstance(whatsapp, dict) else None
    try:
        return datetime.datetime.fromisoformat(raw) if isinstance(raw, str) else None
    except ValueError:
        return None


def _template_body(
    outgoing: OutgoingMessage, account: WhatsAppAccount
) -> tuple[dict[str, Any], list[int]] | str:
    """The approved template in the reply's language, carrying this row's text and those of
    the conversation's later rows waiting behind it (up to the first document)."""
    language = Message.objects.filter(pk=outgoing.message_id).values_list("language", flat=True)
    template = approved.template_for(
        outgoing.organisation_id, language.first() or "es", account.template_name
    )
    if template is None:
        return f"{OUTSIDE_WINDOW}: {NO_TEMPLATE}"
    later = OutgoingMessage.objects.filter(
        conversation_id=outgoing.conversation_id, pk__gt=outgoing.pk,
        status=OutgoingMessage.Status.QUEUED,
    ).values_list("pk", "text", "document")  # fmt: skip
    joined, texts = [], [outgoing.text]
    for pk, text, document in later:
        if document:
            break
        joined.append(pk)
        texts.append(text)
    outgoing.template = template.name
    name = _first_name(outgoing.conversation)
    return approved.template_body(outgoing.to, template, " ".join(texts), name), joined


def _first_name(conversation: Conversation) -> str:
    """The customer's first name for a template's "name" variable: their record's, else the
    WhatsApp profile's."""
    customer = conversation.customer
    if customer is not None and customer.name.strip():
        return customer.name.split()[0]
    latest = (
        conversation.messages.filter(role=Message.Role.USER, trace__has_key="whatsapp")
        .order_by("-created_at")
        .values_list("trace", flat=True)
        .first()
    )
    name = str(((latest or {}).get("whatsapp") or {}).get("name") or "").split()
    return name[0] if name else ""


def _as_choices(outgoing: OutgoingMessage) -> dict[str, Any] | None:
    language, state, trace = (
        Message.objects.filter(pk=outgoing.message_id)
        .values_list("language", "conversation__state", "trace")
        .first()
    ) or ("es", None, None)  # one read: the reply's language, the question its conversation
    # waits on, and whether the reply itself offers a person (whatsapp/channel.py)
    yes_no = (isinstance(state, dict) and asks_yes_or_no(state)) or (
        isinstance(trace, dict) and bool(trace.get(PERSON_OFFERED))
    )
    return choices.interactive_body(outgoing.to, outgoing.text, language or "es", yes_no=yes_no)


def _upload(outgoing: OutgoingMessage, account: WhatsAppAccount) -> graph.Sent:
    """The row's document rendered to PDF and uploaded to the Graph API's /media (the media id
    in `provider_id`). A document that is gone, or not the conversation's customer's, fails."""
    kind, pk = outgoing.document.get("kind"), outgoing.document.get("id")
    model: type[Invoice] | type[Quote] = Invoice if kind == "invoice" else Quote
    customer_id = outgoing.conversation.customer_id
    record = model.objects.filter(
        pk=pk, organisation_id=outgoing.organisation_id, customer_id=customer_id
    ).first() if customer_id is not None else None  # fmt: skip
    if record is None:
        return graph.Sent(ok=False, error=f"{kind} {pk} is not this customer's")
    language = document_language(str(outgoing.document.get("language") or ""), "es")
    filename = document_filename(record)
    outgoing.document = {**outgoing.document, "filename": filename}
    return graph.upload_media(
        phone_number_id=account.phone_number_id, access_token=account.access_token,
        content=render_document_pdf(record, language), filename=filename,
        mime_type="application/pdf",
    )  # fmt: skip


def _backoff(attempts: int, retry_after: float | None) -> float:
    if retry_after is not None:
        return min(retry_after, 3600.0)
    base = float(settings.WHATSAPP_RETRY_BASE_SECONDS)
    return min(base * 2 ** max(0, attempts - 1), 3600.0)


def _fail(outgoing: OutgoingMessage, error: str, now: datetime.datetime) -> float | None:
    OutgoingMessage.objects.filter(pk=outgoing.pk).update(
        status=OutgoingMessage.Status.FAILED, last_error=error[:500], updated_at=now,
        template=outgoing.template, as_template=outgoing.as_template,
    )  # fmt: skip
    logger.warning("outgoing WhatsApp message %s failed: %s", outgoing.pk, error)
    _next(outgoing)
    return None


def _waits_for_earlier(outgoing_id: int) -> bool:
    """The customer reads the replies in the order they were written: a row waits while an
    earlier one of its conversation is still queued or being sent (in back-off, say)."""
    conversation_id = (
        OutgoingMessage.objects.filter(pk=outgoing_id).values_list("conversation_id", flat=True)
    ).first()
    if conversation_id is None:
        return False
    return OutgoingMessage.objects.filter(
        conversation_id=conversation_id, pk__lt=outgoing_id,
        status__in=(OutgoingMessage.Status.QUEUED, OutgoingMessage.Status.SENDING),
    ).exists()  # fmt: skip


def outgoing_resend(*, organisation_id: int, ids: list[int]) -> int:
    """Failed rows of the organisation queued again from their first attempt (an operator's
    "send again" once the cause is fixed: the Graph API back, a template set); how many."""
    now = timezone.now()
    again = list(
        OutgoingMessage.objects.filter(
            organisation_id=organisation_id, pk__in=ids, status=OutgoingMessage.Status.FAILED
        ).values_list("pk", flat=True)
    )
    OutgoingMessage.objects.filter(pk__in=again).update(
        status=OutgoingMessage.Status.QUEUED, attempts=0, next_attempt_at=now, updated_at=now
    )
    for outgoing_id in again:
        transaction.on_commit(functools.partial(enqueue, outgoing_id))
    return len(again)


def _as_template_again(organisation_id: int, update: StatusUpdate) -> bool:
    """A text the Cloud API accepted, then failed with 131047 (the window had closed; it never
    reached the customer): queued again to go as the template. Its provider id is cleared, so
    a redelivered callback of the failed text finds nothing."""
    rows = OutgoingMessage.objects.filter(
        organisation_id=organisation_id, provider_message_id=update.message_id,
        as_template=False, template="", status=OutgoingMessage.Status.SENT,
    )  # fmt: skip
    again = list(rows.values_list("pk", flat=True))
    now = timezone.now()
    OutgoingMessage.objects.filter(pk__in=again).update(
        status=OutgoingMessage.Status.QUEUED, as_template=True, provider_message_id="",
        attempts=0, next_attempt_at=now, updated_at=now, last_error=update.error[:500],
    )  # fmt: skip
    for outgoing_id in again:
        transaction.on_commit(functools.partial(enqueue, outgoing_id))
    return bool(again)


def mark_read_enqueue(organisation_id: int, message_id: str, *, typing: bool) -> None:
    try:
        mark_read.delay(organisation_id, message_id, typing)
    except Exception as exc:  # the broker is down: a read receipt is not worth waiting for
        logger.warning("WhatsApp message %s not marked read: %s", message_id, exc)


@shared_task(name="whatsapp.mark_read", ignore_result=True)
def mark_read(organisation_id: int, message_id: str, typing: bool) -> bool:
    """The customer's message marked read (and the typing indicator shown): one attempt, its
    failure only logged — late blue ticks are worth nothing, and the reply goes regardless."""
    account = WhatsAppAccount.objects.filter(organisation_id=organisation_id, active=True).first()
    if account is None:
        return False
    sent = graph.send(
        phone_number_id=account.phone_number_id, access_token=account.access_token,
        body=graph.read_body(message_id, typing),
    )  # fmt: skip
    if not sent.ok:
        logger.info("WhatsApp message %s not marked read: %s", message_id, sent.error)
    return sent.ok


def _next(outgoing: OutgoingMessage) -> None:
    """A settled row hands the conversation's next waiting one to a job."""
    following = (
        OutgoingMessage.objects.filter(
            conversation_id=outgoing.conversation_id,
            pk__gt=outgoing.pk,
            status=OutgoingMessage.Status.QUEUED,
        )  # fmt: skip
        .values_list("pk", flat=True)
        .first()
    )
    if following is not None:
        enqueue(following)


def status_apply(organisation_id: int, update: StatusUpdate) -> bool:
    """A status callback on one of this organisation's outgoing messages."""
    if update.status not in _RANK:
        return False
    if (
        update.status == "failed"
        and update.code == REENGAGEMENT
        and _as_template_again(organisation_id, update)
    ):
        return True
    earlier = [name for name, rank in _RANK.items() if rank < _RANK[update.status]]
    fields: dict[str, Any] = {"status": update.status, "updated_at": timezone.now()}
    if update.error:
        fields["last_error"] = update.error[:500]
    changed = OutgoingMessage.objects.filter(
        Q(status__in=earlier),
        organisation_id=organisation_id,
        provider_message_id=update.message_id,
    ).update(**fields)
    return changed == 1
