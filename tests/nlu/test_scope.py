"""Out of scope that looks like the trade is `unknown`; a vague request of the trade is not."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nlu import Context, Router
from nlu.scope import off_topic


@pytest.mark.parametrize(
    "text",
    [
        "¿a cuánto está el dólar?",
        "cuanto esta el euro hoy",
        "what's the exchange rate for the dollar?",
        "traducime 'factura' al inglés",
        "how do you say 'invoice' in Spanish?",
        "¿quién ganó el partido de River?",
        "who won the Champions League?",
        "¿cuál es la capital de Francia?",
        "what's the weather in Madrid?",
        "¿a qué hora juega Independiente?",
        "what time does the Celtics game start?",
        "¿cuál es el horario del tren Sarmiento?",
        "reservame una mesa para cuatro en un bodegón",
        "book a table for two near the office",
        "¿cuánto sale un pasaje a Bariloche?",
        "¿cuánta gente vive en Córdoba?",
        "who invented the thermostat?",
        "¿cuánto es el IVA en Chile?",
    ],
)
def test_an_ask_about_the_world_is_off_topic(text: str) -> None:
    assert off_topic(text)


@pytest.mark.parametrize(
    "text",
    [
        "facturale 300 dólares a Pérez",
        "¿cuánto sale el service de caldera?",
        "cobrale en euros a la empresa",
        "¿cuánto nos debe Gómez?",
        "agendá la visita, el capital de trabajo no importa",
        "pasá lo de Uruguay 1200 al lunes",
        "¿qué horario tienen el sábado?",
        "facturale con IVA a Gómez",
    ],
)
def test_a_request_of_the_trade_with_money_words_is_not(text: str) -> None:
    assert not off_topic(text)


@pytest.mark.parametrize(
    "text", ["¿a cuánto está el dólar?", "traducime 'factura' al inglés", "who won the World Cup?"]
)
def test_the_router_reads_an_off_topic_ask_as_unknown(
    router: Router, ctx: Context, text: str
) -> None:
    assert router.understand(text, ctx).intents == ["unknown"]


def test_an_off_topic_aside_next_to_real_work_keeps_the_work(router: Router, ctx: Context) -> None:
    result = router.understand("¿cuánto está el dólar? y agendale una visita a Ruiz el jueves", ctx)
    assert result.intents == ["unknown", "book_job"]


def test_a_verb_of_the_trade_overrules_a_hesitant_out_of_scope(router: Router) -> None:
    verbs = replace(router, verbs={"agenda": "book_job"})
    hesitant = [("unknown", 0.5), ("cancel_job", 0.1)]
    sure = [("unknown", 0.97), ("book_job", 0.01)]
    assert verbs._by_verb("agendá algo", hesitant) == ("book_job", 0.6)
    assert verbs._by_verb("agendá una mesa en el restaurante", sure)[0] == "unknown"
    assert verbs._by_verb("contame algo", hesitant)[0] == "unknown"  # no verb of the trade


def test_a_voseo_imperative_names_its_intent() -> None:
    from nlu.openers import verb_intents

    texts = ["agendá una visita", "Agendá un service", "agendá a Pérez", "contá un chiste"]
    intents = ["book", "book", "book", "unknown"]
    assert verb_intents(texts, intents) == {"agenda": "book"}


@pytest.mark.parametrize(
    ("text", "intent"), [("agendá algo", "book_job"), ("book something", "book_job")]
)
def test_a_vague_request_keeps_its_intent(
    router: Router, ctx: Context, text: str, intent: str
) -> None:
    assert router.understand(text, ctx).intents == [intent]
