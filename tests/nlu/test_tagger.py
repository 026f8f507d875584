"""The entity tagger (nlu/tagger.py), trained on the corpus spans, fills names the rules miss."""

from __future__ import annotations

import pickle

import pytest

from agents.defaults import default_specs
from nlu import Router, build_router
from nlu.corpus import Records, generate, person_intents, tagged_lines, varied_records
from nlu.tagger import EntityTagger, Gazetteer, gazetteer_of, looks_like_a_name, train_tagger
from nlu.values import Vocabulary
from tests.nlu.conftest import make_context
from tests.nlu.training_examples import examples, specs

AGENTS = {name: spec.agent for name, spec in default_specs().items()}
RECORDS = Records(customers=["Ana Sívori", "Bruno Kessler"], technicians=["Tito Alvarado"])


@pytest.fixture(scope="module")
def tagger() -> EntityTagger:
    lines = generate(RECORDS, AGENTS) + generate(varied_records(RECORDS), AGENTS, seed=1)
    trained = train_tagger(
        tagged_lines(lines), gazetteer_of(("Ana Sívori",), ("Tito Alvarado",)),
        intents=person_intents(lines),
    )  # fmt: skip
    assert trained is not None
    return trained


@pytest.fixture(scope="module")
def tagged_router() -> Router:
    lines = generate(varied_records(RECORDS), AGENTS, seed=1)
    return build_router(
        examples(), specs=list(specs().values()), tagged=tagged_lines(lines),
        gazetteer=(RECORDS.customers, RECORDS.technicians), tagged_intents=person_intents(lines),
    )  # fmt: skip


def _names(tagger: EntityTagger, text: str, gazetteer: Gazetteer | None = None) -> set[str]:
    return {f"{label}:{text[s:e]}" for s, e, label in tagger.spans(text, gazetteer or Gazetteer())}


def test_it_finds_a_name_it_never_saw_from_where_it_sits(tagger: EntityTagger) -> None:
    assert "customer:quilmes paredon" in _names(
        tagger, "alta cliente quilmes paredon corrientes 12"
    )
    assert "technician:Zoe Arrieta" in _names(tagger, "Zoe Arrieta está enfermo, no viene mañana")


def test_the_records_are_matched_without_case_or_accents(tagger: EntityTagger) -> None:
    gazetteer = gazetteer_of(("Ana Sívori",), ("Tito Alvarado",))
    found = _names(tagger, "pasame la ficha d ana sivori", gazetteer)
    assert found == {"customer:ana sivori"}


def test_a_name_never_runs_over_a_line_break(tagger: EntityTagger) -> None:
    """A form's answers, one field a line: a span never joins the end of one to the next."""
    text = "equipos: split living, split dormitorio\ncomentario: el portero abre hasta las 18"
    assert all("\n" not in text[s:e] for s, e, _ in tagger.spans(text, Gazetteer()))
    assert "customer:quilmes paredon" in _names(tagger, "alta cliente quilmes paredon\ncorrientes")


def test_nothing_is_tagged_in_small_talk(tagger: EntityTagger) -> None:
    assert _names(tagger, "gracias, eso es todo, chau") == set()


def test_a_pickled_tagger_tags_the_same(tagger: EntityTagger) -> None:
    text = "cargame a lola mendieta como cliente nuevo pls"
    again = pickle.loads(pickle.dumps(tagger))
    assert again.spans(text, Gazetteer()) == tagger.spans(text, Gazetteer())
    assert (again.common, again.intents) == (tagger.common, tagger.intents)


def test_no_spans_no_tagger() -> None:
    assert train_tagger([("hola", [])], Gazetteer()) is None


def test_the_router_fills_a_lowercase_new_customer_the_rules_miss(tagged_router: Router) -> None:
    plain = build_router(examples(), specs=list(specs().values()))
    text = "dale de alta a lola mendieta, vive en corrientes 1200"
    ctx = make_context(Vocabulary())
    assert plain.understand(text, ctx).entities.customer is None
    assert tagged_router.understand(text, ctx).entities.customer == "lola mendieta"


def test_the_rules_reading_wins_over_the_tagger(tagged_router: Router) -> None:
    ctx = make_context(Vocabulary(customers=("Ana Sívori",)))
    reading = tagged_router.understand("buscame los datos de ana sivori", ctx)
    assert reading.entities.customer == "Ana Sívori"
    assert reading.entities.technician is None


def test_what_is_not_a_name_is_never_filled_in(tagged_router: Router) -> None:
    ctx = make_context(Vocabulary())
    for text in ("make an invoice", "cancelá el #362", "tenes algun hueco esta semana?"):
        entities = tagged_router.understand(text, ctx).entities
        assert entities.customer is None and entities.technician is None, text
    assert tagged_router.tagger is not None
    assert not looks_like_a_name(tagged_router.tagger, "el 362")
    assert not looks_like_a_name(tagged_router.tagger, "make an")


def test_a_lowercase_name_ends_where_its_words_stop(tagged_router: Router) -> None:
    """The tagger does not always see where a lowercase name ends: the name is its leading
    name-like words, before a phone number, a date word or a common word."""
    ctx = make_context(Vocabulary())
    for text, name in (
        ("alta cliente lola mendieta 1155667788 corrientes 1200", "lola mendieta"),
        ("agendale a lola mendieta mñn a las 10 un service", "lola mendieta"),
    ):
        assert tagged_router.understand(text, ctx).entities.customer == name, text


def test_one_word_of_a_lowercase_name_is_not_someone_else_on_file(tagged_router: Router) -> None:
    """ "lola" of "lola mendieta" snapped to Lola Sívori on file: the capitals that tell "Lola
    Mendieta" apart are missing in lowercase, so the tagger's longer name wins. The whole name
    on file, or the first name alone, still snaps."""
    ctx = make_context(Vocabulary(customers=("Lola Sívori", "Bruno Kessler")))
    text = "dale de alta a lola mendieta, vive en corrientes 1200"
    reading = tagged_router.understand(text, ctx)
    assert (reading.entities.customer, reading.entities.customer_matched) == (
        "lola mendieta",
        False,
    )
    assert reading.entities.as_eval_dict()["customer"] == "lola mendieta"
    reading = tagged_router.understand("buscame los datos de lola sivori", ctx)
    assert reading.entities.customer == "Lola Sívori" and reading.entities.customer_matched
    reading = tagged_router.understand("buscame la ficha de lola", ctx)
    assert reading.entities.customer == "Lola Sívori"
