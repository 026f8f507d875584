"""The WhatsApp outbox: a reply stored in a WhatsApp conversation gets an outgoing row in the same
transaction (`outbox_add`, called by copilot/services.py `message_add`), a job sends it once that
commits (`deliver`), retrying with exponential back-off on 429, 5xx and connection errors (the
server's Retry-After wins) and giving up after `WHATSAPP_MAX_ATTEMPTS` as *failed*.

The 24-hour customer-service window: when the customer last wrote more than 24 hours ago, only
the organisation's approved template may be sent; without one the row fails, saying so.

Rows of one conversation go out in order: a row waits while an earlier one is unsettled, and
each row that settles (sent or failed) hands the next one to a job."""

from __future__ import annotations

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
from whatsapp import choices, graph
from whatsapp.models import OutgoingMessage, WhatsAppAccount
from whatsapp.payload import StatusUpdate

logger = logging.getLogger(__name__)

WINDOW = datetime.timedelta(hours=24)
OUTSIDE_WINDOW = "outside the 24-hour window"
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
    outgoing_id = outgoing.pk
    account = WhatsAppAccount.objects.filter(organisation_id=outgoing.organisation_id).first()
    if account is None or not account.active:
        return _fail(outgoing, "no active WhatsApp account", now)
    body = _body(outgoing, account, now)
    if body is None:
        return _fail(outgoing, OUTSIDE_WINDOW, now)
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
    sent = graph.send(
        phone_number_id=account.phone_number_id, access_token=account.access_token, body=body
    )
    if sent.ok:
        OutgoingMessage.objects.filter(pk=outgoing_id).update(
            status=OutgoingMessage.Status.SENT, provider_message_id=sent.provider_id,
            template=outgoing.template, last_error="", updated_at=timezone.now(),
        )  # fmt: skip
        _next(outgoing)
        return None
    if not sent.retryable:
        return _fail(outgoing, sent.error, now)
    return _retry_or_fail(outgoing, sent.error, sent.retry_after, now)


def _retry_or_fail(
    outgoing: OutgoingMessage, error: str, retry_after: float | None, now: datetime.datetime
) -> float | None:
    """Back to the queue after its back-off, or failed once its attempts are spent."""
    if outgoing.attempts >= settings.WHATSAPP_MAX_ATTEMPTS:
        return _fail(outgoing, error, now)
    delay = _backoff(outgoing.attempts, retry_after)
    OutgoingMessage.objects.filter(pk=outgoing.pk).update(
        status=OutgoingMessage.Status.QUEUED, last_error=error[:500],
        next_attempt_at=now + datetime.timedelta(seconds=delay), updated_at=timezone.now(),
    )  # fmt: skip
    return delay


def _body(
    outgoing: OutgoingMessage, account: WhatsAppAccount, now: datetime.datetime
) -> dict[str, Any] | None:
    last_incoming = (
        Message.objects.filter(conversation_id=outgoing.conversation_id, role=Message.Role.USER)
        .order_by("-created_at")
        .values_list("created_at", flat=True)
        .first()
    )
    if last_incoming is not None and now - last_incoming <= WINDOW:
        # Options the reply offers go out as buttons or a list (a document goes as itself).
        offered = None if outgoing.document else _as_choices(outgoing)
        return offered or graph.text_body(outgoing.to, outgoing.text)
    if not account.template_name:
        return None
    outgoing.template = account.template_name
    return graph.template_body(outgoing.to, account.template_name, account.template_language)


def _as_choices(outgoing: OutgoingMessage) -> dict[str, Any] | None:
    language, state = (
        Message.objects.filter(pk=outgoing.message_id)
        .values_list("language", "conversation__state")
        .first()
    ) or ("es", None)  # one read: the reply's language and the question its conversation waits on
    yes_no = isinstance(state, dict) and asks_yes_or_no(state)
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
        template=outgoing.template,
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
