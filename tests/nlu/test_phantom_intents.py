"""No phantom intents: a clause about someone inside one request is its context, not a request."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest

from nlu import Context, Router
from nlu.openers import how_it_starts, opening_verb
from nlu.segmentation import joined, segment

LABELS = ["book_job", "complaint", "payment_status", "check_availability", "generate_quote"]
KEYWORDS = {
    "book_job": ("agend", "book", "visita"),
    "complaint": ("enojad", "furious", "queja", "upset"),
    "payment_status": ("pag", "paid"),
    "check_availability": ("lugar", "libre", "slot"),
    "generate_quote": ("presupuesto", "quote"),
}
CUES = frozenset({1, 2, 3})  # complaint, payment_status, check_availability
OPENERS = frozenset({"agenda", "agendale", "book", "arma"})


def keyword_classifier(texts: Sequence[str]) -> list[list[float]]:
    """Confident on a keyword, so a cue word alone would make a confident second segment."""
    rows = []
    for text in texts:
        hits = [sum(k in text.lower() for k in KEYWORDS[label]) for label in LABELS]
        weights = [0.01 + 3 * h for h in hits]
        rows.append([w / sum(weights) for w in weights])
    return rows


def _intents(text: str, cues: frozenset[int] = CUES) -> list[str]:
    segments = segment(
        text,
        joined(keyword_classifier),
        lambda part: how_it_starts(part, OPENERS),
        cues=cues,
    )
    return [LABELS[s.top] for s in segments]


@pytest.mark.parametrize(
    ("text", "opening"),
    [
        ("que está re caliente porque no le anda el aire", "report"),
        ("dice que la última vez le cobraron caro", "report"),
        ("ya pagó la seña", "report"),
        ("se queja de que hace ruido", "report"),  # "se queja" also opens complaints' examples
        ("el cliente está enojado porque gotea", "report"),
        ("si hay lugar", "report"),
        ("they're really unhappy", "report"),
        ("if there's a slot on Tuesday", "report"),
        ("si está, agendale el lunes", "request"),  # a condition with its own imperative
        ("¿hay lugar el jueves?", "request"),
        ("is anyone free tomorrow", "request"),
        ("el técnico de la zona sur", "other"),
        ("que la semana pasada ya nos pagó la seña", "report"),  # "que" giving the reason
        ("que lo agenden para el lunes", "report"),
        ("que si está, agendale el lunes", "request"),
        ("the customer's furious because he paid", "report"),
        ("nobody showed up", "report"),
        ("I want a manager", "request"),
        ("we need someone out on Friday", "request"),
    ],
)
def test_a_clause_about_someone_opens_as_a_report(text: str, opening: str) -> None:
    assert how_it_starts(text, OPENERS | {"queja"}) == opening


@pytest.mark.parametrize(
    "text",
    [
        "agendale una visita a Pérez, está enojadísima porque chorrea agua",
        "agendale una visita a Quiroga, ya pagó la seña completa",
        "agendale una visita a Acosta, si hay lugar libre el martes",
        "book a visit for Ann on Friday, she's furious it keeps failing",
    ],
)
def test_a_cue_clause_after_a_request_is_its_context(text: str) -> None:
    assert _intents(text, cues=frozenset()) != ["book_job"]  # the phantom, without the rule
    assert _intents(text) == ["book_job"]


@pytest.mark.parametrize(
    "text",
    [
        "la clienta Ibarra llamó re caliente, dice que está enojadísima",
        "el cliente Vega llamo, esta enojado con el técnico",
        "Llamó la señora Gómez, está enojada porque gotea",
    ],
)
def test_a_message_that_only_tells_about_someone_is_what_it_tells(text: str) -> None:
    # No request to be the context of: the grievance is the message (issue 24's complaint).
    assert _intents(text) == ["complaint"]


def test_a_report_before_a_request_is_still_its_context() -> None:
    assert _intents("el cliente Vega llamó, está enojadísimo, agendale una visita") == ["book_job"]


def test_the_cue_words_do_not_change_the_request_they_sit_in() -> None:
    # Whole, the payment words outweigh the booking; without its context the request is a booking.
    text = "agendale a Quiroga, ya pagó la seña, pagó todo, pagado"
    assert _intents(text) == ["book_job"]


def test_an_explicit_connector_still_opens_a_second_request() -> None:
    text = "agendale una visita a Pérez el lunes. Además fijate si hay lugar el martes"
    assert _intents(text) == ["book_job", "check_availability"]


def test_a_report_of_another_kind_of_request_is_still_a_request() -> None:
    # A report that reads as no cue intent ("they need a quote") keeps its own step.
    assert _intents("agendale una visita a Vega, dice que quiere un presupuesto") == [
        "book_job",
        "generate_quote",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("agendale una visita a Pérez, que está re caliente porque no le anda el aire", "book_job"),
        ("mandá a alguien a lo de Gómez, el cliente está enojado porque gotea", "dispatch"),
        ("move the Lopez visit to Wednesday, they're annoyed nobody called them", "reschedule"),
    ],
)
def test_the_router_reads_one_request_with_cue_words(
    router: Router, ctx: Context, text: str, expected: str
) -> None:
    assert router.understand(text, ctx).intents == [expected]


def test_the_router_still_splits_two_requests(router: Router, ctx: Context) -> None:
    result = router.understand("¿hay lugar mañana? también armale un presupuesto a Vega", ctx)
    assert result.intents == ["check_availability", "generate_quote"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The verb names the request; the availability or money words only say why.
        ("agendale a Sosa el jueves a las 9 si hay disponibilidad", "book_job"),
        ("book the repair for Ann, she paid and nobody showed up", "book_job"),
    ],
)
def test_a_request_verb_overrules_a_cue_reading(
    router: Router, ctx: Context, text: str, expected: str
) -> None:
    verbs = {"agendale": "book_job", "book": "book_job"}
    assert replace(router, verbs=verbs).understand(text, ctx).intents == [expected]


def test_only_a_verb_in_the_imperative_names_the_request() -> None:
    assert opening_verb("agendale a Sosa el jueves") == "agendale"
    assert opening_verb("book the repair") == "book"
    assert opening_verb("¿la factura 0003-00000871 ya está paga?") == ""  # "factura", a noun


@pytest.mark.parametrize(
    ("text", "opening"),
    [
        ("lo esperé toda la mañana", "other"),  # a first-person preterite, not "hacé"
        ("ya pagué la factura", "other"),
        ("le mandé el presupuesto ayer", "other"),
        ("hacé la factura de Pérez", "request"),  # the voseo imperative of an -er verb
        ("pasalo al jueves", "request"),
        ("si está, agendale el jueves", "request"),
    ],
)
def test_a_verb_after_its_pronoun_is_conjugated_not_an_order(text: str, opening: str) -> None:
    assert how_it_starts(text, OPENERS) == opening


@pytest.mark.parametrize(
    ("text", "opening"),
    [
        # A customer asks the company in the plural, or wishes for something politely.
        ("Cancelen lo del martes por favor", "request"),
        ("manden a alguien hoy", "request"),
        ("vengan mañana temprano", "request"),
        ("Quería pasar la visita del jueves para el viernes", "request"),
        ("quisiera saber cuánto debo", "request"),
        ("agendar el mantenimiento del aire para el miércoles", "request"),  # a wish's second
        # A present tense, a person's wish reported, a wish with no verb: not requests.
        ("corren el riesgo de quedarse sin aire", "other"),
        ("la clienta quería pasar el turno", "other"),
        # The opening only says a request may start; what it asks is the classifier's reading.
        ("quería decirte que todo bien", "request"),
        ("quería el presupuesto de ayer", "report"),  # no verb wished: read as before
        # Who writes, and from where: a detail of the request beside it.
        ("hablo del Consorcio Av. Maipú 1240, soy la administradora", "detail"),
        ("les escribo de Pizzería Los Campeones", "detail"),
        ("escribo desde el celular de mi hija", "other"),
    ],
)
def test_the_customer_s_plural_order_and_polite_wish_open_requests(text: str, opening: str) -> None:
    assert how_it_starts(text, OPENERS) == opening


SHOUTED = "CANCELA LO D VILLALBA DEL JUEVES YA TE LO DIJE 3 VECES!!!"


@pytest.mark.parametrize(
    ("candidates", "expected"),
    [
        # Anger around a request typed fast ("cancela", no accent): the request, as TAXONOMY.md
        # labels it; the anger stays a signal.
        ([("frustration_detected", 0.99), ("cancel_job", 0.008)], "cancel_job"),
        # The words do not read that request at all: anger with nothing to do.
        ([("frustration_detected", 0.99), ("bulk_reschedule", 0.001)], "frustration_detected"),
    ],
)
def test_an_angry_message_that_opens_with_a_request_is_that_request(
    router: Router, candidates: list[tuple[str, float]], expected: str
) -> None:
    verbs = {"cancela": "cancel_job"}
    assert replace(router, verbs=verbs)._by_verb(SHOUTED, candidates)[0] == expected
