from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from business.roles import permission_required


@permission_required("view_records")
def dashboard(request: HttpRequest) -> HttpResponse:
    return render(request, "business/dashboard.html", {})
