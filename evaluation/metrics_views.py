"""The per-agent metrics page (D2), for managers and admins of the request's organisation.

Every figure comes from `evaluation.agent_metrics`, scoped to `request.organisation`: another
organisation's runs are never read, whatever the query string says.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import get_language

from business.roles import permission_required
from evaluation.agent_metrics import (
    PERIODS,
    agent_metrics,
    date_input,
    date_placeholder,
    period_from,
)


@permission_required("view_metrics")
def agent_metrics_view(request: HttpRequest) -> HttpResponse:
    organisation = request.organisation  # type: ignore[attr-defined]
    period, errors = period_from(request.GET, organisation)
    report = agent_metrics(organisation, period, language=(get_language() or "es")[:2])
    context = {
        "report": report,
        "period": period,
        "periods": list(PERIODS.items()),
        "errors": errors,
        # The custom period's days as the reader writes them (what was typed, when wrong).
        "date_from": date_input(period.first_day) if period.key == "custom" else "",
        "date_to": date_input(period.last_day) if period.key == "custom" else "",
        "asked_from": request.GET.get("from", "")[:10],
        "asked_to": request.GET.get("to", "")[:10],
        "date_shape": date_placeholder(),
        "charts": report.chart_data(),
    }
    return render(request, "evaluation/agent_metrics.html", context)
