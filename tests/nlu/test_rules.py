"""The rules tier: small talk, a bare CUIT, directives and courtesy around a request."""

from __future__ import annotations

import pytest

from nlu import Context, Directive, Router
from nlu.rules import (
    bare_cuit,
    is_danger,
    parse_directive,
    small_talk,
    strip_courtesy,
)
from nlu.values import Task


@pytest.mark.parametrize(
    "text",
    ["hola", "Holis!! 👋", "buenas", "Buen día!", "buenas tardes", "hey there", "Good morning!"],
)
def test_pure_greetings(text: str) -> None:
    assert small_talk(text) == "greeting"


@pytest.mark.parametrize(
    "text",
    [
        "gracias, eso es todo",
        "chau nos vemos",
        "Muchas gracias!! 🙏",
        "dale gracias chau",
        "thanks, bye",
        "thank you so much!",
        "ok bye, have a good one",
        "thanks, that's all for today",
        "eh, este, gracias, chau",  # dictation's fillers around it
    ],
)
def test_thanks_and_goodbyes_are_farewells(text: str) -> None:
    assert small_talk(text) == "farewell"


@pytest.mark.parametrize(
    "text",
    [
        "hola, agendame a Juan mañana",
        "gracias, ¿y cuánto debe Pérez?",
        "ok",
        "hello, book a visit",
        "este equipo anda, gracias",  # "este" is a filler only on its own
    ],
)
def test_a_request_is_not_small_talk(text: str) -> None:
    assert small_talk(text) is None


@pytest.mark.parametrize(
    "text",
    ["20123456786", "20-12345678-6", "buenas, 20-12345678-6", "validá el cuit 20-12345678-6"],
)
def test_a_bare_cuit(text: str) -> None:
    assert bare_cuit(text)


def test_a_cuit_inside_a_request_is_not_bare() -> None:
    assert not bare_cuit("registrá a Climatizar SA con CUIT 30712345671")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("hola, agendame a Juan mañana", "agendame a Juan mañana"),
        ("hola, pasalo al viernes por favor, gracias!", "pasalo al viernes"),
        ("Please create customer John Smith, thanks!", "create customer John Smith"),
        ("Buen día! cancelá el turno", "cancelá el turno"),
        ("necesito buenas noticias del presupuesto", "necesito buenas noticias del presupuesto"),
    ],
)
def test_courtesy_around_a_request_is_stripped(text: str, expected: str) -> None:
    assert strip_courtesy(text) == expected


def test_directives_name_the_agent_as_typed() -> None:
    agents = ["scheduling", "fleet"]
    assert parse_directive("#scheduling agendame mañana", agents) == Directive(
        "scheduling", "agendame mañana"
    )
    assert parse_directive("#Fleet: quién está libre", agents) == Directive(
        "fleet", "quién está libre"
    )
    assert parse_directive("#sched hola", agents) == Directive("sched", "hola")
    assert parse_directive("hola #fleet", agents) is None


def test_the_router_answers_small_talk_from_rules(router: Router, ctx: Context) -> None:
    result = router.understand("gracias, eso es todo 🙌", ctx)
    assert (result.tier, result.intents, result.agents) == ("rules", ["farewell"], ["general"])


def test_the_router_validates_a_bare_cuit(router: Router, ctx: Context) -> None:
    result = router.understand("30712345671", ctx)
    assert result.intents == ["validate_cuit"]
    assert result.entities.cuit == "30-71234567-1"


@pytest.mark.parametrize("text", ["no sé", "ni idea", "I don't know", "mmm no sé la verdad"])
def test_dont_know_is_nothing_to_act_on_not_frustration(
    router: Router, ctx: Context, text: str
) -> None:
    result = router.understand(text, ctx)
    assert (result.tier, result.intents) == ("rules", ["unknown"])


def test_the_router_returns_a_directive_without_classifying(router: Router, ctx: Context) -> None:
    result = router.understand("#scheduling pasá lo de Gómez al viernes", ctx)
    assert result.directive == Directive("scheduling", "pasá lo de Gómez al viernes")
    assert result.tasks == []
    assert result.tier == "rules"


@pytest.mark.parametrize(
    "text",
    [
        "hay olor a gas en la cocina",
        "urgente!! fuga d gas en consorcio sarmiento 780",  # "d": "de" typed fast
        "salen chispas del tablero",
        "se reventó un caño y se inunda todo",
        "mi abuela de 90 años se quedó sin calefacción",
        "I smell gas in the basement",
        "there's smoke coming out of the breaker panel",
    ],
)
def test_danger_is_recognised(text: str) -> None:
    assert is_danger(text)


@pytest.mark.parametrize(
    "text",
    ["necesito una carga de gas", "se quedaron sin calefacción", "humor negro", "fire up the AC"],
)
def test_ordinary_requests_are_not_danger(text: str) -> None:
    assert not is_danger(text)


def test_danger_makes_the_router_answer_emergency(router: Router, ctx: Context) -> None:
    result = router.understand("hay olor a gas en el edificio, mandá a alguien ya", ctx)
    assert result.intents == ["emergency"]
    assert result.agents == ["escalation"]


@pytest.mark.parametrize("text", ["", "   ", "#fleet"])
def test_empty_input_does_not_break_the_router(router: Router, ctx: Context, text: str) -> None:
    result = router.understand(text, ctx)
    assert len(result.tasks) <= 1
    assert result.language == "es"


def test_an_out_of_scope_part_stays_in_a_chain_only_when_it_asks(router: Router) -> None:
    request = (
        "hay un tomacorriente mojado, tengo miedo de que haga un corto. qué onda el clima? "
        "y agendame a Pérez"
    )
    tasks = [Task("emergency", "escalation", 0.9, "hay un tomacorriente mojado"),
             Task("unknown", "general", 0.7, "tengo miedo de que haga un corto"),
             Task("unknown", "general", 0.7, "qué onda el clima"),
             Task("book_job", "scheduling", 0.9, "agendame a Pérez")]  # fmt: skip
    kept = router._asks_only(tasks, request, lambda part: part.startswith("agendame"))
    # The fear tells; the weather is asked (its mark after the cut) and the booking requested.
    assert [t.text for t in kept] == [
        "hay un tomacorriente mojado",
        "qué onda el clima",
        "agendame a Pérez",
    ]
    alone = [Task("unknown", "general", 0.7, "tengo miedo de que haga un corto")]
    assert router._asks_only(alone, "tengo miedo de que haga un corto", lambda _p: False) == alone
