"""Handlers of the general agent (O11): greetings, goodbyes, opening hours, prices and what is
out of scope.

Hours come from the organisation's own configuration, with whether it is open right now in its
timezone and, when closed, when it opens next; prices from its price list, with IVA spelled
out. Out-of-scope asks get a polite no and the list of what the office's enabled agents do.
"""

from __future__ import annotations

import datetime
import re

from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from agents.base import Outcome, Runner, Step, handles
from agents.general.tools import DayHours, OrgInfo
from agents.payloads import PriceItemRow, PriceList
from agents.phrasing import bullets, day, failed, money, percent
from agents.selectors import agents_for_org
from business.validators import format_phone
from common.text import fold

PRICES_SHOWN = 8
# Local hours where the greeting changes: morning from 6, afternoon from noon, night from 20.
MORNING_FROM, NOON, EVENING_FROM = 6, 12, 20
DAY_NAMES = (
    _("Monday"), _("Tuesday"), _("Wednesday"), _("Thursday"), _("Friday"), _("Saturday"),
    _("Sunday"),
)  # fmt: skip
# What each shipped agent does, for "what can you do" answers.
CAPABILITIES = {
    "scheduling": _("scheduling: book, move or cancel jobs and find free slots"),
    "customer": _("customers: look them up, register them, update their data and check CUITs"),
    "financial": _("quotes, invoices and payments"),
    "fleet": _("crew and fleet: absences, redistribution, dispatch and vehicles"),
    "escalation": _("complaints, emergencies and handing over to a person"),
    "proactive": _("maintenance due, follow-ups and seasonal campaigns"),
    "general": _("opening hours and the price list"),
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
    english = runner.language == "en"
    rows = agents_for_org(runner.ctx.organisation).prefetch_related(None)
    lines: list[str] = []
    for name, label_es, label_en in rows.values_list("name", "label_es", "label_en"):
        phrase = CAPABILITIES.get(name)
        if phrase is not None:
            lines.append(runner.say(phrase))
        else:  # the organisation's own agent: its own labels
            lines.append(label_en if english else label_es)
    return lines


# --- greeting, farewell -----------------------------------------------------------------------


def _hello(runner: Runner, hour: int) -> str:
    """The greeting for the organisation's local hour: 2 a.m. is night, not morning."""
    if MORNING_FROM <= hour < NOON:
        return runner.say(_("Good morning!"))
    if NOON <= hour < EVENING_FROM:
        return runner.say(_("Good afternoon!"))
    return runner.say(_("Good evening!"))


@handles("greeting")
def greeting(step: Step, runner: Runner) -> Outcome:
    return Outcome(
        text=runner.say(
            _(
                "%(hello)s I'm Capataz, %(org)s's copilot. I can help with the schedule, "
                "customers, quotes and payments, the crew and the fleet. For example: “book a "
                "service for Juan Pérez on Tuesday at 10”, “who owes us money?” or “Carlos is "
                "sick today”. What can I do for you?"
            ),
            hello=_hello(runner, runner.local_now.hour),
            org=runner.ctx.organisation.name,
        )
    )


@handles("farewell")
def farewell(step: Step, runner: Runner) -> Outcome:
    if _THANKS.search(fold(step.text)):
        return Outcome(text=runner.say(_("You're welcome! I'm here if you need anything.")))
    return Outcome(text=runner.say(_("Bye! I'm here if you need anything.")))


# --- hours ------------------------------------------------------------------------------------


def _day_name(runner: Runner, index: int) -> str:
    return runner.say(DAY_NAMES[index])


def _span(runner: Runner, entry: DayHours) -> str:
    if entry.closed:
        return runner.say(pgettext_lazy("opening hours", "closed"))
    return runner.say(_("%(open)s–%(close)s"), open=entry.open, close=entry.close)


def _week_text(runner: Runner, hours: tuple[DayHours, ...]) -> str:
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
            days = runner.say(_("%(first)s to %(last)s"), first=days, last=_day_name(runner, last))
        parts.append(f"{days} {_span(runner, hours[first])}")
    return "; ".join(parts)


def _next_opening(
    hours: tuple[DayHours, ...], now: datetime.datetime
) -> tuple[datetime.date, str] | None:
    """The next day and time it opens, from `now` (later today included)."""
    for ahead in range(8):
        on = now.date() + datetime.timedelta(days=ahead)
        entry = hours[on.weekday()]
        if entry.open is None or (ahead == 0 and entry.open <= f"{now:%H:%M}"):
            continue
        return on, entry.open
    return None


def _now_text(runner: Runner, info: OrgInfo) -> str:
    now = runner.local_now
    moment = f"{day(now.date(), runner.language)} {now:%H:%M}"
    hours = info.hours
    if info.open_now:
        close = hours[now.weekday()].close
        return runner.say(
            _("We are open now (%(moment)s), until %(close)s."), moment=moment, close=close
        )
    opening = _next_opening(hours, now)
    if opening is None:
        return runner.say(_("We are closed now (%(moment)s)."), moment=moment)
    on, at = opening
    if on == now.date():
        return runner.say(
            _("We are closed now (%(moment)s); we open today at %(at)s."), moment=moment, at=at
        )
    return runner.say(
        _("We are closed now (%(moment)s); we open on %(day)s at %(at)s."),
        moment=moment,
        day=day(on, runner.language),
        at=at,
    )


def _day_text(runner: Runner, info: OrgInfo, on: datetime.date) -> str:
    entry = info.hours[on.weekday()]
    named = day(on, runner.language)
    if entry.closed:
        return runner.say(_("We are closed on %(day)s."), day=named)
    return runner.say(
        _("On %(day)s we are open %(open)s–%(close)s."),
        day=named,
        open=entry.open,
        close=entry.close,
    )


@handles("hours")
def opening_hours(step: Step, runner: Runner) -> Outcome:
    result = runner.call("org_info")
    if (info := OrgInfo.of(result)) is None:
        return failed(runner, result, runner.say(_("I couldn't check our hours")))
    parts = [runner.say(_("Our hours: %(hours)s."), hours=_week_text(runner, info.hours))]
    on = step.entities.date
    if on is not None and on != runner.local_now.date():
        parts.append(_day_text(runner, info, on))
    else:
        parts.append(_now_text(runner, info))
    phone = format_phone(info.phone or "")
    contact = ", ".join(part for part in (phone, info.address) if part)
    if contact:
        parts.append(runner.say(_("Contact: %(contact)s."), contact=contact))
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


def _price_line(runner: Runner, item: PriceItemRow) -> str:
    language = runner.language
    net, rate = item.unit_price, item.iva_rate
    gross = net * (1 + rate / 100)
    return runner.say(
        _("%(name)s: %(net)s + IVA %(rate)s (%(gross)s in total)"),
        name=item.name,
        net=money(net, language),
        rate=percent(rate, language),
        gross=money(gross, language),
    )


@handles("pricing_info")
def pricing_info(step: Step, runner: Runner) -> Outcome:
    query, named = _price_query(step)
    matched: tuple[PriceItemRow, ...] = ()
    if query:
        found = runner.call("price_list", query=query)
        if (prices := PriceList.of(found)) is None:
            return failed(runner, found, runner.say(_("I couldn't check prices")))
        matched = prices.items
    if matched:
        head = (
            runner.say(_("Prices for “%(query)s”:"), query=query)
            if named
            else runner.say(_("The matching prices:"))
        )
        return _prices(runner, head, matched)
    listed = runner.call("price_list")
    if (every := PriceList.of(listed)) is None:
        return failed(runner, listed, runner.say(_("I couldn't check prices")))
    items = every.items
    if not items:
        return Outcome(
            text=runner.say(_("There is no price list yet, so I can't give you prices.")),
            success=False,
            error="empty price list",
        )
    return _prices(runner, _unmatched_head(runner, query, named), items)


def _unmatched_head(runner: Runner, query: str, named: bool) -> str:
    if named:
        return runner.say(
            _("“%(query)s” is not in the price list. These are the main items:"), query=query
        )
    if query:
        return runner.say(_("That service is not in the price list. These are the main items:"))
    return runner.say(_("Our price list:"))


def _prices(runner: Runner, head: str, items: tuple[PriceItemRow, ...]) -> Outcome:
    listing = bullets(_price_line(runner, item) for item in items[:PRICES_SHOWN])
    more = len(items) - PRICES_SHOWN
    tail = "\n" + runner.say(_("(and %(n)s more items)"), n=more) if more > 0 else ""
    return Outcome(
        text=runner.say(
            _(
                "%(head)s\n%(listing)s%(more)s\nPrices are in pesos before IVA (VAT); the total "
                "with IVA is next to each. These are list prices: for a specific job I can make "
                "a quote."
            ),
            head=head,
            listing=listing,
            more=tail,
        )
    )


# --- unknown ----------------------------------------------------------------------------------


@handles("unknown")
def unknown(step: Step, runner: Runner) -> Outcome:
    org = runner.ctx.organisation.name
    if step.index > 0:
        # Inside a chain the real work is answered by the other steps: one line is enough.
        return Outcome(
            text=runner.say(_("The other thing you asked is outside what I can do here."))
        )
    listing = bullets(_capabilities(runner))
    return Outcome(
        text=runner.say(
            _(
                "Sorry, that is outside what I can do: I'm the office copilot of %(org)s. I can "
                "help with:\n%(listing)s"
            ),
            org=org,
            listing=listing,
        )
    )
