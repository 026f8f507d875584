"""The chat: conversations, their messages, and one row per sub-agent run (the runtime trace)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from business.models import Organisation


class Conversation(models.Model):
    class Channel(models.TextChoices):
        PANEL = "panel", _("Panel")
        WHATSAPP = "whatsapp", "WhatsApp"
        SCHEDULE = "schedule", _("Schedule")

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
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-updated_at"]
        indexes = [models.Index(fields=["organisation", "-updated_at"])]

    def __str__(self) -> str:
        return self.title or f"#{self.pk}"


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user", _("User")
        ASSISTANT = "assistant", _("Assistant")

    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE)
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="messages"
    )
    role = models.CharField(max_length=10, choices=Role.choices)
    text = models.TextField()
    language = models.CharField(max_length=2, blank=True)
    agent = models.CharField(max_length=40, blank=True)
    trace = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "pk"]


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
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "pk"]
        indexes = [models.Index(fields=["organisation", "agent", "created_at"])]
