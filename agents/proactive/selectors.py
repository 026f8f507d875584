"""Reads of the suggestions, always inside one organisation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q, QuerySet

from agents.models import Suggestion
from business.models import Organisation

State = Suggestion.State


def open_suggestions(organisation: Organisation) -> QuerySet[Suggestion]:
    """What waits for the office (new), highest priority and newest first."""
    return Suggestion.objects.filter(organisation=organisation, state=State.NEW).select_related(
        "customer"
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
