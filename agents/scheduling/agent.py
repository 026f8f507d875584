"""Handlers of the scheduling agent (O11): book, move and cancel jobs; say what is free.

They resolve with data instead of deflecting: a taken slot is answered with the next three
concrete slots and who would go, a job is found by the customer or the conversation, and a
cancellation is filed for a manager's approval with the job described. Plans stay short (one to
three tool calls) so the default budget of four is never the reason a step stops.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Sequence
from typing import Any

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext_lazy

from agents.base import Outcome, Runner, Step, handles
from agents.payloads import CustomersFound, JobRow, JobsFound, Slot
from agents.phrasing import (
    Found,
    answered,
    ask,
    bullets,
    call_for_customer,
    choose,
    customer_candidate,
    customer_problem,
    day,
    failed,
    free_slot_line,
    held,
    held_id,
    impossible_date,
    job_line,
    job_listed,
    numbered,
    service_reason,
    slot_line,
    when,
    with_note,
)
from agents.registry import ToolResult
from agents.results import to_json
from agents.scheduling.tools import JobBooked, JobRescheduled, SlotsFound, TechniciansFree
from agents.subjects import CustomerRef, customer_ref, job_mutation, job_ref, same_person
from business.profiles import UsualSlot, customer_profile_fields, usual_slot
from business.scheduling import business_hours_on
from business.selectors import search_customers
from business.services import infer_skill, service_duration
from common.text import fold
from common.wording import say
from nlu.decisions import stated_reason

DEFAULT_SERVICE = _("Technical visit")  # said in the organisation's language
AVAILABILITY_SLOTS = 6  # free starts listed when someone asks what is free
LISTED_JOBS = 5  # jobs listed when the operator must pick one
# "el próximo trabajo de Juan" / "Juan's next job" names one job: the soonest still ahead.
_NEXT_JOB = re.compile(
    r"\b(?:proxim[oa]|siguiente)\s+(?:trabajo|visita|servicio)\b"
    r"|\bnext\s+(?:job|visit|appointment|booking|service)\b"
    # "cancelá el próximo", "la que sigue", "the next one"
    r"|(?:\b(?:el|la)\s+(?:proxim[oa]|siguiente|que\s+sigue)|\bthe\s+next(?:\s+one)?)\b"
    # not a day ("pasalo para el próximo lunes", "the next Monday")
    r"(?!\s+(?:lunes|martes|miercoles|jueves|viernes|sabado|domingo|semana|mes|dia|hueco|horario"
    r"|turno|monday|tuesday|wednesday|thursday|friday|saturday|sunday|week|month|day|slot|free"
    r"|available|time))"
)
# "¿qué trabajos hay mañana?", "what jobs do we have on Friday?": the day's agenda, not its gaps
# (check_availability covers both questions about a day; the words of the question tell them
# apart). A question that names a free slot is about the gaps.
_ABOUT_BOOKED = re.compile(
    r"\b(?:trabajos?|visitas?|agendad[oa]s?|laburos?|servicios?|jobs?|visits?|appointments?"
    r"|bookings?|booked|scheduled)\b"
)
_ABOUT_FREE = re.compile(
    r"\b(?:libres?|disponibles?|disponibilidad|lugar(?:es)?|huecos?|hueco|espacio|free|available"
    r"|availability|slots?|openings?|room|gaps?|fit|squeeze|cabe|entra|meter)\b"
)
AGENDA_LISTED = 12  # jobs of a day listed before "and N more"


# --- small pieces -----------------------------------------------------------------------------

_PARTS: dict[str, Promise] = {
    "morning": _("in the morning"),
    "afternoon": _("in the afternoon"),
    "evening": _("in the evening"),
}


def _part(step: Step, runner: Runner) -> str:
    """ " a la tarde": the part of the day the slots were limited to, said in the reply."""
    part = _PARTS.get(step.entities.part_of_day or "")
    return " " + runner.say(part) if part else ""


def _slot_filter(step: Step) -> dict[str, Any]:
    part = step.entities.part_of_day
    return {"part_of_day": part} if part in _PARTS else {}


def _clock(value: str | None) -> datetime.time | None:
    """The entity's "HH:MM" as a time (None when absent or malformed)."""
    if not value:
        return None
    hours, _sep, minutes = value.partition(":")
    try:
        return datetime.time(int(hours), int(minutes or 0))
    except ValueError:
        return None


def _at(runner: Runner, on: datetime.date, clock: datetime.time) -> datetime.datetime:
    return datetime.datetime.combine(on, clock, tzinfo=runner.tz)


def _day_for(runner: Runner, clock: datetime.time) -> datetime.date:
    """A time without a day: today if that time is still ahead, else tomorrow."""
    now = runner.local_now
    return (
        now.date() if _at(runner, now.date(), clock) > now else now.date() + datetime.timedelta(1)
    )


def _minutes(service: str | None) -> int:
    duration = service_duration(service or "")
    return int(duration.total_seconds() // 60)


def _skill(service: str | None) -> str | None:
    return infer_skill(service) if service else None


def _refusal(runner: Runner, result: ToolResult) -> str:
    """Why the service refused a time, as a sentence in the message's language."""
    codes = set(result.data.get("codes") or [])
    if "past" in codes:
        return runner.say(_("That time has already passed"))
    if "no_technician_free" in codes:
        return runner.say(_("No technician for that work is free at that time"))
    if "technician_busy" in codes:
        return service_reason(runner, result, runner.say(_("The technician can't make that time")))
    if "vehicle_busy" in codes:
        return runner.say(_("The assigned vehicle is busy at that time"))
    return service_reason(runner, result, runner.say(_("That time is not possible")))


Take = Callable[[Slot], Outcome]


def _offer(
    step: Step,
    runner: Runner,
    slots: Sequence[Slot],
    *,
    lead: str,
    error: str,
    slot: str = "time",
    take: Take | None = None,
    stated: str = "",
    listed: str = "",
) -> Outcome:
    """Nothing booked or moved: why, and the next concrete slots to choose from.

    The choice is a clarification (O8): when the step resumes with the operator's answer
    ("el segundo", "el martes a las 10") the slot it names is taken with `take`. With best
    effort the slots are listed without asking again; `stated` is the reason said as a
    statement when `lead` is a question, `listed` what introduces the slots. All three are
    already in the reply's language.
    """
    language = runner.language
    if not slots:
        return Outcome(
            text=runner.say(
                _("%(lead)s, and I found no free slot in the next three weeks."), lead=lead
            ),
            success=False,
            error=error,
        )
    chosen = answered(step, slots, lambda free: slot_line(free, language)) if take else None
    if chosen is not None and take is not None:
        return take(chosen)
    listing = numbered([slot_line(free, language) for free in slots])
    if runner.best_effort:
        return Outcome(
            text=runner.say(
                _("%(lead)s. The next free slots:\n%(listing)s"),
                lead=stated or lead,
                listing=listing,
            ),
            success=False,
            error=error,
        )
    return ask(
        runner,
        runner.say(
            _("%(lead)s. %(listed)s:\n%(listing)s\nWhich one works for you?"),
            lead=lead,
            listed=listed or runner.say(_("These slots are free")),
            listing=listing,
        ),
        error=error,
        slot=slot,
    )


# --- book_job -------------------------------------------------------------------------------


@handles("book_job")
def book_job(step: Step, runner: Runner) -> Outcome:
    who = customer_ref(step, runner)
    note = ""
    if who is None and step.entities.address:
        who, note, question = _customer_at(step, runner, step.entities.address)
        if question is not None:
            return question
    if who is None:
        return ask(
            runner,
            runner.say(
                _(
                    "Which customer is the job for? Tell me the name (if they are new, also "
                    "their phone and address so I can register them)."
                )
            ),
            error="missing customer",
        )
    return with_note(_book(step, runner, who), note)


def _customer_at(
    step: Step, runner: Runner, address: str
) -> tuple[CustomerRef | None, str, Outcome | None]:
    """A booking that gives an address and no customer: the one customer on file there (said
    in the reply), or the question — which keeps the address, never drops it."""
    # The same address rule the booking then checks it with (business/selectors.py).
    found = CustomersFound.of(runner.call("customers_find", address=address))
    customers = found.customers if found is not None else ()
    if len(customers) == 1:
        one = customers[0]
        note = runner.say(
            _("I booked it for %(name)s, the customer I have at %(address)s."),
            name=one.name,
            address=address,
        )
        return CustomerRef(one.id, one.name, "named"), note, None
    if customers:
        listing = bullets(customer_candidate(c) for c in customers)
        question = ask(
            runner,
            runner.say(
                _(
                    "There are %(count)d customers at %(address)s:\n%(listing)s\nWhich one is "
                    "the job for?"
                ),
                count=len(customers),
                address=address,
                listing=listing,
            ),
            error="several customers at the address",
            slot="customer_choice",
        )
        return None, "", question
    which = (
        _(
            "Which customer is the job at %(address)s for? I have no customer at that address: "
            "tell me the name (if they are new, also their phone and I'll register them with "
            "that address)."
        )
        if found is not None
        else _(
            "Which customer is the job at %(address)s for? Tell me the name (if they are new, "
            "also their phone and I'll register them with that address)."
        )
    )
    question = ask(runner, runner.say(which, address=address), error="missing customer")
    return None, "", question


def _book(step: Step, runner: Runner, who: CustomerRef) -> Outcome:
    if (question := impossible_date(step, runner)) is not None:
        return question
    service = step.entities.service or say(runner.ctx.organisation.language, DEFAULT_SERVICE)
    on, clock = step.entities.date, _clock(step.entities.time)
    if on is None and clock is None:
        return _ask_when(step, runner, who, service)
    if clock is None:
        assert on is not None
        return _book_first_free(step, runner, who, service, on)
    start = _at(runner, on or _day_for(runner, clock), clock)
    return _book_at(step, runner, who, service, start.isoformat(), first_free=False)


def _ask_when(step: Step, runner: Runner, who: CustomerRef, service: str) -> Outcome:
    usual = _usual_slot(step, runner, who)
    if usual is not None and (offer := _offer_usual(step, runner, who, service, usual)):
        return offer
    found = runner.call(
        "slots_find",
        skill=_skill(service),
        duration_minutes=_minutes(service),
        **_slot_filter(step),
    )
    if (free := SlotsFound.of(found)) is None:
        return failed(runner, found, runner.say(_("I couldn't look for free slots")))
    name = who.name or runner.say(_("the customer"))
    return _offer(
        step,
        runner,
        free.slots,
        lead=runner.say(
            _("When should I book %(service)s for %(name)s? You didn't say the day"),
            service=service,
            name=name,
        ),
        error="missing date",
        slot="date",
        take=lambda free: _book_slot(step, runner, who, service, free),
        stated=runner.say(
            _("I didn't book %(service)s for %(name)s: you didn't say the day"),
            service=service,
            name=name,
        ),
    )


def _usual_slot(step: Step, runner: Runner, who: CustomerRef) -> UsualSlot | None:
    """The customer's usual days and time (their profile, P4) — unless the operator limited
    the search themselves ("a la tarde")."""
    if step.entities.part_of_day:
        return None
    organisation, customer_id = runner.ctx.organisation, who.id
    if customer_id is None:  # named: the profile of the one customer the name finds
        matches = list(search_customers(organisation, who.name).values_list("pk", flat=True)[:2])
        customer_id = matches[0] if len(matches) == 1 else None
    if customer_id is None:
        return None
    return usual_slot(customer_profile_fields(organisation.pk, customer_id))


def _offer_usual(
    step: Step, runner: Runner, who: CustomerRef, service: str, usual: UsualSlot
) -> Outcome | None:
    """No day was said: the free slots on the customer's usual day and time, proposed as such
    ("Te propongo el martes 01/12 09:00, como suele preferir Gómez"). None when nothing is free
    then (the usual offer follows)."""
    arguments: dict[str, Any] = {
        "skill": _skill(service), "duration_minutes": _minutes(service), "count": 3,
    }  # fmt: skip
    # Today counts too (slots_find only offers what is still ahead).
    on = usual.next_day(runner.local_now.date() - datetime.timedelta(days=1))
    if on is not None:
        arguments["date"] = on
    if usual.clock is not None:
        arguments["time_from"] = f"{usual.clock:%H:%M}"
    elif usual.part_of_day in _PARTS:
        arguments["part_of_day"] = usual.part_of_day
    found = runner.call("slots_find", **arguments)
    free = SlotsFound.of(found)
    if free is None or free.requested_range_full or not free.slots:
        return None
    slots, name = free.slots, who.name
    first = slot_line(slots[0], runner.language)
    return _offer(
        step,
        runner,
        slots,
        lead=runner.say(
            _(
                "When should I book %(service)s for %(name)s? I suggest %(first)s, as %(name)s "
                "usually prefers"
            ),
            service=service,
            name=name,
            first=first,
        ),
        error="missing date",
        slot="date",
        take=lambda free: _book_slot(step, runner, who, service, free),
        stated=runner.say(
            _(
                "I didn't book %(service)s for %(name)s: you didn't say the day; %(name)s "
                "usually prefers these times"
            ),
            service=service,
            name=name,
        ),
        listed=runner.say(_("The free slots then")),
    )


def _book_slot(step: Step, runner: Runner, who: CustomerRef, service: str, free: Slot) -> Outcome:
    """The offered slot the operator chose, with the technician it was offered with."""
    return _book_at(
        step, runner, who, service, to_json(free.start), first_free=False,
        technician=free.technician, offer=False,
    )  # fmt: skip


def _book_first_free(
    step: Step, runner: Runner, who: CustomerRef, service: str, on: datetime.date
) -> Outcome:
    """A day without a time: the first free slot that day (the service picks who goes)."""
    found = runner.call(
        "slots_find",
        date=on,
        skill=_skill(service),
        duration_minutes=_minutes(service),
        count=3,
        **_slot_filter(step),
    )
    if (free := SlotsFound.of(found)) is None:
        return failed(runner, found, runner.say(_("I couldn't look for free slots")))
    slots = free.slots
    if free.requested_range_full or not slots:
        return _offer(
            step,
            runner,
            slots,
            lead=runner.say(
                _("There is no free slot for %(service)s on %(day)s%(part)s"),
                service=service,
                day=day(on, runner.language),
                part=_part(step, runner),
            ),
            error="day full",
            take=lambda free: _book_slot(step, runner, who, service, free),
        )
    return _book_at(step, runner, who, service, to_json(slots[0].start), first_free=True)


def _book_at(
    step: Step,
    runner: Runner,
    who: CustomerRef,
    service: str,
    start: str,
    *,
    first_free: bool,
    technician: str | None = None,
    offer: bool = True,
) -> Outcome:
    """Book at `start`; a refused time is answered with the next slots (`offer=False`: the slot
    was already chosen from such a list, so its answer is not read again)."""
    arguments: dict[str, Any] = {**who.args(), "service": service, "start": start}
    if technician or step.entities.technician:
        arguments["technician"] = technician or step.entities.technician
    if step.entities.address:
        arguments["address"] = step.entities.address  # one of theirs, or the booking stops
    result, chosen, note = call_for_customer(step, runner, "job_book", arguments)
    if chosen is not None:
        who = CustomerRef(int(chosen["id"]), str(chosen["name"]), "named")
    outcome = _booking_result(step, runner, who, service, start, result, first_free, offer)
    return with_note(outcome, note)


def _booking_result(
    step: Step,
    runner: Runner,
    who: CustomerRef,
    service: str,
    start: str,
    result: ToolResult,
    first_free: bool,
    offer: bool,
) -> Outcome:
    language = runner.language
    if (approval := held_id(result)) is not None:
        return held(
            runner,
            approval,
            runner.say(
                _("Booking %(service)s for %(name)s on %(moment)s"),
                service=service,
                name=who.name,
                moment=when(start, language),
            ),
        )
    if not result.ok:
        problem = customer_problem(runner, who.name, result)
        if problem is not None:
            return problem
        if "address_missing" in result.data:
            return _not_their_address(runner, who, result.data)
        if "alternatives" in result.data:
            reason = _refusal(runner, result)
            return _offer(
                step,
                runner,
                _alternatives(result),
                lead=runner.say(
                    _("I couldn't book it on %(moment)s. %(reason)s"),
                    moment=when(start, language),
                    reason=reason,
                ),
                error=result.error,
                take=(lambda free: _book_slot(step, runner, who, service, free)) if offer else None,
            )
    if (booked := JobBooked.of(result)) is None:
        return failed(runner, result, runner.say(_("I couldn't book the job")))
    return _booked(runner, booked.job, first_free=first_free)


def _alternatives(result: ToolResult) -> list[Slot]:
    """The next free slots a refusal offers (a failure's data: JSON)."""
    return [Slot.from_json(slot) for slot in result.data["alternatives"]]


def _not_their_address(runner: Runner, who: CustomerRef, data: dict[str, Any]) -> Outcome:
    """The address given is not one of the customer's: nothing is booked (never at another
    address than the one said), and the way on is offered."""
    address, name = data["address_missing"], data["customer"]["name"]
    on_file = data["customer"].get("address") or ""
    nothing = (
        _(
            "I booked nothing: %(address)s is not an address on file for %(name)s (the one on "
            "file is %(on_file)s). If they moved, change their address (e.g. “change "
            "%(name)s's address to %(address)s”) and I'll book it; if it goes to the one on "
            "file, tell me."
        )
        if on_file
        else _(
            "I booked nothing: %(address)s is not an address on file for %(name)s. If they "
            "moved, change their address (e.g. “change %(name)s's address to %(address)s”) and "
            "I'll book it; if it goes to the one on file, tell me."
        )
    )
    return Outcome(
        text=runner.say(nothing, address=address, name=name, on_file=on_file),
        success=False,
        error="address not on file",
    )


def _booked(runner: Runner, job: JobRow, *, first_free: bool) -> Outcome:
    language = runner.language
    moment = when(job.start, language)
    details = ", ".join(part for part in (job.service, job.address) if part)
    booked = (
        _(
            "Done: I booked %(customer)s for %(moment)s, the first free slot that day, with "
            "%(technician)s (%(details)s). It is job #%(id)s."
        )
        if first_free
        else _(
            "Done: I booked %(customer)s for %(moment)s with %(technician)s (%(details)s). It "
            "is job #%(id)s."
        )
    )
    text = runner.say(
        booked,
        customer=job.customer,
        moment=moment,
        technician=job.technician,
        details=details,
        id=job.id,
    )
    return Outcome(text=text, mutations=[job_mutation(job)])


# --- finding the job a step is about --------------------------------------------------------


def _find_job(step: Step, runner: Runner, *, by_date: bool, need_details: bool) -> Found:
    """`by_date`: the step's date names the job (cancel), not where it goes (reschedule)."""
    known = job_ref(step, runner)
    if known is not None and not need_details:
        return Found(known)
    if known is not None:
        result = runner.call("jobs_find", job_id=known)
        if (found := JobsFound.of(result)) is None or not found.jobs:
            return Found(
                problem=failed(
                    runner, result, runner.say(_("I couldn't find job #%(id)s"), id=known)
                )
            )
        return Found(found.jobs[0])
    return _find_open_job(step, runner, by_date=by_date)


def _find_open_job(step: Step, runner: Runner, *, by_date: bool) -> Found:
    who = customer_ref(step, runner)
    on = step.entities.date if by_date else None
    if who is None and on is None:
        return Found(
            problem=ask(
                runner,
                runner.say(
                    _("Which job? Tell me the customer (or the day, if there is only one).")
                ),
                error="missing job",
            )
        )
    arguments: dict[str, Any] = {"status": "open", **(who.args() if who else {})}
    if on is not None:
        arguments["date"] = on
    result, chosen, note = call_for_customer(step, runner, "jobs_find", arguments)
    if chosen is not None:
        who = CustomerRef(int(chosen["id"]), str(chosen["name"]), "named")
    if (listed := JobsFound.of(result)) is None:
        problem = customer_problem(runner, who.name, result) if who else None
        return Found(
            problem=problem or failed(runner, result, runner.say(_("I couldn't look up the job")))
        )
    found = _one_job(step, runner, listed.jobs, who, on)
    found.note = "\n".join(part for part in (note, found.note) if part)
    return found


def _soonest(runner: Runner, jobs: list[JobRow]) -> JobRow:
    """The first job still ahead (jobs sorted by start); the first one when all have begun."""
    ahead = [job for job in jobs if job.start >= runner.ctx.now]
    return (ahead or jobs)[0]


def _inferred(
    runner: Runner,
    job: JobRow,
    on: datetime.date | None,
    *,
    only: bool,
) -> str:
    """Which job "el de mañana" / "el próximo" was taken to be, said in so many words: the
    message did not name it, so the reply does. Nothing when a customer alone named it."""
    if on is None and only:
        return ""  # "cancelá lo de Juan" with one open job: the action's reply names it
    language = runner.language
    label = job_line(job, language)
    if on is not None:
        today = runner.today
        relative = {
            today: _("today's job"),
            today + datetime.timedelta(days=1): _("tomorrow's job"),
        }
        which = runner.say(relative.get(on, _("the job on %(day)s")), day=day(on, language))
        why = runner.say(_("the only open one that day") if only else _("the soonest that day"))
        return runner.say(
            _("I took %(job)s: %(label)s (%(why)s)."), job=which, label=label, why=why
        )
    return runner.say(_("I took the next job: %(label)s."), label=label)


def _one_job(
    step: Step,
    runner: Runner,
    found: Sequence[JobRow],
    who: CustomerRef | None,
    on: datetime.date | None,
) -> Found:
    """The one open job the step means. Several: "el próximo" names the soonest still ahead;
    an answer to the list names one; best effort takes the soonest ahead; otherwise the list is
    the question (O8)."""
    language = runner.language
    jobs = sorted(found, key=lambda job: job.start)
    name = who.name if who and who.name else ""
    said = runner.say(
        _OPEN_JOBS[bool(name), bool(on)], name=name, day=day(on, language) if on else ""
    )
    if not jobs:
        return Found(
            problem=Outcome(
                text=runner.say(_("I found no %(jobs)s."), jobs=said),
                success=False,
                error="no open job",
            )
        )
    if len(jobs) == 1 or _NEXT_JOB.search(fold(step.text)):
        taken = _soonest(runner, jobs)
        return Found(taken, note=_inferred(runner, taken, on, only=len(jobs) == 1))
    listed = jobs[:LISTED_JOBS]
    choice = choose(
        step, runner, listed, lambda job: job_line(job, language),
        many=f"{len(jobs)} {said}", best=_soonest(runner, jobs),
        how=runner.say(_("the soonest, ")),
    )  # fmt: skip
    if choice.picked is not None:
        return Found(choice.picked, note=choice.note)
    listing = bullets(job_line(job, language) for job in listed)
    return Found(
        problem=ask(
            runner,
            runner.say(
                _("There are %(count)d %(jobs)s:\n%(listing)s\nWhich one?"),
                count=len(jobs),
                jobs=said,
                listing=listing,
            ),
            error="several jobs",
            slot="job_choice",
        )
    )


# The open jobs a step may mean, by (a customer is named, a day is named).
_OPEN_JOBS: dict[tuple[bool, bool], Promise] = {
    (False, False): _("open jobs"),
    (True, False): _("open jobs for %(name)s"),
    (False, True): _("open jobs on %(day)s"),
    (True, True): _("open jobs for %(name)s on %(day)s"),
}


# --- reschedule -----------------------------------------------------------------------------


@handles("reschedule")
def reschedule(step: Step, runner: Runner) -> Outcome:
    if (question := impossible_date(step, runner)) is not None:
        return question
    on, clock = step.entities.date, _clock(step.entities.time)
    if on is None and clock is None:
        return ask(
            runner,
            runner.say(_("When should I move it to? Tell me the day and/or the time.")),
            error="missing target",
        )
    # A job named by its number is looked up first: a wrong number is "No encontré el trabajo
    # #362", said before any write is tried.
    named = step.entities.job_id is not None
    found = _find_job(step, runner, by_date=False, need_details=named)
    if found.problem is not None or not isinstance(found.job, JobRow | int):
        return found.problem or ask(runner, runner.say(_("Which job?")), error="missing job")
    job_id = found.job.id if isinstance(found.job, JobRow) else found.job
    arguments: dict[str, Any] = {"job_id": job_id}
    if on is not None:
        arguments["date"] = on
    if clock is not None:
        arguments["time"] = f"{clock:%H:%M}"
    outcome = _move(step, runner, arguments, _target_text(runner, on, clock), offer=True)
    return with_note(outcome, found.note)


def _move(
    step: Step, runner: Runner, arguments: dict[str, Any], target: str, *, offer: bool
) -> Outcome:
    """job_reschedule; a refused time is answered with the next slots (`offer=False`: the time
    was already chosen from such a list)."""
    job_id = int(arguments["job_id"])
    result = runner.call("job_reschedule", **arguments)
    if (approval := held_id(result)) is not None:
        return held(
            runner,
            approval,
            runner.say(_("Moving job #%(id)s %(target)s"), id=job_id, target=target),
        )
    if not result.ok and "alternatives" in result.data:
        reason = _refusal(runner, result)
        return _offer(
            step,
            runner,
            _alternatives(result),
            lead=runner.say(
                _("I couldn't move job #%(id)s %(target)s. %(reason)s"),
                id=job_id,
                target=target,
                reason=reason,
            ),
            error=result.error,
            take=(lambda free: _move_to(step, runner, job_id, free)) if offer else None,
        )
    if (moved := JobRescheduled.of(result)) is None:
        return failed(runner, result, runner.say(_("I couldn't move job #%(id)s"), id=job_id))
    return _moved(runner, moved.before, moved.job)


def _move_to(step: Step, runner: Runner, job_id: int, free: Slot) -> Outcome:
    """The offered slot the operator chose for the move."""
    start = free.start
    arguments = {"job_id": job_id, "date": start.date().isoformat(), "time": f"{start:%H:%M}"}
    target = _target_text(runner, start.date(), start.time())
    return _move(step, runner, arguments, target, offer=False)


def _target_text(runner: Runner, on: datetime.date | None, clock: datetime.time | None) -> str:
    """Where the job goes, with its preposition: "al jueves 26/11 10:00", "a las 15:00 (mismo
    día)"."""
    language = runner.language
    if on is not None and clock is not None:
        moment = when(_at(runner, on, clock), language)
        return runner.say(_("to %(moment)s"), moment=moment)
    if on is not None:
        return runner.say(_("to %(day)s (same time)"), day=day(on, language))
    assert clock is not None
    return runner.say(_("to %(time)s (same day)"), time=f"{clock:%H:%M}")


def _moved(runner: Runner, before: JobRow, job: JobRow) -> Outcome:
    language = runner.language
    text = runner.say(
        _(
            "Done: I moved job #%(id)s (%(service)s for %(customer)s) from %(before)s to "
            "%(after)s, with %(technician)s."
        ),
        id=job.id,
        service=job.service,
        customer=job.customer,
        before=when(before.start, language),
        after=when(job.start, language),
        technician=job.technician,
    )
    if before.technician and before.technician != job.technician:
        changed = runner.say(_("The technician changes: it was %(name)s."), name=before.technician)
        text += " " + changed
    return Outcome(text=text, mutations=[job_mutation(job)])


# --- cancel_job -----------------------------------------------------------------------------


@handles("cancel_job")
def cancel_job(step: Step, runner: Runner) -> Outcome:
    if step.entities.job_id is None and (question := impossible_date(step, runner)) is not None:
        return question
    found = _find_job(step, runner, by_date=True, need_details=True)
    if found.problem is not None or not isinstance(found.job, JobRow):
        return found.problem or ask(runner, runner.say(_("Which job?")), error="missing job")
    return with_note(_cancel(step, runner, found.job), found.note)


# A job that is no longer open, by its status: there is nothing to cancel.
_NOT_OPEN = {
    "done": _("Job %(job)s is already done: there is nothing to cancel."),
    "cancelled": _("Job %(job)s is already cancelled: there is nothing to cancel."),
}
_NOT_OPEN_OTHER = _("Job %(job)s %(status)s: there is nothing to cancel.")


def _cancel(step: Step, runner: Runner, job: JobRow) -> Outcome:
    described = job_line(job, runner.language)
    if job.status not in ("scheduled", "in_progress"):
        said = _NOT_OPEN.get(job.status, _NOT_OPEN_OTHER)
        return Outcome(
            text=runner.say(said, job=described, status=job.status),
            success=False,
            error=f"job {job.id} is {job.status}",
            mutations=[job_mutation(job)],
        )
    # The reason the operator gave ("… porque viaja"), not their whole message.
    reason = stated_reason(step.text) or None
    result = runner.call("job_cancel", job_id=job.id, reason=reason)
    outcome = _cancel_result(runner, result, job, described)
    outcome.mutations.append(job_mutation(job))
    return outcome


def _cancel_result(runner: Runner, result: ToolResult, job: JobRow, described: str) -> Outcome:
    if (approval := held_id(result)) is not None:
        outcome = held(
            runner,
            approval,
            runner.say(_("I asked to cancel job %(job)s. The cancellation"), job=described),
        )
        outcome.text += " " + runner.say(_("Meanwhile the job stays booked."))
        return outcome
    if not result.ok:
        return failed(runner, result, runner.say(_("I couldn't cancel job #%(id)s"), id=job.id))
    return Outcome(text=runner.say(_("Done: I cancelled job %(job)s."), job=described))


# --- check_availability ---------------------------------------------------------------------


@handles("check_availability")
def check_availability(step: Step, runner: Runner) -> Outcome:
    if (question := impossible_date(step, runner)) is not None:
        return question
    service = step.entities.service
    on, clock = step.entities.date, _clock(step.entities.time)
    if clock is not None:
        return _free_at(step, runner, _at(runner, on or _day_for(runner, clock), clock), service)
    arguments: dict[str, Any] = {
        "skill": _skill(service),
        "duration_minutes": _minutes(service),
        "count": AVAILABILITY_SLOTS,
        **_slot_filter(step),
    }
    asked = fold(step.text)
    if on is not None and _ABOUT_BOOKED.search(asked) and not _ABOUT_FREE.search(asked):
        return _agenda(step, runner, on)
    if on is not None:
        arguments["date"] = on
    found = runner.call("slots_find", **arguments)
    if (free := SlotsFound.of(found)) is None:
        return failed(runner, found, runner.say(_("I couldn't check availability")))
    slots = free.slots
    if on is None:
        lead = runner.say(_("The next free slots%(part)s"), part=_part(step, runner))
        return _listed(runner, slots, lead=lead, service=service)
    if free.requested_range_full or not slots:
        return _day_full(step, runner, on, slots, service)
    return _free_on(step, runner, on, slots, service)


def _agenda(step: Step, runner: Runner, on: datetime.date) -> Outcome:
    """The open jobs of a day, by time (a technician's only, when one is named)."""
    arguments: dict[str, Any] = {"date": on, "status": "open"}
    if step.entities.technician:
        arguments["technician"] = step.entities.technician
    result = runner.call("jobs_find", **arguments)
    if (found := JobsFound.of(result)) is None:
        return failed(runner, result, runner.say(_("I couldn't read the agenda")))
    language = runner.language
    jobs = sorted(found.jobs, key=lambda job: job.start)
    if not jobs and step.entities.technician:  # "what does Lucas have tomorrow": Lucas's day
        return Outcome(
            text=runner.say(
                _("%(name)s has no jobs booked on %(day)s."),
                name=step.entities.technician,
                day=day(on, language),
            )  # fmt: skip
        )
    if not jobs:
        return Outcome(
            text=runner.say(_("There are no jobs booked on %(day)s."), day=day(on, language))
        )
    listing = bullets(_agenda_line(job, language) for job in jobs[:AGENDA_LISTED])
    text = runner.say(
        ngettext_lazy(
            "On %(day)s there is %(count)d job booked:\n%(listing)s",
            "On %(day)s there are %(count)d jobs booked:\n%(listing)s",
            found.total,
        ),
        day=day(on, language), count=found.total, listing=listing,
    )  # fmt: skip
    if found.total > AGENDA_LISTED:
        text += "\n" + runner.say(
            _("…and %(more)d more (the Agenda shows them all)."), more=found.total - AGENDA_LISTED
        )
    return Outcome(text=text)


def _agenda_line(job: JobRow, language: str) -> str:
    """ "08:00–12:00 #239 Instalación split — Federico Castro, con Martín Sosa": the day is the
    answer's heading."""
    return f"{job.start:%H:%M}–{job.end:%H:%M} {job_listed(job, language)}"


def _for(runner: Runner, service: str | None) -> str:
    return " " + runner.say(_("for %(service)s"), service=service) if service else ""


def _listed(runner: Runner, slots: Sequence[Slot], *, lead: str, service: str | None) -> Outcome:
    """The slots after `lead` (already in the reply's language), or that there are none."""
    if not slots:
        return Outcome(
            text=runner.say(
                _("I found no free slot%(purpose)s in the next three weeks."),
                purpose=_for(runner, service),
            ),
            success=False,
            error="no free slots",
        )
    listing = numbered([slot_line(slot, runner.language) for slot in slots])
    return Outcome(text=f"{lead}{_for(runner, service)}:\n{listing}")


def _day_full(
    step: Step,
    runner: Runner,
    on: datetime.date,
    slots: Sequence[Slot],
    service: str | None,
) -> Outcome:
    language = runner.language
    closed = business_hours_on(runner.ctx.organisation, on) is None
    if closed:
        head = runner.say(_("We don't work on %(day)s"), day=day(on, language))
    else:
        head = runner.say(
            _("There is no free slot%(purpose)s on %(day)s%(part)s"),
            purpose=_for(runner, service),
            day=day(on, language),
            part=_part(step, runner),
        )
    lead = runner.say(_("%(head)s. The next ones"), head=head)
    return _listed(runner, slots, lead=lead, service=None)


def _free_on(
    step: Step, runner: Runner, on: datetime.date, slots: Sequence[Slot], service: str | None
) -> Outcome:
    """Free slots of a day, each with who else is free then; with a technician named, also
    that technician's jobs that day."""
    language = runner.language
    listing = numbered([free_slot_line(slot, language) for slot in slots])
    part, purpose = _part(step, runner), _for(runner, service)
    text = runner.say(
        _("On %(day)s%(part)s these slots are free%(purpose)s:\n%(listing)s"),
        day=day(on, language),
        part=part,
        purpose=purpose,
        listing=listing,
    )
    if step.entities.technician:
        busy = runner.call("jobs_find", technician=step.entities.technician, date=on, status="open")
        text += _technician_day(runner, busy, step.entities.technician)
    return Outcome(text=text)


def _technician_day(runner: Runner, result: ToolResult, technician: str) -> str:
    """What a named technician already has that day (slots_find names who is free at each
    start it lists, not every hour of this technician's day)."""
    if (found := JobsFound.of(result)) is None:
        return "\n" + runner.say(_("I couldn't find technician “%(name)s”."), name=technician)
    jobs = found.jobs
    if not jobs:
        return "\n" + runner.say(_("%(name)s has no jobs that day."), name=technician)
    busy = ", ".join(f"{job.start:%H:%M}–{job.end:%H:%M}" for job in jobs)
    return "\n" + runner.say(
        _("%(name)s already has jobs that day: %(busy)s."),
        name=jobs[0].technician,
        busy=busy,
    )


def _free_at(step: Step, runner: Runner, start: datetime.datetime, service: str | None) -> Outcome:
    """Who is free at an exact time; when nobody is, the next slots from that time."""
    language = runner.language
    moment = when(start, language)
    result = runner.call(
        "technicians_free",
        start=start,
        duration_minutes=_minutes(service),
        skill=_skill(service),
    )
    if (free := TechniciansFree.of(result)) is None:
        return failed(runner, result, runner.say(_("I couldn't check availability")))
    rows = free.technicians
    wanted = step.entities.technician
    if wanted:
        rows_named = [row for row in rows if same_person(wanted, row.name)]
        if rows_named:
            name = rows_named[0].name
            return Outcome(
                text=runner.say(_("Yes, %(name)s is free on %(moment)s."), name=name, moment=moment)
            )
    if rows and not wanted:
        names = ", ".join(f"{row.name} ({row.zone})" for row in rows)
        purpose = _for(runner, service)
        return Outcome(
            text=runner.say(
                _("On %(moment)s these are free%(purpose)s: %(names)s."),
                moment=moment,
                purpose=purpose,
                names=names,
            )
        )
    found = runner.call(
        "slots_find",
        date=start.date(),
        time_from=f"{start:%H:%M}",
        skill=_skill(service),
        duration_minutes=_minutes(service),
        count=3,
    )
    later = SlotsFound.of(found)
    slots = later.slots if later is not None else ()
    others = ", ".join(row.name for row in rows)
    if not wanted:
        busy = _("On %(moment)s nobody is free. The next slots")
    elif others:
        busy = _("On %(moment)s %(name)s is not free (free then: %(others)s). The next slots")
    else:
        busy = _("On %(moment)s %(name)s is not free. The next slots")
    lead = runner.say(busy, moment=moment, name=wanted, others=others)
    return _listed(runner, slots, lead=lead, service=service)
