"""Photos, voice notes and documents a customer sends on WhatsApp (issue 14.5, PRODUCT E4).

The webhook stores an `IncomingMedia` row (once per WhatsApp message id) and hands it to a job
(`whatsapp.media`) once it commits, so the webhook answers at once. The job, once per
row (a conditional update claims it):

1. fetches the file through the Graph API with the account's own token (whatsapp/graph.py
   `media_info`, then `media_download`, cut off past the limit; a 5xx, a 429 or no connection is
   tried again with the outbox's back-off, up to WHATSAPP_MAX_ATTEMPTS), checks its size and its
   type — the Graph API's word *and* the file's first bytes — against the settings
   (`WHATSAPP_IMAGE_*`, `WHATSAPP_AUDIO_*`, `WHATSAPP_DOCUMENT_*`) and stores it (Django
   storage, under the organisation). Too large or of another type: not kept, the sender is told
   why and what is accepted; the message itself is kept in the conversation;
2. reads it where the organisation runs a model engine and its provider can (llm/media.py): a
   photo → a bounded JSON reading (kind, brand, model, capacity, symptom), attached to the
   customer's equipment (matched or created) and, as a note, to the job under discussion — both
   written by the owning agents' tools through `Runner.call` (whatsapp/photo_records.py); a
   voice note → its transcript, which becomes the message's text through `accept_message`, a
   turn like any text (the panel marks it as a voice note). On the embedded engine, or for a
   document, the file is kept and the sender is asked for text. Any model fault keeps the file
   and asks for text.
"""

from __future__ import annotations

import datetime
import hashlib
import logging
from dataclasses import dataclass
from typing import Any

from celery import shared_task
from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from agents.base import JOB_ID
from agents.customer.tools import EquipmentSeen
from agents.payloads import EquipmentRow
from agents.scheduling.tools import JobNote
from business.models import Customer, Job
from copilot import tasks
from copilot.intake import MessageRefused, accept_message
from copilot.models import Conversation, Message
from copilot.services import message_add
from llm.client import ModelFailure
from llm.media import Reading, read_image, transcribe
from llm.provider import engine_for
from nlu.language import detect_language
from whatsapp import graph
from whatsapp import replies as wa_replies
from whatsapp.models import IncomingMedia, WhatsAppAccount
from whatsapp.payload import Incoming
from whatsapp.photo_records import PhotoSteps

logger = logging.getLogger(__name__)

KINDS = {"image": IncomingMedia.Kind.IMAGE, "audio": IncomingMedia.Kind.AUDIO,
         "document": IncomingMedia.Kind.DOCUMENT}  # fmt: skip
STALE_SECONDS = 300  # a claimed row whose job died is handed out again after this
EXTENSIONS = {
    "image/jpeg": "jpg", "image/png": "png", "image/webp": "webp", "audio/ogg": "ogg",
    "audio/mpeg": "mp3", "audio/mp4": "m4a", "audio/amr": "amr", "application/pdf": "pdf",
}  # fmt: skip


def _signatures(data: bytes) -> str:
    """The type the file's first bytes say it is ("" when they say nothing we know)."""
    head = data[:16]
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head.startswith(b"OggS"):
        return "audio/ogg"
    if head.startswith(b"ID3") or (len(head) > 1 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0):
        return "audio/mpeg"
    if head[4:8] == b"ftyp":
        return "audio/mp4"
    if head.startswith(b"#!AMR"):
        return "audio/amr"
    if head.startswith(b"%PDF-"):
        return "application/pdf"
    return ""


@dataclass(frozen=True)
class Limits:
    max_bytes: int
    types: list[str]


def limits_for(kind: str) -> Limits:
    if kind == IncomingMedia.Kind.IMAGE:
        return Limits(settings.WHATSAPP_IMAGE_MAX_BYTES, list(settings.WHATSAPP_IMAGE_TYPES))
    if kind == IncomingMedia.Kind.AUDIO:
        return Limits(settings.WHATSAPP_AUDIO_MAX_BYTES, list(settings.WHATSAPP_AUDIO_TYPES))
    return Limits(settings.WHATSAPP_DOCUMENT_MAX_BYTES, list(settings.WHATSAPP_DOCUMENT_TYPES))


def _bare(mime_type: str) -> str:
    """ "audio/ogg; codecs=opus" → "audio/ogg"."""
    return mime_type.split(";", 1)[0].strip().lower()


class Refused(Exception):
    """Too large or of a type not accepted: `reply` says so to the sender."""

    def __init__(self, reason: str, reply: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.reply = reply


# --- the webhook's side --------------------------------------------------------------------------


def media_accept(
    conversation: Conversation, incoming: Incoming, meta: dict[str, Any]
) -> IncomingMedia | None:
    """Store the row (inside the webhook's transaction) and hand it to the job once it commits;
    None when this WhatsApp message was stored before (a redelivery)."""
    if IncomingMedia.objects.filter(
        organisation_id=conversation.organisation_id, wa_message_id=incoming.message_id
    ).exists():
        return None
    media = IncomingMedia.objects.create(
        organisation_id=conversation.organisation_id, conversation=conversation,
        wa_message_id=incoming.message_id, media_id=incoming.media_id, kind=KINDS[incoming.type],
        sender=incoming.sender, caption=incoming.caption, mime_type=_bare(incoming.mime_type),
        meta={**meta, "voice": incoming.voice, "filename": incoming.filename},
    )  # fmt: skip
    transaction.on_commit(lambda: enqueue(media.pk))
    return media


def enqueue(media_pk: int, countdown: float = 0.0) -> None:
    try:
        process_media.apply_async(args=[media_pk], countdown=countdown or None)
    except Exception as exc:  # the broker is down: the row stays pending for the sweep
        logger.warning("WhatsApp media %s not enqueued: %s", media_pk, exc)


@shared_task(name="whatsapp.media", ignore_result=True)
def process_media(media_pk: int) -> str:
    return media_process(media_pk)


@shared_task(name="whatsapp.media_sweep", ignore_result=True)
def media_sweep() -> int:
    """Rows no job holds (the broker was down, the job's process died): handed out again."""
    now = timezone.now()
    stale = now - datetime.timedelta(seconds=STALE_SECONDS)
    IncomingMedia.objects.filter(status=IncomingMedia.Status.WORKING, updated_at__lt=stale).update(
        status=IncomingMedia.Status.PENDING, updated_at=now
    )
    waiting = IncomingMedia.objects.filter(
        status=IncomingMedia.Status.PENDING, created_at__lt=now - datetime.timedelta(seconds=30)
    ).values_list("pk", flat=True)
    count = 0
    for pk in waiting:
        enqueue(pk)
        count += 1
    return count


# --- the job -------------------------------------------------------------------------------------


def media_process(media_pk: int) -> str:
    """Fetch, check, store and read one row; what became of it (its status, or "taken")."""
    pending = IncomingMedia.objects.filter(pk=media_pk, status=IncomingMedia.Status.PENDING)
    claimed = pending.update(status=IncomingMedia.Status.WORKING, updated_at=timezone.now())
    if not claimed:
        return "taken"
    media = IncomingMedia.objects.select_related("conversation", "organisation").get(pk=media_pk)
    language = _language(media)
    try:
        data = _fetch(media)
    except Refused as refused:
        _settle(media, IncomingMedia.Status.REFUSED, refused.reason, refused.reply, language)
        return media.status
    except graph.MediaError as exc:
        if exc.code == "unreachable" and media.attempts + 1 < settings.WHATSAPP_MAX_ATTEMPTS:
            # A 5xx, a 429, a refused connection: tried again later, with the outbox's back-off.
            IncomingMedia.objects.filter(pk=media.pk).update(
                status=IncomingMedia.Status.PENDING, attempts=media.attempts + 1,
                error=str(exc)[:2000], updated_at=timezone.now(),
            )  # fmt: skip
            enqueue(media.pk, countdown=settings.WHATSAPP_RETRY_BASE_SECONDS * 2**media.attempts)
            return "retrying"
        reply = wa_replies.media_unavailable(media.kind, language)
        _settle(media, IncomingMedia.Status.FAILED, str(exc), reply, language)
        return media.status
    except Exception as exc:  # anything else: the message is still kept and answered
        logger.exception("WhatsApp media %s could not be fetched", media_pk)
        reply = wa_replies.media_unavailable(media.kind, language)
        _settle(media, IncomingMedia.Status.FAILED, f"{type(exc).__name__}: {exc}", reply,
                language)  # fmt: skip
        return media.status
    try:
        _read(media, data, language)
    except Exception as exc:  # a fault of ours after the file was kept: still answered
        logger.exception("WhatsApp media %s could not be read", media_pk)
        reply = wa_replies.media_unread(media.kind, language)
        _settle(media, IncomingMedia.Status.STORED, f"{type(exc).__name__}: {exc}", reply,
                language)  # fmt: skip
    return media.status


def _fetch(media: IncomingMedia) -> bytes:
    """The file, checked and stored on the row (status stays *working*)."""
    limits = limits_for(media.kind)
    account = WhatsAppAccount.objects.get(organisation_id=media.organisation_id)
    token = account.access_token
    info = graph.media_info(media_id=media.media_id, access_token=token)
    declared = _bare(info.mime_type or media.mime_type)
    language = _language(media)
    if declared not in limits.types:
        raise Refused(f"type {declared or '?'} not accepted",
                      wa_replies.media_wrong_type(media.kind, declared, limits.types,
                                                        language))  # fmt: skip
    too_large = wa_replies.media_too_large(media.kind, limits.max_bytes, language)
    if info.file_size is not None and info.file_size > limits.max_bytes:
        raise Refused(f"{info.file_size} bytes over {limits.max_bytes}", too_large)
    try:
        data = graph.media_download(url=info.url, access_token=token, max_bytes=limits.max_bytes)
    except graph.MediaError as exc:
        if exc.code == "too_large":
            raise Refused(f"{exc.detail} over {limits.max_bytes}", too_large) from exc
        raise
    sniffed = _signatures(data)
    # The bytes must be what the Graph API said (an .m4a voice note may be audio/mp4 or mpeg).
    if sniffed != declared and not (declared.startswith("audio/") and sniffed.startswith("audio/")):
        raise Refused(f"the file is {sniffed or 'unknown'}, not {declared}",
                      wa_replies.media_wrong_type(media.kind, sniffed or declared,
                                                        limits.types, language))  # fmt: skip
    if sniffed not in limits.types:
        raise Refused(f"type {sniffed} not accepted",
                      wa_replies.media_wrong_type(media.kind, sniffed, limits.types,
                                                        language))  # fmt: skip
    media.mime_type = sniffed
    media.size = len(data)
    media.sha256 = hashlib.sha256(data).hexdigest()
    media.file.save(f"media.{EXTENSIONS.get(sniffed, 'bin')}", ContentFile(data), save=False)
    media.updated_at = timezone.now()
    media.save(update_fields=["mime_type", "size", "sha256", "file", "updated_at"])
    return data


def _read(media: IncomingMedia, data: bytes, language: str) -> None:
    organisation = media.organisation
    engine, provider = engine_for(organisation)
    readable = provider is not None and engine != "embedded" and (
        (media.kind == IncomingMedia.Kind.IMAGE and provider.vision_model)
        or (media.kind == IncomingMedia.Kind.AUDIO and provider.transcription_model)
    )  # fmt: skip
    if provider is None or not readable:
        if media.caption.strip():  # they wrote too: a turn answers that
            reply = wa_replies.media_kept(media.kind, language)
        else:
            reply = wa_replies.media_ask_text(media.kind, language)
        _settle(media, IncomingMedia.Status.STORED, "", reply, language)
        return
    try:
        if media.kind == IncomingMedia.Kind.IMAGE:
            reading = read_image(
                provider, organisation=organisation, data=data, mime_type=media.mime_type,
                language=language, conversation_id=media.conversation_id,
            )  # fmt: skip
        else:
            words = transcribe(
                provider, organisation=organisation, data=data, mime_type=media.mime_type,
                filename=f"voice.{EXTENSIONS.get(media.mime_type, 'ogg')}",
                conversation_id=media.conversation_id,
            )  # fmt: skip
    except ModelFailure as failure:
        reply = wa_replies.media_unread(media.kind, language)
        _settle(media, IncomingMedia.Status.STORED, f"model {failure.kind}: {failure.detail}",
                reply, language)  # fmt: skip
        return
    if media.kind == IncomingMedia.Kind.IMAGE:
        _photo_read(media, reading, language)
    else:
        _voice_heard(media, words, language)


def _photo_read(media: IncomingMedia, reading: Reading, language: str) -> None:
    conversation = media.conversation
    customer = sender_customer(conversation)
    steps = PhotoSteps(media, language)
    with transaction.atomic():
        job = _job_under_discussion(conversation, customer)
        seen = _equipment_seen(steps, customer, reading)
        if job is not None:
            note = "; ".join(f"{k}: {v}" for k, v in reading.as_dict().items() if v)
            noted = steps.call("job_note_add", job_id=job.pk, media_id=media.pk,
                               note=f"WhatsApp photo — {note}")  # fmt: skip
            job = job if noted is not None and JobNote.of(noted) is not None else None
        media.extraction = reading.as_dict()
        media.customer, media.job = customer, job
        media.equipment_id = seen.id if seen else None
        reply = wa_replies.photo_read(
            reading.as_dict(), language, equipment=seen.label if seen else "",
            job=job.pk if job else None,
        )  # fmt: skip
        answer = _settle(media, IncomingMedia.Status.READ, "", reply, language,
                         extra=("extraction", "customer", "equipment", "job"))  # fmt: skip
        steps.close(answer)


def _equipment_seen(
    steps: PhotoSteps, customer: Customer | None, reading: Reading
) -> EquipmentRow | None:
    """The sender's equipment the photo shows, matched or recorded by the customer agent."""
    if customer is None:
        return None
    result = steps.call(
        "equipment_record", customer_id=customer.pk, kind=reading.kind, brand=reading.brand,
        model=reading.model, capacity=reading.capacity,
    )  # fmt: skip
    seen = EquipmentSeen.of(result) if result is not None else None  # None: refused, failed, held
    return seen.equipment if seen is not None else None


def _voice_heard(media: IncomingMedia, words: str, language: str) -> None:
    """The transcript is the message: accepted and answered like a text."""
    conversation = media.conversation
    marker = _marker(media, voice_note=True)
    try:
        with transaction.atomic():
            accepted = accept_message(
                conversation=conversation, user_id=None, text=words,
                client_id=media.wa_message_id,
                meta={"whatsapp": media.meta, "whatsapp_media": marker},
            )  # fmt: skip
            media.transcript = words
            media.customer = sender_customer(conversation)
            media.message_id = accepted.message_id
            media.status = IncomingMedia.Status.READ
            media.updated_at = timezone.now()
            media.save(update_fields=["transcript", "customer", "message", "status",
                                      "updated_at"])  # fmt: skip
            if not accepted.duplicate:
                org_id, conversation_id = conversation.organisation_id, conversation.pk
                transaction.on_commit(lambda: tasks.dispatch(org_id, conversation_id))
    except MessageRefused as refused:  # a transcript we cannot store as text
        reply = wa_replies.media_unread(media.kind, language)
        _settle(media, IncomingMedia.Status.STORED, f"transcript refused: {refused.code}", reply,
                language)  # fmt: skip


def _settle(
    media: IncomingMedia, status: str, error: str, reply: str, language: str,
    extra: tuple[str, ...] = (),
) -> Message:  # fmt: skip
    """The row's outcome, the message it became (a line in the panel) and the answer to the
    sender, in one transaction. A caption is text the customer wrote: it becomes the message and
    a turn answers it, like any text."""
    with transaction.atomic():
        message = _user_message(media, status, language)
        answer = message_add(
            conversation=media.conversation, role=Message.Role.ASSISTANT, text=reply,
            language=language,
            trace={"whatsapp_ack": media.wa_message_id, "at": timezone.now().isoformat()},
        )  # fmt: skip
        media.status, media.error, media.message = status, error[:2000], message
        media.updated_at = timezone.now()
        media.save(update_fields=["status", "error", "message", "updated_at", *extra])
    return answer


def _user_message(media: IncomingMedia, status: str, language: str) -> Message:
    trace = {"whatsapp": media.meta, "whatsapp_media": _marker(media, status=status)}
    caption = media.caption.strip()[: settings.COPILOT_MAX_MESSAGE_CHARS]
    if caption:
        try:
            accepted = accept_message(
                conversation=media.conversation, user_id=None, text=caption,
                client_id=media.wa_message_id, meta=trace,
            )  # fmt: skip
        except MessageRefused:
            pass  # a caption that cannot be stored as text: the line below, caption included
        else:
            if not accepted.duplicate:
                org_id, conversation_id = media.organisation_id, media.conversation_id
                transaction.on_commit(lambda: tasks.dispatch(org_id, conversation_id))
            return Message.objects.get(pk=accepted.message_id)
    return message_add(
        conversation=media.conversation, role=Message.Role.USER,
        text=wa_replies.media_received(media.kind, language, media.caption),
        language=language, client_id=media.wa_message_id, trace=trace,
    )  # fmt: skip


def _marker(media: IncomingMedia, *, voice_note: bool = False, status: str = "") -> dict[str, Any]:
    """What the panel shows under the message (copilot/_whatsapp_media.html)."""
    return {
        "id": media.pk, "kind": media.kind, "voice_note": voice_note,
        "status": status or IncomingMedia.Status.READ, "kept": bool(media.file),
    }  # fmt: skip


def _language(media: IncomingMedia) -> str:
    if media.caption.strip():
        return str(detect_language(media.caption))
    earlier = (
        Message.objects.filter(conversation_id=media.conversation_id, role=Message.Role.USER)
        .exclude(language="")
        .values_list("language", flat=True)
        .last()
    )
    return earlier or "es"


# --- who the sender is, and what is being talked about ---------------------------------------


def sender_customer(conversation: Conversation) -> Customer | None:
    """The customer the conversation is with: the one linked to it, if the conversation has
    such a link, else the one customer whose phone is the sender's number (an Argentine mobile's
    WhatsApp id carries a 9 after the 54 that the stored number does not)."""
    linked = getattr(conversation, "customer", None)
    if isinstance(linked, Customer):
        return linked
    number = "".join(ch for ch in conversation.contact if ch.isdigit())
    if not number:
        return None
    candidates = {f"+{number}"}
    if number.startswith("549"):
        candidates.add(f"+54{number[3:]}")
    found = list(
        Customer.objects.filter(organisation_id=conversation.organisation_id)
        .filter(Q(phone__in=candidates) | Q(phone_alt__in=candidates))
        .order_by("pk")[:2]
    )
    return found[0] if len(found) == 1 else None


def _job_under_discussion(conversation: Conversation, customer: Customer | None) -> Job | None:
    """The job the conversation is about (its working memory), when it is the sender's."""
    job_id = (conversation.state or {}).get(JOB_ID)
    if not isinstance(job_id, int) or customer is None:
        return None
    return Job.objects.filter(
        organisation_id=conversation.organisation_id, pk=job_id, customer=customer
    ).first()
