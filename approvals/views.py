"""The approvals queue (A3): what the copilot is holding for a manager's decision.

Until the approvals issue lands, the queue is read-only: it shows every held action with who asked
for it, when it expires and its arguments; deciding comes with that issue.
"""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from approvals.models import PendingAction
from approvals.selectors import pending_actions_for_org
from business.roles import permission_required


@permission_required("decide_approvals")
def queue(request: HttpRequest) -> HttpResponse:
    status = request.GET.get("status", PendingAction.Status.PENDING)
    status = status if status in PendingAction.Status.values or status == "" else "pending"
    actions = pending_actions_for_org(request.organisation, status)  # type: ignore[attr-defined]
    page = Paginator(actions, 30).get_page(request.GET.get("page"))
    context = {"page": page, "status": status, "statuses": PendingAction.Status.choices}
    return render(request, "approvals/queue.html", context)
