"""Replies written to the customer (issue 27.3, P4): what a customer reads on WhatsApp speaks to
them, not about them to the office.

The steps of a turn answer in the office's words ("te agendé a Marta Gómez… Es el trabajo #1",
"Registré el reclamo de…", the customer card). In a customer's turn the WhatsApp channel rebuilds
the reply from the steps that ran (`customer_reply`), one line each, by what the step did:

- booked or moved a visit (`job_book`, `job_reschedule`): the visit, read from the job itself —
  day, time window and the technician's first name;
- read the customer's own file or jobs (`customer_history`, `jobs_find`): their next visit, the
  same way ("¿cuándo viene el técnico?"), or that none is booked;
- opened a ticket (`ticket_create`, a complaint): sorry, and that a person will write to them;
- failed or gave up ("No estoy seguro de cómo…", a refused tool): an offer to talk to a person,
  never the failure;
- anything else (a price, a question back, a choice): its own text.

Whatever the text, `without_office_references` takes out the office's references: record numbers
("#12", "(cliente #33)") and the customer's own name said about them in the third person.
"""

from __future__ import annotations

import re

from django.utils.translation import gettext_lazy as _

from agents.context import TurnContext
from agents.phrasing import day
from business.models import Customer, Job
from business.selectors import scoped
from common.text import fold
from common.wording import say
from copilot.orchestration.state import StepRun, TurnState

BOOKS, MOVES = "job_book", "job_reschedule"
READS_VISITS = frozenset({"customer_history", "jobs_find"})
READS_SLOTS = frozenset({"slots_find", "technicians_free"})
# A customer asking when someone comes ("¿cuándo viene el técnico?", "¿a qué hora llegan?",
# "when is the technician coming?") asks about their visit, not about free slots; a question
# with a day of its own ("¿pueden venir el jueves?") is about availability.
_WHEN_COMING = re.compile(
    r"\b(?:cuando|que\s+(?:dia|hora)|a\s+que\s+hora|when|what\s+time)\b.{0,40}?"
    r"\b(?:viene|vienen|venis|llega|llegan|llegas|pasa|pasan|pasas|come|comes|coming|arrive"
    r"|arrives|arriving|be\s+here|show\s+up)\b"
)
OPENS_TICKET = "ticket_create"

_RECORD_IN_BRACKETS = re.compile(
    r"\s*\((?:cliente|customer|trabajo|job|ticket|reclamo|factura|invoice)\s*#\d+\)", re.I
)
_IT_IS_RECORD = re.compile(r"\s*(?:Es el trabajo|It is job|It's job) #\d+\.", re.I)
_RECORD_NUMBER = re.compile(r"\s?#\d+\b")


def customer_reply(state: TurnState, ctx: TurnContext, customer: Customer, language: str) -> str:
    """The turn's reply as the customer reads it, one line per step ("" when the turn ran no
    steps of its own: a notice, a direct line — kept as they are)."""
    reading, delegation = state["reading"], state["delegation"]
    if reading.notice or reading.direct_agent or not delegation.runs:
        return ""
    lines: list[str] = []
    for run in delegation.final_runs():
        line = _line(run, ctx, customer, language)
        if line and line not in lines:
            lines.append(line)
    return "\n\n".join(lines)


def _line(run: StepRun, ctx: TurnContext, customer: Customer, language: str) -> str:
    outcome, tools = run.outcome, set(run.tools)
    if outcome.clarify is not None or outcome.pending_approvals:
        return outcome.text  # a question back, a choice, a wait: theirs to answer
    if not outcome.success or outcome.yielded or not outcome.text.strip():
        return offer_a_person(language)
    job = _job_of(run, customer)
    if job is not None and tools & {BOOKS, MOVES}:
        return visit_line(job, ctx, language, moved=MOVES in tools)
    if OPENS_TICKET in tools:
        return complaint_recorded(language)
    if tools & READS_VISITS or (tools & READS_SLOTS and _asks_when_coming(run)):
        return next_visit(customer, ctx, language)
    return outcome.text


def _asks_when_coming(run: StepRun) -> bool:
    found = run.step.entities
    undated = found.date is None and found.time is None
    return undated and bool(_WHEN_COMING.search(fold(run.step.text)))


def complaint_recorded(language: str) -> str:
    return say(
        language,
        _(
            "I'm sorry about what happened. I recorded your complaint: a person on the team will "
            "review it and write to you here."
        ),
    )


def _job_of(run: StepRun, customer: Customer) -> Job | None:
    ids = [m.id for m in run.outcome.mutations if m.kind == "job"]
    if not ids:
        return None
    jobs = scoped(Job, customer.organisation).filter(customer=customer, pk=ids[-1])
    return jobs.select_related("technician").first()


def next_visit(customer: Customer, ctx: TurnContext, language: str) -> str:
    """The customer's next visit: day, time window, technician; or that none is booked."""
    job = (
        scoped(Job, customer.organisation)
        .filter(customer=customer, status__in=Job.OPEN_STATUSES, scheduled_end__gte=ctx.now)
        .select_related("technician")
        .order_by("scheduled_start")
        .first()
    )
    if job is None:
        return say(language, _("You have no visit booked. Would you like me to book one?"))
    return visit_line(job, ctx, language, moved=False, booked=False)


def visit_line(
    job: Job, ctx: TurnContext, language: str, *, moved: bool, booked: bool = True
) -> str:
    """ "Listo: tu visita de service quedó para el jueves 03/12, entre las 15:00 y las 17:00.
    Va Lucía." """
    start, end = ctx.local(job.scheduled_start), ctx.local(job.scheduled_end)
    values = {"service": job.service[:1].lower() + job.service[1:], "day": day(start.date(),
              language), "start": f"{start:%H:%M}", "end": f"{end:%H:%M}"}  # fmt: skip
    # A service that is a visit already ("visita técnica") is not "your visita técnica visit".
    a_visit = fold(job.service).startswith("visit")
    if moved and a_visit:
        line = _("Done: I moved your %(service)s to %(day)s, between %(start)s and %(end)s.")
    elif moved:
        line = _("Done: I moved your %(service)s visit to %(day)s, between %(start)s and %(end)s.")
    elif booked and a_visit:
        line = _("Done: your %(service)s is booked for %(day)s, between %(start)s and %(end)s.")
    elif booked:
        line = _("Done: your %(service)s visit is booked for %(day)s, between %(start)s and "
                 "%(end)s.")  # fmt: skip
    else:
        line = _("Your next visit (%(service)s) is on %(day)s, between %(start)s and %(end)s.")
    return f"{say(language, line, **values)} {_technician(job, language)}"


def _technician(job: Job, language: str) -> str:
    if job.technician is None:
        return say(language, _("We will confirm the technician before the visit."))
    first = job.technician.name.split()[0]
    return say(language, _("%(technician)s is coming."), technician=first)


def offer_a_person(language: str) -> str:
    """When the copilot cannot help: a person, never the failure. A yes-or-no question: the
    reply that asks it is marked (`PERSON_OFFERED` in its trace), goes out with "Sí" and "No"
    buttons, and a bare "sí" / "dale" / "yes" (or the button) hands the conversation over
    (whatsapp/channel.py `offer_answer`)."""
    return say(
        language,
        _(
            "I can't sort that out from here. Would you like me to pass you to a person from the "
            "office?"
        ),
    )


# The trace key of a reply that offers the customer a person (whatsapp/channel.py).
PERSON_OFFERED = "person_offered"


def offer_declined(language: str) -> str:
    """The customer said no to the offer of a person."""
    return say(language, _("All right. If you need anything else, write me here."))


def no_documents(kind: str, language: str) -> str:
    if kind == "quote":
        line = say(language, _("I found no quote in your name yet."))
    else:
        line = say(language, _("I found no invoice in your name yet."))
    return f"{line} {offer_a_person(language)}"


def without_office_references(text: str, customer: Customer | None) -> str:
    """No record numbers, and the customer not named to themselves in the third person."""
    text = _IT_IS_RECORD.sub("", _RECORD_IN_BRACKETS.sub("", text))
    text = _RECORD_NUMBER.sub("", text)
    if customer is not None and customer.name.strip():
        name = re.escape(customer.name.strip())
        text = re.sub(rf"\s(?:de|a|para|for|to) {name}\b", "", text, flags=re.I)
    return text
