"""The chat: conversations, their messages, their turns and event log, and one row per sub-agent
run (the runtime trace)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from business.models import Customer, Equipment, Job, Organisation
from common.secrets import EncryptedText, digest


class Conversation(models.Model):
    class Channel(models.TextChoices):
        PANEL = "panel", _("Panel")
        WHATSAPP = "whatsapp", "WhatsApp"
        SCHEDULE = "schedule", _("Schedule")

    class Mode(models.TextChoices):
        COPILOT = "copilot", _("Copilot")
        HUMAN = "human", _("Human")

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="conversations"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    channel = models.CharField(max_length=10, choices=Channel.choices, default=Channel.PANEL)
    title = models.CharField(max_length=120, blank=True)
    # Working memory (O9): a compact summary plus structured state (pending clarification,
    # the job under discussion, ...). Raw history is read only where a node needs it.
    summary = models.TextField(blank=True)
    state = models.JSONField(default=dict, blank=True)
    # The sequence number of the last event published to this conversation's log.
    event_seq = models.BigIntegerField(default=0)
    # The lease that lets one runner at a time work through its queued turns, in order, across
    # every process; a holder that stops renewing it loses it at `lease_until`.
    lease_owner = models.CharField(max_length=80, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    # When its customers' profiles were last extracted from it (P3: at a farewell, or by the
    # idle sweep, which takes only conversations updated since).
    profiled_at = models.DateTimeField(null=True, blank=True)
    # Who the conversation is with on its channel: the customer's WhatsApp number (wa_id).
    contact = models.CharField(max_length=32, blank=True)
    # The customer writing (WhatsApp): matched by phone or registered; their turns are scoped
    # to their own records (agents/customer_scope.py).
    customer = models.ForeignKey(
        Customer, on_delete=models.SET_NULL, null=True, blank=True, related_name="conversations"
    )
    # "human": an operator took the conversation over; the copilot does not answer until it is
    # handed back (copilot/whatsapp_humans.py).
    mode = models.CharField(max_length=10, choices=Mode.choices, default=Mode.COPILOT)
    taken_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
        related_name="+",
    )  # fmt: skip

    class Meta:
        verbose_name = _("conversation")
        verbose_name_plural = _("conversations")
        ordering = ["-updated_at"]
        indexes = [
            models.Index(fields=["organisation", "-updated_at"]),
            models.Index(fields=["organisation", "channel", "contact"]),
        ]

    def __str__(self) -> str:
        return self.title or f"#{self.pk}"


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user", _("User")
        ASSISTANT = "assistant", _("Assistant")
        SYSTEM = "system", _("Note")  # what happened outside the chat: a manager's decision

    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE)
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="messages"
    )
    role = models.CharField(max_length=10, choices=Role.choices)
    text = models.TextField()
    language = models.CharField(max_length=2, blank=True)
    agent = models.CharField(max_length=40, blank=True)
    trace = models.JSONField(default=dict, blank=True)
    # The sender's own id for the frame: a frame sent twice (a reconnecting client) is one message.
    client_id = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = _("message")
        verbose_name_plural = _("messages")
        ordering = ["created_at", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "client_id"],
                condition=~Q(client_id=""),
                name="message_client_id_once",
            )
        ]


class Turn(models.Model):
    """The job of answering one stored user message: queued, run once, finished.

    A turn is claimed by a conditional update (queued → running), so two runners never run one
    turn; a turn found running after its runner's lease expired is *interrupted*, never re-run
    (its tools may have written)."""

    class Status(models.TextChoices):
        QUEUED = "queued", _("Queued")
        RUNNING = "running", _("Running")
        DONE = "done", _("Done")
        WAITING = "waiting", _("Waiting for approval")  # answered; paused for a decision
        FAILED = "failed", _("Failed")
        INTERRUPTED = "interrupted", _("Interrupted")

    class Kind(models.TextChoices):
        MESSAGE = "message", _("Message")  # answers a user's message
        DECISION = "decision", _("Decision")  # resumes a paused turn with a manager's decision

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.MESSAGE)
    # A decision turn: the turn it resumes and the held action that was decided.
    resumes = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="continuations"
    )
    approval_id = models.BigIntegerField(null=True, blank=True)
    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE)
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="turns")
    message = models.OneToOneField(Message, on_delete=models.CASCADE, related_name="turn")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED)
    runner = models.CharField(max_length=80, blank=True)  # who claimed it
    # The chain as routed ({agent, intent, text} per step): what an interrupted turn had planned.
    plan = models.JSONField(default=list, blank=True)
    answer = models.ForeignKey(
        Message, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = _("turn")
        verbose_name_plural = _("turns")
        ordering = ["created_at", "message_id"]
        indexes = [
            models.Index(fields=["conversation", "status", "message"]),
            models.Index(fields=["status", "created_at"]),
        ]

    def __str__(self) -> str:
        return f"{self.pk} ({self.status})"


class ConversationEvent(models.Model):
    """The conversation's event log: every event a turn published, with its sequence number.

    A client that reconnects asks for what followed the last `seq` it saw (S4)."""

    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE)
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="events")
    seq = models.BigIntegerField()
    turn_id = models.CharField(max_length=36, blank=True)
    type = models.CharField(max_length=24)
    payload = models.JSONField()
    # The process that published it: a web process forwards only the others' events (the
    # in-memory channel layer of the embedded default does not cross processes).
    origin = models.CharField(max_length=80, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        verbose_name = _("conversation event")
        verbose_name_plural = _("conversation events")
        ordering = ["conversation", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["conversation", "seq"], name="event_seq_once")
        ]


class AgentRun(models.Model):
    """One sub-agent run: the source of the consulted footer and the per-agent metrics."""

    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE)
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="agent_runs", null=True, blank=True
    )
    turn_id = models.CharField(max_length=36, db_index=True)
    agent = models.CharField(max_length=40)
    intent = models.CharField(max_length=40)
    confidence = models.FloatField(default=0.0)
    tools = models.JSONField(default=list, blank=True)
    plan_steps = models.PositiveSmallIntegerField(default=0)
    latency_ms = models.FloatField(default=0.0)
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    success = models.BooleanField(default=True)
    yielded = models.BooleanField(default=False)
    error = models.TextField(blank=True)
    permanent = models.BooleanField(default=False)
    # For the per-agent metrics (D2): the engine that ran it ("embedded", "llm"), who chose it
    # ("classifier", "model", "directive", "reroute"…), the agent that yielded it when rerouted
    # (that agent's misroute), and whether it asked the operator a question.
    engine = models.CharField(max_length=10, blank=True)
    source = models.CharField(max_length=16, blank=True)
    rerouted_from = models.CharField(max_length=40, blank=True)
    clarified = models.BooleanField(default=False)
    # A/B tests (V4): the test (agents.ABTest, a plain id) and arm ("a"/"b") it ran under.
    abtest_id = models.BigIntegerField(null=True, blank=True)
    abtest_arm = models.CharField(max_length=1, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = _("agent run")
        verbose_name_plural = _("agent runs")
        ordering = ["created_at", "pk"]
        indexes = [
            models.Index(fields=["organisation", "agent", "created_at"]),
            # The metrics' one scan of a period (evaluation/agent_metrics.py) reads only these
            # columns: the index covers it, so the table's wide rows are never visited.
            models.Index(
                fields=[
                    "organisation",
                    "created_at",
                    "agent",
                    "yielded",
                    "success",
                    "latency_ms",
                    "engine",
                    "rerouted_from",
                    "clarified",
                ],
                name="agentrun_metrics",
            ),  # fmt: skip
            # The latency percentiles on SQLite: each agent's runs in latency order (no sort).
            models.Index(
                fields=["organisation", "agent", "yielded", "latency_ms", "created_at"],
                name="agentrun_latency",
            ),
            models.Index(fields=["abtest_id", "abtest_arm"], name="agentrun_abtest_arm"),
        ]


class TraceSeal(models.Model):
    """One sealed turn in the organisation's append-only trace ledger (T1).

    `content` is the canonical JSON of what the turn did when it ended (its messages, sub-agent
    runs, tool calls, model calls and approvals, copilot/ledger.py); `digest` hashes it together
    with the previous seal's digest, so each seal vouches for every one before it. Editing a
    trace row later, or a seal, or removing one, shows in `manage.py verify_trace`.

    A `redaction` entry is the one honest rewrite: forgetting a customer blanks their data in
    the sealed rows and seals, and appends which seals it rewrote, by whom and when."""

    class Kind(models.TextChoices):
        TURN = "turn", _("turn")
        REDACTION = "redaction", _("redaction")

    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE)
    seq = models.PositiveBigIntegerField()  # 1, 2, 3… per organisation
    kind = models.CharField(max_length=10, choices=Kind, default=Kind.TURN)
    turn_id = models.CharField(max_length=36, db_index=True)  # a redaction's own id
    content = models.TextField()
    previous = models.CharField(max_length=64)  # the previous seal's digest ("" for the first)
    digest = models.CharField(max_length=64)
    sealed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["organisation", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["organisation", "seq"], name="trace_seal_seq_once"),
            models.UniqueConstraint(fields=["turn_id"], name="trace_seal_turn_once"),
        ]
        verbose_name = _("trace seal")
        verbose_name_plural = _("trace seals")

    def __str__(self) -> str:
        return f"#{self.seq} {self.turn_id}"

    def save(self, *args: object, **kwargs: object) -> None:
        if self.pk is not None:  # append-only: a seal is never rewritten through the ORM
            raise ValueError("trace seals are append-only")
        super().save(*args, **kwargs)  # type: ignore[arg-type]


class WhatsAppAccount(models.Model):
    """An organisation's WhatsApp Business number (Cloud API). Its identifiers and secrets are
    kept encrypted (common/secrets.py); the phone-number id is found again by its digest, which is
    what the webhook's payload names."""

    organisation = models.OneToOneField(
        Organisation, on_delete=models.CASCADE, related_name="whatsapp_account"
    )
    phone_number_id_encrypted = models.TextField(blank=True, editable=False)
    phone_number_digest = models.CharField(max_length=64, blank=True, editable=False)
    app_secret_encrypted = models.TextField(blank=True, editable=False)
    verify_token_encrypted = models.TextField(blank=True, editable=False)
    access_token_encrypted = models.TextField(blank=True, editable=False)
    phone_number_id = EncryptedText(
        "phone_number_id_encrypted", digest_column="phone_number_digest"
    )
    app_secret = EncryptedText("app_secret_encrypted")
    verify_token = EncryptedText("verify_token_encrypted")
    access_token = EncryptedText("access_token_encrypted")
    # The approved template sent when the customer last wrote more than 24 hours ago.
    template_name = models.CharField(_("template outside the 24-hour window"), max_length=120,
                                     blank=True)  # fmt: skip
    template_language = models.CharField(_("template language"), max_length=10, default="es_AR")
    active = models.BooleanField(_("active"), default=True)

    class Meta:
        verbose_name = _("WhatsApp account")
        verbose_name_plural = _("WhatsApp accounts")
        constraints = [
            models.UniqueConstraint(
                fields=["phone_number_digest"],
                condition=~Q(phone_number_digest=""),
                name="whatsapp_phone_number_once",
            )
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

    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE)
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="outgoing"
    )
    message = models.OneToOneField(Message, on_delete=models.CASCADE, related_name="outgoing")
    to = models.CharField(max_length=32)
    text = models.TextField()
    template = models.CharField(max_length=120, blank=True)  # sent as this template instead
    # A document sent with it (a quote's or invoice's PDF): {"kind", "id", "language"}; the PDF
    # is rendered and uploaded to the Graph API's /media when the row is sent.
    document = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    last_error = models.TextField(blank=True)
    provider_message_id = models.CharField(max_length=128, blank=True, db_index=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "pk"]
        indexes = [models.Index(fields=["status", "next_attempt_at"])]
        verbose_name = _("outgoing WhatsApp message")
        verbose_name_plural = _("WhatsApp outbox")

    def __str__(self) -> str:
        return f"→ {self.to} ({self.status})"


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

    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE)
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="media")
    # The user message it became (the placeholder for a photo, the transcript of a voice note).
    message = models.OneToOneField(
        Message, on_delete=models.SET_NULL, null=True, blank=True, related_name="media"
    )
    wa_message_id = models.CharField(max_length=64)
    media_id = models.CharField(max_length=128)  # the Graph API's id of the file
    kind = models.CharField(max_length=10, choices=Kind.choices)
    sender = models.CharField(max_length=32)
    caption = models.TextField(blank=True)
    meta = models.JSONField(default=dict, blank=True)  # the webhook's sender, name, timestamp
    mime_type = models.CharField(max_length=100, blank=True)
    size = models.PositiveIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True)
    file = models.FileField(upload_to=media_path, blank=True, max_length=200)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)  # fetches that met a transient fault
    error = models.TextField(blank=True)
    # A photo's reading (brand, model, capacity, symptom, kind) and a voice note's transcript.
    extraction = models.JSONField(default=dict, blank=True)
    transcript = models.TextField(blank=True)
    customer = models.ForeignKey(Customer, on_delete=models.SET_NULL, null=True, blank=True)
    equipment = models.ForeignKey(Equipment, on_delete=models.SET_NULL, null=True, blank=True)
    job = models.ForeignKey(Job, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
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

    class Reason(models.TextChoices):  # the values copilot/whatsapp/payload.py gives
        MISSING = "missing", _("Missing")
        FORMAT = "format", _("Not in the expected format")
        SURROGATE = "surrogate", _("Ill-formed text (a lone surrogate)")
        NUL = "nul", _("Contains a NUL character")
        RANGE = "range", _("Out of range")
        NESTING = "nesting", _("Nested too deep")

    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE)
    received_at = models.DateTimeField(_("received at"), default=timezone.now)
    message_id = models.CharField(_("WhatsApp message id"), max_length=128, blank=True)
    field = models.CharField(_("field"), max_length=40)
    reason = models.CharField(_("reason"), max_length=12, choices=Reason.choices)
    excerpt = models.CharField(_("value"), max_length=200, blank=True)  # escaped, cut

    class Meta:
        ordering = ["-received_at", "-pk"]
        indexes = [models.Index(fields=["organisation", "received_at"])]
        verbose_name = _("rejected WhatsApp message")
        verbose_name_plural = _("rejected WhatsApp messages")

    def __str__(self) -> str:
        return f"{self.field}: {self.reason}"
