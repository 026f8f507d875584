"""How the sub-agents' handlers say things: money, dates, lists and the usual outcomes.

Replies are written in the language of the message, so every helper takes the language
("es" → es-AR, anything else → English) instead of reading Django's active translation.
Money is always ARS: `$ 1.234,56` in Spanish, `$1,234.56` in English.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from agents.base import Outcome
from business.models import money as round_money

if TYPE_CHECKING:
    from agents.base import Runner
    from agents.registry import ToolResult

_NOT_FOUND = re.compile(r"\bnot found\b")
DAYS_ES = ("lunes", "martes", "miércoles", "jueves", "viernes", "sábado", "domingo")
DAYS_EN = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
MONTHS_EN = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def is_en(language: str) -> bool:
    return language.startswith("en")


def money(value: Decimal | str | int, language: str) -> str:
    amount = round_money(Decimal(str(value)))
    whole, _dot, cents = f"{abs(amount):.2f}".partition(".")
    grouped = f"{int(whole):,}"
    sign = "-" if amount < 0 else ""
    if is_en(language):
        return f"{sign}${grouped}.{cents}"
    return f"{sign}$ {grouped.replace(',', '.')},{cents}"


def percent(rate: Decimal | str, language: str) -> str:
    text = f"{Decimal(str(rate)).normalize():f}"
    return f"{text}%" if is_en(language) else f"{text.replace('.', ',')}%"


def moment_of(value: datetime.datetime | str) -> datetime.datetime:
    """A tool's ISO date-time (already local, with its offset) or a datetime, as a datetime."""
    return value if isinstance(value, datetime.datetime) else datetime.datetime.fromisoformat(value)


def day(value: datetime.date, language: str) -> str:
    """ "jueves 26/11" / "Thu 26 Nov"."""
    if is_en(language):
        return f"{DAYS_EN[value.weekday()]} {value.day} {MONTHS_EN[value.month - 1]}"
    return f"{DAYS_ES[value.weekday()]} {value:%d/%m}"


def full_date(value: datetime.date | str, language: str) -> str:
    """ "02/11/2026" / "2 Nov 2026" (for dates that may lie in another year)."""
    if isinstance(value, str):
        value = datetime.date.fromisoformat(value[:10])
    if is_en(language):
        return f"{value.day} {MONTHS_EN[value.month - 1]} {value.year}"
    return f"{value:%d/%m/%Y}"


def when(value: datetime.datetime | str, language: str) -> str:
    """ "jueves 26/11 10:00" / "Thu 26 Nov 10:00", in the wall time the value carries."""
    moment = moment_of(value)
    return f"{day(moment.date(), language)} {moment:%H:%M}"


def count(number: int, one: str, many: str) -> str:
    """ "1 factura" / "3 facturas"."""
    return f"{number} {one if number == 1 else many}"


def bullets(lines: Iterable[str]) -> str:
    return "\n".join(f"- {line}" for line in lines)


def numbered(lines: Sequence[str]) -> str:
    return "\n".join(f"{n}. {line}" for n, line in enumerate(lines, start=1))


def slot_line(slot: dict[str, Any], language: str) -> str:
    """One free slot of `slots_find` / a refusal's alternatives: when and with whom."""
    with_ = "with" if is_en(language) else "con"
    return f"{when(slot['start'], language)} {with_} {slot['technician']}"


def job_line(job: dict[str, Any], language: str) -> str:
    """A job of the tools' payload in one line: #id, service, customer, when, technician."""
    parts = [f"#{job['id']} {job['service']} — {job['customer']}", when(job["start"], language)]
    if job.get("technician"):
        parts.append(("with " if is_en(language) else "con ") + str(job["technician"]))
    return ", ".join(parts)


def job_short(job: dict[str, Any], language: str) -> str:
    """ "#12 (Instalación de split, lunes 23/11 08:00)" — when the customer is already named."""
    return f"#{job['id']} ({job['service']}, {when(job['start'], language)})"


def job_label(job: dict[str, Any]) -> str:
    """The label a job mutation carries into the conversation state (language-neutral)."""
    start = moment_of(job["start"])
    return f"#{job['id']} {job['service']} — {job['customer']} {start:%d/%m %H:%M}"


def services_speak(language: str) -> bool:
    """Whether the services' own messages (translated to the active Django language) are in
    the reply's language, so they can be quoted without mixing languages."""
    from django.utils.translation import get_language

    return (get_language() or "es")[:2] == language[:2]


def service_reason(runner: Runner, result: ToolResult, *, es: str, en: str) -> str:
    """The tool's reason as a sentence (no final period) when it reads in the reply's language,
    else the given general one."""
    if not services_speak(runner.language):
        return runner.t(es=es, en=en)
    text = (result.error or result.summary).strip().rstrip(".")
    if ": " in text and text.split(": ", 1)[0].isidentifier():
        text = text.split(": ", 1)[1]  # "cuit: El cliente…" → "El cliente…"
    return text


def _candidate(customer: dict[str, Any]) -> str:
    parts = (
        f"{customer['name']} (#{customer['id']})",
        customer.get("phone"),
        customer.get("address"),
    )
    return " — ".join(part for part in parts if part)


def customer_problem(runner: Runner, name: str, result: ToolResult) -> Outcome | None:
    """A tool that could not tell which customer `name` is: the candidates to choose from, or
    "not found" with the offer to register them. None for any other failure."""
    if not result.error.startswith("customer"):
        return None
    candidates = result.data.get("candidates")
    if candidates:
        listing = bullets(_candidate(c) for c in candidates)
        return Outcome(
            text=runner.t(
                es=f"Hay varios clientes que coinciden con «{name}»:\n{listing}\n¿Cuál es?",
                en=f"Several customers match “{name}”:\n{listing}\nWhich one is it?",
            ),
            success=False,
            error=result.error,
        )
    if "not found" in result.error:
        return Outcome(
            text=runner.t(
                es=f"No encontré ningún cliente «{name}». ¿Querés que lo registre? Pasame su "
                "teléfono y dirección.",
                en=f"I couldn't find a customer “{name}”. Shall I register them? Send me their "
                "phone and address.",
            ),
            success=False,
            error=result.error,
        )
    return None


def ask(runner: Runner, *, es: str, en: str, error: str) -> Outcome:
    """Something the step needs is missing: nothing was done, and the reply asks for it."""
    return Outcome(text=runner.t(es=es, en=en), success=False, error=error)


def failed(runner: Runner, result: ToolResult, *, es: str, en: str) -> Outcome:
    """A tool said no: what could not be done, and the tool's reason (kept as the error).

    "… not found" is said in the reply's language: a row of another organisation reads exactly
    like a missing one, and the tools word that in English.
    """
    reason = result.error or result.summary
    if _NOT_FOUND.search(reason):
        headline = runner.t(es=es, en=en)
        if headline.startswith(("No encontré", "I couldn't find")):
            return Outcome(text=f"{headline}.", success=False, error=reason)
        said = runner.t(es="no lo encontré", en="not found")
        return Outcome(text=f"{headline}: {said}.", success=False, error=reason)
    return Outcome(
        text=runner.t(es=f"{es}: {reason}", en=f"{en}: {reason}"), success=False, error=reason
    )


def held_id(result: ToolResult) -> int | None:
    """The pending approval's id when the gate held this call instead of running it."""
    if result.ok and result.data.get("held"):
        return int(result.data["pending_approval_id"])
    return None


def held(runner: Runner, approval_id: int, *, es: str, en: str) -> Outcome:
    """The action waits for a manager: say what it is and that nothing has changed yet."""
    return Outcome(
        text=runner.t(
            es=f"{es} quedó pendiente de aprobación de un gerente (pedido #{approval_id}); "
            "hasta que lo aprueben no se hace ningún cambio.",
            en=f"{en} is waiting for a manager's approval (request #{approval_id}); "
            "nothing changes until it is approved.",
        ),
        success=True,
        pending_approvals=[approval_id],
    )
