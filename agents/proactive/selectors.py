"""Reads of the suggestions, always inside one organisation."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from agents.models import Suggestion
from business.models import Organisation

State = Suggestion.State


def open_suggestions(organisation: Organisation) -> QuerySet[Suggestion]:
    """What waits for the office (new), highest priority and newest first."""
    return Suggestion.objects.filter(organisation=organisation, state=State.NEW).select_related(
        "customer"
    )


SETTLED_SHOWN_FOR = datetime.timedelta(minutes=15)


def settled_by(organisation: Organisation, user: Any) -> QuerySet[Suggestion]:
    """What this person accepted or dismissed lately, newest first: the list keeps saying what
    happened to their card after the socket or the poll reloads it."""
    since = timezone.now() - SETTLED_SHOWN_FOR
    return (
        Suggestion.objects.filter(
            organisation=organisation, acted_by_id=user.pk, acted_at__gte=since
        )
        .exclude(state=State.NEW)
        .select_related("customer")
        .order_by("-acted_at", "-pk")
    )


def get_suggestion_for_org(organisation: Organisation, pk: Any) -> Suggestion:
    """The organisation's suggestion, or Suggestion.DoesNotExist (a foreign id reads as
    missing)."""
    return Suggestion.objects.select_related("customer").get(organisation=organisation, pk=pk)


@dataclass(frozen=True)
class Acceptance:
    kind: str
    label: str
    offered: int
    accepted: int  # accepted or done
    dismissed: int

    @property
    def rate(self) -> int | None:
        decided = self.accepted + self.dismissed
        return round(100 * self.accepted / decided) if decided else None


def acceptance_by_kind(organisation: Organisation) -> list[Acceptance]:
    rows = (
        Suggestion.objects.filter(organisation=organisation)
        .values("kind")
        .annotate(
            offered=Count("pk"),
            accepted=Count("pk", filter=Q(state__in=(State.ACCEPTED, State.DONE))),
            dismissed=Count("pk", filter=Q(state=State.DISMISSED)),
        )
        .order_by("kind")
    )
    labels = dict(Suggestion.Kind.choices)
    return [
        Acceptance(row["kind"], str(labels.get(row["kind"], row["kind"])), row["offered"],
                   row["accepted"], row["dismissed"])
        for row in rows
    ]  # fmt: skip
