"""Handlers of the escalation agent (O11): complaints, emergencies, asks for a person, anger.

Each one opens a ticket a person works from, with the reason and a priority that say how fast,
linked to the customer and job when they are known — and says what happens next. An emergency
comes first: the reply opens with the one safety instruction that fits the danger (gas, water,
electricity, fire), then the urgent ticket, then the nearest free technician with the trade
when the customer's zone is known. Plans are one to three tool calls.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agents.base import Mutation, Outcome, Runner, Step, handles
from agents.phrasing import (
    budget_left,
    call_for_customer,
    choose,
    customer_candidate,
    customer_problem,
    full_date,
    moment_of,
    not_enabled,
    with_note,
)
from agents.registry import ToolResult
from agents.subjects import CustomerRef, customer_ref, job_ref
from business.validators import format_phone
from common.text import fold
from nlu.tone import read_signals

SUMMARY_CHARS = 1000
NEAREST_SHOWN = 3
PRIORITY_WORDS = {
    "low": ("baja", "low"),
    "normal": ("normal", "normal"),
    "high": ("alta", "high"),
    "urgent": ("urgente", "urgent"),
}


@dataclass(frozen=True)
class Danger:
    kind: str
    skill: str | None  # the trade of the technician to send
    label: tuple[str, str]  # (es, en)
    # One line in infinitives (es) / imperatives (en): it reads right whether the operator relays
    # it or the customer reads it.
    safety: tuple[str, str]


# Most dangerous first: a message with gas and smoke gets the gas instruction.
DANGERS: tuple[tuple[re.Pattern[str], Danger], ...] = (
    (
        re.compile(r"\b(?:monoxido|carbon monoxide|co alarm)\b"),
        Danger(
            kind="co",
            skill="gas",
            label=("posible monóxido", "possible carbon monoxide"),
            safety=(
                "Ventilar ya abriendo puertas y ventanas, apagar estufas, calefones y hornos, "
                "salir al aire libre y, si alguien tiene dolor de cabeza, mareos o náuseas, "
                "llamar al SAME (107).",
                "Ventilate now by opening doors and windows, switch off heaters, boilers and "
                "ovens, get everyone outside and, if anyone has a headache, dizziness or nausea, "
                "call 107 (ambulance).",
            ),
        ),
    ),
    (
        re.compile(r"\bgas\b"),
        Danger(
            kind="gas",
            skill="gas",
            label=("pérdida de gas", "gas leak"),
            safety=(
                "Cerrar la llave de paso del gas, no accionar interruptores ni prender fuego (ni "
                "fósforos ni encendedores), ventilar abriendo puertas y ventanas y salir del "
                "lugar; si el olor es fuerte, llamar al 911.",
                "Shut the gas valve, don't touch light switches or light anything, open doors "
                "and windows and get out; if the smell is strong, call 911.",
            ),
        ),
    ),
    (
        re.compile(r"\b(?:fuego|incendi\w*|humo|llamas?|explot\w*|explosion|fire|smoke|flames?)\b"),
        Danger(
            kind="fire",
            skill="electrical",
            label=("fuego o humo", "fire or smoke"),
            safety=(
                "Salir del lugar y llamar a los bomberos (100); si es eléctrico y se puede sin "
                "riesgo, cortar la luz desde el tablero, y nunca tirar agua sobre algo enchufado.",
                "Get out and call the fire brigade (100); if it is electrical and it is safe, "
                "cut the power at the panel, and never throw water on anything plugged in.",
            ),
        ),
    ),
    (
        re.compile(
            r"\b(?:chispa\w*|chispazo\w*|cortocircuito|electrocut\w*|electric\w*|enchufe\w*"
            r"|cables?|tablero|spark\w*|short circuit|shock)\b"
        ),
        Danger(
            kind="electricity",
            skill="electrical",
            label=("riesgo eléctrico", "electrical hazard"),
            safety=(
                "Cortar la luz desde el tablero (la térmica o el disyuntor) si se puede sin "
                "riesgo, no tocar cables ni artefactos y mantener el agua lejos.",
                "Cut the power at the panel (breaker) if it is safe to do so, don't touch cables "
                "or appliances and keep water away.",
            ),
        ),
    ),
    (
        re.compile(r"\b(?:inund\w*|agua(?! caliente)|cano\w*|flood\w*|water|pipe\w*|burst)\b"),
        Danger(
            kind="water",
            skill="plumbing",
            label=("pérdida de agua", "water leak"),
            safety=(
                "Cerrar la llave de paso general del agua y, si el agua llega a enchufes o "
                "artefactos, cortar la luz desde el tablero sin pisar el agua.",
                "Shut the main water valve and, if water reaches sockets or appliances, cut the "
                "power at the panel without stepping in the water.",
            ),
        ),
    ),
    (
        re.compile(r"\b(?:calefa\w*|caldera|calor|heat\w*|boiler)\b"),
        Danger(
            kind="heating",
            skill="heating",
            label=("sin calefacción, persona vulnerable", "no heating, vulnerable person"),
            safety=(
                "Abrigar a la persona y usar una estufa eléctrica si hay; nunca braseros ni el "
                "horno para calefaccionar (riesgo de monóxido).",
                "Keep the person warm and use an electric heater if there is one; never a "
                "brazier or the oven for heating (carbon monoxide risk).",
            ),
        ),
    ),
)
GENERIC_DANGER = Danger(
    kind="other",
    skill=None,
    label=("emergencia", "emergency"),
    safety=(
        "Alejarse del peligro y, si hay riesgo para alguien, llamar al 911.",
        "Move away from the danger and, if anyone is at risk, call 911.",
    ),
)


def danger_in(text: str) -> Danger:
    folded = fold(text)
    for pattern, danger in DANGERS:
        if pattern.search(folded):
            return danger
    return GENERIC_DANGER


# --- shared pieces ----------------------------------------------------------------------------


def _summary(step: Step, head: str = "") -> str:
    text = " ".join(step.text.split()) or step.intent
    return (f"{head}: {text}" if head else text)[:SUMMARY_CHARS]


def _priority(runner: Runner, priority: str) -> str:
    es, en = PRIORITY_WORDS.get(priority, (priority, priority))
    return runner.t(es=es, en=en)


@dataclass
class _Subject:
    """Who and what a ticket is about, as far as the step knows."""

    customer: dict[str, Any] | None = None  # the customer's file entry (id, name, phone, zone)
    job: dict[str, Any] | None = None
    job_id: int | None = None
    unresolved: str = ""  # a name that matched nobody, or several (said in the reply)
    ambiguous: bool = False
    note: str = ""  # which namesake a best-effort pick took (O8)

    def link(self, ref: CustomerRef | None) -> dict[str, Any]:
        """ticket_create's arguments: the resolved customer, else the reference as given."""
        args: dict[str, Any] = {}
        if self.customer is not None:
            args["customer_id"] = int(self.customer["id"])
        elif ref is not None and not self.unresolved:
            args.update(ref.args())
        job_id = self.job_id if self.job_id is not None else (self.job or {}).get("id")
        if job_id is not None:
            args["job_id"] = int(job_id)
        return args


def _latest_job(jobs: list[dict[str, Any]], runner: Runner) -> dict[str, Any] | None:
    """The job a complaint is most likely about: the latest one that has started, else the
    next one."""
    now = runner.ctx.now
    started = [job for job in jobs if moment_of(job["start"]) <= now]
    if started:
        return max(started, key=lambda job: job["start"])
    return min(jobs, key=lambda job: job["start"]) if jobs else None


def _enabled(runner: Runner, tool: str) -> bool:
    return tool in (runner.agent.tools or [])


def _subject(
    step: Step, runner: Runner, *, with_latest_job: bool
) -> tuple[_Subject, CustomerRef | None, Outcome | None]:
    """The customer's record when a customer is known: their file (with their jobs) when the
    agent may read it, else a customer search. An ambiguous name stops the step with the
    candidates; an unknown one is noted and the ticket goes unlinked. The lookup is skipped
    when only the ticket fits in the plan: the ticket always comes first."""
    subject = _Subject(job_id=job_ref(step, runner))
    who = customer_ref(step, runner)
    if who is None or budget_left(runner) < 2:
        return subject, who, None
    if _enabled(runner, "customer_history"):
        return _from_history(step, runner, subject, who, with_latest_job=with_latest_job)
    if _enabled(runner, "customers_find") and who.name:
        return _from_search(step, runner, subject, who)
    return subject, who, None


def _from_history(
    step: Step, runner: Runner, subject: _Subject, who: CustomerRef, *, with_latest_job: bool
) -> tuple[_Subject, CustomerRef | None, Outcome | None]:
    """The customer's file. A name that fits several customers is settled by the operator's
    answer (or a best-effort pick) only when that second lookup still leaves room for the
    ticket."""
    if budget_left(runner) >= 3:
        found, chosen, subject.note = call_for_customer(
            step, runner, "customer_history", who.args()
        )
        if chosen is not None:
            who = CustomerRef(int(chosen["id"]), str(chosen["name"]), "named")
    else:
        found = runner.call("customer_history", **who.args())
    if not found.ok:
        return subject, who, _lookup_failed(runner, subject, who, found)
    subject.customer = found.data["customer"]
    jobs = found.data.get("jobs", [])
    if subject.job_id is not None:
        subject.job = next((job for job in jobs if job["id"] == subject.job_id), None)
    elif with_latest_job:
        subject.job = _latest_job(jobs, runner)
    return subject, who, None


def _from_search(
    step: Step, runner: Runner, subject: _Subject, who: CustomerRef
) -> tuple[_Subject, CustomerRef | None, Outcome | None]:
    found = runner.call("customers_find", query=who.name)
    if not found.ok:
        return subject, who, None
    rows = found.data["customers"]
    if who.id is not None:
        rows = [row for row in rows if row["id"] == who.id]
    elif len(rows) > 1:
        exact = [row for row in rows if fold(row["name"]) == fold(who.name)]
        rows = exact if len(exact) == 1 else rows
    if len(rows) > 1:
        choice = choose(
            step, runner, rows, customer_candidate,
            many_es=f"varios clientes «{who.name}»", many_en=f"several customers “{who.name}”",
        )  # fmt: skip
        rows, subject.note = ([choice.picked], choice.note) if choice.picked else (rows, "")
    if len(rows) == 1:
        subject.customer = rows[0]
        return subject, who, None
    error = f"customer '{who.name}' " + ("is ambiguous" if rows else "not found")
    refused = ToolResult(ok=False, data={"candidates": rows}, summary=error, error=error)
    return subject, who, _lookup_failed(runner, subject, who, refused)


def _lookup_failed(
    runner: Runner, subject: _Subject, who: CustomerRef, found: ToolResult
) -> Outcome | None:
    """An ambiguous name: the candidates (the caller decides whether to stop). An unknown one:
    noted, the ticket goes unlinked. Any other failure: the ticket links the name as given."""
    if found.data.get("candidates"):
        return customer_problem(runner, who.name, found)
    if found.error.startswith("customer") and "not found" in found.error:
        subject.unresolved = who.name
    return None


def _open_ticket(
    runner: Runner, subject: _Subject, who: CustomerRef | None, **fields: Any
) -> ToolResult:
    """ticket_create; when the customer as given cannot be resolved, the ticket is opened
    unlinked rather than not at all (a person must still see it)."""
    link = subject.link(who)
    result = runner.call("ticket_create", **fields, **link)
    refused_customer = not result.ok and result.error.startswith("customer")
    if refused_customer and "customer" in link and budget_left(runner) > 0:
        subject.unresolved = who.name if who else ""
        subject.ambiguous = "ambiguous" in result.error
        link.pop("customer")
        result = runner.call("ticket_create", **fields, **link)
    return result


def _job_text(runner: Runner, job: dict[str, Any]) -> str:
    language = runner.language
    moment = full_date(job["start"], language)
    with_ = ""
    if job.get("technician"):
        with_ = runner.t(es=f", con {job['technician']}", en=f", with {job['technician']}")
    return f"#{job['id']} {job['service']} ({moment}{with_})"


def _for_whom(runner: Runner, subject: _Subject) -> str:
    customer = subject.customer
    if customer is None:
        return ""
    return runner.t(es=f" de {customer['name']}", en=f" for {customer['name']}")


def _links_text(runner: Runner, subject: _Subject) -> str:
    parts: list[str] = []
    if subject.job is not None:
        job = _job_text(runner, subject.job)
        parts.append(runner.t(es=f" Lo vinculé al trabajo {job}.", en=f" I linked job {job}."))
    elif subject.job_id is not None:
        parts.append(
            runner.t(
                es=f" Lo vinculé al trabajo #{subject.job_id}.",
                en=f" I linked job #{subject.job_id}.",
            )
        )
    if subject.unresolved and subject.ambiguous:
        parts.append(
            runner.t(
                es=f" Hay varios clientes «{subject.unresolved}», así que quedó sin cliente "
                "vinculado: decime cuál es.",
                en=f" Several customers match “{subject.unresolved}”, so no customer is linked: "
                "tell me which one.",
            )
        )
    elif subject.unresolved:
        parts.append(
            runner.t(
                es=f" No encontré ningún cliente «{subject.unresolved}», así que quedó sin "
                "cliente vinculado.",
                en=f" I found no customer “{subject.unresolved}”, so no customer is linked.",
            )
        )
    return "".join(parts)


def _customer_mutation(subject: _Subject) -> list[Mutation]:
    customer = subject.customer
    if customer is None:
        return []
    return [Mutation(kind="customer", id=int(customer["id"]), label=str(customer["name"]))]


def _not_opened(runner: Runner, result: ToolResult, lead: str = "") -> Outcome:
    reason = result.error or result.summary
    return Outcome(
        text=lead
        + runner.t(
            es=f"No pude abrir el ticket: {reason}. Avisale a un encargado por teléfono.",
            en=f"I couldn't open the ticket: {reason}. Please call a manager.",
        ),
        success=False,
        error=reason,
    )


# --- emergency --------------------------------------------------------------------------------


@handles("emergency")
def emergency(step: Step, runner: Runner) -> Outcome:
    danger = danger_in(step.text)
    safety = runner.t(
        es=f"Emergencia ({danger.label[0]}). Primero, seguridad: {danger.safety[0]}",
        en=f"Emergency ({danger.label[1]}). Safety first: {danger.safety[1]}",
    )
    subject, who, _ambiguous = _subject(step, runner, with_latest_job=False)
    # An ambiguous name must not delay an emergency: the ticket opens unlinked and says so.
    if _ambiguous is not None and who is not None:
        subject.unresolved, subject.ambiguous = who.name, True
    ticket = _open_ticket(
        runner, subject, who, reason="emergency", priority="urgent",
        summary=_summary(step, danger.label[0]),
    )  # fmt: skip
    if not ticket.ok:
        return _not_opened(runner, ticket, lead=safety + "\n")
    data = ticket.data["ticket"]
    text = safety + "\n" + _emergency_ticket_text(runner, subject, data)
    text += _nearest_text(runner, subject, danger)
    return Outcome(text=text, mutations=_customer_mutation(subject))


def _emergency_ticket_text(runner: Runner, subject: _Subject, ticket: dict[str, Any]) -> str:
    customer = subject.customer
    where = ""
    if customer is not None:
        phone = format_phone(customer.get("phone") or "")
        details = ", ".join(part for part in (customer.get("address"), phone) if part)
        where = f" ({details})" if details else ""
    return runner.t(
        es=f"Abrí el ticket urgente #{ticket['id']}{_for_whom(runner, subject)}{where}: una "
        "persona de la oficina lo toma ya para mandar un técnico.",
        en=f"I opened urgent ticket #{ticket['id']}{_for_whom(runner, subject)}{where}: a person "
        "in the office is taking it now to send a technician.",
    ) + _links_text(runner, subject)


def _nearest_text(runner: Runner, subject: _Subject, danger: Danger) -> str:
    """The nearest free technicians with the trade (a proposal: dispatching is the fleet's and
    a manager's call)."""
    if budget_left(runner) < 1 or not _enabled(runner, "technicians_nearest"):
        return ""
    zone = (subject.customer or {}).get("zone") or ""
    arguments: dict[str, Any] = {"count": NEAREST_SHOWN}
    if danger.skill:
        arguments["skill"] = danger.skill
    if zone:
        arguments["zone"] = zone
    elif subject.job_id is not None:
        arguments["job_id"] = subject.job_id
    else:
        return runner.t(
            es="\nPasame el cliente o la dirección y te propongo el técnico libre más cercano.",
            en="\nSend me the customer or the address and I'll propose the nearest free "
            "technician.",
        )
    found = runner.call("technicians_nearest", **arguments)
    if not found.ok:
        return ""
    free = found.data["technicians"]
    if not free:
        return runner.t(
            es="\nAhora no hay ningún técnico libre con esa especialidad: la oficina coordina "
            "por teléfono.",
            en="\nNo technician with that trade is free right now: the office will coordinate "
            "by phone.",
        )
    first, *others = free
    line = runner.t(
        es=f"\nEl técnico libre más cercano: {_technician(runner, first)}.",
        en=f"\nThe nearest free technician: {_technician(runner, first)}.",
    )
    if others:
        names = ", ".join(_technician(runner, t) for t in others)
        line += runner.t(es=f" También libres: {names}.", en=f" Also free: {names}.")
    return line


def _technician(runner: Runner, technician: dict[str, Any]) -> str:
    hops = technician.get("zone_distance")
    distance = ""
    if hops == 0:
        distance = runner.t(es="misma zona", en="same zone")
    elif hops == 1:
        distance = runner.t(es="zona vecina", en="neighbouring zone")
    details = ", ".join(
        part
        for part in (technician.get("zone"), distance, format_phone(technician.get("phone") or ""))
        if part
    )
    return f"{technician['name']} ({details})" if details else str(technician["name"])


# --- a ticket named by its number ---------------------------------------------------------------

REASON_WORDS = {
    "complaint": ("reclamo", "complaint"),
    "emergency": ("emergencia", "emergency"),
    "escalate": ("pedido de hablar con una persona", "request for a person"),
    "frustration": ("malestar", "frustration"),
    "handoff": ("derivación del copiloto", "copilot hand-off"),
}
STATUS_WORDS = {
    "open": ("abierto, sin tomar todavía", "open, not picked up yet"),
    "in_progress": ("en curso: alguien del equipo lo está trabajando", "in progress"),
    "resolved": ("resuelto", "resolved"),
}


def _named_ticket(step: Step, runner: Runner) -> Outcome | None:
    """ "¿cómo va el reclamo 12?", "what's the status of ticket 12": the ticket's state, or that
    there is no such ticket (another organisation's reads the same). No new ticket is opened
    for a number that is not found: the reply asks what happened instead."""
    number = step.entities.ticket_id
    if number is None:
        return None
    result = runner.call("ticket_find", number=number)
    if not result.ok:
        disabled = not_enabled(
            runner,
            result,
            es=f"No puedo ver el ticket #{number}",
            en=f"I can't look up ticket #{number}",
        )
        if disabled is not None:
            return disabled
        return Outcome(
            text=runner.t(
                es=f"No encontré el ticket #{number}. Revisá el número; si es un reclamo nuevo, "
                "contame qué pasó y lo registro.",
                en=f"I couldn't find ticket #{number}. Please check the number; if it is a new "
                "complaint, tell me what happened and I'll record it.",
            ),
            success=False,
            error=result.error or f"ticket #{number} not found",
        )
    data = result.data["ticket"]
    reason_es, reason_en = REASON_WORDS.get(data["reason"], (data["reason"], data["reason"]))
    status_es, status_en = STATUS_WORDS.get(data["status"], (data["status"], data["status"]))
    created = full_date(str(data["created_at"])[:10], runner.language)
    who_es = f" de {data['customer']}" if data.get("customer") else ""
    who_en = f" for {data['customer']}" if data.get("customer") else ""
    job_es = f", trabajo #{data['job_id']}" if data.get("job_id") else ""
    job_en = f", job #{data['job_id']}" if data.get("job_id") else ""
    text = runner.t(
        es=f"El ticket #{data['id']} ({reason_es}{who_es}{job_es}, prioridad "
        f"{_priority(runner, data['priority'])}, del {created}) está {status_es}.",
        en=f"Ticket #{data['id']} ({reason_en}{who_en}{job_en}, "
        f"{_priority(runner, data['priority'])} priority, of {created}) is {status_en}.",
    )
    summary = " ".join(str(data.get("summary") or "").split()).rstrip(".")
    if summary:
        text += runner.t(es=f" Dice: «{summary[:200]}».", en=f" It says: “{summary[:200]}”.")
    if data["status"] == "resolved":
        text += runner.t(
            es=" Si el problema sigue, contame qué pasa y abro un reclamo nuevo.",
            en=" If the problem is back, tell me what happens and I'll open a new complaint.",
        )
    else:
        text += runner.t(
            es=" Lo tiene el equipo: una persona lo sigue desde la lista de tickets.",
            en=" The team has it: a person follows it up from the ticket list.",
        )
    mutations = []
    if data.get("customer_id"):
        mutations.append(
            Mutation(kind="customer", id=int(data["customer_id"]), label=str(data["customer"]))
        )
    return Outcome(text=text, mutations=mutations)


# --- complaint --------------------------------------------------------------------------------


@handles("complaint")
def complaint(step: Step, runner: Runner) -> Outcome:
    if (named := _named_ticket(step, runner)) is not None:
        return named
    angry = read_signals(step.text).frustrated
    priority = "high" if angry else "normal"
    subject, who, problem = _subject(step, runner, with_latest_job=True)
    if problem is not None:
        return problem
    ticket = _open_ticket(
        runner, subject, who, reason="complaint", priority=priority, summary=_summary(step)
    )
    if not ticket.ok:
        return _not_opened(runner, ticket)
    data = ticket.data["ticket"]
    opening = (
        runner.t(es="Lamento mucho lo que pasó.", en="I'm very sorry about what happened.")
        if angry
        else runner.t(es="Lamento el inconveniente.", en="I'm sorry about this.")
    )
    phone = format_phone((subject.customer or {}).get("phone") or "")
    contact = runner.t(
        es=f" y se comunica con el cliente ({phone})" if phone else " y da una respuesta",
        en=f" and contact the customer ({phone})" if phone else " and follow up",
    )
    text = runner.t(
        es=f"Registré el reclamo{_for_whom(runner, subject)}: ticket #{data['id']}, prioridad "
        f"{_priority(runner, data['priority'])}.",
        en=f"I recorded the complaint{_for_whom(runner, subject)}: ticket #{data['id']}, "
        f"{_priority(runner, data['priority'])} priority.",
    )
    text += _links_text(runner, subject)
    text += runner.t(
        es=f" Una persona del equipo lo revisa{contact}. {opening}",
        en=f" A person on the team will review it{contact}. {opening}",
    )
    return with_note(Outcome(text=text, mutations=_customer_mutation(subject)), subject.note)


# --- escalate and frustration_detected --------------------------------------------------------


def _quick_subject(step: Step, runner: Runner) -> tuple[_Subject, CustomerRef | None]:
    """Customer and job as already known (no lookup: a person takes over anyway)."""
    return _Subject(job_id=job_ref(step, runner)), customer_ref(step, runner)


@handles("escalate")
def escalate(step: Step, runner: Runner) -> Outcome:
    if (named := _named_ticket(step, runner)) is not None:
        return named
    signals = read_signals(step.text)
    priority = "high" if signals.frustrated or signals.urgency != "normal" else "normal"
    subject, who = _quick_subject(step, runner)
    ticket = _open_ticket(
        runner, subject, who, reason="escalate", priority=priority, summary=_summary(step)
    )
    if not ticket.ok:
        return _not_opened(runner, ticket)
    data = ticket.data["ticket"]
    about = runner.t(es=f", por {data['customer']}", en=f", about {data['customer']}")
    about = about if data.get("customer") else ""
    return Outcome(
        text=runner.t(
            es=f"Te paso con una persona: abrí el ticket #{data['id']} (prioridad "
            f"{_priority(runner, data['priority'])}{about}) y un encargado toma la conversación "
            "en breve. Mientras tanto, si necesitás algo puntual, decime y lo hago.",
            en=f"I'm handing you over to a person: I opened ticket #{data['id']} "
            f"({_priority(runner, data['priority'])} priority{about}) and a manager will take "
            "over the conversation shortly. Meanwhile, if you need something specific, tell me "
            "and I'll do it.",
        )
        + _links_text(runner, _Subject(unresolved=subject.unresolved))
    )


@handles("frustration_detected")
def frustration_detected(step: Step, runner: Runner) -> Outcome:
    if (named := _named_ticket(step, runner)) is not None:
        return named
    subject, who = _quick_subject(step, runner)
    ticket = _open_ticket(
        runner, subject, who, reason="frustration", priority="high", summary=_summary(step)
    )
    if not ticket.ok:
        return _not_opened(
            runner,
            ticket,
            lead=runner.t(es="Te pido disculpas por esto. ", en="I'm sorry about this. "),
        )
    data = ticket.data["ticket"]
    return Outcome(
        text=runner.t(
            es="Te pido disculpas por las vueltas. Ya se lo pasé a una persona del equipo con "
            f"prioridad alta (ticket #{data['id']}): lo revisa y te responde en breve. Si me "
            "contás qué necesitás resolver ahora, lo hago ya.",
            en="I'm sorry for the trouble. I've passed this to a person on the team as high "
            f"priority (ticket #{data['id']}): they will review it and get back to you shortly. "
            "If you tell me what you need sorted now, I'll do it right away.",
        )
    )
