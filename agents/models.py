"""The agent registry (O1): sub-agents, their intents and example utterances, and versions.

Rows with no organisation are the shipped defaults (created by a data migration); every
organisation gets its own copy, which its admins edit. Each save through the services records a
version; a rollback restores one.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from business.models import Organisation, Role


class Agent(models.Model):
    organisation = models.ForeignKey(
        Organisation,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="agents",
        help_text=_("Empty for the shipped defaults that new organisations copy."),
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
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
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


class AgentIntent(models.Model):
    """One intent an agent handles, with its training examples one per line."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="intents")
    name = models.SlugField(_("intent"), max_length=40)
    description = models.CharField(_("description"), max_length=300, blank=True)
    examples_es = models.TextField(_("examples in Spanish (one per line)"), blank=True)
    examples_en = models.TextField(_("examples in English (one per line)"), blank=True)

    class Meta:
        ordering = ["agent_id", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "name"], name="unique_intent_per_agent")
        ]

    def __str__(self) -> str:
        return f"{self.agent.name}.{self.name}"

    def examples(self) -> list[tuple[str, str]]:
        """(text, lang) pairs, blank lines dropped."""
        pairs: list[tuple[str, str]] = []
        for lang, block in (("es", self.examples_es), ("en", self.examples_en)):
            pairs.extend((line.strip(), lang) for line in block.splitlines() if line.strip())
        return pairs


class AgentVersion(models.Model):
    """A snapshot of an agent and its intents, taken on every save."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    snapshot = models.JSONField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    created_at = models.DateTimeField(default=timezone.now)
    note = models.CharField(max_length=200, blank=True)

    class Meta:
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

    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE, related_name="+")
    # Plain ids: the chat that owns conversations and turns sits above this package.
    conversation_id = models.BigIntegerField(null=True, blank=True)
    turn_id = models.CharField(max_length=36, blank=True, db_index=True)
    agent = models.CharField(max_length=40)
    intent = models.CharField(max_length=40, blank=True)
    tool = models.CharField(max_length=60)
    category = models.CharField(max_length=12)
    arguments = models.JSONField(default=dict, blank=True)
    ok = models.BooleanField(default=True)
    summary = models.TextField(blank=True)
    error = models.TextField(blank=True)
    approval_id = models.BigIntegerField(null=True, blank=True)  # held for, or run after, it
    approved = models.BooleanField(default=False)  # ran because a manager approved it
    latency_ms = models.FloatField(default=0.0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "pk"]
        verbose_name = _("tool call")
        verbose_name_plural = _("tool calls")

    def __str__(self) -> str:
        return f"{self.tool} ({'ok' if self.ok else 'failed'})"
