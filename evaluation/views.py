"""The evaluation pages (V1-V3, V5): datasets and cases, runs with live progress, comparison,
calibration, and the feedback queue; and the panel's feedback buttons.

Managers and admins see them (`view_metrics`); starting a run needs `run_evaluations` and applying
a threshold `edit_agents` (admins). Every object is read through the organisation of the request:
another organisation's id is a 404.
"""

from __future__ import annotations

import math
from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db import IntegrityError
from django.db.models import Count, Q
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseRedirect,
)
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from agents.models import Agent
from agents.services import agent_save
from business.roles import can, permission_required
from copilot.models import Message
from evaluation import calibration
from evaluation.datasets import (
    DatasetError,
    case_add,
    case_update,
    dataset_create,
    dataset_export,
    dataset_import,
    golden_install,
)
from evaluation.feedback import (
    FeedbackError,
    answer_for_user,
    feedback_dismiss,
    feedback_record,
    feedback_to_case,
    masking,
    message_to_case,
    question_of,
    routed,
)
from evaluation.forms import CaseForm, DatasetForm, ImportForm, RunForm
from evaluation.models import Case, Dataset, Feedback, Run
from evaluation.runs import RunError, confusion_matrix, failing_rows, run_compare
from evaluation.tasks import run_start

PAGE_SIZE = 50


def _org(request: HttpRequest) -> Any:
    return request.organisation  # type: ignore[attr-defined]


def _can(request: HttpRequest, permission: str) -> bool:
    return can(getattr(request, "membership", None), permission)


# --- index: datasets and runs ------------------------------------------------------------------


@permission_required("view_metrics")
def index(request: HttpRequest) -> HttpResponse:
    organisation = _org(request)
    golden_install(organisation)  # an organisation made while its creation's commit hook failed
    datasets = Dataset.objects.filter(organisation=organisation).annotate(n=Count("cases"))
    runs = Run.objects.filter(organisation=organisation).select_related("agent")[:50]
    return render(
        request,
        "evaluation/index.html",
        {
            "datasets": datasets,
            "runs": runs,
            "run_form": RunForm(organisation=organisation),
            "dataset_form": DatasetForm(organisation=organisation),
            "can_run": _can(request, "run_evaluations"),
            "feedback_new": Feedback.objects.filter(
                organisation=organisation, state=Feedback.State.NEW
            ).count(),
        },
    )


@require_POST
@permission_required("view_metrics")
def dataset_new(request: HttpRequest) -> HttpResponse:
    organisation = _org(request)
    form = DatasetForm(request.POST, organisation=organisation)
    if not form.is_valid():
        messages.error(request, _("The dataset was not created: %s") % form.errors.as_text())
        return HttpResponseRedirect(reverse("evaluation:index"))
    try:
        dataset = dataset_create(
            organisation, name=form.cleaned_data["name"], agent=form.cleaned_data["agent"]
        )
    except (DatasetError, IntegrityError) as exc:
        problems = exc.problems if isinstance(exc, DatasetError) else [str(exc)]
        messages.error(request, _("The dataset was not created: %s") % "; ".join(problems))
        return HttpResponseRedirect(reverse("evaluation:index"))
    return HttpResponseRedirect(reverse("evaluation:dataset", args=[dataset.pk]))


def _dataset(request: HttpRequest, pk: int) -> Dataset:
    return get_object_or_404(Dataset, pk=pk, organisation=_org(request))


@permission_required("view_metrics")
def dataset_detail(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = _dataset(request, pk)
    return _dataset_page(request, dataset, ImportForm())


def _dataset_page(
    request: HttpRequest,
    dataset: Dataset,
    import_form: ImportForm,
    problems: list[str] | None = None,
    status: int = 200,
) -> HttpResponse:
    cases = Case.objects.filter(dataset=dataset)
    query = request.GET.get("q", "").strip()
    if query:
        cases = cases.filter(Q(input__icontains=query) | Q(external_id=query))
    agent = request.GET.get("agent", "").strip()
    if agent:
        cases = cases.filter(expected_agents__icontains=f'"{agent}"')
    page = Paginator(cases, PAGE_SIZE).get_page(request.GET.get("page"))
    return render(
        request,
        "evaluation/dataset.html",
        {
            "dataset": dataset,
            "page": page,
            "query": query,
            "agent": agent,
            "agents": Agent.objects.filter(organisation=dataset.organisation).values_list(
                "name", flat=True
            ),
            "import_form": import_form,
            "problems": problems or [],
            "target": "cases",
        },
        status=status,
    )


@require_POST
@permission_required("view_metrics")
def dataset_import_view(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = _dataset(request, pk)
    form = ImportForm(request.POST, request.FILES)
    if not form.is_valid():
        return _dataset_page(request, dataset, form, status=400)
    try:
        count = dataset_import(
            dataset, form.cleaned_data["content"], replace=form.cleaned_data["replace"]
        )
    except DatasetError as exc:
        return _dataset_page(request, dataset, form, problems=exc.problems, status=400)
    messages.success(request, _("%d cases imported.") % count)
    return HttpResponseRedirect(reverse("evaluation:dataset", args=[dataset.pk]))


@permission_required("view_metrics")
def dataset_export_view(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = _dataset(request, pk)
    response = HttpResponse(
        dataset_export(dataset), content_type="application/jsonl; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{dataset.name}.jsonl"'
    return response


@permission_required("view_metrics")
def case_new(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = _dataset(request, pk)
    form = CaseForm(request.POST or None, organisation=dataset.organisation)
    if request.method == "POST" and form.is_valid():
        try:
            case_add(dataset, form.data_json, source=Case.Source.MANUAL)
        except DatasetError as exc:
            for problem in exc.problems:
                form.add_error(None, problem)
        else:
            messages.success(request, _("Case added."))
            return HttpResponseRedirect(reverse("evaluation:dataset", args=[dataset.pk]))
    status = 400 if request.method == "POST" else 200
    return render(request, "evaluation/case_form.html",
                  {"form": form, "dataset": dataset, "case": None}, status=status)  # fmt: skip


@permission_required("view_metrics")
def case_edit(request: HttpRequest, pk: int) -> HttpResponse:
    case = get_object_or_404(
        Case.objects.select_related("dataset"), pk=pk, organisation=_org(request)
    )
    if request.method == "POST":
        form = CaseForm(request.POST, organisation=case.organisation)
        if form.is_valid():
            try:
                case_update(case, form.data_json)
            except DatasetError as exc:
                for problem in exc.problems:
                    form.add_error(None, problem)
            else:
                messages.success(request, _("Case saved."))
                return HttpResponseRedirect(reverse("evaluation:dataset", args=[case.dataset_id]))
    else:
        form = CaseForm(initial=CaseForm.initial_for(case), organisation=case.organisation)
    status = 400 if request.method == "POST" else 200
    return render(request, "evaluation/case_form.html",
                  {"form": form, "dataset": case.dataset, "case": case}, status=status)  # fmt: skip


@require_POST
@permission_required("view_metrics")
def case_delete(request: HttpRequest, pk: int) -> HttpResponse:
    case = get_object_or_404(Case, pk=pk, organisation=_org(request))
    dataset_id = case.dataset_id
    case.delete()
    messages.success(request, _("Case deleted."))
    return HttpResponseRedirect(reverse("evaluation:dataset", args=[dataset_id]))


# --- runs --------------------------------------------------------------------------------------


@require_POST
@permission_required("run_evaluations")
def run_new(request: HttpRequest) -> HttpResponse:
    organisation = _org(request)
    form = RunForm(request.POST, organisation=organisation)
    if not form.is_valid():
        messages.error(request, _("The run was not started: %s") % form.errors.as_text())
        return HttpResponseRedirect(reverse("evaluation:index"))
    try:
        agent, version = form.agent_version()
        run = run_start(
            organisation=organisation, user=request.user, dataset=form.cleaned_data["dataset"],
            engine=form.cleaned_data["engine"], agent=agent, version=version,
            reference_date=form.cleaned_data.get("reference_date"),
        )  # fmt: skip
    except (RunError, Agent.DoesNotExist, ValueError) as exc:
        messages.error(request, _("The run was not started: %s") % exc)
        return HttpResponseRedirect(reverse("evaluation:index"))
    return HttpResponseRedirect(reverse("evaluation:run", args=[run.pk]))


def _run(request: HttpRequest, pk: int) -> Run:
    return get_object_or_404(Run.objects.select_related("agent"), pk=pk, organisation=_org(request))


@permission_required("view_metrics")
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = _run(request, pk)
    columns, matrix = confusion_matrix(run)
    others = Run.objects.filter(organisation=run.organisation, status=Run.Status.DONE).exclude(
        pk=run.pk
    )[:30]
    return render(
        request,
        "evaluation/run.html",
        {
            "run": run,
            "columns": columns,
            "matrix": matrix,
            "failing": failing_rows(run)[:200],
            "per_intent": sorted(run.metrics.get("per_intent", {}).items()),
            "others": others,
        },
    )


@permission_required("view_metrics")
def run_progress(request: HttpRequest, pk: int) -> HttpResponse:
    """The bar, polled while the run works; a finished run reloads the page with its results."""
    run = _run(request, pk)
    response = render(request, "evaluation/_run_progress.html", {"run": run})
    if run.finished and request.GET.get("was") != "finished":
        response["HX-Refresh"] = "true"
    return response


@permission_required("view_metrics")
def run_compare_view(request: HttpRequest) -> HttpResponse:
    organisation = _org(request)
    try:
        a_id, b_id = int(request.GET.get("a", "")), int(request.GET.get("b", ""))
    except ValueError:
        return HttpResponseBadRequest(_("Choose two runs."))
    a = get_object_or_404(Run, pk=a_id, organisation=organisation, status=Run.Status.DONE)
    b = get_object_or_404(Run, pk=b_id, organisation=organisation, status=Run.Status.DONE)
    return render(request, "evaluation/compare.html", {"a": a, "b": b, "cmp": run_compare(a, b)})


# --- calibration -------------------------------------------------------------------------------


@permission_required("view_metrics")
def run_calibration(request: HttpRequest, pk: int) -> HttpResponse:
    run = _run(request, pk)
    if run.status != Run.Status.DONE:
        raise Http404
    try:
        target = float(request.GET.get("target", calibration.TARGET_ACCURACY))
    except ValueError:
        target = calibration.TARGET_ACCURACY
    target = min(max(target, 0.5), 1.0) if math.isfinite(target) else calibration.TARGET_ACCURACY
    agents = {a.name: a for a in Agent.objects.filter(organisation=run.organisation)}
    rows = []
    current = {name: agent.min_confidence for name, agent in agents.items()}
    for item in calibration.calibrate(run.rows, target, current):
        agent = agents.get(item.agent)
        rows.append({
            "cal": item,
            "agent": agent,
            "current": agent.min_confidence if agent is not None else None,
            "chart": _tradeoff_svg(item, agent.min_confidence if agent is not None else None),
            "diagram": _reliability_svg(item),
        })  # fmt: skip
    return render(
        request,
        "evaluation/calibration.html",
        {"run": run, "rows": rows, "target": target, "can_apply": _can(request, "edit_agents")},
    )


def _reliability_svg(item: calibration.AgentCalibration) -> dict[str, Any]:
    """Bars of each bin's accuracy, the diagonal for perfect calibration (viewBox 0..100)."""
    top = max((b.count for b in item.bins), default=1) or 1
    bars = [
        {"x": b.low * 100 + 1, "w": 8, "h": b.accuracy * 100, "y": 100 - b.accuracy * 100,
         "conf_y": 100 - b.confidence * 100, "count": b.count,
         "opacity": 0.25 + 0.75 * b.count / top, "bin": b}
        for b in item.bins
        if b.count
    ]  # fmt: skip
    return {"bars": bars}


def _tradeoff_svg(item: calibration.AgentCalibration, current: float | None) -> dict[str, Any]:
    def line(values: list[tuple[float, float]]) -> str:
        return " ".join(f"{x * 100:.1f},{100 - y * 100:.1f}" for x, y in values)

    return {
        "coverage": line([(p.threshold, p.coverage) for p in item.points]),
        "accuracy": line([(p.threshold, p.accuracy) for p in item.points]),
        "suggested_x": item.suggested * 100 if item.suggested is not None else None,
        "current_x": current * 100 if current is not None else None,
    }


@require_POST
@permission_required("edit_agents")
def run_calibration_apply(request: HttpRequest, pk: int) -> HttpResponse:
    run = _run(request, pk)
    agent = get_object_or_404(
        Agent, organisation=run.organisation, name=request.POST.get("agent", "")
    )
    url = reverse("evaluation:calibration", args=[run.pk])
    try:
        threshold = round(float(request.POST.get("threshold", "")), 2)
        agent_save(
            agent=agent, changes={"min_confidence": threshold}, actor=request.user,
            note=_("Threshold %(t)s suggested by evaluation run #%(run)d")
            % {"t": threshold, "run": run.pk},
        )  # fmt: skip
    except (ValueError, ValidationError) as exc:
        messages.error(request, _("The threshold was not applied: %s") % exc)
        return HttpResponseRedirect(url)
    latest = agent.versions.order_by("-number").first()
    messages.success(
        request,
        _("%(agent)s now runs at %(t)s (version %(v)s).")
        % {"agent": agent.name, "t": threshold, "v": latest.number if latest else "-"},
    )
    return HttpResponseRedirect(url)


# --- feedback ----------------------------------------------------------------------------------


@require_POST
@permission_required("chat")
def answer_feedback(request: HttpRequest, message_id: int) -> HttpResponse:
    """The panel's thumbs and "this should have been …" on one answer."""
    try:
        answer = answer_for_user(request.user, message_id)
    except Message.DoesNotExist as exc:
        raise Http404 from exc
    if answer.organisation_id != _org(request).pk:
        raise Http404
    try:
        feedback = feedback_record(
            user=request.user, message=answer, rating=request.POST.get("rating", ""),
            should_be=request.POST.get("should_be", ""),
        )  # fmt: skip
    except FeedbackError as exc:
        return HttpResponseBadRequest(str(exc))
    return render(
        request, "evaluation/_feedback.html",
        {"message": answer, "feedback": feedback, "feedback_agents": _agents(request)},
    )  # fmt: skip


def _agents(request: HttpRequest) -> list[tuple[str, str]]:
    language = getattr(request, "LANGUAGE_CODE", "es")
    return [
        (agent.name, agent.label(language))
        for agent in Agent.objects.filter(organisation=_org(request), enabled=True)
    ]


@permission_required("view_metrics")
def feedback_queue(request: HttpRequest) -> HttpResponse:
    organisation = _org(request)
    mask = masking(organisation)
    state = request.GET.get("state", Feedback.State.NEW)
    if state not in Feedback.State.values:
        state = Feedback.State.NEW
    items = Feedback.objects.filter(organisation=organisation, state=state).select_related(
        "message", "user", "case"
    )[:100]
    rows = []
    for item in items:
        question = question_of(item.message)
        rows.append({
            "feedback": item, "question": question.text if question else "",
            "masked": mask(question.text) if question else "", "routed": routed(item.message),
            "lang": question.language if question else "",
        })  # fmt: skip
    recent = (
        Message.objects.filter(organisation=organisation, role=Message.Role.USER)
        .exclude(text__startswith="#")
        .select_related("turn__answer")
        .order_by("-created_at", "-pk")[:30]
    )
    conversation_rows = [
        {"message": m, "masked": mask(m.text),
         "routed": routed(getattr(getattr(m, "turn", None), "answer", None))}
        for m in recent
    ]  # fmt: skip
    made = set(
        Case.objects.filter(
            organisation=organisation, input__in=[row["masked"] for row in conversation_rows]
        ).values_list("input", flat=True)
    )
    for row in conversation_rows:
        row["made"] = row["masked"] in made
    return render(
        request,
        "evaluation/feedback_queue.html",
        {
            "rows": rows,
            "state": state,
            "states": Feedback.State.choices,
            "conversation_rows": conversation_rows,
            "datasets": Dataset.objects.filter(organisation=organisation),
            "agents": _agents(request),
        },
    )


def _dataset_id(request: HttpRequest) -> int:
    try:
        return int(request.POST.get("dataset", ""))
    except ValueError:
        return 0


def _case_added(case: Case) -> str:
    return _("Case #%(n)s added to %(d)s.") % {"n": case.position, "d": case.dataset.name}


@require_POST
@permission_required("view_metrics")
def feedback_case(request: HttpRequest, pk: int) -> HttpResponse:
    feedback = get_object_or_404(
        Feedback.objects.select_related("message", "organisation"),
        pk=pk,
        organisation=_org(request),
    )
    try:
        case = feedback_to_case(
            feedback=feedback, dataset_id=_dataset_id(request), agent=request.POST.get("agent", "")
        )
    except FeedbackError as exc:
        messages.error(request, _("No case was made: %s") % exc)
    else:
        messages.success(request, _case_added(case))
    return HttpResponseRedirect(reverse("evaluation:feedback"))


@require_POST
@permission_required("view_metrics")
def feedback_dismiss_view(request: HttpRequest, pk: int) -> HttpResponse:
    feedback = get_object_or_404(Feedback, pk=pk, organisation=_org(request))
    feedback_dismiss(feedback)
    return HttpResponseRedirect(reverse("evaluation:feedback"))


@require_POST
@permission_required("view_metrics")
def message_case(request: HttpRequest, pk: int) -> HttpResponse:
    question = get_object_or_404(Message, pk=pk, organisation=_org(request), role=Message.Role.USER)
    try:
        case = message_to_case(
            question=question, dataset_id=_dataset_id(request), agent=request.POST.get("agent", "")
        )
    except FeedbackError as exc:
        messages.error(request, _("No case was made: %s") % exc)
    else:
        messages.success(request, _case_added(case))
    return HttpResponseRedirect(reverse("evaluation:feedback"))
