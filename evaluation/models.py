"""Evaluation in the product (V1-V3, V5): datasets of cases, runs over them, operator feedback.

Every row belongs to an organisation. A dataset is either the organisation's golden set (every
agent's intents; the shipped one is installed for every organisation) or an agent's own partition.
A run reads one dataset with one engine and one agent-configuration version (the current
registry, or one agent at one of its recorded versions) and keeps every metric `manage.py
evaluate` prints plus its per-case rows, which the calibration page reads.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from agents.models import Agent
from business.models import Organisation
from copilot.models import Message

GOLDEN_NAME = "golden"


class Dataset(models.Model):
    class Kind(models.TextChoices):
        GOLDEN = "golden", _("Golden set")
        AGENT = "agent", _("Agent partition")

    organisation = models.ForeignKey(
        Organisation,
        on_delete=models.CASCADE,
        related_name="eval_datasets",
        verbose_name=_("organisation"),
    )
    name = models.CharField(_("name"), max_length=80)
    kind = models.CharField(_("kind"), max_length=10, choices=Kind.choices, default=Kind.GOLDEN)
    agent = models.ForeignKey(
        Agent,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="eval_datasets",
        verbose_name=_("agent"),
    )
    description = models.TextField(_("description"), blank=True)
    # Relative dates in the cases ("mañana") were labelled against this day.
    reference_date = models.DateField(_("reference date"), null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))

    class Meta:
        ordering = ["organisation_id", "kind", "name"]
        constraints = [
            models.UniqueConstraint(fields=["organisation", "name"], name="eval_dataset_name")
        ]

    def __str__(self) -> str:
        return self.name


class Case(models.Model):
    """One line of PRODUCT.md's evaluation format."""

    class Source(models.TextChoices):
        FILE = "file", _("Imported")
        MANUAL = "manual", _("Written by hand")
        FEEDBACK = "feedback", _("From feedback")
        CONVERSATION = "conversation", _("From a conversation")

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, verbose_name=_("organisation")
    )
    dataset = models.ForeignKey(
        Dataset, on_delete=models.CASCADE, related_name="cases", verbose_name=_("dataset")
    )
    position = models.PositiveIntegerField(default=0, verbose_name=_("position"))
    external_id = models.CharField(_("id"), max_length=80, blank=True)
    input = models.TextField(_("input"))
    expected_intents = models.JSONField(_("expected intents"), default=list)
    expected_agents = models.JSONField(_("expected agents"), default=list, blank=True)
    expected_entities = models.JSONField(_("expected entities"), default=dict, blank=True)
    lang = models.CharField(_("language"), max_length=5, blank=True)
    tags = models.JSONField(_("tags"), default=list, blank=True)
    source = models.CharField(
        max_length=12, choices=Source.choices, default=Source.FILE, verbose_name=_("source")
    )
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))
    updated_at = models.DateTimeField(default=timezone.now, verbose_name=_("updated at"))

    class Meta:
        ordering = ["dataset_id", "position", "pk"]
        indexes = [models.Index(fields=["dataset", "position"])]

    def __str__(self) -> str:
        return self.input[:60]

    @property
    def case_id(self) -> str:
        """The case's name in a run: its file id, else its position."""
        return self.external_id or str(self.position)


# A queued run no worker took after this long is shown as waiting for one.
UNCLAIMED_AFTER_S = 30


class Run(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", _("Queued")
        RUNNING = "running", _("Running")
        DONE = "done", _("Done")
        FAILED = "failed", _("Failed")

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, verbose_name=_("organisation")
    )
    dataset = models.ForeignKey(
        Dataset,
        on_delete=models.SET_NULL,
        null=True,
        related_name="runs",
        verbose_name=_("dataset"),
    )
    dataset_name = models.CharField(
        max_length=80, verbose_name=_("dataset name")
    )  # kept when the dataset goes
    engine = models.CharField(_("engine"), max_length=10, default="embedded")
    # The agent-configuration version: one agent at one recorded version, the rest as they are;
    # none: the registry as it is.
    agent = models.ForeignKey(
        Agent, on_delete=models.SET_NULL, null=True, blank=True, verbose_name=_("agent")
    )
    agent_version = models.PositiveIntegerField(
        null=True, blank=True, verbose_name=_("agent version")
    )
    reference_date = models.DateField(verbose_name=_("reference date"))
    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.QUEUED, verbose_name=_("status")
    )
    total = models.PositiveIntegerField(default=0, verbose_name=_("total"))
    done = models.PositiveIntegerField(default=0, verbose_name=_("done"))
    metrics = models.JSONField(default=dict, blank=True, verbose_name=_("metrics"))
    rows = models.JSONField(
        default=list, blank=True, verbose_name=_("rows")
    )  # one per case, as `--per-case`
    error = models.TextField(blank=True, verbose_name=_("error"))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        verbose_name=_("created by"),
    )
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))
    started_at = models.DateTimeField(null=True, blank=True, verbose_name=_("started at"))
    finished_at = models.DateTimeField(null=True, blank=True, verbose_name=_("finished at"))

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"#{self.pk} {self.dataset_name} ({self.status})"

    @property
    def percent(self) -> int:
        return int(100 * self.done / self.total) if self.total else 0

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)

    @property
    def unclaimed(self) -> bool:
        """Queued for longer than a worker takes to pick a run up: the page says no worker has
        (instead of a bar that waits in silence)."""
        waited = timezone.now() - self.created_at
        return self.status == self.Status.QUEUED and waited.total_seconds() > UNCLAIMED_AFTER_S

    @property
    def config_label(self) -> str:
        if self.agent_id is None or self.agent_version is None:
            return str(_("current registry"))
        return f"{self.agent.name if self.agent else '?'} v{self.agent_version}"


class Feedback(models.Model):
    """An operator's verdict on one copilot answer (V5)."""

    class Rating(models.TextChoices):
        UP = "up", _("Good answer")
        DOWN = "down", _("Bad answer")

    class State(models.TextChoices):
        NEW = "new", _("New")
        CONVERTED = "converted", _("Made into a case")
        DISMISSED = "dismissed", _("Dismissed")

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, verbose_name=_("organisation")
    )
    message = models.ForeignKey(
        Message, on_delete=models.CASCADE, related_name="feedback", verbose_name=_("message")
    )
    turn_id = models.CharField(max_length=36, blank=True, db_index=True, verbose_name=_("turn id"))
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, verbose_name=_("user")
    )
    rating = models.CharField(
        max_length=4, choices=Rating.choices, blank=True, verbose_name=_("rating")
    )
    should_be = models.CharField(_("should have been"), max_length=40, blank=True)
    state = models.CharField(
        max_length=10, choices=State.choices, default=State.NEW, verbose_name=_("state")
    )
    case = models.ForeignKey(
        Case, on_delete=models.SET_NULL, null=True, blank=True, verbose_name=_("case")
    )
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))
    updated_at = models.DateTimeField(default=timezone.now, verbose_name=_("updated at"))

    class Meta:
        ordering = ["-updated_at", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["message", "user"], name="feedback_once_per_user")
        ]
        indexes = [models.Index(fields=["organisation", "state", "updated_at"])]

    def __str__(self) -> str:
        return f"{self.rating or '-'} {self.should_be} on {self.message_id}"
