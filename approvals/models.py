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
        Organisation,
        on_delete=models.CASCADE,
        related_name="pending_actions",
        verbose_name=_("organisation"),
    )
    conversation_id = models.BigIntegerField(
        null=True, blank=True, verbose_name=_("conversation id")
    )
    turn_id = models.CharField(
        max_length=36, blank=True, verbose_name=_("turn id")
    )  # the turn that asked for it
    agent = models.CharField(max_length=40, verbose_name=_("agent"))
    intent = models.CharField(max_length=40, blank=True, verbose_name=_("intent"))
    tool = models.CharField(max_length=60, verbose_name=_("tool"))
    category = models.CharField(max_length=12, verbose_name=_("category"))
    arguments = models.JSONField(default=dict, verbose_name=_("arguments"))
    summary = models.TextField(verbose_name=_("summary"))  # what will happen, in Spanish
    summary_en = models.TextField(blank=True, verbose_name=_("summary en"))  # the same, in English
    links = models.JSONField(
        default=list, blank=True, verbose_name=_("links")
    )  # [{"kind", "id", "label"}] of its records
    snapshot = models.JSONField(
        default=dict, blank=True, verbose_name=_("snapshot")
    )  # the records it relies on, when filed
    snapshot_hash = models.CharField(max_length=64, blank=True, verbose_name=_("snapshot hash"))
    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.PENDING, verbose_name=_("status")
    )
    # The lowest role that may decide it (the agent's approval rules).
    decider_role = models.CharField(
        max_length=10, choices=Role.choices, default=Role.MANAGER, verbose_name=_("decider role")
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("requested by"),
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("decided by"),
    )
    decided_at = models.DateTimeField(null=True, blank=True, verbose_name=_("decided at"))
    decision_reason = models.TextField(blank=True, verbose_name=_("decision reason"))
    expires_at = models.DateTimeField(null=True, blank=True, verbose_name=_("expires at"))
    executed_at = models.DateTimeField(null=True, blank=True, verbose_name=_("executed at"))
    result = models.JSONField(default=dict, blank=True, verbose_name=_("result"))
    error = models.TextField(blank=True, verbose_name=_("error"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["organisation", "status"]),
            models.Index(fields=["status", "expires_at"]),
        ]
        verbose_name = _("held action")
        verbose_name_plural = _("held actions")

    def __str__(self) -> str:
        return f"#{self.pk} ({self.get_status_display()})"  # the tool's name is a code

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

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="+", verbose_name=_("organisation")
    )
    action = models.ForeignKey(
        PendingAction, on_delete=models.CASCADE, related_name="events", verbose_name=_("action")
    )
    kind = models.CharField(max_length=10, choices=Kind.choices, verbose_name=_("kind"))
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("actor"),
    )
    actor_name = models.CharField(max_length=150, blank=True, verbose_name=_("actor name"))
    reason = models.TextField(blank=True, verbose_name=_("reason"))
    detail = models.JSONField(default=dict, blank=True, verbose_name=_("detail"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))

    class Meta:
        ordering = ["created_at", "pk"]
        verbose_name = _("approval event")
        verbose_name_plural = _("approval events")

    def __str__(self) -> str:
        return f"{self.kind} #{self.action_id}"
