"""Handlers of the proactive agent (O11): work worth offering before anyone asks.

Each answers with the concrete list the office can act on — which customer, which equipment,
how overdue, which phone to call — instead of a general reminder, and says what to do next.
One tool call each.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable
from typing import Any

from agents.base import Outcome, Runner, Step, handles
from agents.phrasing import bullets, failed, full_date, when
from agents.subjects import customer_ref, job_ref, same_person
from business.selectors import SEASONAL_CAMPAIGNS
from business.services import infer_skill
from business.validators import format_phone
from common.text import fold

LISTED = 12  # customers listed in one answer
DEFAULT_WITHIN_DAYS = 30
DEFAULT_FOLLOW_UP_DAYS = 14
MAX_FOLLOW_UP_DAYS = 90
MONTHS_ES = ("enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto",
             "septiembre", "octubre", "noviembre", "diciembre")  # fmt: skip
MONTHS_EN = ("January", "February", "March", "April", "May", "June", "July", "August",
             "September", "October", "November", "December")  # fmt: skip
_WEEK = re.compile(r"\b(?:semana|week)\b")
_MONTH = re.compile(r"\b(?:mes|month)\b")

CAMPAIGNS: dict[str, dict[str, str]] = {
    "summer_ac": {
        "es": "aire acondicionado antes del verano",
        "en": "air conditioning before summer",
        "pitch_es": "se viene el calor y es el mejor momento para hacerle el service al aire "
        "acondicionado (limpieza de filtros, control de gas y de funcionamiento) antes de que "
        "lo necesites",
        "pitch_en": "summer is coming and now is the best time to service your air conditioner "
        "(filter cleaning, gas and performance check) before you need it",
    },
    "winter_heating": {
        "es": "calefacción y gas antes del invierno",
        "en": "heating and gas before winter",
        "pitch_es": "se viene el frío y es el mejor momento para revisar la calefacción y los "
        "artefactos de gas (control de pérdidas, ventilación y funcionamiento) antes de que "
        "los necesites",
        "pitch_en": "winter is coming and now is the best time to check your heating and gas "
        "appliances (leaks, ventilation and performance) before you need them",
    },
}


def _equipment(row: dict[str, Any]) -> str:
    return " ".join(str(part) for part in (row["kind"], row.get("brand"), row.get("model")) if part)


def _contact(customer: dict[str, Any]) -> str:
    return f" ({format_phone(customer['phone'])})" if customer.get("phone") else ""


def _by_customer(rows: Iterable[dict[str, Any]]) -> list[tuple[dict[str, Any], list[Any]]]:
    """Rows grouped by their customer, in the order the customers first appear."""
    groups: dict[int, tuple[dict[str, Any], list[Any]]] = {}
    for row in rows:
        customer = row["customer"]
        groups.setdefault(int(customer["id"]), (customer, []))[1].append(row)
    return list(groups.values())


def _more(runner: Runner, shown: int, total: int) -> str:
    if total <= shown:
        return ""
    return runner.t(es=f"\n(y {total - shown} más)", en=f"\n(and {total - shown} more)")


def _for_customer(step: Step, runner: Runner, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Only the named customer's rows (a name as written, or one an earlier step produced)."""
    who = customer_ref(step, runner)
    if who is None or who.source == "discussed":
        return rows
    return [
        row
        for row in rows
        if (who.id is not None and row["customer"]["id"] == who.id)
        or (who.id is None and same_person(who.name, row["customer"]["name"]))
    ]


# --- maintenance_due --------------------------------------------------------------------------


def _within_days(step: Step, runner: Runner) -> int:
    on = step.entities.date
    if on is not None and on > runner.today:
        return min((on - runner.today).days, 365)
    return DEFAULT_WITHIN_DAYS


def _due_text(runner: Runner, row: dict[str, Any]) -> str:
    language = runner.language
    days, due = row["days_overdue"], full_date(row["due_on"], language)
    if days > 0:
        return runner.t(
            es=f"{_equipment(row)}, vencido hace {days} días (tocaba el {due})",
            en=f"{_equipment(row)}, {days} days overdue (due {due})",
        )
    if days == 0:
        return runner.t(es=f"{_equipment(row)}, vence hoy", en=f"{_equipment(row)}, due today")
    return runner.t(
        es=f"{_equipment(row)}, vence en {-days} días ({due})",
        en=f"{_equipment(row)}, due in {-days} days ({due})",
    )


def _due_group(runner: Runner, rows: list[dict[str, Any]], *, es: str, en: str) -> str:
    groups = _by_customer(rows)
    listing = bullets(
        f"{customer['name']}{_contact(customer)}: "
        + "; ".join(_due_text(runner, row) for row in items)
        for customer, items in groups[:LISTED]
    )
    head = runner.t(es=es, en=en)
    return f"{head}\n{listing}{_more(runner, min(len(groups), LISTED), len(groups))}"


@handles("maintenance_due")
def maintenance_due(step: Step, runner: Runner) -> Outcome:
    within = _within_days(step, runner)
    result = runner.call("maintenance_due_list", within_days=within)
    if not result.ok:
        return failed(
            runner, result, es="No pude ver los mantenimientos", en="I couldn't list maintenance"
        )
    rows = _for_customer(step, runner, result.data["equipment"])
    skill = infer_skill(step.entities.service) if step.entities.service else None
    if skill:
        rows = [row for row in rows if row["skill"] == skill]
    if not rows:
        return Outcome(
            text=runner.t(
                es=f"No hay equipos con el mantenimiento vencido ni por vencer en los próximos "
                f"{within} días (los que ya tienen un trabajo agendado no cuentan).",
                en=f"No equipment is overdue or due for maintenance in the next {within} days "
                "(those with a job already booked don't count).",
            )
        )
    overdue = [row for row in rows if row["days_overdue"] > 0]
    soon = [row for row in rows if row["days_overdue"] <= 0]
    # The tool lists the first 50; unfiltered, its totals are the real ones.
    whole = len(rows) == len(result.data["equipment"])
    total = result.data["total"] if whole else len(rows)
    late = result.data["overdue"] if whole else len(overdue)
    customers = len(_by_customer(rows))
    parts = [
        runner.t(
            es=f"{total} equipos de {customers} clientes necesitan mantenimiento ({late} "
            "vencidos; no cuento los que ya tienen una visita de ese rubro agendada):",
            en=f"{total} pieces of equipment of {customers} customers need maintenance ({late} "
            "overdue; those with a visit of that trade booked are not counted):",
        )
    ]
    if overdue:
        parts.append(_due_group(runner, overdue, es="Vencidos:", en="Overdue:"))
    if soon:
        parts.append(
            _due_group(
                runner,
                soon,
                es=f"Vencen en los próximos {within} días:",
                en=f"Due in the next {within} days:",
            )
        )
    parts.append(
        runner.t(
            es="¿Les agendo la visita? Por ejemplo: «agendale a <cliente> un service el martes».",
            en="Shall I book the visits? For example: “book a service for <customer> on Tuesday”.",
        )
    )
    return Outcome(text="\n".join(parts))


# --- follow_up --------------------------------------------------------------------------------


def _follow_up_days(step: Step, runner: Runner) -> int:
    on = step.entities.date
    today = runner.today
    if on is not None and on < today:
        return max(1, min((today - on).days + 1, MAX_FOLLOW_UP_DAYS))
    folded = fold(step.text)
    if _WEEK.search(folded):
        return 7
    if _MONTH.search(folded):
        return 30
    return DEFAULT_FOLLOW_UP_DAYS


def _follow_up_line(runner: Runner, row: dict[str, Any]) -> str:
    language = runner.language
    customer = row["customer"]
    by_es = f" por {row['technician']}" if row.get("technician") else ""
    by_en = f" by {row['technician']}" if row.get("technician") else ""
    finished = when(row["completed_at"], language)
    return runner.t(
        es=f"#{row['job_id']} {row['service']} — {customer['name']}{_contact(customer)}, "
        f"terminado el {finished}{by_es}",
        en=f"#{row['job_id']} {row['service']} — {customer['name']}{_contact(customer)}, "
        f"finished {finished}{by_en}",
    )


@handles("follow_up")
def follow_up(step: Step, runner: Runner) -> Outcome:
    days = _follow_up_days(step, runner)
    result = runner.call("follow_up_list", days=days)
    if not result.ok:
        return failed(
            runner, result, es="No pude ver los seguimientos", en="I couldn't list the follow-ups"
        )
    rows = _for_customer(step, runner, result.data["jobs"])
    job_id = job_ref(step, runner)
    if job_id is not None and step.entities.customer is None:
        rows = [row for row in rows if row["job_id"] == job_id] or rows
    if not rows:
        return Outcome(
            text=runner.t(
                es=f"No hay trabajos terminados en los últimos {days} días que esperen "
                "seguimiento.",
                en=f"No job finished in the last {days} days is waiting for a follow-up.",
            )
        )
    listing = bullets(_follow_up_line(runner, row) for row in rows[:LISTED])
    total = len(rows) if len(rows) < len(result.data["jobs"]) else result.data["total"]
    return Outcome(
        text=runner.t(
            es=f"{total} trabajos terminados en los últimos {days} días sin seguimiento, los más "
            f"viejos primero:\n{listing}{_more(runner, min(len(rows), LISTED), total)}\n"
            "Conviene llamarlos para preguntar cómo quedó el trabajo y si necesitan algo más.",
            en=f"{total} jobs finished in the last {days} days without a follow-up, oldest "
            f"first:\n{listing}{_more(runner, min(len(rows), LISTED), total)}\n"
            "Call them to ask how the work turned out and whether they need anything else.",
        )
    )


# --- seasonal_reminder ------------------------------------------------------------------------


def _next_campaign(today: datetime.date) -> tuple[str, int]:
    """The next campaign after this month and the month it starts."""
    for ahead in range(1, 13):
        month = (today.month - 1 + ahead) % 12 + 1
        if month in SEASONAL_CAMPAIGNS:
            return SEASONAL_CAMPAIGNS[month][0], month
    raise LookupError("no seasonal campaign is configured")


def _no_campaign(runner: Runner, today: datetime.date) -> Outcome:
    campaign, month = _next_campaign(today)
    names = CAMPAIGNS.get(campaign, {"es": campaign, "en": campaign})
    return Outcome(
        text=runner.t(
            es=f"Ahora no hay campaña de temporada. La próxima es la de {names['es']}, que "
            f"arranca en {MONTHS_ES[month - 1]}.",
            en=f"There is no seasonal campaign right now. The next one is {names['en']}, "
            f"starting in {MONTHS_EN[month - 1]}.",
        )
    )


def _target_line(runner: Runner, customer: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    language = runner.language

    def one(row: dict[str, Any]) -> str:
        if row["never_serviced"]:
            return runner.t(
                es=f"{_equipment(row)} (sin service nuestro)",
                en=f"{_equipment(row)} (never serviced by us)",
            )
        last = full_date(row["last_service_on"], language)
        return runner.t(
            es=f"{_equipment(row)} (último service {last})",
            en=f"{_equipment(row)} (last service {last})",
        )

    return f"{customer['name']}{_contact(customer)}: " + "; ".join(one(row) for row in rows)


@handles("seasonal_reminder")
def seasonal_reminder(step: Step, runner: Runner) -> Outcome:
    result = runner.call("seasonal_targets")
    if not result.ok:
        return failed(
            runner, result, es="No pude armar la campaña", en="I couldn't prepare the campaign"
        )
    data = result.data
    campaign = data.get("campaign")
    if not campaign:
        return _no_campaign(runner, datetime.date.fromisoformat(data["today"]))
    names = CAMPAIGNS.get(campaign, {"es": campaign, "en": campaign, "pitch_es": "",
                                     "pitch_en": ""})  # fmt: skip
    rows = data["equipment"]
    if not rows:
        return Outcome(
            text=runner.t(
                es=f"Campaña de {names['es']}: no hay equipos para ofrecer; todos tienen el "
                "service al día o un trabajo agendado.",
                en=f"Campaign for {names['en']}: no equipment to offer it to; everything is "
                "serviced or already booked.",
            )
        )
    groups = _by_customer(rows)
    never = sum(1 for row in rows if row["never_serviced"])
    listing = bullets(_target_line(runner, c, items) for c, items in groups[:LISTED])
    more = _more(runner, min(len(groups), LISTED), len(groups))
    org = runner.ctx.organisation.name
    return Outcome(
        text=runner.t(
            es=f"Campaña de {names['es']}: {data['total']} equipos de {len(groups)} clientes "
            f"para ofrecerles un service ({never} sin service nuestro):\n{listing}{more}\n"
            f"Mensaje sugerido: «Hola {{nombre}}, te escribimos de {org}: {names['pitch_es']}. "
            "¿Te agendamos una visita? Respondé este mensaje y coordinamos.»",
            en=f"Campaign for {names['en']}: {data['total']} pieces of equipment of "
            f"{len(groups)} customers to offer a service to ({never} never serviced by us):\n"
            f"{listing}{more}\n"
            f"Suggested message: “Hi {{name}}, this is {org}: {names['pitch_en']}. Shall we "
            "book a visit? Reply to this message and we'll arrange it.”",
        )
    )
