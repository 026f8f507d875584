"""Evaluation runs (V2) and calibration (V3): a run from the pages is `manage.py evaluate` on the
same cases, its progress reaches the organisation's open sockets, two runs compare, calibration
numbers on a case with a known answer, a suggested threshold applied as a new version, and
outsiders see nothing."""

from __future__ import annotations

import datetime
import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from agents.models import AgentVersion
from agents.services import agent_save, agents_install_defaults
from capataz.asgi import application
from evaluation import calibration
from evaluation.datasets import dataset_export, dataset_import, golden_install
from evaluation.models import Case, Dataset, Run
from evaluation.runs import RunError, run_compare, run_create, run_execute
from evaluation.tasks import run_start
from tests.conftest import Cast
from tests.copilot.test_consumer import HOST, ORIGIN, _session_cookie
from tests.websocket import WebsocketCommunicator

COMPARED = (
    "cases", "chain_accuracy", "intent_set_accuracy", "agent_accuracy", "intent_f1",
    "entity_f1", "per_intent", "confusion", "reference_date", "engine",
)  # fmt: skip
SMALL = "\n".join(
    json.dumps(line, ensure_ascii=False)
    for line in [
        {
            "input": "agendame una visita a Pérez el lunes a las 10",
            "expected_intents": ["book_job"],
        },
        {"input": "cancelá el trabajo de Gómez", "expected_intents": ["cancel_job"]},
        {"input": "¿a qué hora abren?", "expected_intents": ["hours"]},
        {"input": "facturale a Pérez el service", "expected_intents": ["generate_invoice"]},
        {"input": "hay una pérdida de gas en lo de Ruiz", "expected_intents": ["emergency"]},
    ]
)


def _small(org: Any) -> Dataset:
    dataset = Dataset.objects.create(
        organisation=org, name="small", reference_date=datetime.date(2026, 11, 18)
    )
    dataset_import(dataset, SMALL)
    return dataset


# --- one service -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_run_from_the_page_has_the_metrics_of_evaluate_on_the_same_file(
    client: Client, registry: Cast, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    golden = golden_install(registry.org)
    assert golden is not None
    client.force_login(registry.admin)
    with django_capture_on_commit_callbacks(execute=True):  # the task runs inline (eager)
        response = client.post(
            reverse("evaluation:run_new"), {"dataset": golden.pk, "engine": "embedded"}
        )
    run = Run.objects.get(organisation=registry.org)
    assert response.status_code == 302 and response["Location"].endswith(f"/runs/{run.pk}/")
    assert run.status == Run.Status.DONE, run.error
    assert run.done == run.total == 426
    exported = tmp_path / "golden.jsonl"
    exported.write_text(dataset_export(golden), encoding="utf-8")
    out = StringIO()
    call_command(
        "evaluate", str(exported), "--org", registry.org.slug, "--reference-date", "2026-11-18",
        "--json", stdout=out,
    )  # fmt: skip
    expected = json.loads(out.getvalue())
    assert {key: run.metrics[key] for key in COMPARED} == {key: expected[key] for key in COMPARED}
    assert run.metrics["chain_accuracy"] > 0.9  # the shipped registry on its own golden set
    assert len(run.rows) == 426 and {"id", "routed", "correct"} <= set(run.rows[0])
    index = client.get(reverse("evaluation:index")).content.decode()
    assert f'data-run="{run.pk}"' in index and 'data-testid="run-form"' in index
    page = client.get(reverse("evaluation:run", args=[run.pk])).content.decode()
    assert 'data-testid="confusion"' in page and 'data-testid="failing"' in page
    assert "Integrado (sin conexión)" in page and "· embedded ·" not in page  # named, not coded
    assert "<td>Integrado (sin conexión)</td>" in index
    shown = page.split('data-metric="chain_accuracy">')[1].split("<")[0]
    assert float(shown.replace(",", ".")) == run.metrics["chain_accuracy"]  # es-AR: 0,9812


@pytest.mark.django_db
def test_what_cannot_run_says_why_and_stores_nothing(registry: Cast) -> None:
    dataset = _small(registry.org)
    empty = Dataset.objects.create(organisation=registry.org, name="empty")
    foreign = _small(registry.other_org)
    general = registry.org.agents.get(name="general")
    attempts: list[dict[str, Any]] = [
        {"dataset": empty},
        {"dataset": foreign},
        {"dataset": dataset, "engine": "llm"},  # no model configured
        {"dataset": dataset, "engine": "oracle"},
        {"dataset": dataset, "agent": general, "version": 99},
        {"dataset": dataset, "agent": registry.other_org.agents.get(name="general"), "version": 1},
    ]
    for kwargs in attempts:
        with pytest.raises(RunError):
            run_create(organisation=registry.org, user=registry.admin, **kwargs)
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_a_run_whose_dataset_is_gone_fails_with_its_reason(registry: Cast) -> None:
    dataset = _small(registry.org)
    run = run_create(organisation=registry.org, user=registry.admin, dataset=dataset)
    Case.objects.filter(dataset=dataset).delete()
    assert run_execute(run.pk) == "failed"
    run.refresh_from_db()
    assert run.status == Run.Status.FAILED and "no tiene casos" in run.error  # es-AR: the default
    assert run_execute(run.pk) == "skipped"  # claimed once


@pytest.mark.django_db
def test_an_agent_version_is_evaluated_as_it_was(registry: Cast) -> None:
    dataset = _small(registry.org)
    general = registry.org.agents.get(name="general")
    first = AgentVersion.objects.get(agent=general, number=1)
    agent_save(agent=general, changes={"enabled": False}, actor=registry.admin)
    now = run_create(organisation=registry.org, user=registry.admin, dataset=dataset)
    then = run_create(
        organisation=registry.org, user=registry.admin, dataset=dataset, agent=general,
        version=first.number,
    )  # fmt: skip
    run_execute(now.pk)
    run_execute(then.pk)
    now.refresh_from_db()
    then.refresh_from_db()
    hours_now = next(r for r in now.rows if r["expected_intents"] == ["hours"])
    hours_then = next(r for r in then.rows if r["expected_intents"] == ["hours"])
    assert hours_then["predicted_intents"] == ["hours"]  # v1: general was enabled
    assert "general" not in hours_now["predicted_agents"]  # now it is off
    comparison = run_compare(now, then)
    assert any(row["expected_intents"] == ["hours"] for row in comparison.fixed)
    chain = next(d for d in comparison.summary if d.name == "chain_accuracy")
    assert chain.b > chain.a and chain.better is True


# --- progress through the channel layer --------------------------------------------------------


async def _open(user: Any) -> WebsocketCommunicator:
    cookie = await sync_to_async(_session_cookie)(user)
    communicator = WebsocketCommunicator(
        application, "/ws/evaluation/",
        headers=[(b"host", HOST), (b"origin", ORIGIN), (b"cookie", cookie)],
    )  # fmt: skip
    connected, _code = await communicator.connect()
    assert connected
    return communicator


@pytest.mark.django_db(transaction=True)
async def test_progress_reaches_the_organisation_s_sockets_only(cast: Cast) -> None:
    await sync_to_async(agents_install_defaults)(organisation=cast.org)
    dataset = await sync_to_async(_small)(cast.org)
    manager = await _open(cast.manager)
    outsider = await _open(cast.outsider)  # an admin of another organisation

    run = await sync_to_async(run_start)(
        organisation=cast.org, user=cast.admin, dataset=dataset
    )  # committed at once (autocommit): the eager task runs here

    frames = []
    while not frames or frames[-1]["status"] not in ("done", "failed"):
        frames.append(json.loads(await manager.receive_from(10)))
    assert all(f["type"] == "run_progress" and f["run"] == run.pk for f in frames)
    assert frames[0] == {"type": "run_progress", "run": run.pk, "done": 0, "total": 5,
                         "status": "running"}  # fmt: skip
    assert frames[-1] == {"type": "run_progress", "run": run.pk, "done": 5, "total": 5,
                          "status": "done"}  # fmt: skip
    assert await outsider.receive_nothing(timeout=0.3)
    for communicator in (manager, outsider):
        await communicator.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_operators_cannot_listen(cast: Cast) -> None:
    cookie = await sync_to_async(_session_cookie)(cast.operator)
    communicator = WebsocketCommunicator(
        application, "/ws/evaluation/",
        headers=[(b"host", HOST), (b"origin", ORIGIN), (b"cookie", cookie)],
    )  # fmt: skip
    connected, code = await communicator.connect()
    assert not connected and code == 4403


@pytest.mark.django_db
def test_the_progress_bar_polls_until_the_run_is_done(client: Client, registry: Cast) -> None:
    dataset = _small(registry.org)
    run = run_create(organisation=registry.org, user=registry.admin, dataset=dataset)
    client.force_login(registry.manager)
    url = reverse("evaluation:run_progress", args=[run.pk])
    polling = client.get(url)
    assert 'hx-trigger="every 2s"' in polling.content.decode() and "HX-Refresh" not in polling
    assert 'data-testid="run-unclaimed"' not in polling.content.decode()
    # No worker took it for a while: the bar says so and keeps polling.
    Run.objects.filter(pk=run.pk).update(created_at=timezone.now() - datetime.timedelta(minutes=2))
    waiting = client.get(url).content.decode()
    assert 'data-testid="run-unclaimed"' in waiting and 'hx-trigger="every 2s"' in waiting
    run_execute(run.pk)
    done = client.get(url)
    assert done["HX-Refresh"] == "true" and "every 2s" not in done.content.decode()
    assert 'data-testid="run-unclaimed"' not in done.content.decode()


# --- comparison --------------------------------------------------------------------------------


def _finished(org: Any, chain: float, rows: list[dict[str, Any]], f1: float) -> Run:
    return Run.objects.create(
        organisation=org, dataset_name="x", reference_date=datetime.date(2026, 11, 18),
        status=Run.Status.DONE, total=len(rows), done=len(rows), rows=rows,
        metrics={"chain_accuracy": chain, "latency_ms_p50": 2.0,
                 "per_intent": {"book_job": {"f1": f1}}, "confusion": {}},
    )  # fmt: skip


def _row(case_id: str, ok: bool) -> dict[str, Any]:
    return {
        "id": case_id,
        "input": f"case {case_id}",
        "expected_intents": ["book_job"],
        "predicted_intents": ["book_job"] if ok else ["hours"],
        "correct": {"chain": ok},
    }


@pytest.mark.django_db
def test_two_runs_side_by_side(client: Client, registry: Cast) -> None:
    a = _finished(registry.org, 0.5, [_row("1", True), _row("2", False)], 0.6)
    b = _finished(registry.org, 0.5, [_row("1", False), _row("2", True)], 0.8)
    b.metrics["latency_ms_p50"] = 3.0
    b.save()
    client.force_login(registry.manager)
    page = client.get(reverse("evaluation:compare"), {"a": a.pk, "b": b.pk}).content.decode()
    latency = page.split('data-metric="latency_ms_p50"')[1].split("</tr>")[0]
    assert "worse" in latency  # slower
    chain = page.split('data-metric="chain_accuracy"')[1].split("</tr>")[0]
    assert "better" not in chain and "worse" not in chain
    assert "better" in page.split("book_job")[1].split("</tr>")[0]  # F1 0.6 → 0.8
    assert "case 2" in page.split('data-testid="fixed"')[1].split("</table>")[0]
    assert "case 1" in page.split('data-testid="broken"')[1].split("</table>")[0]
    assert client.get(reverse("evaluation:compare"), {"a": "x"}).status_code == 400


# --- calibration -------------------------------------------------------------------------------

# Seven steps of one agent: confidence and whether it was right.
KNOWN = [(0.3, False), (0.3, False), (0.35, True), (0.8, True), (0.8, True), (0.9, True),
         (0.9, False)]  # fmt: skip


def test_calibration_numbers_on_a_known_case() -> None:
    bins = {b.low: b for b in calibration.reliability(KNOWN) if b.count}
    assert set(bins) == {0.3, 0.8, 0.9}
    assert bins[0.3].count == 3 and bins[0.3].accuracy == pytest.approx(1 / 3)
    assert bins[0.3].confidence == pytest.approx(0.95 / 3)
    assert bins[0.8].accuracy == 1.0 and bins[0.9].accuracy == 0.5
    # ECE = 3/7·|1/3 − 0.31667| + 2/7·|1 − 0.8| + 2/7·|0.5 − 0.9|
    assert calibration.ece(KNOWN) == pytest.approx(3 / 7 * (1 / 3 - 0.95 / 3) + 2 / 7 * 0.2
                                                   + 2 / 7 * 0.4)  # fmt: skip
    points = {p.threshold: p for p in calibration.tradeoff(KNOWN)}
    assert points[0.3].coverage == 1.0 and points[0.3].accuracy == pytest.approx(4 / 7)
    assert points[0.35].coverage == pytest.approx(5 / 7) and points[0.35].accuracy == 0.8
    assert points[0.5].coverage == pytest.approx(4 / 7) and points[0.5].accuracy == 0.75
    assert points[0.95].coverage == 0.0
    assert calibration.suggest(list(points.values()), target=0.8) == 0.35
    assert calibration.suggest(list(points.values()), target=0.95) == 0.35  # best reachable
    assert calibration.suggest(list(points.values()), target=0.8, current=0.9) == 0.35
    assert calibration.suggest(calibration.tradeoff([]), target=0.8) is None
    # Every step right above 0.6: any threshold up to 0.6 keeps them all, so the current one
    # stays where it is, and one above 0.6 comes down to 0.6.
    high = [(0.65, True), (0.7, True), (0.9, True), (0.95, True)]
    high_points = calibration.tradeoff(high)
    assert calibration.suggest(high_points, target=0.9, current=0.35) == 0.35
    assert calibration.suggest(high_points, target=0.9, current=0.8) == 0.65
    assert calibration.suggest(high_points, target=0.9) == 0.05
    assert calibration.ece([]) == 0.0


def test_samples_come_from_the_routed_steps_each_expected_intent_matched_once() -> None:
    rows = [
        {"expected_intents": ["book_job"], "routed": [["scheduling", "book_job", 0.9],
                                                      ["scheduling", "book_job", 0.6]]},
        {"expected_intents": ["hours"], "routed": [["general", "pricing_info", 0.4]]},
    ]  # fmt: skip
    assert calibration.samples_by_agent(rows) == {
        "general": [(0.4, False)],
        "scheduling": [(0.9, True), (0.6, False)],
    }


@pytest.mark.django_db
def test_a_suggested_threshold_is_applied_as_a_new_registry_version(
    client: Client, registry: Cast
) -> None:
    scheduling = registry.org.agents.get(name="scheduling")
    agent_save(agent=scheduling, changes={"min_confidence": 0.5}, actor=registry.admin)
    rows = [
        {"id": str(i), "input": str(i), "expected_intents": ["book_job"],
         "routed": [["scheduling", "book_job" if right else "cancel_job", conf]],
         "correct": {"chain": right}}
        for i, (conf, right) in enumerate(KNOWN)
    ]  # fmt: skip
    run = _finished(registry.org, 4 / 7, rows, 0.5)
    client.force_login(registry.manager)
    page = client.get(reverse("evaluation:calibration", args=[run.pk]), {"target": "0.8"})
    text = page.content.decode().replace(",", ".")  # es-AR decimals
    assert page.status_code == 200 and 'data-agent="scheduling"' in text
    assert "<strong data-suggested>0.35</strong>" in text
    assert f"{calibration.ece(KNOWN):.4f}" in text
    for odd in ("nan", "x", "-inf"):  # a target that is no number: the default, never a 500
        url = reverse("evaluation:calibration", args=[run.pk])
        assert client.get(url, {"target": odd}).status_code == 200
    apply = reverse("evaluation:calibration_apply", args=[run.pk])
    before = AgentVersion.objects.filter(agent=scheduling).count()
    assert client.post(apply, {"agent": "scheduling", "threshold": "0.35"}).status_code == 403
    client.force_login(registry.admin)
    text = client.get(reverse("evaluation:calibration", args=[run.pk]), {"target": "0.8"})
    assert 'name="threshold" value="0.35"' in text.content.decode()
    assert client.post(apply, {"agent": "scheduling", "threshold": "0.35"}).status_code == 302
    scheduling.refresh_from_db()
    assert scheduling.min_confidence == 0.35
    latest = AgentVersion.objects.filter(agent=scheduling).order_by("-number").first()
    assert AgentVersion.objects.filter(agent=scheduling).count() == before + 1
    assert latest is not None and latest.snapshot["min_confidence"] == 0.35
    assert f"#{run.pk}" in latest.note
    # Out of range or no number: nothing changes.
    for bad in ("7", "nan", "x"):
        client.post(apply, {"agent": "scheduling", "threshold": bad})
    scheduling.refresh_from_db()
    assert scheduling.min_confidence == 0.35
    assert AgentVersion.objects.filter(agent=scheduling).count() == before + 1


# --- who sees what -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_outsiders_see_no_run_and_operators_none_at_all(client: Client, registry: Cast) -> None:
    dataset = _small(registry.org)
    run = run_create(organisation=registry.org, user=registry.admin, dataset=dataset)
    run_execute(run.pk)
    other = _finished(registry.org, 1.0, [], 1.0)
    urls = [
        reverse("evaluation:run", args=[run.pk]),
        reverse("evaluation:run_progress", args=[run.pk]),
        reverse("evaluation:calibration", args=[run.pk]),
        reverse("evaluation:compare") + f"?a={run.pk}&b={other.pk}",
    ]
    client.force_login(registry.outsider)  # an admin, of another organisation
    for url in urls:
        assert client.get(url).status_code == 404, url
    apply = reverse("evaluation:calibration_apply", args=[run.pk])
    assert client.post(apply, {"agent": "scheduling", "threshold": "0.5"}).status_code == 404
    # Starting a run on the organisation's dataset from outside: the form has no such choice.
    client.post(reverse("evaluation:run_new"), {"dataset": dataset.pk, "engine": "embedded"})
    assert Run.objects.filter(organisation=registry.other_org).count() == 0
    assert Run.objects.count() == 2
    assert f"/runs/{run.pk}/" not in client.get(reverse("evaluation:index")).content.decode()
    client.force_login(registry.operator)
    for url in urls:
        assert client.get(url).status_code == 403, url
    client.force_login(registry.manager)  # reads, but only admins start runs
    response = client.post(
        reverse("evaluation:run_new"), {"dataset": dataset.pk, "engine": "embedded"}
    )
    assert response.status_code == 403 and Run.objects.count() == 2
