"""The WhatsApp channel's records: an organisation's account (number and secrets), its message
templates and the account's alerts, the outbox, the photos, voice notes and documents customers
send, and webhook messages that were refused.

The tables keep the names they had when they lived in the copilot app (copilot_*): moving the
models here changed Django's bookkeeping only (migration whatsapp 0001, copilot 0025)."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from business.models import Customer, Equipment, Job, Organisation
from common.secrets import EncryptedText, digest
from copilot.models import Conversation, Message


class WhatsAppAccount(models.Model):
    """An organisation's WhatsApp Business number (Cloud API). Its identifiers and secrets are
    kept encrypted (common/secrets.py); the phone-number id is found again by its digest, which is
    what the webhook's payload names."""

    organisation = models.OneToOneField(
        Organisation,
        on_delete=models.CASCADE,
        related_name="whatsapp_account",
        verbose_name=_("organisation"),
    )
    phone_number_id_encrypted = models.TextField(
        blank=True, editable=False, verbose_name=_("phone number id encrypted")
    )
    phone_number_digest = models.CharField(
        max_length=64, blank=True, editable=False, verbose_name=_("phone number digest")
    )
    app_secret_encrypted = models.TextField(
        blank=True, editable=False, verbose_name=_("app secret encrypted")
    )
    verify_token_encrypted = models.TextField(
        blank=True, editable=False, verbose_name=_("verify token encrypted")
    )
    access_token_encrypted = models.TextField(
        blank=True, editable=False, verbose_name=_("access token encrypted")
    )
    phone_number_id = EncryptedText(
        "phone_number_id_encrypted", digest_column="phone_number_digest"
    )
    app_secret = EncryptedText("app_secret_encrypted")
    verify_token = EncryptedText("verify_token_encrypted")
    access_token = EncryptedText("access_token_encrypted")
    # The WhatsApp Business Account's id: template and account webhooks name it, not the number.
    business_account_id_encrypted = models.TextField(
        blank=True, editable=False, verbose_name=_("business account id encrypted")
    )
    business_account_digest = models.CharField(
        max_length=64, blank=True, editable=False, verbose_name=_("business account digest")
    )
    business_account_id = EncryptedText(
        "business_account_id_encrypted", digest_column="business_account_digest"
    )
    # The approved template preferred when the customer last wrote more than 24 hours ago (the
    # organisation's other approved templates are used when it is not approved, or not in the
    # customer's language: whatsapp/approved.py).
    template_name = models.CharField(_("template outside the 24-hour window"), max_length=120,
                                     blank=True)  # fmt: skip
    template_language = models.CharField(_("template language"), max_length=10, default="es_AR")
    # Sent once to a customer who opens the chat from a click-to-chat link (`request_welcome`):
    # blank, the channel's own greeting naming the organisation (whatsapp/welcome.py).
    welcome = models.TextField(
        _("welcome message"), blank=True, max_length=1000,
        help_text=_("Sent once to a customer who opens the chat for the first time, in their "
                    "register. Blank: a greeting that says what they can ask."),
    )  # fmt: skip
    active = models.BooleanField(_("active"), default=True)

    class Meta:
        db_table = "copilot_whatsappaccount"
        verbose_name = _("WhatsApp account")
        verbose_name_plural = _("WhatsApp accounts")
        constraints = [
            models.UniqueConstraint(
                fields=["phone_number_digest"],
                condition=~Q(phone_number_digest=""),
                name="whatsapp_phone_number_once",
            ),
            models.UniqueConstraint(
                fields=["business_account_digest"],
                condition=~Q(business_account_digest=""),
                name="whatsapp_business_account_once",
            ),
        ]

    def __str__(self) -> str:
        return f"WhatsApp {self.organisation}"

    @staticmethod
    def digest_of(phone_number_id: str) -> str:
        return digest(phone_number_id)


class OutgoingMessage(models.Model):
    """The WhatsApp outbox: one row per reply to send, written in the transaction that stored
    the reply, sent by a job, retried with back-off; its status follows Meta's callbacks."""

    class Status(models.TextChoices):
        QUEUED = "queued", _("Queued")
        SENDING = "sending", _("Sending")
        SENT = "sent", _("Sent")
        DELIVERED = "delivered", _("Delivered")
        READ = "read", _("Read")
        FAILED = "failed", _("Failed")

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, verbose_name=_("organisation")
    )
    conversation = models.ForeignKey(
        Conversation,
        on_delete=models.CASCADE,
        related_name="outgoing",
        verbose_name=_("conversation"),
    )
    message = models.OneToOneField(
        Message, on_delete=models.CASCADE, related_name="outgoing", verbose_name=_("message")
    )
    to = models.CharField(max_length=32, verbose_name=_("to"))
    text = models.TextField(verbose_name=_("text"))
    template = models.CharField(
        max_length=120, blank=True, verbose_name=_("template")
    )  # sent as this template instead
    # A document sent with it (a quote's or invoice's PDF): {"kind", "id", "language"}; the PDF
    # is rendered and uploaded to the Graph API's /media when the row is sent.
    document = models.JSONField(default=dict, blank=True, verbose_name=_("document"))
    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.QUEUED, verbose_name=_("status")
    )
    attempts = models.PositiveSmallIntegerField(default=0, verbose_name=_("attempts"))
    next_attempt_at = models.DateTimeField(default=timezone.now, verbose_name=_("next attempt at"))
    last_error = models.TextField(blank=True, verbose_name=_("last error"))
    provider_message_id = models.CharField(
        max_length=128, blank=True, db_index=True, verbose_name=_("provider message id")
    )
    # The Cloud API refused it as text (131047, the window closed): it goes as a template.
    as_template = models.BooleanField(default=False, verbose_name=_("as template"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))
    updated_at = models.DateTimeField(default=timezone.now, verbose_name=_("updated at"))

    class Meta:
        db_table = "copilot_outgoingmessage"
        ordering = ["created_at", "pk"]
        indexes = [models.Index(fields=["status", "next_attempt_at"])]
        verbose_name = _("outgoing WhatsApp message")
        verbose_name_plural = _("WhatsApp outbox")

    def __str__(self) -> str:
        return f"→ {self.to} ({self.status})"

    @property
    def failure_in_words(self) -> str:
        """Why it was not sent, in the reader's language (the panel; `last_error` keeps the
        technical detail for the admin's outbox)."""
        return str(failure_in_words(self.last_error))


# Why a send failed, by what `last_error` says (whatsapp/outbox.py, whatsapp/graph.py).
_FAILURES = (
    (
        ("131047", "24-hour window"),
        _("more than 24 hours passed since the customer's last message"),
    ),
    (("no active WhatsApp account",), _("the organisation has no active WhatsApp account")),
    (("HTTP 401", "HTTP 403"), _("WhatsApp refused the account's credentials")),
    (("HTTP 429",), _("WhatsApp limited the sending rate")),
    (("ConnectError", "Timeout", "connection", "HTTP 5"), _("WhatsApp could not be reached")),
    (("worker stopped",), _("the sending job stopped")),
)


def failure_in_words(error: str) -> str:
    for marks, words in _FAILURES:
        if any(mark in error for mark in marks):
            return str(words)
    return str(_("WhatsApp refused it")) if error else ""


def media_path(instance: IncomingMedia, filename: str) -> str:
    """Where a received file is stored: under its organisation, by month, a random name (the
    path is never served as such: only through the tenancy-checked view)."""
    extension = filename.rsplit(".", 1)[-1].lower() if "." in filename else "bin"
    month = timezone.now().strftime("%Y/%m")
    return f"whatsapp/org-{instance.organisation_id}/{month}/{uuid.uuid4().hex}.{extension[:5]}"


class IncomingMedia(models.Model):
    """A photo, voice note or document a customer sent on WhatsApp (issue 14.5): fetched from
    the Graph API, checked (type and size), stored, and read where the organisation's provider
    can — a photo's reading attached to the customer's equipment and the job under discussion,
    a voice note's transcript handled as the message's text. One row per WhatsApp message id."""

    class Kind(models.TextChoices):
        IMAGE = "image", _("Photo")
        AUDIO = "audio", _("Voice note")
        DOCUMENT = "document", _("Document")

    class Status(models.TextChoices):
        PENDING = "pending", _("Pending")  # stored by the webhook, not fetched yet
        WORKING = "working", _("Working")  # claimed by a job
        STORED = "stored", _("Stored")  # fetched and kept, not read (embedded engine, a fault)
        READ = "read", _("Read")  # a photo read or a voice note transcribed
        REFUSED = "refused", _("Refused")  # too large or of a type not accepted: not kept
        FAILED = "failed", _("Failed")  # could not be fetched

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, verbose_name=_("organisation")
    )
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="media", verbose_name=_("conversation")
    )
    # The user message it became (the placeholder for a photo, the transcript of a voice note).
    message = models.OneToOneField(
        Message,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="media",
        verbose_name=_("message"),
    )
    wa_message_id = models.CharField(max_length=64, verbose_name=_("wa message id"))
    media_id = models.CharField(
        max_length=128, verbose_name=_("media id")
    )  # the Graph API's id of the file
    kind = models.CharField(max_length=10, choices=Kind.choices, verbose_name=_("kind"))
    sender = models.CharField(max_length=32, verbose_name=_("sender"))
    caption = models.TextField(blank=True, verbose_name=_("caption"))
    meta = models.JSONField(
        default=dict, blank=True, verbose_name=_("meta")
    )  # the webhook's sender, name, timestamp
    mime_type = models.CharField(max_length=100, blank=True, verbose_name=_("mime type"))
    size = models.PositiveIntegerField(default=0, verbose_name=_("size"))
    sha256 = models.CharField(max_length=64, blank=True, verbose_name=_("sha256"))
    file = models.FileField(
        upload_to=media_path, blank=True, max_length=200, verbose_name=_("file")
    )
    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.PENDING, verbose_name=_("status")
    )
    attempts = models.PositiveSmallIntegerField(
        default=0, verbose_name=_("attempts")
    )  # fetches that met a transient fault
    error = models.TextField(blank=True, verbose_name=_("error"))
    # A photo's reading (brand, model, capacity, symptom, kind) and a voice note's transcript.
    extraction = models.JSONField(default=dict, blank=True, verbose_name=_("extraction"))
    transcript = models.TextField(blank=True, verbose_name=_("transcript"))
    customer = models.ForeignKey(
        Customer, on_delete=models.SET_NULL, null=True, blank=True, verbose_name=_("customer")
    )
    equipment = models.ForeignKey(
        Equipment, on_delete=models.SET_NULL, null=True, blank=True, verbose_name=_("equipment")
    )
    job = models.ForeignKey(
        Job, on_delete=models.SET_NULL, null=True, blank=True, verbose_name=_("job")
    )
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))
    updated_at = models.DateTimeField(default=timezone.now, verbose_name=_("updated at"))

    class Meta:
        db_table = "copilot_incomingmedia"
        ordering = ["created_at", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["organisation", "wa_message_id"], name="incoming_media_once"
            )
        ]
        indexes = [models.Index(fields=["status", "updated_at"])]
        verbose_name = _("WhatsApp media")
        verbose_name_plural = _("WhatsApp media")

    def __str__(self) -> str:
        return f"{self.kind} {self.wa_message_id} ({self.status})"


class WhatsAppRejection(models.Model):
    """A message (or status) of a correctly signed webhook delivery that was not stored because
    one of its fields is not what the Cloud API sends (issue 23). The delivery is still answered
    200 — Meta would only send it again — and its other messages are stored; this row says which
    field was wrong and how, for the organisation's admins."""

    class Reason(models.TextChoices):  # the values whatsapp/payload.py gives
        MISSING = "missing", _("Missing")
        FORMAT = "format", _("Not in the expected format")
        SURROGATE = "surrogate", _("Ill-formed text (a lone surrogate)")
        NUL = "nul", _("Contains a NUL character")
        RANGE = "range", _("Out of range")
        NESTING = "nesting", _("Nested too deep")

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, verbose_name=_("organisation")
    )
    received_at = models.DateTimeField(_("received at"), default=timezone.now)
    message_id = models.CharField(_("WhatsApp message id"), max_length=128, blank=True)
    field = models.CharField(_("field"), max_length=40)
    reason = models.CharField(_("reason"), max_length=12, choices=Reason.choices)
    excerpt = models.CharField(_("value"), max_length=200, blank=True)  # escaped, cut

    class Meta:
        db_table = "copilot_whatsapprejection"
        ordering = ["-received_at", "-pk"]
        indexes = [models.Index(fields=["organisation", "received_at"])]
        verbose_name = _("rejected WhatsApp message")
        verbose_name_plural = _("rejected WhatsApp messages")

    def __str__(self) -> str:
        return f"{self.field}: {self.reason}"


class WhatsAppTemplate(models.Model):
    """One of the organisation's message templates (a name in one language), as Meta knows it:
    its category and status kept in sync by the template webhooks (whatsapp/approved.py). Only an
    approved one goes out, outside the 24-hour window, its variables filled from the reply."""

    class Status(models.TextChoices):  # Meta's words
        PENDING = "PENDING", pgettext_lazy("whatsapp template", "Pending review")
        APPROVED = "APPROVED", pgettext_lazy("whatsapp template", "Approved")
        REJECTED = "REJECTED", pgettext_lazy("whatsapp template", "Rejected")
        PAUSED = "PAUSED", pgettext_lazy("whatsapp template", "Paused")
        DISABLED = "DISABLED", pgettext_lazy("whatsapp template", "Disabled")
        FLAGGED = "FLAGGED", pgettext_lazy("whatsapp template", "Flagged")
        IN_APPEAL = "IN_APPEAL", pgettext_lazy("whatsapp template", "In appeal")
        ARCHIVED = "ARCHIVED", pgettext_lazy("whatsapp template", "Archived")
        PENDING_DELETION = (
            "PENDING_DELETION", pgettext_lazy("whatsapp template", "Pending deletion")
        )  # fmt: skip
        DELETED = "DELETED", pgettext_lazy("whatsapp template", "Deleted")
        LOCKED = "LOCKED", pgettext_lazy("whatsapp template", "Locked")

    class Category(models.TextChoices):
        UTILITY = "UTILITY", _("Utility")
        MARKETING = "MARKETING", _("Marketing")
        AUTHENTICATION = "AUTHENTICATION", _("Authentication")

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, verbose_name=_("organisation")
    )
    name = models.CharField(_("name"), max_length=512)
    language = models.CharField(_("language"), max_length=15, default="es_AR")
    category = models.CharField(_("category"), max_length=16, choices=Category.choices,
                                default=Category.UTILITY)  # fmt: skip
    # What fills each body variable, in order: "text" (the reply's essentials) or "name" (the
    # customer's first name). Sent as named parameters when `named` (Meta's NAMED format).
    variables = models.JSONField(_("variables"), default=list, blank=True)
    named = models.BooleanField(_("named parameters"), default=False)
    status = models.CharField(_("status"), max_length=20, choices=Status.choices,
                              default=Status.PENDING)  # fmt: skip
    quality = models.CharField(_("quality"), max_length=16, blank=True)  # GREEN, YELLOW, RED
    reason = models.TextField(_("reason"), blank=True)  # Meta's, for a rejection or a pause
    template_id = models.CharField(
        max_length=32, blank=True, verbose_name=_("template id")
    )  # Meta's id
    updated_at = models.DateTimeField(default=timezone.now, verbose_name=_("updated at"))

    class Meta:
        db_table = "whatsapp_template"
        ordering = ["organisation", "name", "language"]
        constraints = [
            models.UniqueConstraint(
                fields=["organisation", "name", "language"], name="whatsapp_template_once"
            )
        ]
        verbose_name = _("WhatsApp template")
        verbose_name_plural = _("WhatsApp templates")

    def __str__(self) -> str:
        return f"{self.name} ({self.language}, {self.status})"


class WhatsAppAlert(models.Model):
    """Something Meta said about the organisation's account or one of its templates that its
    admins must act on: a restriction, a ban, a template paused or disabled. Recorded once per
    event (`key`, a redelivery is the same), shown to the admins in the panel until seen."""

    class Kind(models.TextChoices):
        ACCOUNT = "account", _("Account")
        TEMPLATE = "template", _("Template")

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, verbose_name=_("organisation")
    )
    kind = models.CharField(_("kind"), max_length=10, choices=Kind.choices)
    event = models.CharField(_("event"), max_length=60)  # Meta's: ACCOUNT_RESTRICTION, PAUSED...
    subject = models.CharField(_("about"), max_length=200, blank=True)  # a template's name
    detail = models.TextField(_("detail"), blank=True)  # escaped, cut
    key = models.CharField(max_length=64, verbose_name=_("key"))
    received_at = models.DateTimeField(_("received at"), default=timezone.now)
    seen_at = models.DateTimeField(_("seen at"), null=True, blank=True)

    class Meta:
        db_table = "whatsapp_alert"
        ordering = ["-received_at", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["organisation", "key"], name="whatsapp_alert_once")
        ]
        verbose_name = _("WhatsApp alert")
        verbose_name_plural = _("WhatsApp alerts")

    def __str__(self) -> str:
        return f"{self.event} {self.subject}".strip()
