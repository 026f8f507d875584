from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from agents.selectors import tools_overview
from business.roles import permission_required


@permission_required("view_records")
def tools(request: HttpRequest) -> HttpResponse:
    rows = tools_overview(request.organisation)  # type: ignore[attr-defined]
    return render(request, "agents/tools.html", {"tools": rows})
