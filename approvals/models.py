"""Actions held for a person's decision before they run (A1–A6), and their audit trail.

A held action is the call exactly as it would run, a plain-words summary in both languages, the
records it relies on as they were when it was filed (and their hash), who asked, from which
conversation and turn, and until when it may be decided. It runs at most once: every change of
status is a conditional update from the status it expects (approvals/services.py).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from business.models import Organisation, Role


class PendingAction(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", pgettext_lazy("held action", "Waiting for a decision")
        APPROVED = "approved", pgettext_lazy("held action", "Approved, about to run")
        REJECTED = "rejected", pgettext_lazy("held action", "Rejected")
        EXPIRED = "expired", pgettext_lazy("held action", "Expired")
        EXECUTING = "executing", pgettext_lazy("held action", "Running")
        EXECUTED = "executed", pgettext_lazy("held action", "Done")
        FAILED = "failed", pgettext_lazy("held action", "Failed")
        STALE = "stale", pgettext_lazy("held action", "Not run: the records changed")

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="pending_actions"
    )
    conversation_id = models.BigIntegerField(null=True, blank=True)
    turn_id = models.CharField(max_length=36, blank=True)  # the turn that asked for it
    agent = models.CharField(max_length=40)
    intent = models.CharField(max_length=40, blank=True)
    tool = models.CharField(max_length=60)
    category = models.CharField(max_length=12)
    arguments = models.JSONField(default=dict)
    summary = models.TextField()  # what will happen, in Spanish
    summary_en = models.TextField(blank=True)  # the same, in English
    links = models.JSONField(default=list, blank=True)  # [{"kind", "id", "label"}] of its records
    snapshot = models.JSONField(default=dict, blank=True)  # the records it relies on, when filed
    snapshot_hash = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    # The lowest role that may decide it (the agent's approval rules).
    decider_role = models.CharField(max_length=10, choices=Role.choices, default=Role.MANAGER)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_reason = models.TextField(blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    executed_at = models.DateTimeField(null=True, blank=True)
    result = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["organisation", "status"]),
            models.Index(fields=["status", "expires_at"]),
        ]
        verbose_name = _("held action")
        verbose_name_plural = _("held actions")

    def __str__(self) -> str:
        return f"#{self.pk} {self.tool} ({self.status})"

    def summary_in(self, language: str) -> str:
        return self.summary_en if language.startswith("en") and self.summary_en else self.summary


class ApprovalEvent(models.Model):
    """One line of a held action's audit trail: who did what to it, when, why, with what
    outcome. The actor's name is kept even after the account is gone."""

    class Kind(models.TextChoices):
        REQUESTED = "requested", pgettext_lazy("held action", "Requested")
        APPROVED = "approved", pgettext_lazy("held action", "Approved")
        REJECTED = "rejected", pgettext_lazy("held action", "Rejected")
        REFUSED = "refused", pgettext_lazy("held action", "Decision refused")
        EXPIRED = "expired", pgettext_lazy("held action", "Expired")
        EXECUTED = "executed", pgettext_lazy("held action", "Done")
        FAILED = "failed", pgettext_lazy("held action", "Failed")
        STALE = "stale", pgettext_lazy("held action", "Not run: the records changed")

    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE, related_name="+")
    action = models.ForeignKey(PendingAction, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    actor_name = models.CharField(max_length=150, blank=True)
    reason = models.TextField(blank=True)
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "pk"]
        verbose_name = _("approval event")
        verbose_name_plural = _("approval events")

    def __str__(self) -> str:
        return f"{self.kind} #{self.action_id}"
