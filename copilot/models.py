"""The chat: conversations, their messages, their turns and event log, and one row per sub-agent
run (the runtime trace)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from business.models import Customer, Organisation


class Conversation(models.Model):
    class Channel(models.TextChoices):
        PANEL = "panel", _("Panel")
        WHATSAPP = "whatsapp", "WhatsApp"
        SCHEDULE = "schedule", _("Schedule")

    class Mode(models.TextChoices):
        COPILOT = "copilot", _("Copilot")
        HUMAN = "human", _("Human")

    organisation = models.ForeignKey(
        Organisation,
        on_delete=models.CASCADE,
        related_name="conversations",
        verbose_name=_("organisation"),
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        verbose_name=_("user"),
    )
    channel = models.CharField(
        max_length=10, choices=Channel.choices, default=Channel.PANEL, verbose_name=_("channel")
    )
    title = models.CharField(max_length=120, blank=True, verbose_name=_("title"))
    # Working memory (O9): a compact summary plus structured state (pending clarification,
    # the job under discussion, ...). Raw history is read only where a node needs it.
    summary = models.TextField(blank=True, verbose_name=_("summary"))
    state = models.JSONField(default=dict, blank=True, verbose_name=_("state"))
    # The sequence number of the last event published to this conversation's log.
    event_seq = models.BigIntegerField(default=0, verbose_name=_("event seq"))
    # The lease that lets one runner at a time work through its queued turns, in order, across
    # every process; a holder that stops renewing it loses it at `lease_until`.
    lease_owner = models.CharField(max_length=80, blank=True, verbose_name=_("lease owner"))
    lease_until = models.DateTimeField(null=True, blank=True, verbose_name=_("lease until"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))
    updated_at = models.DateTimeField(default=timezone.now, verbose_name=_("updated at"))
    # When its customers' profiles were last extracted from it (P3: at a farewell, or by the
    # idle sweep, which takes only conversations updated since).
    profiled_at = models.DateTimeField(null=True, blank=True, verbose_name=_("profiled at"))
    # Who the conversation is with on its channel: the customer's WhatsApp number (wa_id).
    contact = models.CharField(max_length=32, blank=True, verbose_name=_("contact"))
    # The customer writing (WhatsApp): matched by phone or registered; their turns are scoped
    # to their own records (agents/customer_scope.py).
    customer = models.ForeignKey(
        Customer,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="conversations",
        verbose_name=_("customer"),
    )
    # "human": an operator took the conversation over; the copilot does not answer until it is
    # handed back (whatsapp/humans.py).
    mode = models.CharField(
        max_length=10, choices=Mode.choices, default=Mode.COPILOT, verbose_name=_("mode")
    )
    taken_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
        related_name="+",
     verbose_name=_("taken by"))  # fmt: skip

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

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, verbose_name=_("organisation")
    )
    conversation = models.ForeignKey(
        Conversation,
        on_delete=models.CASCADE,
        related_name="messages",
        verbose_name=_("conversation"),
    )
    role = models.CharField(max_length=10, choices=Role.choices, verbose_name=_("role"))
    text = models.TextField(verbose_name=_("text"))
    language = models.CharField(max_length=2, blank=True, verbose_name=_("language"))
    agent = models.CharField(max_length=40, blank=True, verbose_name=_("agent"))
    trace = models.JSONField(default=dict, blank=True, verbose_name=_("trace"))
    # The sender's own id for the frame: a frame sent twice (a reconnecting client) is one message.
    client_id = models.CharField(max_length=64, blank=True, verbose_name=_("client id"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))

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

    def __str__(self) -> str:
        return str(_("Message #%(id)s") % {"id": self.pk})


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
        # Each kind's producer is in copilot/kinds.py; what it needs is set by its accept_*.
        MESSAGE = "message", _("Message")  # answers a user's message (a channel may add a step)
        DECISION = "decision", _("Decision")  # resumes a paused turn with a manager's decision
        SUGGESTION = "suggestion", _("Suggestion")  # runs an accepted suggestion's call
        UNDO = "undo", _("Undo")  # runs the inverse of a call an answer made

    id = models.UUIDField(
        primary_key=True, default=uuid.uuid4, editable=False, verbose_name=_("id")
    )
    kind = models.CharField(
        max_length=10, choices=Kind.choices, default=Kind.MESSAGE, verbose_name=_("kind")
    )
    # What the kind runs on (copilot/kinds.py `SuggestionPayload`, `UndoPayload`); a decision
    # names its action and paused turn in the two fields below.
    payload = models.JSONField(default=dict, blank=True, verbose_name=_("payload"))
    # A decision turn: the turn it resumes and the held action that was decided.
    resumes = models.ForeignKey(
        "self",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="continuations",
        verbose_name=_("resumes"),
    )
    approval_id = models.BigIntegerField(null=True, blank=True, verbose_name=_("approval id"))
    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, verbose_name=_("organisation")
    )
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="turns", verbose_name=_("conversation")
    )
    message = models.OneToOneField(
        Message, on_delete=models.CASCADE, related_name="turn", verbose_name=_("message")
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        verbose_name=_("user"),
    )
    status = models.CharField(
        max_length=12, choices=Status.choices, default=Status.QUEUED, verbose_name=_("status")
    )
    runner = models.CharField(max_length=80, blank=True, verbose_name=_("runner"))  # who claimed it
    # The chain as routed ({agent, intent, text} per step): what an interrupted turn had planned.
    plan = models.JSONField(default=list, blank=True, verbose_name=_("plan"))
    answer = models.ForeignKey(
        Message,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("answer"),
    )
    error = models.TextField(blank=True, verbose_name=_("error"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))
    started_at = models.DateTimeField(null=True, blank=True, verbose_name=_("started at"))
    finished_at = models.DateTimeField(null=True, blank=True, verbose_name=_("finished at"))

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

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, verbose_name=_("organisation")
    )
    conversation = models.ForeignKey(
        Conversation,
        on_delete=models.CASCADE,
        related_name="events",
        verbose_name=_("conversation"),
    )
    seq = models.BigIntegerField(verbose_name=_("seq"))
    turn_id = models.CharField(max_length=36, blank=True, verbose_name=_("turn id"))
    type = models.CharField(max_length=24, verbose_name=_("type"))
    payload = models.JSONField(verbose_name=_("payload"))
    # The process that published it: a web process forwards only the others' events (the
    # in-memory channel layer of the embedded default does not cross processes).
    origin = models.CharField(max_length=80, blank=True, verbose_name=_("origin"))
    created_at = models.DateTimeField(
        default=timezone.now, db_index=True, verbose_name=_("created at")
    )

    class Meta:
        verbose_name = _("conversation event")
        verbose_name_plural = _("conversation events")
        ordering = ["conversation", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["conversation", "seq"], name="event_seq_once")
        ]


class AgentRun(models.Model):
    """One sub-agent run: the source of the consulted footer and the per-agent metrics."""

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, verbose_name=_("organisation")
    )
    conversation = models.ForeignKey(
        Conversation,
        on_delete=models.CASCADE,
        related_name="agent_runs",
        null=True,
        blank=True,
        verbose_name=_("conversation"),
    )
    turn_id = models.CharField(max_length=36, db_index=True, verbose_name=_("turn id"))
    agent = models.CharField(max_length=40, verbose_name=_("agent"))
    intent = models.CharField(max_length=40, verbose_name=_("intent"))
    confidence = models.FloatField(default=0.0, verbose_name=_("confidence"))
    tools = models.JSONField(default=list, blank=True, verbose_name=_("tools"))
    plan_steps = models.PositiveSmallIntegerField(default=0, verbose_name=_("plan steps"))
    latency_ms = models.FloatField(default=0.0, verbose_name=_("latency ms"))
    tokens_in = models.PositiveIntegerField(default=0, verbose_name=_("tokens in"))
    tokens_out = models.PositiveIntegerField(default=0, verbose_name=_("tokens out"))
    success = models.BooleanField(default=True, verbose_name=_("success"))
    yielded = models.BooleanField(default=False, verbose_name=_("yielded"))
    error = models.TextField(blank=True, verbose_name=_("error"))
    permanent = models.BooleanField(default=False, verbose_name=_("permanent"))
    # For the per-agent metrics (D2): the engine that ran it ("embedded", "llm"), who chose it
    # ("classifier", "model", "directive", "reroute"…), the agent that yielded it when rerouted
    # (that agent's misroute), and whether it asked the operator a question.
    engine = models.CharField(max_length=10, blank=True, verbose_name=_("engine"))
    source = models.CharField(max_length=16, blank=True, verbose_name=_("source"))
    rerouted_from = models.CharField(max_length=40, blank=True, verbose_name=_("rerouted from"))
    clarified = models.BooleanField(default=False, verbose_name=_("clarified"))
    # A/B tests (V4): the test (agents.ABTest, a plain id) and arm ("a"/"b") it ran under.
    abtest_id = models.BigIntegerField(null=True, blank=True, verbose_name=_("abtest id"))
    abtest_arm = models.CharField(max_length=1, blank=True, verbose_name=_("abtest arm"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))

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
    """One entry of the organisation's append-only trace ledger (T1).

    A turn's seal: `content` is the canonical JSON of what the turn did when it ended (its
    messages, sub-agent runs, tool calls, model calls and approvals, copilot/ledger.py);
    `digest` hashes it together with the previous seal's digest, so each seal vouches for every
    one before it. A turn is sealed into its conversation's chain (`chain`, the conversation's
    id; `seq` counts within it); an `anchor` entry in the organisation's chain (`chain` empty)
    vouches for the heads those chains reached. Seals written before the conversation chains
    are turn seals in the organisation's chain. Editing a trace row later, or a seal, or
    removing one, shows in `manage.py verify_trace`.

    A `redaction` entry is the one honest rewrite: forgetting a customer blanks their data in
    the sealed rows and seals, and appends which seals it rewrote, by whom and when."""

    class Kind(models.TextChoices):
        TURN = "turn", _("turn")
        REDACTION = "redaction", _("redaction")
        ANCHOR = "anchor", _("anchor")

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, verbose_name=_("organisation")
    )
    # The conversation whose chain the seal is in; empty: the organisation's own chain.
    chain = models.PositiveBigIntegerField(null=True, blank=True, verbose_name=_("chain"))
    seq = models.PositiveBigIntegerField(verbose_name=_("seq"))  # 1, 2, 3… per chain
    kind = models.CharField(max_length=10, choices=Kind, default=Kind.TURN, verbose_name=_("kind"))
    turn_id = models.CharField(
        max_length=36, db_index=True, verbose_name=_("turn id")
    )  # a redaction's own id
    content = models.TextField(verbose_name=_("content"))
    previous = models.CharField(
        max_length=64, verbose_name=_("previous")
    )  # the previous seal's digest ("" for the first)
    digest = models.CharField(max_length=64, verbose_name=_("digest"))
    sealed_at = models.DateTimeField(default=timezone.now, verbose_name=_("sealed at"))
    # A conversation seal an anchor has vouched for: bookkeeping of the anchoring job, outside
    # the digest (a flag with no anchor behind it is itself a break: the anchor was removed).
    anchored = models.BooleanField(default=False, verbose_name=_("anchored"))

    class Meta:
        ordering = ["organisation", "chain", "seq"]
        constraints = [
            models.UniqueConstraint(
                fields=["organisation", "seq"],
                condition=Q(chain__isnull=True),
                name="trace_seal_seq_once",
            ),  # fmt: skip
            models.UniqueConstraint(
                fields=["chain", "seq"],
                condition=Q(chain__isnull=False),
                name="trace_seal_chain_seq_once",
            ),  # fmt: skip
            models.UniqueConstraint(fields=["turn_id"], name="trace_seal_turn_once"),
        ]
        indexes = [  # what the next anchor takes
            models.Index(
                fields=["organisation"],
                condition=Q(anchored=False, chain__isnull=False),
                name="trace_seal_unanchored",
            ),  # fmt: skip
        ]
        verbose_name = _("trace seal")
        verbose_name_plural = _("trace seals")

    def __str__(self) -> str:
        return f"#{self.seq} {self.turn_id}"

    def save(self, *args: object, **kwargs: object) -> None:
        if self.pk is not None:  # append-only: a seal is never rewritten through the ORM
            raise ValueError("trace seals are append-only")
        super().save(*args, **kwargs)  # type: ignore[arg-type]
