"""Reads of the model-call rows (`ModelCall`): what one turn's calls spent."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Count, Q, Sum

from llm.models import ModelCall


@dataclass(frozen=True)
class TurnUsage:
    calls: int
    failed: int
    tokens_in: int
    tokens_out: int
    cost: Decimal  # USD
    latency_ms: float  # the calls' own time, summed


def turn_usage(organisation_id: int, turn_id: str) -> TurnUsage:
    calls = ModelCall.objects.filter(organisation_id=organisation_id, turn_id=turn_id)
    totals = calls.aggregate(
        calls=Count("pk"),
        failed=Count("pk", filter=Q(ok=False)),
        tokens_in=Sum("tokens_in"),
        tokens_out=Sum("tokens_out"),
        cost=Sum("cost"),
        latency_ms=Sum("latency_ms"),
    )
    return TurnUsage(
        calls=int(totals["calls"] or 0),
        failed=int(totals["failed"] or 0),
        tokens_in=int(totals["tokens_in"] or 0),
        tokens_out=int(totals["tokens_out"] or 0),
        cost=Decimal(totals["cost"] or 0),
        latency_ms=float(totals["latency_ms"] or 0.0),
    )
