"""Actions held for a person's decision before they run (A1/A2).

Until the approvals issue lands, the gate only files these and shows them to the operator; the
manager's queue, expiry and execution come with that issue.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from business.models import Organisation


class PendingAction(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", _("Pending")
        APPROVED = "approved", _("Approved")
        REJECTED = "rejected", _("Rejected")
        EXPIRED = "expired", _("Expired")
        EXECUTED = "executed", _("Executed")
        FAILED = "failed", _("Failed")

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="pending_actions"
    )
    conversation_id = models.BigIntegerField(null=True, blank=True)
    agent = models.CharField(max_length=40)
    intent = models.CharField(max_length=40, blank=True)
    tool = models.CharField(max_length=60)
    category = models.CharField(max_length=12)
    arguments = models.JSONField(default=dict)
    summary = models.TextField()
    snapshot_hash = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
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
    expires_at = models.DateTimeField(null=True, blank=True)
    result = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["organisation", "status"])]

    def __str__(self) -> str:
        return f"{self.tool} ({self.status})"
