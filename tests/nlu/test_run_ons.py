"""Run-ons, introductions and asides (nlu/segmentation.py): a dictated or fast-typed message with
no connector between two requests is still two requests; "soy …" is who writes, not a request;
a weakly read aside after a request is that request's context."""

from __future__ import annotations

import datetime
from collections.abc import Sequence

import pytest

from nlu import Router, Vocabulary
from nlu.normalize import without_stutter
from nlu.openers import how_it_starts, opens_mid_sentence
from nlu.segmentation import Boundary, _leans_on_next, boundaries, joined, segment
from nlu.values import Entities, Task
from tests.nlu.conftest import make_context
from tests.nlu.test_segmentation import keyword_classifier as keywords_read

LABELS = ["technician_sick", "bulk_reschedule", "reschedule", "complaint", "search_customer"]
KEYWORDS = {
    "technician_sick": ("enferm", "fiebre"),
    "bulk_reschedule": ("todos sus trabajos", "todas sus visitas"),
    "reschedule": ("turno", "cambi"),
    "complaint": ("tecnico", "técnico"),
    "search_customer": ("soy",),
}
OPENERS = frozenset({"pasá", "cambiá", "repartí", "cancelá"})


def keyword_classifier(texts: Sequence[str]) -> list[list[float]]:
    return keywords_read(texts, LABELS, KEYWORDS)


def _opens_at(word: str, previous: str, fast: bool) -> bool:
    return opens_mid_sentence(word, previous, OPENERS, fast)


def _parts(text: str, classify=keyword_classifier) -> list[str]:  # type: ignore[no-untyped-def]
    segments = segment(
        text, joined(classify), lambda part: how_it_starts(part, OPENERS), opens_at=_opens_at
    )
    return [s.text for s in segments]


def _bare(text: str) -> list[str]:
    return [text[b.start :].split()[0] for b in boundaries(text, _opens_at) if b.kind == "bare"]


def test_a_run_on_is_cut_before_the_verb_that_opens_the_second_request() -> None:
    text = "ramiro esta con fiebre pasale todos sus trabajos a lucas"
    assert _bare(text) == ["pasale"]
    assert _parts(text) == ["ramiro esta con fiebre", "pasale todos sus trabajos a lucas"]


def test_a_message_typed_without_accents_opens_at_the_voseo_written_without_its_accent() -> None:
    assert _bare("ramiro esta enfermo pasa todos sus trabajos al lunes") == ["pasa"]
    # With accents elsewhere, a bare "pasa" is the indicative ("el técnico pasa mañana").
    assert _bare("Ramiro está enfermo pasa todos sus trabajos al lunes") == []
    assert _bare("Ramiro está enfermo pasá todos sus trabajos al lunes") == ["pasá"]


@pytest.mark.parametrize(
    "text",
    [
        "hay que pasale todos sus trabajos a lucas",  # governed by "hay que"
        "necesito que pasale sus trabajos",  # after "que"
        "el técnico pasa mañana por lo de Ibarra",
        "agendale a Ibarra el viernes",  # the first words never start a part
    ],
)
def test_no_bare_cut_where_the_verb_is_governed_or_not_an_imperative(text: str) -> None:
    assert _bare(text) == []


def test_a_bare_cut_never_sits_on_a_connector() -> None:
    cuts = boundaries("ramiro esta con fiebre y pasale todos sus trabajos a lucas", _opens_at)
    assert [b.kind for b in cuts] == ["weak"]
    # The one cut is the "y", not the verb right after it.
    assert all(isinstance(b, Boundary) and b.connector == "y" for b in cuts)


def test_an_introduction_is_a_detail_of_the_request_beside_it() -> None:
    for text in ("soy Daniel Ibarra", "Hola, soy Daniel Ibarra", "I'm Ann Walker", "this is Tom"):
        assert how_it_starts(text, OPENERS) == "detail", text
    for text in ("I'm sick", "this is urgent", "soy re boludo, cambiá el turno"):
        assert how_it_starts(text, OPENERS) != "detail", text
    # So it never stands alone, at the start either.
    assert _parts("soy Daniel Ibarra. ¿Me cambian el turno del jueves?") == [
        "soy Daniel Ibarra. ¿Me cambian el turno del jueves?"
    ]


def test_an_introduction_before_a_request_does_not_glue_a_second_request_to_it() -> None:
    """The first part leans on a request: when that request is inside it, what comes after an
    "y otra cosa" is a request of its own."""
    text = "soy Daniel Ibarra, me pasan el turno al lunes? y otra cosa, Ramiro tiene fiebre"
    assert _parts(text) == [
        "soy Daniel Ibarra, me pasan el turno al lunes",
        "Ramiro tiene fiebre",
    ]


@pytest.mark.parametrize(
    ("text", "opening"),
    [
        # A customer asks the company in the plural, the pronoun first: a request.
        ("me dicen cuánto les debo en total", "request"),
        ("y me mandan la factura del mes pasado", "request"),
        ("¿nos confirman el turno del jueves?", "request"),
        ("me pasan el turno al 25/11?", "request"),
        # Reported speech and how things are: not one.
        ("me dicen que ya pagó", "report"),
        ("me deben plata desde octubre", "other"),
        ("no me funcionan las luces", "other"),
    ],
)
def test_a_plural_you_with_the_pronoun_first_asks(text: str, opening: str) -> None:
    assert how_it_starts(text, frozenset()) == opening


def test_a_weakly_read_aside_after_a_request_is_its_context() -> None:
    def unsure_aside(texts: Sequence[str]) -> list[list[float]]:
        rows = keyword_classifier(texts)
        for text, row in zip(texts, rows, strict=True):
            if text.strip().startswith("cancelá"):  # the aside: complaint at 0.30
                row[:] = [0.1, 0.2, 0.2, 0.3, 0.2]
        return rows

    text = "cambiá el turno de Ibarra al lunes, cancelá lo otro que ya fue"
    assert _parts(text, unsure_aside) == [text]
    # Read clearly, the same part is a second request.
    assert len(_parts("cambiá el turno de Ibarra al lunes, ramiro tiene fiebre")) == 2


@pytest.mark.parametrize(
    ("text", "without"),
    [
        (
            "antes de que me cambien el turno, ramiro tiene fiebre?",
            "me cambian el turno, ramiro tiene fiebre?",
        ),
        (
            "si ramiro tiene fiebre, cambiá el turno de Ibarra",
            "ramiro tiene fiebre, cambiá el turno de Ibarra",
        ),
    ],
)
def test_a_condition_at_the_start_is_part_of_what_follows(text: str, without: str) -> None:
    assert _parts(text) == [text]
    # Without the condition word the same two clauses are two requests.
    assert len(_parts(without)) == 2


def test_the_day_jobs_move_to_is_not_the_day_of_the_absence(router: Router) -> None:
    people = Vocabulary(technicians=("Ramiro Giménez", "Diego Fernández"))
    read = router.understand(
        "Ramiro está enfermo, pasá todos sus trabajos al jueves", make_context(people)
    )
    dates = {task.intent: task.entities.date for task in read.tasks}
    # Thursday is where the jobs go (the registry's date_is "target"): the absence is today's.
    assert dates == {"technician_sick": None, "bulk_reschedule": datetime.date(2026, 11, 19)}
    # A date no move owns is still shared: both steps of a booking and a quote take Friday.
    read = router.understand(
        "agendale un service a Ibarra el viernes y cotizale el termotanque", make_context(people)
    )
    assert {task.entities.date for task in read.tasks} == {datetime.date(2026, 11, 20)}


@pytest.mark.parametrize(
    ("said", "meant"),
    [
        ("uh let's kick off the, the summer campaign", "uh let's kick off the summer campaign"),
        ("agendale a a Pérez el el jueves", "agendale a Pérez el jueves"),
        ("dale dale dale", "dale"),
        ("el 10 10", "el 10 10"),  # numbers may be two
        ("Ana Anabella", "Ana Anabella"),  # whole words only
    ],
)
def test_a_word_said_twice_in_a_row_is_said_once(said: str, meant: str) -> None:
    assert without_stutter(said) == meant


@pytest.mark.parametrize(
    ("first", "leans"),
    [
        ("lo de Gómez", True),  # "lo de Gómez, pasalo al viernes": the topic of the move
        ("eh, lo de la Clínica Patitas, el service de los aires", True),
        ("lo del jueves", True),
        ("agendale a Gómez", False),  # a request of its own
        ("Gómez pagó", False),
    ],
)
def test_the_topic_named_first_leans_on_the_request_after_it(first: str, leans: bool) -> None:
    assert _leans_on_next(first, lambda part: how_it_starts(part, frozenset())) is leans


@pytest.mark.parametrize(
    ("text", "cuts"),
    [
        ("Diego is out sick tomorrow — push all his jobs to Saturday", ["—"]),
        ("Ramiro está enfermo – pasale todo al sábado", ["–"]),
        ("Ramiro está enfermo - pasale todo al sábado", ["-"]),
        ("dale de alta a Ana Gómez-Rivas", []),  # a name
        ("su cel es 11 - 5555 - 1234", []),  # a phone number
    ],
)
def test_a_dash_between_clauses_is_a_cut(text: str, cuts: list[str]) -> None:
    assert [b.connector for b in boundaries(text)] == cuts


def test_a_part_that_takes_back_the_one_before_it_is_not_a_request_of_its_own() -> None:
    """Dictation's self-correction fixes the part before it: "…, no, perdón, …", "…, actually
    no, …" never opens a request of its own; without it the same words are two requests."""
    assert len(_parts("ramiro esta con fiebre, pasale todos sus trabajos a lucas")) == 2
    for text in (
        "ramiro esta con fiebre, no, perdón, pasale todos sus trabajos a lucas",
        "ramiro esta con fiebre, actually no, pasale todos sus trabajos a lucas",
        "ramiro esta con fiebre, no, mejor pasale todos sus trabajos a lucas",
    ):
        assert len(_parts(text)) == 1, text


def _told(intent: str, confidence: float, text: str, **entities: object) -> Task:
    return Task(intent, "x", confidence, text, Entities(**entities))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("tail", "kept"),
    [
        # the request's setting or reason: weak, names nothing, neither asks nor requests
        (_told("reschedule", 0.40, "se les cortó el aire hace dos horas"), False),
        (_told("unknown", 0.38, "que hay paro de colectivos y no llega nadie"), False),
        # a request of its own: sure, or it asks, requests or names what it acts on
        (_told("reschedule", 0.95, "y pasá lo de Ruiz al jueves"), True),
        (_told("payment_status", 0.45, "cuánto debe?"), True),
        (_told("generate_quote", 0.45, "presu p/ lorena lescano", customer="lorena lescano"), True),
        (
            _told(
                "bulk_reschedule",
                0.45,
                "todos sus trabajos al 10",
                date=datetime.date(2026, 12, 10),
            ),
            True,
        ),
        (_told("generate_invoice", 0.45, "y facturale"), True),
        (_told("emergency", 0.30, "sale humo del tablero"), True),
    ],
)
def test_a_weak_part_after_a_sure_request_is_its_setting(
    router: Router, tail: Task, kept: bool
) -> None:
    first = _told("dispatch", 0.99, "mandá ya al técnico más cerca a la farmacia")
    settled, dropped = router._without_weak_tails([first, tail])
    assert settled[0] is first
    assert (tail in settled) is kept
    assert dropped == ([] if kept else [tail.intent])
    # after an unsure part nothing is dropped: which of the two is the request is not clear
    unsure = _told("dispatch", 0.6, first.text)
    assert tail in router._without_weak_tails([unsure, tail])[0]
