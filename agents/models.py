"""The agent registry (O1): sub-agents, their intents and example utterances, and versions.

Rows with no organisation are the shipped defaults (created by a data migration); every
organisation gets its own copy, which its admins edit. Each save through the services records a
version; a rollback restores one.

Below them, the proactive agent's rows (agents/proactive/): its schedules per organisation, their
runs, and the suggestions they leave.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.utils import formats, timezone
from django.utils.text import capfirst
from django.utils.translation import get_language
from django.utils.translation import gettext_lazy as _
from django_celery_beat.models import PeriodicTask

from agents.defaults import intent_phrase
from business.models import Customer, Organisation, Role


class Agent(models.Model):
    organisation = models.ForeignKey(
        Organisation,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="agents",
        help_text=_("Empty for the shipped defaults that new organisations copy."),
        verbose_name=_("organisation"),
    )
    name = models.SlugField(_("name"), max_length=40)
    label_es = models.CharField(_("label (Spanish)"), max_length=80)
    label_en = models.CharField(_("label (English)"), max_length=80)
    category = models.CharField(_("category"), max_length=40)
    description = models.TextField(_("description"))
    model = models.CharField(
        _("model"), max_length=100, blank=True, help_text=_("Empty: the organisation's default.")
    )
    tools = models.JSONField(_("enabled tools"), default=list, blank=True)
    min_confidence = models.FloatField(_("minimum confidence"), default=0.35)
    max_plan_steps = models.PositiveSmallIntegerField(_("maximum plan steps"), default=4)
    max_tokens = models.PositiveIntegerField(
        _("maximum tokens per model call"),
        null=True,
        blank=True,
        validators=[MinValueValidator(64), MaxValueValidator(32768)],
        help_text=_("Empty: the server's default (OPENAI_MAX_TOKENS)."),
    )
    requires_approval_for = models.JSONField(
        _("tools that need approval"), default=list, blank=True
    )
    # The approval rules of its held calls: how long a manager has to decide, and who may.
    approval_expiry_hours = models.PositiveSmallIntegerField(
        _("approval expiry (hours)"),
        default=24,
        help_text=_("A held action not decided within this many hours expires and never runs."),
    )
    approval_decider = models.CharField(
        _("who may approve"),
        max_length=10,
        choices=[(Role.MANAGER, _("Managers and admins")), (Role.ADMIN, _("Admins only"))],
        default=Role.MANAGER,
    )
    prompt = models.TextField(_("prompt"), blank=True)

    class DirectLine(models.TextChoices):
        # `#agent text`: the agent's answer goes out verbatim, and the orchestrator adds nothing…
        STRICT = "strict", _("Strict passthrough")
        # …or may add its own attributed note after it (held actions, what was not done).
        GUARDED = "guarded", _("Guarded additive")

    # T3: a message that mentions any of these words or phrases must consult this agent (an
    # organisation's rule, e.g. "anything about money consults Finanzas"); empty: no rule.
    consult_when = models.JSONField(
        _("must be consulted when a message mentions"),
        default=list,
        blank=True,
        help_text=_(
            "Words or phrases, one per line; accents and capitals do not matter. A message that "
            "mentions any of them consults this agent, whatever else it asks."
        ),
    )
    direct_line = models.CharField(
        _("direct line"),
        max_length=8,
        choices=DirectLine.choices,
        default=DirectLine.STRICT,
        help_text=_(
            "How a direct line (#agent) delivers this agent's answer: verbatim and alone, or "
            "verbatim with the copilot's separate, attributed notes after it."
        ),
    )

    class ContextMode(models.TextChoices):
        HISTORY = "history", _("Conversation history")
        QUERY = "query", _("Query only")

    # llm engine: an agent that takes history reads the earlier turns; one that takes a query reads
    # only its part of the message plus the orchestrator's prior_context on a topic switch.
    context_mode = models.CharField(
        _("context"), max_length=10, choices=ContextMode.choices, default=ContextMode.HISTORY
    )
    enabled = models.BooleanField(_("enabled"), default=True)
    updated_at = models.DateTimeField(default=timezone.now, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("agent")
        verbose_name_plural = _("agents")
        ordering = ["organisation_id", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["organisation", "name"], name="unique_agent_name_per_org"
            ),
            models.UniqueConstraint(
                fields=["name"],
                condition=models.Q(organisation__isnull=True),
                name="unique_default_agent_name",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def label(self, language: str) -> str:
        return self.label_en if language.startswith("en") else self.label_es

    def writes(self, intent: str) -> bool:
        """Whether the registry says this agent's `intent` changes records."""
        return any(row.writes for row in self.intents.all() if row.name == intent)


class AgentIntent(models.Model):
    """One intent an agent handles: its training examples one per line, and everything the
    product knows about it (nlu.values.IntentSpec, built by agents.selectors.intent_specs)."""

    class Statement(models.TextChoices):
        """Facts a message may state instead of asking (their wording: nlu/prerequisites.py)."""

        NONE = "", _("none")
        ABSENT = "absent", _("a technician is absent or sick")
        NOT_ENTERED = "not_entered", _("a job was never entered")
        NEW_CUSTOMER = "new_customer", _("the customer is new")

    class Role(models.TextChoices):
        """What the product does with the intent besides its handler (the turn's obligations)."""

        REQUEST = "", _("a request")
        COURTESY = "courtesy", _("courtesy (a greeting, a goodbye): nothing to act on")
        OUT_OF_SCOPE = "out_of_scope", _("out of scope: nothing to act on")
        FRUSTRATION = "frustration", _("frustration: a person hears anger with nothing to act on")
        GRIEVANCE = "grievance", _("a grievance: unclear words just before it are its setting")

    class DateIs(models.TextChoices):
        """What the date a request names is (two dates in one message: whose is which)."""

        NONE = "", _("not said")
        OWN = "own", _("its own day")
        TARGET = "target", _("the day something moves to")

    class Subject(models.TextChoices):
        """The record an intent acts on (a follow-up message continues the one discussed)."""

        NONE = "", _("none")
        JOB = "job", _("a job")
        CUSTOMER = "customer", _("a customer")
        TECHNICIAN = "technician", _("a technician")

    agent = models.ForeignKey(
        Agent, on_delete=models.CASCADE, related_name="intents", verbose_name=_("agent")
    )
    name = models.SlugField(_("intent"), max_length=40)
    description = models.CharField(_("description"), max_length=300, blank=True)
    examples_es = models.TextField(_("examples in Spanish (one per line)"), blank=True)
    examples_en = models.TextField(_("examples in English (one per line)"), blank=True)
    writes = models.BooleanField(
        _("writes"), default=False, help_text=_("The request changes records.")
    )
    requires = models.JSONField(
        _("required entities"), default=list, blank=True,
        help_text=_("What a write needs before it runs; without it the copilot asks."),
    )  # fmt: skip
    after = models.JSONField(
        _("runs after"), default=list, blank=True,
        help_text=_("Intents that run before this one when both are in one message."),
    )  # fmt: skip
    first = models.BooleanField(
        _("runs first"), default=False, help_text=_("Opens the chain (an emergency).")
    )
    creates = models.BooleanField(
        _("creates what others use"), default=False,
        help_text=_("While it waits for approval or for an answer, the steps after it wait too."),
    )  # fmt: skip
    absorbs = models.JSONField(
        _("makes redundant"), default=list, blank=True,
        help_text=_("Intents it covers when both are in one message."),
    )  # fmt: skip
    stated_as = models.CharField(
        _("stated as"), max_length=20, choices=Statement.choices, default="", blank=True,
        help_text=_("A fact the message may state instead of asking for this intent."),
    )  # fmt: skip
    stated_for = models.JSONField(
        _("stated before"), default=list, blank=True,
        help_text=_("Requests that build on that fact: it runs before them."),
    )  # fmt: skip
    found_as = models.SlugField(
        _("question form"), max_length=40, blank=True,
        help_text=_("The intent a request that asks to find reads as."),
    )  # fmt: skip
    cue = models.BooleanField(
        _("context word"), default=False,
        help_text=_("Its words only count inside another request (money, prices, anger)."),
    )  # fmt: skip
    phrase_es = models.CharField(
        _("phrase in Spanish"), max_length=120, blank=True,
        help_text=_("What it does, for “done: …” lines: “agendar el trabajo”."),
    )  # fmt: skip
    phrase_en = models.CharField(
        _("phrase in English"), max_length=120, blank=True,
        help_text=_("What it does, for “done: …” lines: “book the job”."),
    )  # fmt: skip
    customers = models.BooleanField(
        _("customers may use it"), default=False, help_text=_("Customers writing on WhatsApp.")
    )
    tool = models.CharField(_("tool"), max_length=60, blank=True)
    subject = models.CharField(
        _("acts on"), max_length=20, choices=Subject.choices, default="", blank=True,
        help_text=_("The record it acts on: a short follow-up continues the one under discussion."),
    )  # fmt: skip
    corrected_by = models.SlugField(
        _("corrected as"), max_length=40, blank=True,
        help_text=_("Right after it wrote, a correction (“mejor a las 15”) reads as this intent."),
    )  # fmt: skip
    picked_as = models.SlugField(
        _("a pick reads as"), max_length=40, blank=True,
        help_text=_("Picking one of the options its answer listed reads as this intent."),
    )  # fmt: skip
    existing_as = models.SlugField(
        _("an existing record reads as"), max_length=40, blank=True,
        help_text=_("A request that points at an existing record (“la última”) reads as this."),
    )  # fmt: skip
    date_is = models.CharField(
        _("its date is"), max_length=10, choices=DateIs.choices, default="", blank=True,
        help_text=_("With two dates in one message: its own day, or the day a move goes to."),
    )  # fmt: skip
    many_as = models.SlugField(
        _("many records read as"), max_length=40, blank=True,
        help_text=_("A request about many records (“los trabajos de Leandro”) reads as this."),
    )  # fmt: skip
    about_work_as = models.SlugField(
        _("about the work reads as"), max_length=40, blank=True,
        help_text=_("Anger about the work done (“el calefón sigue roto”) reads as this intent."),
    )  # fmt: skip
    later_as = models.SlugField(
        _("a later day reads as"), max_length=40, blank=True,
        help_text=_("A request for a later day (“mandá a alguien el lunes”) reads as this."),
    )  # fmt: skip
    undone_by = models.SlugField(
        _("undone by"), max_length=40, blank=True,
        help_text=_("The intent whose tool undoes the job it wrote: the answer offers an undo "
                    "(a booking is undone by cancel_job)."),
    )  # fmt: skip
    invoice_named_as = models.SlugField(
        _("a named invoice reads as"), max_length=40, blank=True,
        help_text=_("A request that names an invoice by its number (“la factura B 12”) reads as "
                    "this intent: the invoice exists already."),
    )  # fmt: skip
    new_as = models.SlugField(
        _("a new customer reads as"), max_length=40, blank=True,
        help_text=_("A request about a customer the message says is new reads as this intent: "
                    "“es nueva, cargala con el cel …” updates nobody, it registers her."),
    )  # fmt: skip
    role = models.CharField(
        _("role"), max_length=20, choices=Role.choices, default="", blank=True,
        help_text=_("Courtesy and out-of-scope intents never act; frustration with nothing "
                    "else goes to a person; a grievance takes the unclear words before it."),
    )  # fmt: skip
    ends_conversation = models.BooleanField(
        _("ends the conversation"), default=False,
        help_text=_("A goodbye: what the conversation taught about its customers is kept then."),
    )  # fmt: skip

    class Meta:
        verbose_name = _("intent")
        verbose_name_plural = _("intents")
        ordering = ["agent_id", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "name"], name="unique_intent_per_agent")
        ]

    def __str__(self) -> str:
        # As people name it, in the active language (the agent page's intent headings); the name
        # stays in its form field.
        language = get_language() or "es"
        own = self.phrase_en if language.startswith("en") else self.phrase_es
        return capfirst(own or intent_phrase(self.name, language))

    def examples(self) -> list[tuple[str, str]]:
        """(text, lang) pairs, blank lines dropped."""
        pairs: list[tuple[str, str]] = []
        for lang, block in (("es", self.examples_es), ("en", self.examples_en)):
            pairs.extend((line.strip(), lang) for line in block.splitlines() if line.strip())
        return pairs


class AgentVersion(models.Model):
    """A snapshot of an agent and its intents, taken on every save."""

    agent = models.ForeignKey(
        Agent, on_delete=models.CASCADE, related_name="versions", verbose_name=_("agent")
    )
    number = models.PositiveIntegerField(verbose_name=_("number"))
    snapshot = models.JSONField(verbose_name=_("snapshot"))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        verbose_name=_("created by"),
    )
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))
    note = models.CharField(max_length=200, blank=True, verbose_name=_("note"))

    class Meta:
        verbose_name = _("agent version")
        verbose_name_plural = _("agent versions")
        ordering = ["-number"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "number"], name="unique_agent_version")
        ]

    def __str__(self) -> str:
        return f"{self.agent.name} v{self.number}"

    @property
    def summary(self) -> dict[str, Any]:
        intents = self.snapshot.get("intents", [])
        return {"intents": len(intents), "tools": len(self.snapshot.get("tools", []))}


class ToolCall(models.Model):
    """One tool call of a sub-agent step, written in the same transaction as the tool's own
    writes: the execution log a turn is judged by (what was done, what was held, what failed),
    even when its process dies before the step ends."""

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="+", verbose_name=_("organisation")
    )
    # Plain ids: the chat that owns conversations and turns sits above this package.
    conversation_id = models.BigIntegerField(
        null=True, blank=True, verbose_name=_("conversation id")
    )
    turn_id = models.CharField(max_length=36, blank=True, db_index=True, verbose_name=_("turn id"))
    agent = models.CharField(max_length=40, verbose_name=_("agent"))
    intent = models.CharField(max_length=40, blank=True, verbose_name=_("intent"))
    tool = models.CharField(max_length=60, verbose_name=_("tool"))
    category = models.CharField(max_length=12, verbose_name=_("category"))
    arguments = models.JSONField(default=dict, blank=True, verbose_name=_("arguments"))
    ok = models.BooleanField(default=True, verbose_name=_("ok"))
    summary = models.TextField(blank=True, verbose_name=_("summary"))
    error = models.TextField(blank=True, verbose_name=_("error"))
    approval_id = models.BigIntegerField(
        null=True, blank=True, verbose_name=_("approval id")
    )  # held for, or run after, it
    approved = models.BooleanField(
        default=False, verbose_name=_("approved")
    )  # ran because a manager approved it
    latency_ms = models.FloatField(default=0.0, verbose_name=_("latency ms"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))

    class Meta:
        ordering = ["created_at", "pk"]
        verbose_name = _("tool call")
        verbose_name_plural = _("tool calls")

    def __str__(self) -> str:
        return f"{self.tool} ({'ok' if self.ok else 'failed'})"


# --- The proactive agent (P1, P2): its schedules per organisation, every run of them, and the
# suggestions they leave for the office to act on or dismiss. ----------------------------------


class Detector(models.TextChoices):
    """What a schedule looks for; each is one task in agents/proactive/tasks.py."""

    MAINTENANCE = "maintenance_due", _("Maintenance due")
    FOLLOW_UPS = "follow_ups", _("Follow-ups")
    SEASONAL = "seasonal", _("Seasonal campaigns")
    COLLECTIONS = "collections", _("Collections")
    OPPORTUNITIES = "opportunities", _("Opportunities")


class ProactiveSchedule(models.Model):
    """One detector of one organisation, run by its beat entry on the organisation's clock.

    Admins edit the time, the weekdays, whether it runs and its number of days here; the
    service behind the admin (schedule_update) keeps the beat entry in step."""

    organisation = models.ForeignKey(
        Organisation,
        on_delete=models.CASCADE,
        related_name="proactive_schedules",
        verbose_name=_("organisation"),
    )
    detector = models.CharField(_("looks for"), max_length=20, choices=Detector.choices)
    periodic_task = models.OneToOneField(
        PeriodicTask,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("periodic task"),
    )
    hour = models.PositiveSmallIntegerField(
        _("hour"), default=8, validators=[MaxValueValidator(23)]
    )
    minute = models.PositiveSmallIntegerField(
        _("minute"), default=0, validators=[MaxValueValidator(59)]
    )
    weekdays = models.CharField(
        _("weekdays"),
        max_length=40,
        default="1-5",
        validators=[RegexValidator(r"^(\*|[0-6](-[0-6])?)(,[0-6](-[0-6])?)*$")],
        help_text=_("Crontab days of the week: 1-5 is Monday to Friday, * every day, 1 Mondays."),
    )
    days = models.PositiveSmallIntegerField(
        _("days"),
        default=0,
        help_text=_(
            "Maintenance: due within this many days. Follow-ups: finished at least this many "
            "days ago. Collections: overdue by this many days."
        ),
    )
    enabled = models.BooleanField(_("enabled"), default=True)

    class Meta:
        verbose_name = _("proactive schedule")
        verbose_name_plural = _("proactive schedules")
        ordering = ["organisation_id", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["organisation", "detector"], name="unique_proactive_schedule"
            )
        ]

    def __str__(self) -> str:
        return f"{self.get_detector_display()} · {self.organisation}"


class ScheduleRun(models.Model):
    """One run of a detector for an organisation: when, how long, what it found, what failed."""

    class Status(models.TextChoices):
        RUNNING = "running", _("Running")
        OK = "ok", _("OK")
        FAILED = "failed", _("Failed")

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, verbose_name=_("organisation")
    )
    detector = models.CharField(_("looks for"), max_length=20, choices=Detector.choices)
    trigger = models.CharField(_("started by"), max_length=20, default="schedule")
    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.RUNNING, verbose_name=_("status")
    )
    started_at = models.DateTimeField(_("started"), default=timezone.now)
    finished_at = models.DateTimeField(_("finished"), null=True, blank=True)
    duration_ms = models.FloatField(_("duration (ms)"), default=0)
    found = models.PositiveIntegerField(_("found"), default=0)
    created = models.PositiveIntegerField(_("new suggestions"), default=0)
    expired = models.PositiveIntegerField(_("expired"), default=0)
    details = models.JSONField(default=dict, blank=True, verbose_name=_("details"))
    error = models.TextField(_("error"), blank=True)

    class Meta:
        verbose_name = _("schedule run")
        verbose_name_plural = _("schedule runs")
        ordering = ["-started_at"]
        indexes = [models.Index(fields=["organisation", "detector", "-started_at"])]

    def __str__(self) -> str:
        # In the active zone (the organisation's on a request) and language, words not codes.
        when = formats.date_format(timezone.localtime(self.started_at), "SHORT_DATETIME_FORMAT")
        return f"{self.get_detector_display()} {when} ({self.get_status_display()})"


class Suggestion(models.Model):
    """Work worth offering, found by a schedule: what it is about, why (structured facts,
    worded in the reader's language), and the proposed action as a registry tool call."""

    class Kind(models.TextChoices):
        MAINTENANCE = "maintenance", _("Maintenance due")
        FOLLOW_UP = "follow_up", _("Follow-up call")
        SEASONAL = "seasonal", _("Seasonal campaign")
        COLLECTION = "collection", _("Collection")
        REPLACEMENT = "replacement", _("Replacement quote")
        QUOTE_MISSING = "quote_missing", _("Price asked, no quote")
        SEASONAL_REGULAR = "seasonal_regular", _("Seasonal customer not booked")

    class State(models.TextChoices):
        NEW = "new", _("New")
        ACCEPTED = "accepted", _("Accepted")
        DISMISSED = "dismissed", _("Dismissed")
        DONE = "done", _("Done")
        EXPIRED = "expired", _("Expired")

    class Priority(models.IntegerChoices):
        LOW = 1, _("Low")
        NORMAL = 2, _("Normal")
        HIGH = 3, _("High")

    OPEN_STATES = (State.NEW, State.ACCEPTED)

    organisation = models.ForeignKey(
        Organisation,
        on_delete=models.CASCADE,
        related_name="suggestions",
        verbose_name=_("organisation"),
    )
    kind = models.CharField(_("kind"), max_length=20, choices=Kind.choices)
    # What it is about: {"customer": id, "equipment": id, "job": id, "invoice": id}.
    records = models.JSONField(default=dict, verbose_name=_("records"))
    customer = models.ForeignKey(
        Customer, on_delete=models.SET_NULL, null=True, blank=True, verbose_name=_("customer")
    )
    # kind + records, and kind + records + period: the same thing is suggested once per period.
    subject = models.CharField(max_length=160, verbose_name=_("subject"))
    dedupe_key = models.CharField(max_length=200, verbose_name=_("dedupe key"))
    facts = models.JSONField(_("why"), default=dict)
    tool = models.CharField(_("proposed tool"), max_length=60)
    arguments = models.JSONField(_("arguments"), default=dict)
    priority = models.PositiveSmallIntegerField(
        _("priority"), choices=Priority.choices, default=Priority.NORMAL
    )
    state = models.CharField(_("state"), max_length=10, choices=State.choices, default=State.NEW)
    run = models.ForeignKey(
        ScheduleRun, on_delete=models.SET_NULL, null=True, blank=True, verbose_name=_("run")
    )
    created_at = models.DateTimeField(_("created"), default=timezone.now)
    acted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        verbose_name=_("acted by"),
    )
    acted_at = models.DateTimeField(_("acted"), null=True, blank=True)
    dismiss_reason = models.CharField(_("reason"), max_length=300, blank=True)
    # The turn that ran the accepted action, and what came of it.
    conversation_id = models.BigIntegerField(
        null=True, blank=True, verbose_name=_("conversation id")
    )
    turn_id = models.CharField(max_length=40, blank=True, verbose_name=_("turn id"))
    outcome = models.CharField(_("outcome"), max_length=300, blank=True)

    class Meta:
        verbose_name = _("suggestion")
        verbose_name_plural = _("suggestions")
        ordering = ["-priority", "-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["organisation", "dedupe_key"], name="unique_suggestion_per_period"
            )
        ]
        indexes = [models.Index(fields=["organisation", "state", "-created_at"])]

    def __str__(self) -> str:
        return f"#{self.pk} {self.kind} ({self.state})"


# --- A/B tests (V4): two versions of one agent's configuration, compared on a dataset and on a
# share of live conversations (agents/abtest.py assigns them; evaluation/abtests.py measures). ----


class ABTest(models.Model):
    """Arm A and arm B are two recorded versions of the agent. While the test runs, a conversation
    whose hash falls below `share_b` % runs the agent with arm B's configuration, the others with
    arm A's; a stopped test's winner is promoted as a new version of the agent."""

    class State(models.TextChoices):
        RUNNING = "running", _("Running")
        STOPPED = "stopped", _("Stopped")

    class Arm(models.TextChoices):
        A = "a", _("Arm A")
        B = "b", _("Arm B")

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="+", verbose_name=_("organisation")
    )
    agent = models.ForeignKey(
        Agent, on_delete=models.CASCADE, related_name="abtests", verbose_name=_("agent")
    )
    name = models.CharField(_("name"), max_length=120)
    arm_a = models.ForeignKey(
        AgentVersion, on_delete=models.CASCADE, related_name="+", verbose_name=_("arm A")
    )
    arm_b = models.ForeignKey(
        AgentVersion, on_delete=models.CASCADE, related_name="+", verbose_name=_("arm B")
    )
    share_b = models.PositiveSmallIntegerField(
        _("share of conversations on arm B (%)"),
        default=50,
        validators=[MinValueValidator(1), MaxValueValidator(99)],
    )
    state = models.CharField(
        _("state"), max_length=10, choices=State.choices, default=State.RUNNING
    )
    winner = models.CharField(_("winner"), max_length=1, choices=Arm.choices, blank=True)
    # The last offline comparison on a dataset: {"dataset": …, "a": metrics, "b": metrics}.
    offline = models.JSONField(default=dict, blank=True, verbose_name=_("offline"))
    promoted_version = models.ForeignKey(
        AgentVersion,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("promoted version"),
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        verbose_name=_("created by"),
    )
    created_at = models.DateTimeField(_("started"), default=timezone.now)
    stopped_at = models.DateTimeField(_("stopped"), null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("A/B test")
        verbose_name_plural = _("A/B tests")
        constraints = [
            models.UniqueConstraint(
                fields=["agent"],
                condition=models.Q(state="running"),
                name="one_running_abtest_per_agent",
            )
        ]
        indexes = [models.Index(fields=["organisation", "state"])]

    def __str__(self) -> str:
        return f"{self.name} ({self.agent.name})"
