"""How the sub-agents' handlers say things: money, dates, lists and the usual outcomes —
including a clarifying question (O8), the operator's answer to a listed choice, and what is said
instead of a third question once the conversation's limit is reached.

Replies are written in the language of the message, so every helper takes the language
("es" → es-AR, anything else → English) instead of reading Django's active translation.
Money is always ARS: `$ 1.234,56` in Spanish, `$1,234.56` in English.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from django.utils.functional import Promise
from django.utils.translation import get_language
from django.utils.translation import gettext_lazy as _

from agents.base import Clarification, Outcome, Runner, Step
from agents.defaults import intent_phrase
from agents.payloads import CustomerRow, JobRow, Slot
from agents.registry import ToolResult
from agents.selectors import specs_of_agents
from business.models import money as round_money
from business.validators import format_phone
from common.text import fold
from common.wording import say
from nlu.values import IntentSpecs

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


def slot_line(slot: Slot, language: str) -> str:
    """One free slot of `slots_find` / a refusal's alternatives: when and with whom."""
    with_ = "with" if is_en(language) else "con"
    return f"{when(slot.start, language)} {with_} {slot.technician}"


ALSO_FREE_NAMED = 3  # others named beside a free slot's technician; the rest are counted


def free_slot_line(slot: Slot, language: str) -> str:
    """A slot of "what is free": with whom, and who else is free then
    ("mañana 08:00 con Lucas Gómez (también Ana Ruiz y Marta Díaz)")."""
    line = slot_line(slot, language)
    if not slot.also_free:
        return line
    en = is_en(language)
    named = list(slot.also_free[:ALSO_FREE_NAMED])
    more = len(slot.also_free) - len(named)
    if more:
        named.append(f"{more} more" if en else f"{more} más")
    also = "also" if en else "también"
    and_ = "and" if en else "y"
    listed = named[0] if len(named) == 1 else f"{', '.join(named[:-1])} {and_} {named[-1]}"
    return f"{line} ({also} {listed})"


class JobFacts(Protocol):
    """What a job line says of a job (a JobRow has it, and a handler's own view of one)."""

    @property
    def id(self) -> int: ...
    @property
    def service(self) -> str: ...
    @property
    def customer(self) -> str: ...
    @property
    def start(self) -> datetime.datetime: ...
    @property
    def technician(self) -> str | None: ...


# A job as typed values, or as JSON (a mutation's, or a tool's not yet typed).
JobLike = JobFacts | Mapping[str, Any]


def _of(job: JobLike, name: str) -> Any:
    return job.get(name) if isinstance(job, Mapping) else getattr(job, name)


def job_line(job: JobLike, language: str) -> str:
    """A job in one line: #id, service, customer, when, technician."""
    return job_listed(job, language, when(_of(job, "start"), language))


def job_listed(job: JobLike, language: str, moment: str = "") -> str:
    """ "#239 Instalación split — Federico Castro[, <moment>], con Martín Sosa": `moment` is
    left out where the list's heading already says the day (an agenda puts the hours first)."""
    parts = [f"#{_of(job, 'id')} {_of(job, 'service')} — {_of(job, 'customer')}"]
    if moment:
        parts.append(moment)
    if technician := _of(job, "technician"):
        parts.append(say(language, _("with %(technician)s"), technician=technician))
    return ", ".join(parts)


def job_short(job: JobLike, language: str) -> str:
    """ "#12 (Instalación de split, lunes 23/11 08:00)" — when the customer is already named."""
    return f"#{_of(job, 'id')} ({_of(job, 'service')}, {when(_of(job, 'start'), language)})"


def job_label(job: JobLike) -> str:
    """The label a job mutation carries into the conversation state (language-neutral)."""
    start = moment_of(_of(job, "start"))
    return f"#{_of(job, 'id')} {_of(job, 'service')} — {_of(job, 'customer')} {start:%d/%m %H:%M}"


def services_speak(language: str) -> bool:
    """Whether the services' own messages (translated to the active Django language) are in
    the reply's language, so they can be quoted without mixing languages."""
    return (get_language() or "es")[:2] == language[:2]


def service_reason(runner: Runner, result: ToolResult, general: str) -> str:
    """The tool's reason as a sentence (no final period) when it reads in the reply's language,
    else the given `general` one (already in the reply's language)."""
    if not services_speak(runner.language):
        return general
    text = (result.error or result.summary).strip().rstrip(".")
    if ": " in text and text.split(": ", 1)[0].isidentifier():
        text = text.split(": ", 1)[1]  # "cuit: El cliente…" → "El cliente…"
    return text


def customer_candidate(customer: CustomerRow | dict[str, Any]) -> str:
    """A customer to choose from: "Juan Pérez (#3) — +54 11 … — Mitre 123, Lanús". A found
    customer's row, or a refusal's candidate (a failed call's JSON)."""
    if isinstance(customer, CustomerRow):
        parts: tuple[str | None, ...] = (
            f"{customer.name} (#{customer.id})",
            format_phone(customer.phone),
            customer.address,
        )
        return " — ".join(part for part in parts if part)
    parts = (
        f"{customer['name']} (#{customer['id']})",
        format_phone(customer.get("phone") or ""),
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
        listing = bullets(customer_candidate(c) for c in candidates)
        return ask(
            runner,
            runner.say(
                _("Several customers match “%(name)s”:\n%(listing)s\nWhich one is it?"),
                name=name,
                listing=listing,
            ),
            error=result.error,
            slot="customer_choice",
        )
    if "not found" in result.error:
        return Outcome(
            text=runner.say(
                _(
                    "I couldn't find a customer “%(name)s”. Shall I register them? Send me their "
                    "phone and address."
                ),
                name=name,
            ),
            success=False,
            error=result.error,
        )
    return None


# --- clarification (O8) -----------------------------------------------------------------------

# What is still missing, by slot: the second half of that statement.
_MISSING = {
    "customer": ("no sé de qué cliente se trata", "I don't know which customer it is"),
    "customer_choice": (
        "hay varios clientes con ese nombre y no sé cuál es",
        "several customers match and I don't know which one",
    ),
    "name": ("no sé cómo se llama el cliente", "I don't know the customer's name"),
    "duplicate": (
        "ya hay clientes parecidos registrados y no sé si es alguno de ellos",
        "similar customers are already on file and I don't know whether it is one of them",
    ),
    "job": ("no sé de qué trabajo se trata", "I don't know which job it is"),
    "job_choice": (
        "hay varios trabajos abiertos y no sé cuál es",
        "there are several open jobs and I don't know which one",
    ),
    "jobs": ("no sé qué trabajos son", "I don't know which jobs they are"),
    "date": ("no sé para qué día u hora", "I don't know the day or the time"),
    "time": ("no sé en qué horario", "I don't know which time"),
    "technician": ("no sé qué técnico es", "I don't know which technician it is"),
    "technician_choice": (
        "hay varios técnicos con ese nombre y no sé cuál es",
        "several technicians match and I don't know which one",
    ),
    "vehicle_choice": (
        "hay varios vehículos que coinciden y no sé cuál es",
        "several vehicles match and I don't know which one",
    ),
    "service": ("no sé qué servicio o monto es", "I don't know the service or the amount"),
    "cuit": ("no tengo el CUIT", "I don't have the CUIT"),
    "field": ("no sé qué dato cambiar", "I don't know which detail to change"),
    "phone": ("no tengo el teléfono nuevo", "I don't have the new phone"),
    "phone_alt": ("no tengo el otro teléfono", "I don't have the other phone"),
    "email": ("no tengo el email nuevo", "I don't have the new email"),
    "address": ("no tengo la dirección nueva", "I don't have the new address"),
    "notes": ("no tengo la nota", "I don't have the note"),
}
# Errors whose detail goes by another slot name ("missing target" of a move is its date).
_SLOT_ALIASES = {"target": "date", "target_date": "date", "query": "customer", "selection": "jobs"}


def slot_of(error: str) -> str:
    """The detail an `ask` error names: "missing customer" → "customer", "missing value for
    email" → "email", "missing target date" → "date"."""
    detail = error.strip().lower().removeprefix("missing").strip()
    detail = detail.removeprefix("value for").strip().replace(" ", "_")
    return _SLOT_ALIASES.get(detail, detail) or "detail"


def ask(runner: Runner, question: str, *, error: str, slot: str | None = None) -> Outcome:
    """Something the step needs is missing: nothing was done, and the reply asks for it. The
    question travels as `Outcome.clarify`, which the conversation keeps as the pending intent.

    After the conversation's clarification limit (`runner.best_effort`) it does not ask a third
    time: it says what could not be done and what is still missing, as a plain statement.
    """
    slot = slot or slot_of(error)
    if runner.best_effort:
        return Outcome(text=unable(runner, slot), success=False, error=error)
    text = question
    return Outcome(
        text=text, success=False, error=error, clarify=Clarification(question=text, slot=slot)
    )


def impossible_date(step: Step, runner: Runner) -> Outcome | None:
    """The question for a date that does not exist ("31/11"), when the step has no real one:
    never today or another day in its place."""
    written = step.entities.impossible_date
    if not written or step.entities.date is not None:
        return None
    return ask(
        runner,
        runner.say(_("%(written)s is not a real date: which day do you mean?"), written=written),
        error="impossible date",
        slot="date",
    )


def unable(runner: Runner, slot: str) -> str:
    """ "No pude agendar el trabajo: no sé de qué cliente se trata." — no question."""
    specs = specs_of_agents([runner.agent])
    return unable_text(runner.step.intent, slot, runner.language, specs)


def unable_text(intent: str, slot: str, language: str, specs: IntentSpecs | None = None) -> str:
    """`unable` for an intent outside its step: a question that went unanswered (O8). What
    could not be done is the intent's phrase in the registry."""
    english = is_en(language)
    asked = "do what you asked" if english else "hacer lo que pediste"
    action = intent_phrase(intent, language, specs, default=asked)
    missing = _MISSING.get(slot, ("me falta un dato", "a detail is missing"))
    if english:
        return f"I couldn't {action}: {missing[1]}. I changed nothing."
    return f"No pude {action}: {missing[0]}. No hice ningún cambio."


@dataclass
class Choice[T]:
    """One of the listed options: the one the operator's answer names, or — best effort — the
    best one, with the sentence that says it was taken and can be corrected."""

    picked: T | None
    note: str = ""


_ORDINALS = {
    "primero": 1, "primera": 1, "first": 1, "1ro": 1, "1ero": 1, "1st": 1,
    "segundo": 2, "segunda": 2, "second": 2, "2do": 2, "2nd": 2,
    "tercero": 3, "tercera": 3, "tercer": 3, "third": 3, "3ro": 3, "3rd": 3,
    "cuarto": 4, "cuarta": 4, "fourth": 4, "4to": 4, "4th": 4,
    "quinto": 5, "quinta": 5, "fifth": 5, "5to": 5, "5th": 5,
    "ultimo": -1, "ultima": -1, "last": -1,
}  # fmt: skip
# Words of an answer that say nothing about which option it is.
_FILLER = frozenset({
    "el", "la", "los", "las", "lo", "de", "del", "al", "a", "que", "ese", "esa", "este", "esta",
    "uno", "una", "un", "es", "era", "si", "no", "dale", "ok", "okay", "bueno", "opcion",
    "numero", "nro", "n", "con", "por", "favor", "porfa", "y", "the", "one", "that", "this",
    "it", "is", "was", "yes", "option", "number", "please", "with", "and",
})  # fmt: skip
_ANSWER_TOKEN = re.compile(r"#?\w+(?::\d{2})?")


def answer_of(step: Step) -> str:
    """The operator's answer when the step resumes a question: the last line of its text (the
    resumed text is the original request, then each answer on its own line)."""
    if not step.resumed:
        return ""
    lines = [line for line in step.text.splitlines() if line.strip()]
    return lines[-1] if len(lines) > 1 else ""


def _option_id(option: Any) -> str:
    """An option's id: a typed row's (a job, a vehicle) or its JSON's."""
    if isinstance(option, dict):
        return str(option.get("id"))
    return str(getattr(option, "id", ""))


def answered[T](step: Step, options: Sequence[T], describe: Callable[[T], str]) -> T | None:
    """The option the operator's answer to a listed choice names: its id ("#12"), its place
    ("el segundo", "2"), or words only it has ("el del jueves", "el de Lanús", "la Kangoo").
    None when the step does not resume a question or the answer fits none or several."""
    answer = fold(answer_of(step))
    if not answer or not options:
        return None
    tokens = _ANSWER_TOKEN.findall(answer)
    ids = {_option_id(option): option for option in options}
    for token in tokens:
        if token.startswith("#") and token[1:] in ids:
            return ids[token[1:]]
    places = {_ORDINALS[token] for token in tokens if token in _ORDINALS}
    if len(places) == 1:
        place = places.pop()
        if place > len(options):
            return None
        return options[-1] if place < 0 else options[place - 1]
    content = [token.lstrip("#") for token in tokens if token not in _FILLER]
    if len(content) == 1 and content[0].isdigit():
        number = int(content[0])
        return options[number - 1] if 1 <= number <= len(options) else ids.get(content[0])
    described = [fold(describe(option)) for option in options]
    scores = [
        sum(1 for token in content if re.search(rf"(?<!\w){re.escape(token)}(?!\w)", text))
        for text in described
    ]
    best = max(scores)
    if best == 0 or scores.count(best) > 1:
        return None
    return options[scores.index(best)]


def choose[T](
    step: Step,
    runner: Runner,
    options: Sequence[T],
    describe: Callable[[T], str],
    *,
    many: str,
    best: T | None = None,
    how: str = "",
) -> Choice[T]:
    """The option the operator chose in their answer; with `runner.best_effort`, the best one
    (`best`, else the first ranked) and a note naming it — never a third question.

    `many` says what there were ("3 trabajos abiertos de Juan"), `how` why the one taken
    ("el más próximo, "), both in the reply's language."""
    picked = answered(step, options, describe)
    if picked is not None:
        return Choice(picked)
    if not runner.best_effort or not options:
        return Choice(None)
    taken = best if best is not None else options[0]
    said = describe(taken)
    note = runner.say(
        _(
            "There were %(many)s: I took %(how)s%(said)s. If it was another one, tell me which "
            "and I'll correct it."
        ),
        many=many,
        how=how,
        said=said,
    )
    return Choice(taken, note)


def with_note(outcome: Outcome, note: str) -> Outcome:
    """The outcome with a best-effort pick's note after its text."""
    if note:
        outcome.text = f"{outcome.text}\n{note}" if outcome.text else note
    return outcome


@dataclass
class Found:
    """The job a step is about (or its id, when only the id is known and details are not
    needed), or the reply that stops the step; `note` says which job a best-effort pick took
    (O8). The handlers that look a job up for their action share it."""

    job: JobRow | int | None = None
    problem: Outcome | None = None
    note: str = ""


def budget_left(runner: Runner) -> int:
    """Tool calls left in this step's plan."""
    return runner.agent.max_plan_steps - runner.plan_steps


def candidates_of(result: ToolResult, kind: str = "customer") -> list[dict[str, Any]]:
    """The customers (or technicians) a tool could not choose between ([] otherwise)."""
    if result.ok or not result.error.startswith(kind):
        return []
    return list(result.data.get("candidates") or [])


def technician_candidate(technician: dict[str, Any]) -> str:
    return f"{technician['name']} ({technician['zone']})"


def call_for_customer(
    step: Step, runner: Runner, tool: str, arguments: dict[str, Any]
) -> tuple[ToolResult, dict[str, Any] | None, str]:
    """Run `tool`; when the customer's name matches several customers and the operator's
    answer names one (or best effort must pick), run it again for that customer's id.

    Returns the result, the customer chosen (None when the first call stands) and the note of a
    best-effort pick.
    """
    return _call_resolving(
        step, runner, tool, arguments, kind="customer", describe=customer_candidate,
        many=_("several customers “%(name)s”"),
    )  # fmt: skip


def call_for_technician(
    step: Step, runner: Runner, tool: str, arguments: dict[str, Any]
) -> tuple[ToolResult, dict[str, Any] | None, str]:
    """`call_for_customer` for a technician's name that matches several technicians."""
    return _call_resolving(
        step, runner, tool, arguments, kind="technician", describe=technician_candidate,
        many=_("several technicians “%(name)s”"),
    )  # fmt: skip


def _call_resolving(
    step: Step,
    runner: Runner,
    tool: str,
    arguments: dict[str, Any],
    *,
    kind: str,
    describe: Callable[[dict[str, Any]], str],
    many: Promise,
) -> tuple[ToolResult, dict[str, Any] | None, str]:
    result = runner.call(tool, **arguments)
    candidates = candidates_of(result, kind)
    name = str(arguments.get(kind) or "")
    if not candidates or not name or budget_left(runner) < 1:
        return result, None, ""
    choice = choose(
        step, runner, candidates, describe,
        many=runner.say(many, name=name),
    )  # fmt: skip
    if choice.picked is None:
        return result, None, ""
    rest = {key: value for key, value in arguments.items() if key != kind}
    again = runner.call(tool, **rest, **{f"{kind}_id": int(choice.picked["id"])})
    return again, choice.picked, choice.note


def failed(runner: Runner, result: ToolResult, what: str) -> Outcome:
    """A tool said no: what could not be done, and the tool's reason (kept as the error).

    "… not found" is said in the reply's language: a row of another organisation reads exactly
    like a missing one, and the tools word that in English.
    """
    headline = what
    reason = result.error or result.summary
    if _NOT_FOUND.search(reason):
        if headline.startswith(("No encontré", "I couldn't find")):
            return Outcome(text=f"{headline}.", success=False, error=reason)
        said = runner.say(_("not found"))
        return Outcome(text=f"{headline}: {said}.", success=False, error=reason)
    return Outcome(text=f"{headline}: {reason}", success=False, error=reason)


def not_enabled(runner: Runner, result: ToolResult, what: str) -> Outcome | None:
    """A tool this agent's row does not enable (an organisation's copy from before the tool
    shipped): say what cannot be done and who can enable it, never "not found"."""
    match = re.fullmatch(r"tool (\w+) not enabled", result.error or "")
    if match is None:
        return None
    tool_name = match.group(1)
    return Outcome(
        text=runner.say(
            _(
                "%(what)s: the %(tool)s tool is not enabled for this agent (an administrator "
                "can enable it under Agents)."
            ),
            what=what,
            tool=tool_name,
        ),
        success=False,
        error=result.error,
    )


def held_id(result: ToolResult) -> int | None:
    """The pending approval's id when the gate held this call instead of running it."""
    if result.ok and result.data.get("held"):
        return int(result.data["pending_approval_id"])
    return None


def held(runner: Runner, approval_id: int, what: str) -> Outcome:
    """The action waits for a manager: say what it is and that nothing has changed yet."""
    return Outcome(
        text=runner.say(
            _(
                "%(what)s is waiting for a manager's approval (request #%(id)s); nothing "
                "changes until it is approved."
            ),
            what=what,
            id=approval_id,
        ),
        success=True,
        pending_approvals=[approval_id],
    )
