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

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from agents.base import Mutation, Outcome, Runner, Step, handles
from agents.escalation.tools import Ticket, TicketResult
from agents.payloads import (
    CustomerFile,
    CustomerRow,
    CustomersFound,
    JobRow,
    NearestTechnicians,
    TechnicianRow,
)
from agents.phrasing import (
    budget_left,
    call_for_customer,
    choose,
    customer_candidate,
    customer_problem,
    full_date,
    not_enabled,
    with_note,
)
from agents.registry import ToolResult
from agents.subjects import CustomerRef, customer_ref, job_ref
from business.validators import format_phone
from common.text import fold
from common.wording import say
from nlu.tone import read_signals

SUMMARY_CHARS = 1000
NEAREST_SHOWN = 3
PRIORITY_WORDS = {
    "low": pgettext_lazy("ticket priority", "low"),
    "normal": pgettext_lazy("ticket priority", "normal"),
    "high": pgettext_lazy("ticket priority", "high"),
    "urgent": pgettext_lazy("ticket priority", "urgent"),
}


@dataclass(frozen=True)
class Danger:
    kind: str
    skill: str | None  # the trade of the technician to send
    label: Promise  # gettext_lazy: said in the reply's language (the ticket's summary: Spanish)
    # One line in infinitives (es) / imperatives (en): it reads right whether the operator relays
    # it or the customer reads it.
    safety: Promise


# Most dangerous first: a message with gas and smoke gets the gas instruction.
DANGERS: tuple[tuple[re.Pattern[str], Danger], ...] = (
    (
        re.compile(r"\b(?:monoxido|carbon monoxide|co alarm)\b"),
        Danger(
            kind="co",
            skill="gas",
            label=_("possible carbon monoxide"),
            safety=_(
                "Ventilate now by opening doors and windows, switch off heaters, boilers and "
                "ovens, get everyone outside and, if anyone has a headache, dizziness or nausea, "
                "call 107 (ambulance)."
            ),
        ),
    ),
    (
        re.compile(r"\bgas\b"),
        Danger(
            kind="gas",
            skill="gas",
            label=_("gas leak"),
            safety=_(
                "Shut the gas valve, don't touch light switches or light anything, open doors "
                "and windows and get out; if the smell is strong, call 911."
            ),
        ),
    ),
    (
        re.compile(r"\b(?:fuego|incendi\w*|humo|llamas?|explot\w*|explosion|fire|smoke|flames?)\b"),
        Danger(
            kind="fire",
            skill="electrical",
            label=_("fire or smoke"),
            safety=_(
                "Get out and call the fire brigade (100); if it is electrical and it is safe, "
                "cut the power at the panel, and never throw water on anything plugged in."
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
            label=_("electrical hazard"),
            safety=_(
                "Cut the power at the panel (breaker) if it is safe to do so, don't touch cables "
                "or appliances and keep water away."
            ),
        ),
    ),
    (
        re.compile(r"\b(?:inund\w*|agua(?! caliente)|cano\w*|flood\w*|water|pipe\w*|burst)\b"),
        Danger(
            kind="water",
            skill="plumbing",
            label=_("water leak"),
            safety=_(
                "Shut the main water valve and, if water reaches sockets or appliances, cut the "
                "power at the panel without stepping in the water."
            ),
        ),
    ),
    (
        re.compile(r"\b(?:calefa\w*|caldera|calor|heat\w*|boiler)\b"),
        Danger(
            kind="heating",
            skill="heating",
            label=_("no heating, vulnerable person"),
            safety=_(
                "Keep the person warm and use an electric heater if there is one; never a "
                "brazier or the oven for heating (carbon monoxide risk)."
            ),
        ),
    ),
)
GENERIC_DANGER = Danger(
    kind="other",
    skill=None,
    label=pgettext_lazy("danger", "emergency"),
    safety=_("Move away from the danger and, if anyone is at risk, call 911."),
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
    word = PRIORITY_WORDS.get(priority)
    return runner.say(word) if word is not None else priority


@dataclass
class _Subject:
    """Who and what a ticket is about, as far as the step knows."""

    customer: CustomerRow | None = None
    job: JobRow | None = None
    job_id: int | None = None
    unresolved: str = ""  # a name that matched nobody, or several (said in the reply)
    ambiguous: bool = False
    note: str = ""  # which namesake a best-effort pick took (O8)

    def link(self, ref: CustomerRef | None) -> dict[str, Any]:
        """ticket_create's arguments: the resolved customer, else the reference as given."""
        args: dict[str, Any] = {}
        if self.customer is not None:
            args["customer_id"] = self.customer.id
        elif ref is not None and not self.unresolved:
            args.update(ref.args())
        job_id = self.job_id if self.job_id is not None else (self.job.id if self.job else None)
        if job_id is not None:
            args["job_id"] = job_id
        return args


def _latest_job(jobs: tuple[JobRow, ...], runner: Runner) -> JobRow | None:
    """The job a complaint is most likely about: the latest one that has started, else the
    next one."""
    now = runner.ctx.now
    started = [job for job in jobs if job.start <= now]
    if started:
        return max(started, key=lambda job: job.start)
    return min(jobs, key=lambda job: job.start) if jobs else None


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
    if (file := CustomerFile.of(found)) is None:
        return subject, who, _lookup_failed(runner, subject, who, found)
    subject.customer = file.customer
    jobs = file.jobs
    if subject.job_id is not None:
        subject.job = next((job for job in jobs if job.id == subject.job_id), None)
    elif with_latest_job:
        subject.job = _latest_job(jobs, runner)
    return subject, who, None


def _from_search(
    step: Step, runner: Runner, subject: _Subject, who: CustomerRef
) -> tuple[_Subject, CustomerRef | None, Outcome | None]:
    found = CustomersFound.of(runner.call("customers_find", query=who.name))
    if found is None:
        return subject, who, None
    rows = list(found.customers)
    if who.id is not None:
        rows = [row for row in rows if row.id == who.id]
    elif len(rows) > 1:
        exact = [row for row in rows if fold(row.name) == fold(who.name)]
        rows = exact if len(exact) == 1 else rows
    if len(rows) > 1:
        choice = choose(
            step, runner, rows, customer_candidate,
            many=runner.say(_("several customers “%(name)s”"), name=who.name),
        )  # fmt: skip
        rows, subject.note = ([choice.picked], choice.note) if choice.picked else (rows, "")
    if len(rows) == 1:
        subject.customer = rows[0]
        return subject, who, None
    error = f"customer '{who.name}' " + ("is ambiguous" if rows else "not found")
    candidates = [row.as_json() for row in rows]  # as a tool's refusal lists them
    refused = ToolResult(ok=False, data={"candidates": candidates}, summary=error, error=error)
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


def _job_text(runner: Runner, job: JobRow) -> str:
    moment = full_date(job.start.date(), runner.language)
    if job.technician:
        return runner.say(
            _("#%(id)s %(service)s (%(moment)s, with %(technician)s)"),
            id=job.id,
            service=job.service,
            moment=moment,
            technician=job.technician,
        )
    return f"#{job.id} {job.service} ({moment})"


def _links_text(runner: Runner, subject: _Subject) -> str:
    parts: list[str] = []
    if subject.job is not None:
        job = _job_text(runner, subject.job)
        parts.append(runner.say(_("I linked job %(job)s."), job=job))
    elif subject.job_id is not None:
        parts.append(runner.say(_("I linked job %(job)s."), job=f"#{subject.job_id}"))
    if subject.unresolved and subject.ambiguous:
        parts.append(
            runner.say(
                _(
                    "Several customers match “%(name)s”, so no customer is linked: tell me which "
                    "one."
                ),
                name=subject.unresolved,
            )
        )
    elif subject.unresolved:
        parts.append(
            runner.say(
                _("I found no customer “%(name)s”, so no customer is linked."),
                name=subject.unresolved,
            )
        )
    return "".join(f" {part}" for part in parts)


def _customer_mutation(subject: _Subject) -> list[Mutation]:
    customer = subject.customer
    if customer is None:
        return []
    return [Mutation(kind="customer", id=customer.id, label=customer.name)]


def _not_opened(runner: Runner, result: ToolResult, lead: str = "") -> Outcome:
    reason = result.error or result.summary
    return Outcome(
        text=lead
        + runner.say(
            _("I couldn't open the ticket: %(reason)s. Please call a manager."), reason=reason
        ),
        success=False,
        error=reason,
    )


# --- emergency --------------------------------------------------------------------------------


@handles("emergency")
def emergency(step: Step, runner: Runner) -> Outcome:
    danger = danger_in(step.text)
    safety = runner.say(
        _("Emergency (%(danger)s). Safety first: %(safety)s"),
        danger=runner.say(danger.label),
        safety=runner.say(danger.safety),
    )
    subject, who, _ambiguous = _subject(step, runner, with_latest_job=False)
    # An ambiguous name must not delay an emergency: the ticket opens unlinked and says so.
    if _ambiguous is not None and who is not None:
        subject.unresolved, subject.ambiguous = who.name, True
    ticket = _open_ticket(
        runner, subject, who, reason="emergency", priority="urgent",
        summary=_summary(step, say("es", danger.label)),
    )  # fmt: skip
    if (opened := TicketResult.of(ticket)) is None:
        return _not_opened(runner, ticket, lead=safety + "\n")
    text = safety + "\n" + _emergency_ticket_text(runner, subject, opened.ticket)
    text += _nearest_text(runner, subject, danger)
    return Outcome(text=text, mutations=_customer_mutation(subject))


def _emergency_ticket_text(runner: Runner, subject: _Subject, ticket: Ticket) -> str:
    customer = subject.customer
    where = ""
    if customer is not None:
        phone = format_phone(customer.phone)
        details = ", ".join(part for part in (customer.address, phone) if part)
        where = f" ({details})" if details else ""
    opened = (
        _(
            "I opened urgent ticket #%(id)s for %(customer)s%(where)s: a person in the office is "
            "taking it now to send a technician."
        )
        if customer is not None
        else _(
            "I opened urgent ticket #%(id)s%(where)s: a person in the office is taking it now to "
            "send a technician."
        )
    )
    name = customer.name if customer is not None else None
    text = runner.say(opened, id=ticket.id, customer=name, where=where)
    return text + _links_text(runner, subject)


def _nearest_text(runner: Runner, subject: _Subject, danger: Danger) -> str:
    """The nearest free technicians with the trade (a proposal: dispatching is the fleet's and
    a manager's call)."""
    if budget_left(runner) < 1 or not _enabled(runner, "technicians_nearest"):
        return ""
    zone = subject.customer.zone if subject.customer is not None else ""
    arguments: dict[str, Any] = {"count": NEAREST_SHOWN}
    if danger.skill:
        arguments["skill"] = danger.skill
    if zone:
        arguments["zone"] = zone
    elif subject.job_id is not None:
        arguments["job_id"] = subject.job_id
    else:
        return "\n" + runner.say(
            _("Send me the customer or the address and I'll propose the nearest free technician.")
        )
    found = NearestTechnicians.of(runner.call("technicians_nearest", **arguments))
    if found is None:
        return ""
    free = found.technicians
    if not free:
        return "\n" + runner.say(
            _(
                "No technician with that trade is free right now: the office will coordinate by "
                "phone."
            )
        )
    first, *others = free
    line = "\n" + runner.say(
        _("The nearest free technician: %(technician)s."), technician=_technician(runner, first)
    )
    if others:
        names = ", ".join(_technician(runner, t) for t in others)
        line += " " + runner.say(_("Also free: %(names)s."), names=names)
    return line


def _technician(runner: Runner, technician: TechnicianRow) -> str:
    hops = technician.zone_distance
    distance = ""
    if hops == 0:
        distance = runner.say(_("same zone"))
    elif hops == 1:
        distance = runner.say(_("neighbouring zone"))
    details = ", ".join(
        part for part in (technician.zone, distance, format_phone(technician.phone or "")) if part
    )
    return f"{technician.name} ({details})" if details else technician.name


# --- a ticket named by its number ---------------------------------------------------------------

REASON_WORDS = {
    "complaint": pgettext_lazy("ticket reason", "complaint"),
    "emergency": pgettext_lazy("ticket reason", "emergency"),
    "escalate": pgettext_lazy("ticket reason", "request for a person"),
    "frustration": pgettext_lazy("ticket reason", "frustration"),
    "handoff": pgettext_lazy("ticket reason", "copilot hand-off"),
}
STATUS_WORDS = {
    "open": pgettext_lazy("ticket status", "open, not picked up yet"),
    "in_progress": pgettext_lazy("ticket status", "in progress"),
    "resolved": pgettext_lazy("ticket status", "resolved"),
}


def _named_ticket(step: Step, runner: Runner) -> Outcome | None:
    """ "¿cómo va el reclamo 12?", "what's the status of ticket 12": the ticket's state, or that
    there is no such ticket (another organisation's reads the same). No new ticket is opened
    for a number that is not found: the reply asks what happened instead."""
    number = step.entities.ticket_id
    if number is None:
        return None
    result = runner.call("ticket_find", number=number)
    if (found := TicketResult.of(result)) is None:
        disabled = not_enabled(
            runner, result, runner.say(_("I can't look up ticket #%(number)s"), number=number)
        )
        if disabled is not None:
            return disabled
        return Outcome(
            text=runner.say(
                _(
                    "I couldn't find ticket #%(number)s. Please check the number; if it is a new "
                    "complaint, tell me what happened and I'll record it."
                ),
                number=number,
            ),
            success=False,
            error=result.error or f"ticket #{number} not found",
        )
    data = found.ticket
    reason = REASON_WORDS.get(data.reason)
    status = STATUS_WORDS.get(data.status)
    about = runner.say(reason) if reason is not None else data.reason
    if data.customer:
        about = runner.say(_("%(reason)s for %(customer)s"), reason=about, customer=data.customer)
    if data.job_id:
        about = runner.say(_("%(about)s, job #%(job)s"), about=about, job=data.job_id)
    text = runner.say(
        _("Ticket #%(id)s (%(about)s, %(priority)s priority, of %(created)s) is %(status)s."),
        id=data.id,
        about=about,
        priority=_priority(runner, data.priority),
        created=full_date(data.created_at.date(), runner.language),
        status=runner.say(status) if status is not None else data.status,
    )
    summary = " ".join(data.summary.split()).rstrip(".")
    if summary:
        text += " " + runner.say(_("It says: “%(summary)s”."), summary=summary[:200])
    if data.status == "resolved":
        text += " " + runner.say(
            _("If the problem is back, tell me what happens and I'll open a new complaint.")
        )
    else:
        text += " " + runner.say(_("The team has it: a person follows it up from the ticket list."))
    mutations = []
    if data.customer_id and data.customer:
        mutations.append(Mutation(kind="customer", id=data.customer_id, label=data.customer))
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
    if (opened := TicketResult.of(ticket)) is None:
        return _not_opened(runner, ticket)
    data = opened.ticket
    opening = (
        runner.say(_("I'm very sorry about what happened."))
        if angry
        else runner.say(pgettext_lazy("complaint", "I'm sorry about this."))
    )
    phone = format_phone(subject.customer.phone) if subject.customer is not None else ""
    review = (
        runner.say(
            _("A person on the team will review it and contact the customer (%(phone)s)."),
            phone=phone,
        )
        if phone
        else runner.say(_("A person on the team will review it and follow up."))
    )
    customer = subject.customer
    recorded = (
        _("I recorded the complaint for %(customer)s: ticket #%(id)s, %(priority)s priority.")
        if customer is not None
        else _("I recorded the complaint: ticket #%(id)s, %(priority)s priority.")
    )
    text = runner.say(
        recorded,
        customer=customer.name if customer is not None else None,
        id=data.id,
        priority=_priority(runner, data.priority),
    )
    text += _links_text(runner, subject)
    text += f" {review} {opening}"
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
    if (opened := TicketResult.of(ticket)) is None:
        return _not_opened(runner, ticket)
    data = opened.ticket
    handed = (
        _(
            "I'm handing you over to a person: I opened ticket #%(id)s (%(priority)s priority, "
            "about %(customer)s) and a manager will take over the conversation shortly. "
            "Meanwhile, if you need something specific, tell me and I'll do it."
        )
        if data.customer
        else _(
            "I'm handing you over to a person: I opened ticket #%(id)s (%(priority)s priority) "
            "and a manager will take over the conversation shortly. Meanwhile, if you need "
            "something specific, tell me and I'll do it."
        )
    )
    return Outcome(
        text=runner.say(
            handed,
            id=data.id,
            priority=_priority(runner, data.priority),
            customer=data.customer,
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
    if (opened := TicketResult.of(ticket)) is None:
        return _not_opened(
            runner,
            ticket,
            lead=runner.say(pgettext_lazy("frustration", "I'm sorry about this.")) + " ",
        )
    data = opened.ticket
    return Outcome(
        text=runner.say(
            _(
                "I'm sorry for the trouble. I've passed this to a person on the team as high "
                "priority (ticket #%(id)s): they will review it and get back to you shortly. If "
                "you tell me what you need sorted now, I'll do it right away."
            ),
            id=data.id,
        )
    )
