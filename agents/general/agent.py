"""Handlers of the general agent (O11): greetings, goodbyes, opening hours, prices and what is
out of scope.

Hours come from the organisation's own configuration, with whether it is open right now in its
timezone and, when closed, when it opens next; prices from its price list, with IVA spelled
out. Out-of-scope asks get a polite no and the list of what the office's enabled agents do.
"""

from __future__ import annotations

import datetime
import re
from decimal import Decimal
from typing import Any

from agents.base import Outcome, Runner, Step, handles
from agents.phrasing import bullets, day, failed, money, percent
from agents.selectors import agents_for_org
from business.validators import format_phone
from common.text import fold

PRICES_SHOWN = 8
# Local hours where the greeting changes: morning from 6, afternoon from noon, night from 20.
MORNING_FROM, NOON, EVENING_FROM = 6, 12, 20
DAY_NAMES_ES = ("lunes", "martes", "miércoles", "jueves", "viernes", "sábado", "domingo")
DAY_NAMES_EN = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
# What each shipped agent does, for "what can you do" answers (es, en).
CAPABILITIES: dict[str, tuple[str, str]] = {
    "scheduling": (
        "agenda: agendar, reprogramar o cancelar trabajos y ver turnos libres",
        "scheduling: book, move or cancel jobs and find free slots",
    ),
    "customer": (
        "clientes: buscarlos, darlos de alta, actualizar sus datos y validar CUIT",
        "customers: look them up, register them, update their data and check CUITs",
    ),
    "financial": (
        "presupuestos, facturas y cobros",
        "quotes, invoices and payments",
    ),
    "fleet": (
        "técnicos y flota: ausencias, redistribución, despacho y vehículos",
        "crew and fleet: absences, redistribution, dispatch and vehicles",
    ),
    "escalation": (
        "reclamos, emergencias y derivar a una persona",
        "complaints, emergencies and handing over to a person",
    ),
    "proactive": (
        "mantenimientos vencidos, seguimientos y campañas de temporada",
        "maintenance due, follow-ups and seasonal campaigns",
    ),
    "general": (
        "horarios de atención y lista de precios",
        "opening hours and the price list",
    ),
}
# Words of a price question that say nothing about which service.
_PRICE_WORDS = re.compile(
    r"\b(?:precios?|cuanto|cuesta|cuestan|sale|salen|cobran?|vale|valen|tarifas?|lista|"
    r"costo|costos|price|prices|pricing|cost|costs|how|much|does|do|you|charge|is|are|list|"
    r"what|the|a|an|for|of|de|del|la|el|los|las|un|una|por|para|me|te|nos|y|and)\b"
)
_THANKS = re.compile(r"\b(?:gracias|thanks|thank you|genial|perfecto)\b")


def _capabilities(runner: Runner) -> list[str]:
    """What the organisation's enabled agents do (its own labels for agents we don't ship)."""
    index = 1 if runner.language == "en" else 0
    rows = agents_for_org(runner.ctx.organisation).prefetch_related(None)
    lines: list[str] = []
    for name, label_es, label_en in rows.values_list("name", "label_es", "label_en"):
        phrase = CAPABILITIES.get(name)
        lines.append(phrase[index] if phrase else (label_en if index else label_es))
    return lines


# --- greeting, farewell -----------------------------------------------------------------------


def _hello(hour: int) -> tuple[str, str]:
    """(es, en) greeting for the organisation's local hour: 2 a.m. is night, not morning."""
    if MORNING_FROM <= hour < NOON:
        return "¡Buen día!", "Good morning!"
    if NOON <= hour < EVENING_FROM:
        return "¡Buenas tardes!", "Good afternoon!"
    return "¡Buenas noches!", "Good evening!"


@handles("greeting")
def greeting(step: Step, runner: Runner) -> Outcome:
    hello_es, hello_en = _hello(runner.local_now.hour)
    org = runner.ctx.organisation.name
    return Outcome(
        text=runner.t(
            es=f"{hello_es} Soy Capataz, el copiloto de {org}. Te ayudo con la agenda, los "
            "clientes, presupuestos y cobros, los técnicos y la flota. Por ejemplo: «agendale a "
            "Juan Pérez un service el martes a las 10», «¿quién nos debe plata?» o «Carlos está "
            "enfermo hoy». ¿En qué te doy una mano?",
            en=f"{hello_en} I'm Capataz, {org}'s copilot. I can help with the schedule, "
            "customers, quotes and payments, the crew and the fleet. For example: “book a "
            "service for Juan Pérez on Tuesday at 10”, “who owes us money?” or “Carlos is sick "
            "today”. What can I do for you?",
        )
    )


@handles("farewell")
def farewell(step: Step, runner: Runner) -> Outcome:
    if _THANKS.search(fold(step.text)):
        return Outcome(
            text=runner.t(
                es="¡De nada! Cualquier cosa, acá estoy.",
                en="You're welcome! I'm here if you need anything.",
            )
        )
    return Outcome(
        text=runner.t(
            es="¡Hasta luego! Cualquier cosa, acá estoy.", en="Bye! I'm here if you need anything."
        )
    )


# --- hours ------------------------------------------------------------------------------------


def _day_name(runner: Runner, index: int) -> str:
    return runner.t(es=DAY_NAMES_ES[index], en=DAY_NAMES_EN[index])


def _span(runner: Runner, entry: dict[str, Any]) -> str:
    if entry["closed"]:
        return runner.t(es="cerrado", en="closed")
    return runner.t(
        es=f"de {entry['open']} a {entry['close']}", en=f"{entry['open']}–{entry['close']}"
    )


def _week_text(runner: Runner, hours: list[dict[str, Any]]) -> str:
    """ "lunes a viernes de 08:00 a 18:00; sábado de 09:00 a 13:00; domingo cerrado"."""
    runs: list[tuple[int, int]] = []
    for index, entry in enumerate(hours):
        same = runs and _span(runner, hours[runs[-1][0]]) == _span(runner, entry)
        if same:
            runs[-1] = (runs[-1][0], index)
        else:
            runs.append((index, index))
    parts = []
    for first, last in runs:
        days = _day_name(runner, first)
        if last > first:
            to = runner.t(es=" a ", en=" to ")
            days += to + _day_name(runner, last)
        parts.append(f"{days} {_span(runner, hours[first])}")
    return "; ".join(parts)


def _next_opening(
    hours: list[dict[str, Any]], now: datetime.datetime
) -> tuple[datetime.date, str] | None:
    """The next day and time it opens, from `now` (later today included)."""
    for ahead in range(8):
        on = now.date() + datetime.timedelta(days=ahead)
        entry = hours[on.weekday()]
        if entry["closed"] or (ahead == 0 and entry["open"] <= f"{now:%H:%M}"):
            continue
        return on, str(entry["open"])
    return None


def _now_text(runner: Runner, data: dict[str, Any]) -> str:
    now = runner.local_now
    moment = f"{day(now.date(), runner.language)} {now:%H:%M}"
    hours = data["hours"]
    if data["open_now"]:
        close = hours[now.weekday()]["close"]
        return runner.t(
            es=f"Ahora ({moment}) estamos abiertos, hasta las {close}.",
            en=f"We are open now ({moment}), until {close}.",
        )
    opening = _next_opening(hours, now)
    if opening is None:
        return runner.t(
            es=f"Ahora ({moment}) estamos cerrados.", en=f"We are closed now ({moment})."
        )
    on, at = opening
    when_es = "hoy" if on == now.date() else f"el {day(on, runner.language)}"
    when_en = "today" if on == now.date() else f"on {day(on, runner.language)}"
    return runner.t(
        es=f"Ahora ({moment}) estamos cerrados; abrimos {when_es} a las {at}.",
        en=f"We are closed now ({moment}); we open {when_en} at {at}.",
    )


def _day_text(runner: Runner, data: dict[str, Any], on: datetime.date) -> str:
    entry = data["hours"][on.weekday()]
    named = day(on, runner.language)
    if entry["closed"]:
        return runner.t(es=f"El {named} no atendemos.", en=f"We are closed on {named}.")
    return runner.t(
        es=f"El {named} atendemos de {entry['open']} a {entry['close']}.",
        en=f"On {named} we are open {entry['open']}–{entry['close']}.",
    )


@handles("hours")
def opening_hours(step: Step, runner: Runner) -> Outcome:
    result = runner.call("org_info")
    if not result.ok:
        return failed(runner, result, es="No pude ver el horario", en="I couldn't check our hours")
    data = result.data
    parts = [
        runner.t(
            es=f"Nuestro horario: {_week_text(runner, data['hours'])}.",
            en=f"Our hours: {_week_text(runner, data['hours'])}.",
        )
    ]
    on = step.entities.date
    if on is not None and on != runner.local_now.date():
        parts.append(_day_text(runner, data, on))
    else:
        parts.append(_now_text(runner, data))
    phone = format_phone(data.get("phone") or "")
    contact = ", ".join(part for part in (phone, data.get("address")) if part)
    if contact:
        parts.append(runner.t(es=f"Contacto: {contact}.", en=f"Contact: {contact}."))
    return Outcome(text=" ".join(parts))


# --- pricing_info -----------------------------------------------------------------------------


def _price_query(step: Step) -> tuple[str, bool]:
    """(the service asked about, whether the operator named it as such): the service entity,
    else the words of the message that are not part of the price question."""
    if step.entities.service:
        return step.entities.service, True
    if step.text.strip() == step.intent:
        return "", False
    words = re.findall(r"[a-z0-9ñ]+", _PRICE_WORDS.sub(" ", fold(step.text)))
    return " ".join(words), False


def _price_line(runner: Runner, item: dict[str, Any]) -> str:
    language = runner.language
    net = Decimal(item["unit_price"])
    rate = Decimal(item["iva_rate"])
    gross = net * (1 + rate / 100)
    return runner.t(
        es=f"{item['name']}: {money(net, language)} + IVA {percent(rate, language)} "
        f"(final {money(gross, language)})",
        en=f"{item['name']}: {money(net, language)} + IVA {percent(rate, language)} "
        f"({money(gross, language)} in total)",
    )


@handles("pricing_info")
def pricing_info(step: Step, runner: Runner) -> Outcome:
    query, named = _price_query(step)
    matched: list[dict[str, Any]] = []
    if query:
        found = runner.call("price_list", query=query)
        if not found.ok:
            return failed(runner, found, es="No pude ver los precios", en="I couldn't check prices")
        matched = found.data["items"]
    if matched:
        head = (
            runner.t(es=f"Precios para «{query}»:", en=f"Prices for “{query}”:")
            if named
            else runner.t(es="Estos son los precios que coinciden:", en="The matching prices:")
        )
        return _prices(runner, head, matched)
    listed = runner.call("price_list")
    if not listed.ok:
        return failed(runner, listed, es="No pude ver los precios", en="I couldn't check prices")
    items = listed.data["items"]
    if not items:
        return Outcome(
            text=runner.t(
                es="Todavía no hay una lista de precios cargada, así que no puedo darte valores.",
                en="There is no price list yet, so I can't give you prices.",
            ),
            success=False,
            error="empty price list",
        )
    return _prices(runner, _unmatched_head(runner, query, named), items)


def _unmatched_head(runner: Runner, query: str, named: bool) -> str:
    if named:
        return runner.t(
            es=f"No encontré «{query}» en la lista de precios. Estos son los principales:",
            en=f"“{query}” is not in the price list. These are the main items:",
        )
    if query:
        return runner.t(
            es="No encontré ese servicio en la lista de precios. Estos son los principales:",
            en="That service is not in the price list. These are the main items:",
        )
    return runner.t(es="Nuestra lista de precios:", en="Our price list:")


def _prices(runner: Runner, head: str, items: list[dict[str, Any]]) -> Outcome:
    listing = bullets(_price_line(runner, item) for item in items[:PRICES_SHOWN])
    more = len(items) - PRICES_SHOWN
    tail_es = f"\n(y {more} ítems más)" if more > 0 else ""
    tail_en = f"\n(and {more} more items)" if more > 0 else ""
    return Outcome(
        text=runner.t(
            es=f"{head}\n{listing}{tail_es}\nLos precios son en pesos y sin IVA; al lado va el "
            "final con IVA. Son de lista: para un trabajo concreto te armo el presupuesto.",
            en=f"{head}\n{listing}{tail_en}\nPrices are in pesos before IVA (VAT); the total "
            "with IVA is next to each. These are list prices: for a specific job I can make a "
            "quote.",
        )
    )


# --- unknown ----------------------------------------------------------------------------------


@handles("unknown")
def unknown(step: Step, runner: Runner) -> Outcome:
    org = runner.ctx.organisation.name
    if step.index > 0:
        # Inside a chain the real work is answered by the other steps: one line is enough.
        return Outcome(
            text=runner.t(
                es="Lo otro que me pediste queda fuera de lo que puedo hacer acá.",
                en="The other thing you asked is outside what I can do here.",
            )
        )
    listing = bullets(_capabilities(runner))
    return Outcome(
        text=runner.t(
            es=f"Perdón, eso queda fuera de lo que puedo hacer: soy el copiloto de la oficina de "
            f"{org}. Te puedo ayudar con:\n{listing}",
            en=f"Sorry, that is outside what I can do: I'm the office copilot of {org}. I can "
            f"help with:\n{listing}",
        )
    )
