"""The generated corpus (nlu/corpus): families, splits, labels and spans."""

from __future__ import annotations

import collections

import pytest

from agents.defaults import default_specs
from common.text import fold
from nlu.corpus import Line, Records, generate, split_of, training_lines
from nlu.corpus.families import FAMILIES
from nlu.corpus.lexicon import (
    AMOUNTS_EN,
    AMOUNTS_ES,
    CUITS,
    DATES_EN,
    DATES_ES,
    SERVICES_EN,
    SERVICES_ES,
    TIMES_EN,
    TIMES_ES,
)
from nlu.entities import extract_entities
from nlu.values import Vocabulary
from tests.nlu.conftest import make_context

AGENTS = {name: spec.agent for name, spec in default_specs().items()}
RECORDS = Records(
    customers=["Ana Sívori", "Bruno Kessler"], technicians=["Tito Alvarado"],
    streets=["Billinghurst 1020"],
    services=["instalación de split", "Split 3000 frigorías", "Reparación de pérdida de gas"],
)  # fmt: skip


@pytest.fixture(scope="module")
def lines() -> list[Line]:
    return generate(RECORDS, AGENTS)


def test_families_cover_every_intent_in_both_languages_and_every_voice() -> None:
    assert len(FAMILIES) >= 150
    intents = {intent for family in FAMILIES for intent in family.chain}
    assert intents == set(AGENTS)
    for lang in ("es", "en"):
        assert {i for f in FAMILIES if f.lang == lang for i in f.chain} >= {
            "book_job", "reschedule", "cancel_job", "payment_status", "unknown",
        }  # fmt: skip
    assert {f.voice for f in FAMILIES} == {"op", "fast", "wa", "dict", "neg", "talk"}
    assert len({f.template for f in FAMILIES}) == len(FAMILIES)


def test_the_same_records_and_seed_give_the_same_corpus(lines: list[Line]) -> None:
    again = generate(RECORDS, AGENTS)
    assert [line.as_case(1) for line in again] == [line.as_case(1) for line in lines]
    assert [line.text for line in generate(RECORDS, AGENTS, seed=1)] != [
        line.text for line in lines
    ]


def test_a_family_and_every_line_built_from_it_sit_in_one_split(lines: list[Line]) -> None:
    splits: dict[str, set[str]] = collections.defaultdict(set)
    for line in lines:
        for family in line.families:
            splits[family].add(line.split)
    assert all(len(found) == 1 for found in splits.values())
    assert {line.split for line in lines} == {"train", "dev", "test"}
    # Every intent keeps families to learn from.
    assert {i for line in lines if line.split == "train" for i in line.intents} == set(AGENTS)
    assert all(split_of(f, 0) == split_of(f, 0) for f in FAMILIES)


def test_spans_point_at_the_labelled_values(lines: list[Line]) -> None:
    people = {fold(name) for name in [*RECORDS.customers, *RECORDS.technicians]}
    misspelt = 0
    for line in lines:
        for start, end, label in line.spans:
            assert 0 <= start < end <= len(line.text)
            typed = line.text[start:end]
            if label == "service":
                assert line.entities[label] == line.text[start:end]
            elif label in ("customer", "technician") and line.entities[label] != typed:
                # A misspelt name (noise.misspell_name) is labelled as the records spell it.
                assert fold(line.entities[label]) in people
                assert fold(typed) not in people
                misspelt += 1
        assert line.agents == [AGENTS[i] for i in line.intents]
    assert misspelt >= 20


def test_lines_use_the_organisation_records_and_only_services_the_engine_reads(
    lines: list[Line],
) -> None:
    customers = {fold(line.entities.get("customer", "")) for line in lines}
    assert {"ana sivori", "bruno kessler"} <= customers
    services = {line.entities.get("service", "").lower() for line in lines}
    assert "split 3000 frigorías" not in services  # not read as a service
    assert "reparación de pérdida de gas" not in services  # read as an emergency
    assert any("Billinghurst 1020".lower() in line.text.lower() for line in lines)


def test_multi_intent_lines_join_requests_with_connectors_in_dependency_order(
    lines: list[Line],
) -> None:
    multis = [line for line in lines if len(line.intents) > 1]
    assert len(multis) >= 300
    for line in multis:
        if "create_customer" in line.intents:
            assert line.intents[0] == "create_customer"
    assert any(" y después " in m.text or ", después " in m.text for m in multis)
    assert any(" and then " in m.text for m in multis)


def test_the_training_lines_are_single_requests_of_the_train_split(lines: list[Line]) -> None:
    train = training_lines(lines)
    texts = {line.text for line in lines if line.split != "train"}
    assert train and not {text for text, _, _ in train} & texts
    assert all(intent in AGENTS for _, intent, _ in train)


def test_a_registry_without_an_intent_gets_no_line_about_it() -> None:
    agents = {k: v for k, v in AGENTS.items() if k != "validate_cuit"}
    assert all("validate_cuit" not in line.intents for line in generate(Records(), agents))


@pytest.mark.parametrize(
    ("values", "key", "lang", "before"),
    [
        (DATES_ES, "date", "es", "agendá una visita "),
        (DATES_EN, "date", "en", "book a visit "),
        (TIMES_ES, "time", "es", "agendá una visita mañana "),
        (TIMES_EN, "time", "en", "book a visit tomorrow "),
        (AMOUNTS_ES, "amount", "es", "registrá un pago de "),
        (AMOUNTS_EN, "amount", "en", "record a payment of "),
        (CUITS, "cuit", "es", "validá el cuit "),
    ],
)
def test_the_lexicons_labels_are_what_the_engine_reads(
    values: tuple[tuple[str, str], ...], key: str, lang: str, before: str
) -> None:
    ctx = make_context()
    for surface, label in values:
        found = extract_entities(before + surface, ctx, lang, whole_message=True)
        assert found.as_eval_dict().get(key) == label, surface


def test_the_lexicons_services_are_read_whole() -> None:
    ctx = make_context(Vocabulary())
    for service in SERVICES_ES + SERVICES_EN:
        found = extract_entities(f"agendá {service} mañana", ctx, "es", whole_message=True)
        assert (found.service or "").lower() == service.lower()
