"""Datasets and cases (V1): the shipped golden set for every organisation, JSONL import (all or
nothing, bad lines named by number) and export, cases edited against the registry, and who may
see them."""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest
from django.apps import apps as django_apps
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from evaluation.datasets import (
    GOLDEN_PATH,
    DatasetError,
    dataset_export,
    dataset_import,
    golden_install,
)
from evaluation.models import Case, Dataset
from tests import factories
from tests.conftest import Cast

pytestmark = pytest.mark.django_db

GOLDEN_LINES = [json.loads(line) for line in GOLDEN_PATH.read_text().splitlines() if line.strip()]


def _dataset(org: Any, name: str = "mine") -> Dataset:
    return Dataset.objects.create(organisation=org, name=name)


GOOD = '{"input": "agendame a Pérez el lunes", "expected_intents": ["book_job"]}'


# --- the golden set ----------------------------------------------------------------------------


def test_a_new_organisation_gets_the_golden_set_once_its_creation_commits(
    django_capture_on_commit_callbacks: Any, settings: Any
) -> None:
    settings.EVALUATION_GOLDEN_ON_CREATE = True  # the suite turns it off (tests/conftest.py)
    with django_capture_on_commit_callbacks(execute=True):
        org = factories.make_org("Nueva", slug="nueva")
    golden = Dataset.objects.get(organisation=org, name="golden")
    assert golden.kind == Dataset.Kind.GOLDEN
    assert str(golden.reference_date) == "2026-11-18"
    cases = list(Case.objects.filter(dataset=golden).order_by("position"))
    assert len(cases) == len(GOLDEN_LINES) == 426
    assert cases[0].input == GOLDEN_LINES[0]["input"]
    assert cases[0].expected_intents == GOLDEN_LINES[0]["expected_intents"]
    assert cases[-1].case_id == "426"  # the line number, as `manage.py evaluate` names it
    assert golden_install(org) is None  # once
    assert Case.objects.filter(organisation=org).count() == 426


def test_the_data_migration_installs_it_for_organisations_that_existed(cast: Cast) -> None:
    migration = importlib.import_module("evaluation.migrations.0001_initial")
    migration.install_golden(django_apps, None)
    migration.install_golden(django_apps, None)  # twice: nothing more
    for org in (cast.org, cast.other_org):
        assert Case.objects.filter(organisation=org, dataset__name="golden").count() == 426


# --- import and export -------------------------------------------------------------------------


def test_an_import_with_bad_lines_names_each_by_number_and_stores_nothing(registry: Cast) -> None:
    dataset = _dataset(registry.org)
    Case.objects.create(organisation=registry.org, dataset=dataset, input="ya estaba",
                        expected_intents=["hours"], position=1)  # fmt: skip
    text = "\n".join(
        [
            GOOD,  # 1
            "{not json",  # 2
            '{"input": "hola", "expected_intents": ["make_coffee"]}',  # 3 unknown intent
            "",  # 4 blank: skipped, still counted
            '{"expected_intents": ["book_job"]}',  # 5 no input
            '{"input": "x", "expected_intents": ["book_job"], '
            '"expected_entities": {"date": "mañana"}}',  # 6 date not ISO
            '{"input": "x", "expected_intents": ["book_job"], "expected_agents": ["nobody"]}',  # 7
            '["a list"]',  # 8
            GOOD,  # 9
        ]
    )
    with pytest.raises(DatasetError) as caught:
        dataset_import(dataset, text)
    problems = caught.value.problems
    # In the office's language (es-AR, the default), as the admin is shown them.
    assert [p.split(":")[0] for p in problems] == [
        "línea 2", "línea 3", "línea 5", "línea 6", "línea 7", "línea 8",
    ]  # fmt: skip
    assert "make_coffee" in problems[1] and "nobody" in problems[4]
    assert list(Case.objects.filter(dataset=dataset).values_list("input", flat=True)) == [
        "ya estaba"
    ]


def test_the_import_page_shows_the_bad_lines_and_keeps_the_dataset(
    client: Client, registry: Cast
) -> None:
    dataset = _dataset(registry.org)
    client.force_login(registry.manager)
    response = client.post(
        reverse("evaluation:dataset_import", args=[dataset.pk]),
        {"text": GOOD + "\n" + '{"input": "", "expected_intents": ["book_job"]}'},
    )
    assert response.status_code == 400
    assert "línea 2" in response.content.decode()
    assert not Case.objects.filter(dataset=dataset).exists()
    empty = client.post(reverse("evaluation:dataset_import", args=[dataset.pk]), {"text": "  "})
    assert empty.status_code == 400 and not Case.objects.filter(dataset=dataset).exists()


def test_import_then_export_gives_back_the_same_lines(client: Client, registry: Cast) -> None:
    dataset = _dataset(registry.org)
    lines = GOLDEN_LINES[:40]
    client.force_login(registry.manager)
    upload = "\n".join(json.dumps(line, ensure_ascii=False) for line in lines).encode()
    response = client.post(
        reverse("evaluation:dataset_import", args=[dataset.pk]),
        {"file": SimpleUploadedFile("cases.jsonl", upload, content_type="application/jsonl")},
    )
    assert response.status_code == 302
    exported = client.get(reverse("evaluation:dataset_export", args=[dataset.pk]))
    assert exported.status_code == 200
    assert "attachment" in exported["Content-Disposition"]
    got = [json.loads(line) for line in exported.content.decode().splitlines()]
    assert got == lines
    # A second import adds after them; `replace` puts the file instead.
    dataset_import(dataset, GOOD)
    assert Case.objects.filter(dataset=dataset).count() == 41
    dataset_import(dataset, GOOD, replace=True)
    assert [json.loads(line) for line in dataset_export(dataset).splitlines()] == [json.loads(GOOD)]


# --- cases edited against the registry ---------------------------------------------------------


def test_a_case_is_edited_with_the_registry_s_intents_only(client: Client, registry: Cast) -> None:
    dataset = _dataset(registry.org)
    dataset_import(dataset, GOOD)
    case = Case.objects.get(dataset=dataset)
    client.force_login(registry.manager)
    url = reverse("evaluation:case", args=[case.pk])
    assert "book_job" in client.get(url).content.decode()
    bad = client.post(
        url, {"input": "cancelá lo de Pérez", "expected_intents": "cancel_everything"}
    )
    assert bad.status_code == 400 and "cancel_everything" in bad.content.decode()
    bad_json = client.post(
        url, {"input": "x", "expected_intents": "cancel_job", "expected_entities": "{nope"}
    )
    assert bad_json.status_code == 400
    case.refresh_from_db()
    assert case.input == "agendame a Pérez el lunes" and case.expected_intents == ["book_job"]
    ok = client.post(
        url,
        {
            "input": "cancelá lo de Pérez y agendale el martes",
            "expected_intents": "cancel_job, book_job",
            "expected_agents": "scheduling scheduling",
            "expected_entities": '{"customer": "Pérez"}',
            "lang": "es",
            "tags": "multi, hand",
        },
    )
    assert ok.status_code == 302
    case.refresh_from_db()
    assert case.expected_intents == ["cancel_job", "book_job"]
    assert case.expected_entities == {"customer": "Pérez"} and case.tags == ["multi", "hand"]


def test_a_new_case_and_a_new_agent_partition(client: Client, registry: Cast) -> None:
    client.force_login(registry.manager)
    agent = registry.org.agents.get(name="financial")
    response = client.post(
        reverse("evaluation:dataset_new"), {"name": "finanzas", "agent": agent.pk}
    )
    dataset = Dataset.objects.get(organisation=registry.org, name="finanzas")
    assert response.status_code == 302
    assert dataset.kind == Dataset.Kind.AGENT and dataset.agent == agent
    # Another organisation's agent is not a choice.
    foreign = registry.other_org.agents.get(name="financial")
    client.post(reverse("evaluation:dataset_new"), {"name": "ajeno", "agent": foreign.pk})
    assert not Dataset.objects.filter(name="ajeno").exists()
    url = reverse("evaluation:case_new", args=[dataset.pk])
    assert client.post(url, {"input": "facturale", "expected_intents": "nope"}).status_code == 400
    assert (
        client.post(url, {"input": "facturale", "expected_intents": "generate_invoice"}).status_code
        == 302
    )
    assert Case.objects.get(dataset=dataset).source == Case.Source.MANUAL


def test_the_dataset_page_lists_and_filters_its_cases(client: Client, registry: Cast) -> None:
    golden = golden_install(registry.org)
    assert golden is not None
    client.force_login(registry.manager)
    url = reverse("evaluation:dataset", args=[golden.pk])
    page = client.get(url).content.decode()
    assert "426" in page and GOLDEN_LINES[0]["input"] in page
    fleet = client.get(url, {"agent": "fleet"}).content.decode()
    assert GOLDEN_LINES[0]["input"] not in fleet  # a scheduling case
    fleet_cases = [c for c in GOLDEN_LINES if "fleet" in c.get("expected_agents", [])]
    assert fleet_cases[0]["input"] in fleet
    found = client.get(url, {"q": "Marta Giménez"}).content.decode()
    assert GOLDEN_LINES[0]["input"] in found
    index = client.get(reverse("evaluation:index")).content.decode()
    assert f'data-dataset="{golden.pk}"' in index


# --- who sees what -----------------------------------------------------------------------------


def test_outsiders_and_operators_see_nothing(client: Client, registry: Cast) -> None:
    dataset = _dataset(registry.org)
    dataset_import(dataset, GOOD)
    case = Case.objects.get(dataset=dataset)
    urls = [
        reverse("evaluation:dataset", args=[dataset.pk]),
        reverse("evaluation:dataset_export", args=[dataset.pk]),
        reverse("evaluation:case", args=[case.pk]),
    ]
    client.force_login(registry.outsider)  # an admin, of another organisation
    for url in urls:
        assert client.get(url).status_code == 404, url
    assert client.post(reverse("evaluation:dataset_import", args=[dataset.pk]),
                       {"text": GOOD}).status_code == 404  # fmt: skip
    assert client.post(reverse("evaluation:case_delete", args=[case.pk])).status_code == 404
    assert "agendame a Pérez" not in client.get(reverse("evaluation:index")).content.decode()
    assert Case.objects.filter(dataset=dataset).count() == 1
    client.force_login(registry.operator)
    for url in urls:
        assert client.get(url).status_code == 403, url
