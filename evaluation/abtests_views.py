"""A/B test pages (V4): the organisation's tests, one test's arms side by side (online metrics,
significance, offline comparison on a dataset), and the admin's actions: start, stop, promote.

Managers and admins read (view_metrics); only admins start, stop, run offline and promote
(edit_agents). Every test is looked up within `request.organisation`: another organisation's is a
404. Writes go through agents/abtest.py; a refused one says why and changes nothing.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from agents.abtest import abtest_promote, abtest_start, abtest_stop, tests_for_org
from agents.models import ABTest, Agent, AgentVersion
from business.roles import can, permission_required
from evaluation.abtests import OFFLINE_KEYS, SHIPPED_DATASETS, offline_compare, online_results
from evaluation.services import EvaluationError

MAX_UPLOAD = 2 * 1024 * 1024  # bytes of a dataset file


def _test_or_404(request: HttpRequest, test_id: int) -> ABTest:
    test = tests_for_org(request.organisation).filter(pk=test_id).first()  # type: ignore[attr-defined]
    if test is None:
        raise Http404
    return test


def _int(value: str | None) -> int | None:
    try:
        return int(value or "")
    except ValueError:
        return None


@permission_required("view_metrics")
def abtest_list(request: HttpRequest) -> HttpResponse:
    organisation = request.organisation  # type: ignore[attr-defined]
    agents = list(Agent.objects.filter(organisation=organisation).order_by("name"))
    versions = AgentVersion.objects.filter(agent__organisation=organisation).select_related("agent")
    errors: dict[str, list[str]] = {}
    if request.method == "POST":
        if not can(request.membership, "edit_agents"):  # type: ignore[attr-defined]
            raise Http404
        agent = next((a for a in agents if a.pk == _int(request.POST.get("agent"))), None)
        try:
            if agent is None:
                raise ValidationError({"agent": _("Choose one of your organisation's agents.")})
            share = _int(request.POST.get("share_b"))
            test = abtest_start(
                organisation=organisation,
                agent=agent,
                version_a=_int(request.POST.get("version_a")),
                version_b=_int(request.POST.get("version_b")),
                share_b=share if share is not None else -1,
                name=request.POST.get("name", "").replace("\x00", ""),
                actor=request.user,
            )
        except ValidationError as exc:
            errors = exc.message_dict if hasattr(exc, "error_dict") else {"": exc.messages}
        else:
            messages.success(request, _("A/B test started."))
            return HttpResponseRedirect(reverse("abtest_detail", args=[test.pk]))
    context = {
        "tests": list(tests_for_org(organisation)),
        "agents": agents,
        "versions": versions.order_by("agent__name", "-number"),
        "errors": errors,
        "posted": request.POST if request.method == "POST" else {},
        "can_edit": can(request.membership, "edit_agents"),  # type: ignore[attr-defined]
    }
    return render(request, "evaluation/abtests.html", context, status=400 if errors else 200)


@permission_required("view_metrics")
def abtest_detail(request: HttpRequest, test_id: int) -> HttpResponse:
    test = _test_or_404(request, test_id)
    online = online_results(test, language=(get_language() or "es")[:2])
    offline_rows = []
    if test.offline.get("a") and test.offline.get("b"):
        offline_rows = [
            (key, test.offline["a"].get(key), test.offline["b"].get(key)) for key in OFFLINE_KEYS
        ]
    context = {
        "test": test,
        "online": online,
        "arms": [online.a, online.b],
        # B's success rate minus A's, in percentage points.
        "difference": round(online.z_test.difference * 100, 1) if online.z_test else None,
        "offline_rows": offline_rows,
        "datasets": list(SHIPPED_DATASETS),
        "can_edit": can(request.membership, "edit_agents"),  # type: ignore[attr-defined]
    }
    return render(request, "evaluation/abtest_detail.html", context)


def _back(test: ABTest) -> HttpResponseRedirect:
    return HttpResponseRedirect(reverse("abtest_detail", args=[test.pk]))


@require_POST
@permission_required("edit_agents")
def abtest_stop_view(request: HttpRequest, test_id: int) -> HttpResponse:
    test = _test_or_404(request, test_id)
    try:
        abtest_stop(test=test, winner=request.POST.get("winner", ""))
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, _("A/B test stopped: every conversation runs the live agent."))
    return _back(test)


@require_POST
@permission_required("edit_agents")
def abtest_promote_view(request: HttpRequest, test_id: int) -> HttpResponse:
    test = _test_or_404(request, test_id)
    try:
        version = abtest_promote(test=test, arm=request.POST.get("winner", ""), actor=request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(
            request,
            _("Arm %(arm)s promoted: %(agent)s is now v%(number)d.")
            % {"arm": test.winner.upper(), "agent": test.agent.name, "number": version.number},
        )
    return _back(test)


@require_POST
@permission_required("edit_agents")
def abtest_offline_view(request: HttpRequest, test_id: int) -> HttpResponse:
    """Both arms on a shipped dataset or an uploaded JSONL file (PRODUCT.md's format)."""
    test = _test_or_404(request, test_id)
    upload = request.FILES.get("file")
    try:
        if upload is not None:
            if upload.size is not None and upload.size > MAX_UPLOAD:
                raise EvaluationError(_("The file is larger than 2 MB."))
            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / "dataset.jsonl"
                path.write_bytes(upload.read())
                offline_compare(test, path, dataset=upload.name or "upload.jsonl")
        else:
            name = request.POST.get("dataset", "")
            if name not in SHIPPED_DATASETS:
                raise EvaluationError(_("Choose a dataset or upload a file."))
            offline_compare(test, SHIPPED_DATASETS[name], dataset=name)
    except (EvaluationError, UnicodeDecodeError) as exc:
        messages.error(request, _("The offline comparison did not run: %s") % exc)
    else:
        messages.success(request, _("Offline comparison done."))
    return _back(test)
