"""The approvals queue (A3): what the copilot holds for a manager's decision, and the decision.

- `queue`: the organisation's held actions by state, in plain words, with their records, who
  asked and when, and the time left. Live: the page's socket (approvals/consumers.py) tells it
  when anything changed, and it reloads its rows (htmx) — every manager sees the same queue.
- `detail`: one action, with the records it relied on when filed and its audit trail.
- `decide`: approve or reject, with an optional reason — a real form that works without
  JavaScript (redirect back with a message) and, with htmx, swaps the row in place. Deciding goes
  through `approvals.services.action_decide`, the same service as the chat's "aprobá la #12":
  a double click or two managers at once get one decision and a clear message for the other.
  What follows (the paused turn resumes and runs the action) is the chat's: copilot/receivers.py.

Every query is scoped to the request's organisation; another organisation's action is a 404.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from approvals.models import PendingAction
from approvals.selectors import (
    STATE_FILTERS,
    action_for_org,
    actions_for_org,
    record_links,
    snapshot_view,
)
from approvals.services import Decided, action_decide, may_decide_as
from business.roles import can, permission_required

REASON_MAX = 500


@permission_required("decide_approvals")
def queue(request: HttpRequest) -> HttpResponse:
    state = request.GET.get("state", "pending")
    state = state if state in STATE_FILTERS else "pending"
    organisation = request.organisation  # type: ignore[attr-defined]
    actions = actions_for_org(organisation, state)
    page = Paginator(actions, 30).get_page(request.GET.get("page"))
    rows = [_row(request, action) for action in page.object_list]
    context = {
        "page": page, "rows": rows, "state": state,
        "states": [(key, label) for key, (label, _statuses) in STATE_FILTERS.items()],
    }  # fmt: skip
    template = "approvals/_queue_rows.html" if request.htmx else "approvals/queue.html"  # type: ignore[attr-defined]
    return render(request, template, context)


@permission_required("chat")
def detail(request: HttpRequest, action_id: int) -> HttpResponse:
    """An action's page: a manager's to decide; the member who asked for it reads it too (the
    chip of their answer links here), without the decision's buttons."""
    action = _action_or_404(request, action_id)
    manager = can(getattr(request, "membership", None), "decide_approvals")
    if not manager and action.requested_by_id != request.user.pk:
        raise PermissionDenied
    context = {
        "manager": manager,
        "row": _row(request, action),
        "audit": list(action.events.select_related(None).order_by("created_at", "pk")),
        "snapshot": snapshot_view(action.snapshot),
        "arguments": action.arguments,
    }
    return render(request, "approvals/detail.html", context)


@require_POST
@permission_required("decide_approvals")
def decide(request: HttpRequest, action_id: int) -> HttpResponse:
    action = _action_or_404(request, action_id)
    choice = request.POST.get("decision", "")
    if choice not in ("approve", "reject"):
        messages.error(request, _("Choose approve or reject."))
        return _back(request, action)
    reason = request.POST.get("reason", "").replace("\x00", "").strip()[:REASON_MAX]
    decided = action_decide(
        organisation_id=action.organisation_id, action_id=action.pk,
        actor=request.user,  # type: ignore[arg-type]
        approve=choice == "approve", reason=reason,
    )  # fmt: skip
    note = _decision_message(decided, action)
    if request.htmx:  # type: ignore[attr-defined]
        action.refresh_from_db()
        context = {
            "row": _row(request, action), "note": note,
            "level": "success" if decided.ok else "warning",
            "standalone": request.POST.get("view") == "detail",
        }  # fmt: skip
        return render(request, "approvals/_decided.html", context)
    messages.add_message(request, messages.SUCCESS if decided.ok else messages.WARNING, note)
    return _back(request, action)


def _action_or_404(request: HttpRequest, action_id: int) -> PendingAction:
    action = action_for_org(request.organisation, action_id)  # type: ignore[attr-defined]
    if action is None:
        raise Http404
    return action


def _row(request: HttpRequest, action: PendingAction) -> dict[str, Any]:
    """What the queue shows of one action, safe for a deleted requester or record."""
    language = getattr(request, "LANGUAGE_CODE", "es")
    requester = action.requested_by
    decider = action.decided_by
    return {
        "action": action,
        "summary": action.summary_in(language),
        "links": record_links(action.links),
        "requester": (requester.get_full_name() or requester.get_username()) if requester else "",
        "decider": (decider.get_full_name() or decider.get_username()) if decider else "",
        "open": action.status == PendingAction.Status.PENDING and not _expired(action),
        "may_decide": may_decide_as(getattr(request, "membership", None), action),
    }


def _expired(action: PendingAction) -> bool:
    return action.expires_at is not None and action.expires_at <= timezone.now()


def _decision_message(decided: Decided, action: PendingAction) -> str:
    number = {"id": action.pk}
    if decided.code == "approved":
        return (
            _("Approved: action #%(id)s runs now; the conversation that asked sees the result.")
            % number
        )
    if decided.code == "rejected":
        return _("Rejected: action #%(id)s will not run.") % number
    if decided.code == "expired":
        return _("Action #%(id)s expired before your decision: it will not run.") % number
    if decided.code == "forbidden":
        return _("Your role cannot decide action #%(id)s.") % number
    current = decided.action or action
    decider = current.decided_by
    who = (decider.get_full_name() or decider.get_username()) if decider else _("someone else")
    return _("Action #%(id)s was already decided by %(who)s: %(status)s.") % {
        "id": action.pk, "who": who, "status": current.get_status_display(),
    }  # fmt: skip


def _back(request: HttpRequest, action: PendingAction) -> HttpResponseRedirect:
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        target = reverse("approvals")
    return HttpResponseRedirect(target)
