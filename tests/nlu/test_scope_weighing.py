"""When the encoder's scope model is asked, and how its opinion is weighed against the words'
reading (nlu/router.py `_outside`, `_outweighed`); and the corpus's train-only families."""

from __future__ import annotations

import dataclasses

import pytest

import nlu.corpus
from agents.defaults import default_specs
from nlu import Router
from nlu.corpus import Records, generate, split_of
from nlu.corpus.families import TRAIN_ONLY
from nlu.scope_model import ScopeModel
from nlu.values import Entities, Task


class FixedScope(ScopeModel):
    """A scope model that always says the same, and counts how often it is asked."""

    def __init__(self, outside: float) -> None:
        super().__init__(weights=(), bias=0.0)
        object.__setattr__(self, "outside", outside)
        object.__setattr__(self, "asked", [])

    def out_of_scope(self, text: str) -> float | None:
        self.asked.append(text)  # type: ignore[attr-defined]
        return self.outside  # type: ignore[attr-defined,no-any-return]


def _task(
    intent: str, confidence: float, candidates: list[tuple[str, float]], **named: str
) -> Task:
    return Task(intent, "", confidence, "…", Entities(**named), candidates)


@pytest.fixture
def scoped(router: Router) -> Router:
    assert router.out_of_scope == "unknown"
    return dataclasses.replace(router, scope=FixedScope(0.5))


def test_a_sure_write_next_to_an_out_of_scope_part_is_questioned_when_it_names_nothing(
    scoped: Router,
) -> None:
    quote = _task("generate_quote", 0.99, [("generate_quote", 0.99)])
    aside = _task("unknown", 0.97, [("unknown", 0.97)])
    # "necesito un presupuesto para mi casamiento, ¿me ayudás con el salón?"
    assert scoped._outside("…", [quote, aside]) == 0.5
    # Alone, a write the words are sure of and the message asks for never pays for the encoder.
    asked = dataclasses.replace(quote, text="armale un presupuesto a Vega")
    assert scoped._outside("…", [asked]) is None
    # "Book a water heater repair for Mark Evans on Monday, also who won the game?": the write
    # names what it acts on, so the aside does not put it in question.
    for named in ({"customer": "Mark Evans"}, {"service": "reparación de calefón"},
                  {"address": "Cabildo 500"}):  # fmt: skip
        sure = _task("generate_quote", 0.99, [("generate_quote", 0.99)], **named)
        assert scoped._outside("…", [sure, aside]) is None, named


def test_an_unsure_reading_gives_way_when_out_of_scope_is_likelier_all_told(
    scoped: Router,
) -> None:
    # "¿qué turno de farmacia está abierto mañana?": technician_sick 0.16, the words' own
    # unknown 0.13, the encoder 0.24 out of scope: 0.24 + 0.76·0.13 = 0.34 > 0.76·0.16 = 0.12.
    vague = [_task("technician_sick", 0.16, [("technician_sick", 0.16), ("hours", 0.15),
                                             ("unknown", 0.13)])]  # fmt: skip
    assert scoped._outweighed(0.24, vague)
    # The same encoder on a reading over the usual gate leaves it to the floors.
    clear = [_task("technician_sick", 0.5, [("technician_sick", 0.5), ("unknown", 0.13)])]
    assert not scoped._outweighed(0.24, clear)
    # An unsure reading the encoder finds about the business stands (asked back by the gate).
    assert not scoped._outweighed(0.02, [_task("book_job", 0.3, [("book_job", 0.3)])])
    # Already out of scope: nothing to weigh.
    assert not scoped._outweighed(0.9, [_task("unknown", 0.2, [("unknown", 0.2)])])


def test_the_weighing_turns_an_unsure_message_out_of_scope_end_to_end(
    router: Router, ctx: object
) -> None:
    text = "mmm y si le ponemos algo a las 9 al de siempre"
    words = router.understand(text, ctx)  # type: ignore[arg-type]
    assert words.tasks and max(t.confidence for t in words.tasks) < 0.35
    assert words.intents != ["unknown"]
    # An encoder that finds it 0.35 out of scope: under both floors, yet likelier than the
    # unsure reading once weighed.
    scope = FixedScope(0.35)
    reading = dataclasses.replace(router, scope=scope).understand(text, ctx)  # type: ignore[arg-type]
    assert reading.intents == ["unknown"]
    assert scope.asked  # type: ignore[attr-defined]
    assert any(note.startswith("out of scope") for note in reading.trace["rules_applied"])


def test_train_only_families_are_trained_on_and_move_no_held_out_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    agents = {name: spec.agent for name, spec in default_specs().items()}
    assert TRAIN_ONLY and all(split_of(family, 0) == "train" for family in TRAIN_ONLY)
    lines = generate(Records(), agents)
    ids = {family.id for family in TRAIN_ONLY}
    extra = [line for line in lines if set(line.families) & ids]
    assert extra and all(line.split == "train" for line in extra)
    monkeypatch.setattr(nlu.corpus, "TRAIN_ONLY", ())
    without = generate(Records(), agents)
    held = [(line.text, line.split) for line in lines if line.split != "train"]
    assert held == [(line.text, line.split) for line in without if line.split != "train"]
    assert len(lines) == len(without) + len(extra)


def test_a_sure_write_the_message_only_tells_about_is_questioned(scoped: Router) -> None:
    """ "el nene tiene fiebre, …": the words are sure of an absence, the act is a statement,
    and nothing of the organisation is named: what it is about is the encoder's to say."""
    told = Task("technician_sick", "", 0.95, "el nene tiene fiebre", Entities(),
                [("technician_sick", 0.95)])  # fmt: skip
    assert scoped._outside("el nene tiene fiebre", [told]) == 0.5
    # A request the words are sure of still never pays for the encoder...
    asked = dataclasses.replace(told, intent="reschedule", text="pasá la visita al lunes")
    assert scoped._outside("pasá la visita al lunes", [asked]) is None
    # ... nor a grievance, which is told by nature.
    grievance = dataclasses.replace(
        told, intent="complaint", text="el técnico me dejó una mancha de humedad en la pared"
    )
    assert scoped._outside(grievance.text, [grievance]) is None


def test_a_told_write_the_act_model_takes_for_a_question_is_questioned_too(
    scoped: Router,
) -> None:
    """ "Los chicos de la camioneta 3 trajeron dos docenas.": the act model reads the report as
    a question (0.45, statement 0.36); either way nothing asks for a van to be given."""
    told = Task("assign_vehicle", "", 0.96, "Los chicos de la camioneta 3 trajeron dos docenas.",
                Entities(), [("assign_vehicle", 0.96)])  # fmt: skip
    assert scoped._outside(told.text, [told]) == 0.5
