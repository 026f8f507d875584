"""Multi-intent segmentation: split between requests, never inside a name, a service or a list."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from nlu import Context, Router
from nlu.openers import how_it_starts
from nlu.segmentation import _content_words, boundaries, joined, segment

LABELS = ["book_job", "generate_invoice", "create_customer", "payment_status"]
KEYWORDS = {
    "book_job": ("agend", "book", "turno", "visita"),
    "generate_invoice": ("factur", "invoice"),
    "create_customer": ("alta", "registr", "nuevo", "customer"),
    "payment_status": ("debe", "pag", "owe"),
}
OPENERS = frozenset(
    {"agenda", "agendale", "book", "factura", "invoice", "da", "register", "cuanto"}
)


def keyword_classifier(
    texts: Sequence[str],
    labels: Sequence[str] = LABELS,
    keywords: dict[str, tuple[str, ...]] = KEYWORDS,
) -> list[list[float]]:
    """A stand-in for the trained model: confident when a keyword is present, unsure otherwise."""
    rows = []
    for text in texts:
        hits = [sum(k in text.lower() for k in keywords[label]) for label in labels]
        if not any(hits):
            rows.append([1 / len(labels)] * len(labels))
            continue
        weights = [0.02 + h for h in hits]
        rows.append([w / sum(weights) for w in weights])
    return rows


def _intents(text: str) -> list[str]:
    segments = segment(text, joined(keyword_classifier), lambda part: how_it_starts(part, OPENERS))
    return [LABELS[s.top] for s in segments]


@pytest.mark.parametrize(
    "text",
    [
        "agendá a Juan y María Pérez para el viernes",
        "agendá service y carga de gas para el martes",
        "agendá instalación de calefón y termotanque en lo de Sosa",
        "agendá visitas el 15/12 y 16/12",
        "book Tom and Ann Walker for Monday",
    ],
)
def test_it_does_not_split_inside_one_request(text: str) -> None:
    assert len(_intents(text)) == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "agendale una visita a Sosa el 26 y facturale el trabajo",
            ["book_job", "generate_invoice"],
        ),
        ("dá de alta a Juan Pérez, y después agendale una visita", ["create_customer", "book_job"]),
        ("book Greg for Friday and then invoice him", ["book_job", "generate_invoice"]),
        ("¿cuánto debe Ortiz? agendale una visita", ["payment_status", "book_job"]),
        (
            "register the new customer, also invoice the job",
            ["create_customer", "generate_invoice"],
        ),
    ],
)
def test_it_splits_between_requests(text: str, expected: list[str]) -> None:
    assert _intents(text) == expected


def test_a_bare_and_needs_a_request_after_it() -> None:
    # Both sides classify differently, but "María Pérez..." does not start like a request.
    assert len(_intents("agendá a Juan y María debe dos facturas")) == 1


def test_boundaries_skip_abbreviations_and_decimals() -> None:
    text = "pasale a la Sra. Gómez 1.5 palos. Después facturá"
    kinds = [(text[b.start : b.end].strip(), b.kind) for b in boundaries(text)]
    assert kinds == [(". Después", "strong")]


def test_the_router_splits_and_orders_a_chain(router: Router, ctx: Context) -> None:
    result = router.understand(
        "agendale una instalación de split para el martes y dá de alta al cliente Juan Pérez", ctx
    )
    assert result.intents == ["create_customer", "book_job"]
    assert result.trace["reordered"] is True
    # The customer named in one request is shared with the one that uses it.
    assert result.tasks[1].entities.customer == "Juan Pérez"


def test_the_router_keeps_a_service_pair_together(router: Router, ctx: Context) -> None:
    result = router.understand("necesito un turno para service y carga de gas el martes", ctx)
    assert result.intents == ["book_job"]
    assert result.entities.service == "service y carga de gas"


@pytest.mark.parametrize(
    "text",
    [
        "facturale a Juan después de agendarle un turno el lunes",
        "invoice Juan once you book him for Monday",
        "invoice Juan after you book him for Monday",
    ],
)
def test_a_clause_about_doing_something_first_is_a_second_request(text: str) -> None:
    assert sorted(_intents(text)) == ["book_job", "generate_invoice"]


def test_after_a_time_is_not_a_second_request() -> None:
    cuts = boundaries("agendale a Juan el lunes después de las 15")
    assert not cuts


def test_the_same_request_twice_with_its_own_verb_is_two_segments() -> None:
    text = "agendale a Juan el lunes y agendale también a Pedro el martes"
    assert _intents(text) == ["book_job", "book_job"]


def test_a_repeated_intent_without_a_verb_of_its_own_stays_whole() -> None:
    assert _intents("agendale a Juan el lunes y el martes un turno") == ["book_job"]


def test_the_router_keeps_two_bookings_for_two_customers(router: Router, ctx: Context) -> None:
    result = router.understand(
        "Agendale a Graciela Ibarra un service el lunes a las 10 y agendale también a Ernesto "
        "Zapata una carga de gas el martes a las 11",
        ctx,
    )
    assert [t.intent for t in result.tasks] == ["book_job", "book_job"]
    assert [t.entities.customer for t in result.tasks] == ["Graciela Ibarra", "Ernesto Zapata"]


def test_a_verb_that_always_starts_one_intent_names_it() -> None:
    from nlu.openers import verb_intents

    texts = [
        "facturale a Juan el service",
        "facturale el trabajo a Ana",
        "Facturale a Pedro la visita",
        "pasá el turno al lunes",
        "pasá los trabajos al martes",
        "pasale la ficha a Ana",
        "Gonzalo está enfermo",
        "Gonzalo no viene",
        "Gonzalo tiene fiebre",
    ]
    intents = ["inv", "inv", "inv", "move", "bulk", "file", "sick", "sick", "sick"]
    learned = verb_intents(texts, intents)
    assert learned == {"facturale": "inv"}  # "pasá" is ambiguous, "Gonzalo" is not a verb


def test_the_request_verb_decides_between_close_readings(router: Router) -> None:
    from dataclasses import replace

    verbs = replace(router, verbs={"facturale": "generate_invoice"})
    close = [("search_customer", 0.55), ("generate_invoice", 0.44)]
    far = [("search_customer", 0.9), ("generate_invoice", 0.05)]
    assert verbs._by_verb("Facturale a Jorge el último trabajo", close)[0] == "generate_invoice"
    assert verbs._by_verb("Facturale a Jorge el último trabajo", far)[0] == "search_customer"
    assert verbs._by_verb("Buscame a Jorge", close)[0] == "search_customer"


# "Registrá a …, vive en …, CABA, y agendale …": however the address is introduced, it stays with
# the registration (a clause that gives an address, or the town after it, never opens a request),
# and the booking is the part that starts with its own verb.
ADDRESS_CHAINS = [
    ("Registrá a Rocío Almada con tel 11 5566-7788, vive en Av. Cabildo 3500, CABA, y agendale "
     "un service de split para el jueves a las 10", "Av. Cabildo 3500, CABA"),
    ("Registrá a Rocío Almada, teléfono 11 5566-7788, vive en Cabildo 3500, Belgrano, y "
     "agendale un service de split el jueves a las 10", "Cabildo 3500, Belgrano"),
    ("Dá de alta a Rocío Almada, tel 11 5566-7788, domicilio Av. Cabildo 3500, CABA, y "
     "agendale una visita el jueves a las 10", "domicilio Av. Cabildo 3500, CABA"),
    ("Registrá a Rocío Almada, cel 11 5566-7788, con dirección en Av. Cabildo 3500, Lanús, y "
     "agendale un service de split el jueves a las 10", "Av. Cabildo 3500, Lanús"),
    ("Cliente nuevo: Rocío Almada, tel 11 5566-7788, en la calle Thames 1200, Palermo, y "
     "agendale una visita el jueves a las 10", "calle Thames 1200, Palermo"),
    ("Register Martin Whitfield, phone 11 4422-1188, he lives at 2100 Santa Fe Ave, CABA, and "
     "book him a split service on Thursday at 10", "2100 Santa Fe Ave, CABA"),
    ("Register Martin Whitfield, phone 11 4422-1188, address Av. Santa Fe 2100, CABA, and book "
     "him a split service on Thursday at 10", "Av. Santa Fe 2100, CABA"),
    ("Register Martin Whitfield, phone 11 4422-1188, lives on Av. Santa Fe 2100, Lanús, and "
     "book him a split service on Thursday at 10", "Av. Santa Fe 2100, Lanús"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "address"), ADDRESS_CHAINS)
def test_an_address_clause_stays_with_the_registration(
    text: str, address: str, router: Router, ctx: Context
) -> None:
    create, book = router.understand(text, ctx).tasks

    assert (create.intent, book.intent) == ("create_customer", "book_job")
    assert create.text.endswith(address)
    assert book.text.split()[0] in ("agendale", "book")


@pytest.mark.parametrize(
    "text",
    [
        "vive en Av. Cabildo 3500",
        "con domicilio en Cabildo 500",
        "en la calle Thames 1200",
        "she lives at 12 Main St",
        "lives on Santa Fe 2100",
        "CABA, y agendale",
        "Villa Crespo, y agendale",
    ],
)
def test_an_address_or_its_town_is_a_detail(text: str) -> None:
    assert how_it_starts(text, OPENERS) == "detail"


@pytest.mark.parametrize(
    "text", ["agendale el jueves", "Agendale, porfa, a Juan", "si está, agendale", "book him"]
)
def test_a_request_still_opens_a_request(text: str) -> None:
    assert how_it_starts(text, OPENERS) == "request"


@pytest.mark.parametrize(
    ("text", "connector"),
    [
        ("agendale a Juan el lunes desspues cancelá lo de Gómez", "desspues"),
        ("agendale a Juan el lunes tmabien cancelá lo de Gómez", "tmabien"),
        ("agendale a Juan el lunes y depues cancelá lo de Gómez", "y depues"),
        ("agendale a Juan el lunes, aprate mandale la factura a Gómez", ", aprate"),
    ],
)
def test_a_connector_typed_fast_is_still_a_strong_cut(text: str, connector: str) -> None:
    """One letter doubled, dropped or swapped in "después", "también", "aparte"…: still a cut
    that earns a split (fast-typed two-request lines stayed one request)."""
    assert [(b.kind, b.connector) for b in boundaries(text)] == [("strong", connector)]


def test_a_slip_that_spells_another_word_is_no_connector() -> None:
    """ "parte" is "aparte" with a letter dropped, and a word of its own."""
    assert all(b.connector != "parte" for b in boundaries("mandale la otra parte del equipo"))


def test_an_opener_typed_fast_still_opens_a_request() -> None:
    """One letter swapped, doubled or dropped in the word a request opens with ("prseu",
    "pasmae", "agendaale"); another letter for one is a different word ("ayudas", "ayudar")."""
    openers = frozenset({"presu", "pasame", "agendale", "ayudar"})
    for typed in ("prseu p/ Gómez", "persu para Ruiz", "pasmae la ficha", "agendaale a Ruiz",
                  "agendle a Ruiz"):  # fmt: skip
        assert how_it_starts(typed, openers) == "request", typed
    for other in ("ayudas con el salón", "pasa algo raro", "prsu p/ Gómez"):
        assert how_it_starts(other, openers) != "request", other


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("o sea", 0),
        ("eh, este", 0),
        ("son, este, noventa y cinco mil", 0),
        ("ponele ciento ochenta mil", 1),
        ("eh, seis equipos, mantenimiento completo", 3),
        ("este equipo no enfría", 2),  # "no": too short to count
    ],
)
def test_fillers_and_numbers_in_words_are_not_content(text: str, words: int) -> None:
    # Dictation's "o sea, | necesito un presupuesto …, son, eh, | …" must not stand as parts.
    assert _content_words(text) == words
