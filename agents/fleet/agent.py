"""Handlers of the fleet agent (O11): vehicles, absences, bulk moves and dispatch.

They resolve with data: an absence is answered with the jobs it affects and a concrete
redistribution (who takes each job, which ones nobody can take); a bulk move is previewed with
its conflicts before it is filed; a dispatch names the technician it proposes. Every write that
touches many jobs or sends someone out waits for a manager, and the reply says so — and that
nothing has changed yet. Plans stay within the default budget of four tool calls.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from agents.base import Mutation, Outcome, Runner, Step, handles
from agents.fleet.tools import (
    BulkReschedule,
    BusyVehicle,
    Dispatched,
    FleetVehicle,
    JobsAffected,
    Move,
    NotMoved,
    Redistribution,
    VehicleAssigned,
    VehiclesAvailable,
)
from agents.payloads import JobRow, JobsFound, NearestTechnicians, TechnicianRow, VehicleRow
from agents.phrasing import (
    ask,
    bullets,
    call_for_customer,
    call_for_technician,
    choose,
    customer_problem,
    day,
    failed,
    held,
    held_id,
    job_line,
    moment_of,
    service_reason,
    services_speak,
    technician_candidate,
    when,
    with_note,
)
from agents.registry import ToolResult
from agents.subjects import CustomerRef, customer_ref, job_mutation, job_ref, same_person
from business.scheduling import zone_for
from business.validators import format_phone
from common.text import fold, fold_keep_length
from nlu.dates import find_dates, target_date

LISTED = 10  # jobs listed in one answer
NEXT_JOB_DAYS = 14  # how far ahead "the technician's next job" is looked for

_UNTIL = re.compile(r"\b(?:hasta|until|till|through|thru)\s+(?:(?:el|la|the|on)\s+)?")
_WHOLE_WEEK = re.compile(
    r"\b(?:toda la semana|esta semana|resto de la semana|all week|this week|the whole week"
    r"|the rest of the week)\b"
)
_REASONS = (
    (
        re.compile(
            r"\b(?:enferm\w*|sick|ill|gripe|engripad\w*|fiebre|covid|resfri\w*|flu|fever)\b"
        ),
        pgettext_lazy("absence reason", "sick"),
    ),
    (
        re.compile(r"\b(?:vacacion\w*|vacation|holidays?)\b"),
        pgettext_lazy("absence reason", "holiday"),
    ),
    (re.compile(r"\b(?:licencia|leave)\b"), pgettext_lazy("absence reason", "leave")),
    (
        re.compile(r"\b(?:medic\w*|doctor|hospital\w*)\b"),
        pgettext_lazy("absence reason", "medical"),
    ),
)
_REASON_OTHER = pgettext_lazy("absence reason", "absent")
# A move of the jobs said in the same words as the absence ("pasá sus trabajos al jueves"), on
# folded text. Without one, a date after "para"/"for" is not a destination.
_MOVE = re.compile(
    r"\b(?:pasa(?:r|le|les|lo|los|las)?|move\w*|moving|reprogram\w*|reschedul\w*"
    r"|lleva(?:r|le|les|los|las)?|corre(?:r|le|les|los|las)?|shift\w*|push\w*)\b"
)
_FROM = re.compile(r"\b(?:del|de|from|desde)(?:\s+(?:el|the|hoy))?\s*$")
_ZONE_CUE = re.compile(r"\bzona\s+(\w+(?:\s\w+)?)|\b(\w+(?:\s\w+)?)\s+(?:zone|area)\b")
_PLAIN_ZONES = re.compile(r"\b(caba|capital federal|la plata)\b")
_SHIFT = re.compile(
    r"\b(\d{1,2}|un|una|uno|dos|tres|cuatro|cinco|a|an|one|two|three|four|five)\s+"
    r"(dias?|semanas?|days?|weeks?)\b"
)
_NUMBERS = {"un": 1, "una": 1, "uno": 1, "a": 1, "an": 1, "one": 1, "dos": 2, "two": 2,
            "tres": 3, "three": 3, "cuatro": 4, "four": 4, "cinco": 5, "five": 5}  # fmt: skip
_PLATE = re.compile(r"\b([A-Z]{2}[\s-]?\d{3}[\s-]?[A-Z]{2}|[A-Z]{3}[\s-]?\d{3})\b")
# How operators name a vehicle's type.
_KIND_WORDS = {
    "van": {"van", "furgon", "furgoneta", "utilitario", "utilitaria"},
    "pickup": {"camioneta", "pickup", "pick", "chata", "truck"},
    "car": {"auto", "coche", "car"},
    "motorbike": {"moto", "motito", "motorbike", "motorcycle", "bike"},
}
_GENERIC_WORDS = frozenset({"con", "del", "las", "los", "una", "the", "and", "with", "for"})


# --- shared pieces ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Job:
    """The job a step acts on: a row the tools read, or the one an earlier step of this turn
    booked, known by its mutation (which says no end and no zone)."""

    id: int
    service: str
    customer: str
    start: datetime.datetime
    end: datetime.datetime | None
    status: str
    zone: str
    technician: str | None
    mutation: Mutation  # what the step's outcome says it acted on

    @classmethod
    def of(cls, row: JobRow) -> _Job:
        return cls(
            row.id, row.service, row.customer, row.start, row.end, row.status, row.zone,
            row.technician, job_mutation(row),
        )  # fmt: skip

    @classmethod
    def booked(cls, booked: Mutation) -> _Job:
        data = {"id": booked.id, "zone": "", "status": "scheduled", **booked.data}
        return cls(
            booked.id, str(data.get("service") or ""), str(data.get("customer") or ""),
            moment_of(data["start"]), None, str(data["status"]), "",
            data.get("technician"), job_mutation(data),
        )  # fmt: skip


@dataclass
class _Found:
    """The job a step is about, or the reply that stops the step; `note` says which job a
    best-effort pick took (O8)."""

    job: _Job | None = None
    problem: Outcome | None = None
    note: str = ""


def _job_short(job: JobRow | _Job, language: str) -> str:
    """#id service — customer, when (zone): a job whose technician the sentence already says."""
    zone = f" ({job.zone})" if job.zone else ""
    return f"#{job.id} {job.service} — {job.customer}, {when(job.start, language)}{zone}"


def _technician_problem(runner: Runner, name: str, result: ToolResult) -> Outcome | None:
    """An unknown or ambiguous technician name, said as such (None for any other failure)."""
    if not result.error.startswith("technician"):
        return None
    candidates = result.data.get("candidates")
    if candidates:
        listing = bullets(technician_candidate(c) for c in candidates)
        return ask(
            runner,
            runner.say(
                _("Several technicians match “%(name)s”:\n%(listing)s\nWhich one is it?"),
                name=name,
                listing=listing,
            ),
            error=result.error,
            slot="technician_choice",
        )
    return Outcome(
        text=runner.say(_("I couldn't find an active technician “%(name)s”."), name=name),
        success=False,
        error=result.error,
    )


def _days_text(runner: Runner, first: datetime.date, last: datetime.date) -> str:
    language = runner.language
    if first != last:
        return runner.say(
            _("from %(first)s to %(last)s"), first=day(first, language), last=day(last, language)
        )
    named = day(first, language)
    if first == runner.today:
        return runner.say(_("today, %(day)s"), day=named)
    return runner.say(_("on %(day)s"), day=named)


def _stuck_reason(runner: Runner, item: NotMoved) -> str:
    """Why a job could not move: the service's words when they are in the reply's language."""
    if services_speak(runner.language) and item.reason:
        return item.reason.rstrip(".")
    return runner.say(_("it could not be moved"))


def _stuck_lines(runner: Runner, stuck: Sequence[NotMoved]) -> str:
    language = runner.language
    return bullets(
        f"#{item.job_id} {item.customer}, {when(item.start, language)}: "
        f"{_stuck_reason(runner, item)}"
        for item in stuck[:LISTED]
    )


def _more(runner: Runner, total: int) -> str:
    extra = total - LISTED
    if extra <= 0:
        return ""
    return "\n" + runner.say(_("(and %(count)d more)"), count=extra)


def _waiting(runner: Runner, approval: int, what: str) -> str:
    """One filed approval, as a sentence (for replies that file more than one); `what` is
    already in the reply's language."""
    return runner.say(
        _("%(what)s is waiting for a manager's approval (request #%(id)s)."),
        what=what,
        id=approval,
    )


# --- technician_sick --------------------------------------------------------------------------


def _until(text: str, today: datetime.date, language: str) -> datetime.date | None:
    """The day after "hasta" / "until" (the date finder leaves limits out on purpose)."""
    folded = fold_keep_length(text)
    for cue in _UNTIL.finditer(folded):
        mentions = find_dates(text[cue.end() :], today, language)
        if mentions and mentions[0].start == 0:
            return mentions[0].value
    return None


def _absence_days(step: Step, runner: Runner) -> tuple[datetime.date, datetime.date]:
    """First and last day of the absence: "hasta el jueves" ends it, "toda la semana" runs to
    Saturday, a single date is one day; without dates, today."""
    today = runner.today
    until = _until(step.text, today, runner.language)
    mentions = find_dates(step.text, today, runner.language)
    # "pasá sus trabajos al jueves" names where the jobs go, not when the technician is out; with
    # no move said, "para mañana" / "for tomorrow" is the day of the absence itself.
    moved_to = target_date(step.text, mentions) if _MOVE.search(fold(step.text)) else None
    others = [m.value for m in mentions if m.value not in (until, moved_to)]
    named = step.entities.date if step.entities.date not in (until, moved_to) else None
    first = others[0] if others else named or today
    last = until or first
    if until is None and _WHOLE_WEEK.search(fold(step.text)) and first.weekday() < 5:
        last = first + datetime.timedelta(days=5 - first.weekday())
    return first, max(first, last)


def _absence_reason(step: Step, runner: Runner) -> str:
    folded = fold(step.text)
    for pattern, reason in _REASONS:
        if pattern.search(folded):
            return runner.say(reason)
    return runner.say(_REASON_OTHER)


@dataclass
class _Absence:
    technician: TechnicianRow
    first: datetime.date
    last: datetime.date
    reason: str
    jobs: Sequence[JobRow]

    def range_args(self) -> dict[str, Any]:
        return {
            "technician_id": self.technician.id,
            "date_from": self.first,
            "date_to": self.last,
        }


@handles("technician_sick")
def technician_sick(step: Step, runner: Runner) -> Outcome:
    name = (step.entities.technician or "").strip()
    if not name:
        return ask(
            runner,
            runner.say(
                _("Which technician is out? Tell me the name (and until when, if you know).")
            ),
            error="missing technician",
        )
    first, last = _absence_days(step, runner)
    span = {"date_from": first, "date_to": last}
    affected, _chosen, note = call_for_technician(
        step, runner, "technician_jobs_affected", {"technician": name, **span}
    )
    if (found := JobsAffected.of(affected)) is None:
        return _technician_problem(runner, name, affected) or failed(
            runner, affected, runner.say(_("I couldn't look up the technician's jobs"))
        )
    absence = _Absence(
        found.technician, first, last, _absence_reason(step, runner), found.jobs
    )  # fmt: skip
    record = runner.call(
        "technician_absence_record",
        technician_id=absence.technician.id,
        start_date=first,
        end_date=last,
        reason=absence.reason,
    )
    parts = [_absence_text(runner, absence, record)]
    pending = [a for a in [held_id(record)] if a is not None]
    redistribution = None
    if absence.jobs:
        text, redistribution = _redistribution(runner, absence)
        parts.append(text)
        pending += [redistribution] if redistribution is not None else []
    else:
        parts.append(
            runner.say(_("They have no open jobs on those days: there is nothing to redistribute."))
        )
    recorded = record.ok  # held or done; a refusal (e.g. already absent) is said in the text
    return Outcome(
        text="\n".join([*parts, note] if note else parts),
        success=recorded,
        error="" if recorded else record.error,
        pending_approvals=pending,
        mutations=[_technician_mutation(absence, redistribution)],
    )


def _absence_text(runner: Runner, absence: _Absence, record: ToolResult) -> str:
    language = runner.language
    name = absence.technician.name
    days = _days_text(runner, absence.first, absence.last)
    head = runner.say(
        _("%(name)s is out %(days)s (reason: %(reason)s)."),
        name=name,
        days=days,
        reason=absence.reason,
    )
    if (approval := held_id(record)) is not None:
        head += " " + _waiting(runner, approval, runner.say(_("Recording the absence")))
    elif record.ok:
        head += " " + runner.say(_("I recorded the absence."))
    else:
        reason = service_reason(runner, record, runner.say(_("it could not be recorded")))
        head += " " + runner.say(_("I didn't file the absence: %(reason)s."), reason=reason)
    jobs = absence.jobs
    if not jobs:
        return head
    listing = bullets(_job_short(job, language) for job in jobs[:LISTED])
    return (
        head
        + "\n"
        + runner.say(
            _("Jobs affected (%(count)d):\n%(listing)s%(more)s"),
            count=len(jobs),
            listing=listing,
            more=_more(runner, len(jobs)),
        )
    )


def _redistribution(runner: Runner, absence: _Absence) -> tuple[str, int | None]:
    """The proposal (a dry run) and, when someone can take at least one job, the real
    redistribution filed for approval."""
    proposal = runner.call("jobs_redistribute", **absence.range_args(), dry_run=True)
    if (plan := Redistribution.of(proposal)) is None:
        reason = proposal.error
        return runner.say(
            _("I couldn't prepare the redistribution proposal: %(reason)s."), reason=reason
        ), None
    moved, stuck = plan.moved, plan.not_moved
    lines = [_proposal_text(runner, moved, stuck)]
    if not moved:
        lines.append(
            runner.say(
                _(
                    "I filed no redistribution: nobody can take those jobs. You can reschedule "
                    "them (e.g. “move %(name)s's jobs to Thursday”)."
                ),
                name=absence.technician.name,
            )
        )
        return "\n".join(lines), None
    applied = runner.call("jobs_redistribute", **absence.range_args(), dry_run=False)
    approval = held_id(applied)
    name = absence.technician.name
    if approval is not None:
        lines.append(
            _waiting(runner, approval, runner.say(_("The redistribution")))
            + " "
            + runner.say(_("Until it is approved, the jobs stay with %(name)s."), name=name)
        )
    elif applied.ok:
        lines.append(runner.say(_("Done: I reassigned them.")))
    else:
        lines.append(
            runner.say(_("I couldn't file the redistribution: %(reason)s."), reason=applied.error)
        )
    return "\n".join(lines), approval


def _proposal_text(runner: Runner, moved: Sequence[Move], stuck: Sequence[NotMoved]) -> str:
    language = runner.language
    parts: list[str] = []
    if moved:
        listing = bullets(
            f"#{m.job_id} {m.customer}, {when(m.from_start, language)} ({m.zone}) "
            f"→ {m.to_technician}"
            for m in moved[:LISTED]
        )
        parts.append(
            runner.say(
                _("Proposal by zone and trade:\n%(listing)s%(more)s"),
                listing=listing,
                more=_more(runner, len(moved)),
            )
        )
    if stuck:
        parts.append(
            runner.say(
                _("Nobody can take (%(count)d):\n%(lines)s"),
                count=len(stuck),
                lines=_stuck_lines(runner, stuck),
            )
        )
    return "\n".join(parts)


def _technician_mutation(absence: _Absence, redistribution: int | None) -> Mutation:
    """What a following bulk_reschedule needs: whose jobs, which ones, which days, and the
    redistribution request a move of the same jobs competes with."""
    return Mutation(
        kind="technician",
        id=absence.technician.id,
        label=absence.technician.name,
        data={
            "absent_from": absence.first.isoformat(),
            "absent_to": absence.last.isoformat(),
            "job_ids": [job.id for job in absence.jobs],
            "redistribution_approval": redistribution,
        },
    )


# --- bulk_reschedule --------------------------------------------------------------------------


@dataclass
class _Selection:
    args: dict[str, Any]
    what: str  # "los trabajos de Carlos Gómez del lunes 23/11", in the reply's language
    competes_with: int | None = None  # a pending redistribution of the same jobs


def _zone_in(text: str) -> str | None:
    folded = fold(text)
    for match in _ZONE_CUE.finditer(folded):
        phrase = match.group(1) or match.group(2)
        words = phrase.split()
        for size in (2, 1):
            candidate = " ".join(words[:size]) if match.group(1) else " ".join(words[-size:])
            if zone := zone_for(candidate):
                return zone
    plain = _PLAIN_ZONES.search(folded)
    return zone_for(plain.group(1)) if plain else None


def _move_days(step: Step, runner: Runner) -> tuple[datetime.date | None, datetime.date | None]:
    """(the day whose jobs move, the day they go to). A date the text introduces as a source
    ("los del jueves") is never taken for the target, whatever the entities say."""
    mentions = find_dates(step.text, runner.today, runner.language)
    folded = fold_keep_length(step.text)
    said_target = target_date(step.text, mentions)
    sources = {m.value for m in mentions if _FROM.search(folded[max(0, m.start - 12) : m.start])}
    target = said_target or step.entities.date
    if said_target is None and target in sources:
        target = None
    source = next((m.value for m in mentions if m.value != target), None)
    return source, target


def _shift_days(text: str) -> int | None:
    """ "un día", "2 días", "una semana" → days to move by (only used without a target date)."""
    match = _SHIFT.search(fold(text))
    if match is None:
        return None
    count = int(match.group(1)) if match.group(1).isdigit() else _NUMBERS[match.group(1)]
    return count * (7 if match.group(2).startswith(("sem", "week")) else 1)


def _selection(step: Step, runner: Runner, source: datetime.date | None) -> _Selection | None:
    """Which jobs move: the absent technician's of an earlier step, else a technician's, a
    zone's or everyone's jobs of the source day (today when no day is named)."""
    language = runner.language
    technician = (step.entities.technician or "").strip()
    absent = runner.earlier("technician")
    same = absent is not None and (not technician or same_person(technician, absent.label))
    if absent is not None and same and absent.data.get("job_ids"):
        ids = [int(i) for i in absent.data["job_ids"]]
        what = (
            runner.say(_("%(name)s's job affected by the absence"), name=absent.label)
            if len(ids) == 1
            else runner.say(
                _("the %(count)d jobs of %(name)s affected by the absence"),
                count=len(ids),
                name=absent.label,
            )
        )
        return _Selection({"job_ids": ids}, what, absent.data.get("redistribution_approval"))
    zone = _zone_in(step.text)
    if not technician and not zone and source is None:
        return None
    on = source or runner.today
    args: dict[str, Any] = {"date": on}
    if technician:
        args["technician"] = technician
    if zone:
        args["zone"] = zone
    jobs = _SELECTED[bool(technician), bool(zone)]
    what = runner.say(jobs, technician=technician, zone=zone, day=day(on, language))
    return _Selection(args, what)


# Which jobs a bulk move selects, by (a technician is named, a zone is named).
_SELECTED: dict[tuple[bool, bool], Promise] = {
    (False, False): _("the jobs of %(day)s"),
    (True, False): _("%(technician)s's jobs of %(day)s"),
    (False, True): _("the jobs in zone %(zone)s of %(day)s"),
    (True, True): _("%(technician)s's jobs in zone %(zone)s of %(day)s"),
}


@handles("bulk_reschedule")
def bulk_reschedule(step: Step, runner: Runner) -> Outcome:
    source, target = _move_days(step, runner)
    shift = None if target is not None else _shift_days(step.text)
    if target is None and shift is None:
        return ask(
            runner,
            runner.say(
                _("Which day should I move them to? Tell me the date (e.g. “to Thursday”).")
            ),
            error="missing target date",
        )
    selection = _selection(step, runner, source)
    if selection is None:
        return ask(
            runner,
            runner.say(_("Which jobs should I move? Tell me the day, the technician or the zone.")),
            error="missing selection",
        )
    move: dict[str, Any] = {"to_date": target.isoformat()} if target else {"shift_days": shift}
    preview, chosen, note = call_for_technician(
        step, runner, "jobs_bulk_reschedule", {**selection.args, **move, "dry_run": True}
    )
    if chosen is not None:
        selection = _chosen_technician(selection, chosen)
    if (plan := BulkReschedule.of(preview)) is None:
        name = str(selection.args.get("technician", ""))
        return _technician_problem(runner, name, preview) or failed(
            runner, preview, runner.say(_("I couldn't prepare the move"))
        )
    return with_note(_bulk_result(runner, selection, move, plan), note)


def _chosen_technician(selection: _Selection, chosen: dict[str, Any]) -> _Selection:
    """The selection for the technician picked among namesakes: by id, and named in full."""
    named = str(selection.args.get("technician", ""))
    args = {key: value for key, value in selection.args.items() if key != "technician"}
    args["technician_id"] = int(chosen["id"])
    full = str(chosen["name"])
    return _Selection(args, selection.what.replace(named, full), selection.competes_with)


def _bulk_target(runner: Runner, move: dict[str, Any]) -> str:
    if "to_date" in move:
        target = datetime.date.fromisoformat(move["to_date"])
        return runner.say(_("to %(day)s"), day=day(target, runner.language))
    return runner.say(_("%(days)d day(s) later"), days=int(move["shift_days"]))


def _bulk_result(
    runner: Runner, selection: _Selection, move: dict[str, Any], plan: BulkReschedule
) -> Outcome:
    target = _bulk_target(runner, move)
    moved, stuck = plan.moved, plan.not_moved
    if plan.selected == 0:
        return Outcome(
            text=runner.say(
                _("I found no open jobs among %(selection)s: there is nothing to move."),
                selection=selection.what,
            ),
            success=False,
            error="no jobs to move",
        )
    parts: list[str] = []
    if moved:
        listing = bullets(_move_line(runner, m) for m in moved[:LISTED])
        parts.append(
            runner.say(
                _("Moving %(selection)s %(target)s moves %(count)d:\n%(listing)s%(more)s"),
                selection=selection.what,
                target=target,
                count=len(moved),
                listing=listing,
                more=_more(runner, len(moved)),
            )
        )
    if stuck:
        parts.append(
            runner.say(
                _("Cannot move (%(count)d):\n%(lines)s"),
                count=len(stuck),
                lines=_stuck_lines(runner, stuck),
            )
        )
    if not moved:
        parts.append(runner.say(_("I filed no change.")))
        return Outcome(text="\n".join(parts), success=False, error="nothing can move")
    applied = runner.call("jobs_bulk_reschedule", **selection.args, **move, dry_run=False)
    outcome = _bulk_applied(runner, applied, "\n".join(parts))
    if selection.competes_with is not None and outcome.pending_approvals:
        other = selection.competes_with
        outcome.text += " " + runner.say(
            _(
                "It is an alternative to the redistribution (request #%(id)s): approve only "
                "one of the two."
            ),
            id=other,
        )
    return outcome


def _move_line(runner: Runner, move: Move) -> str:
    language = runner.language
    line = (
        f"#{move.job_id} {move.customer}: {when(move.from_start, language)} → "
        f"{when(move.to_start, language)}"
    )
    if move.to_technician and move.to_technician != move.from_technician:
        line += " " + runner.say(
            _("(%(before)s → %(after)s)"),
            before=move.from_technician,
            after=move.to_technician,
        )
    return line


def _bulk_applied(runner: Runner, applied: ToolResult, preview_text: str) -> Outcome:
    if (approval := held_id(applied)) is not None:
        return Outcome(
            text=preview_text
            + "\n"
            + _waiting(runner, approval, runner.say(_("The move")))
            + " "
            + runner.say(_("Until it is approved, no job moves.")),
            pending_approvals=[approval],
        )
    if not applied.ok:
        return failed(runner, applied, runner.say(_("I couldn't file the move")))
    return Outcome(text=preview_text + "\n" + runner.say(_("Done: I moved them.")))


# --- dispatch ---------------------------------------------------------------------------------


def _distance(runner: Runner, technician: TechnicianRow) -> str:
    hops = technician.zone_distance
    if hops == 0:
        return runner.say(_("same zone"))
    if hops == 1:
        return runner.say(_("neighbouring zone"))
    return runner.say(_("another zone"))


def _technician_line(runner: Runner, technician: TechnicianRow) -> str:
    phone = f", tel. {format_phone(technician.phone)}" if technician.phone else ""
    return f"{technician.name} ({technician.zone}, {_distance(runner, technician)}{phone})"


def _cannot_read_jobs(runner: Runner) -> Outcome | None:
    """The fleet agent finds a customer's jobs through `jobs_find`; an organisation may not
    enable it. Said plainly (not as a tool error) so an admin knows what to change."""
    if "jobs_find" in (runner.agent.tools or []):
        return None
    return Outcome(
        text=runner.say(
            _(
                "To find that job I need to read the schedule, and this agent does not have the "
                "“jobs_find” tool enabled: an admin can enable it in the agent registry. I "
                "changed nothing."
            )
        ),
        success=False,
        error="tool jobs_find not enabled",
    )


def _job_details(runner: Runner, job_id: int) -> _Found:
    if (refused := _cannot_read_jobs(runner)) is not None:
        return _Found(problem=refused)
    result = runner.call("jobs_find", job_id=job_id)
    if (found := JobsFound.of(result)) is not None and found.jobs:
        return _Found(_Job.of(found.jobs[0]))
    return _Found(
        problem=failed(runner, result, runner.say(_("I couldn't find job #%(id)s"), id=job_id))
    )


def _known(runner: Runner, job_id: int) -> _Found:
    """A job booked earlier in this turn is described by its mutation; any other is read."""
    booked = runner.earlier("job")
    if booked is not None and booked.id == job_id and booked.data.get("start"):
        return _Found(_Job.booked(booked))
    return _job_details(runner, job_id)


def _customer_open_job(step: Step, runner: Runner, on: datetime.date | None = None) -> _Found:
    """The named customer's first open job (of the day `on`, when given)."""
    who = customer_ref(step, runner)
    if who is None:
        problem = ask(
            runner,
            runner.say(_("Which customer or job should I send someone to?")),
            error="missing job",
        )
        return _Found(problem=problem)
    if (refused := _cannot_read_jobs(runner)) is not None:
        return _Found(problem=refused)
    day_arg = {"date": on} if on is not None else {}
    arguments = {**who.args(), "status": "open", **day_arg}
    result, chosen, note = call_for_customer(step, runner, "jobs_find", arguments)
    if chosen is not None:
        who = CustomerRef(int(chosen["id"]), str(chosen["name"]), "named")
    if (found := JobsFound.of(result)) is None:
        problem = customer_problem(runner, who.name, result) or failed(
            runner,
            result,
            runner.say(pgettext_lazy("customer's jobs", "I couldn't look up their jobs")),
        )
        return _Found(problem=problem)
    jobs = sorted(found.jobs, key=lambda job: job.start)
    if not jobs:
        none = (
            _(
                "%(name)s has no open job. Book a visit first (e.g. “book an urgent visit "
                "today”) and I'll take it from there."
            )
            if on is None
            else _(
                "%(name)s has no open job on %(day)s. Book a visit first (e.g. “book an urgent "
                "visit today”) and I'll take it from there."
            )
        )
        named = day(on, runner.language) if on is not None else ""
        problem = Outcome(
            text=runner.say(none, name=who.name, day=named),
            success=False,
            error="no open job",
        )
        return _Found(problem=problem)
    return _Found(_Job.of(jobs[0]), note=note)


@handles("dispatch")
def dispatch(step: Step, runner: Runner) -> Outcome:
    known = job_ref(step, runner)
    found = _known(runner, known) if known is not None else _customer_open_job(step, runner)
    if found.problem is not None or found.job is None:
        return found.problem or ask(runner, runner.say(_("Which job?")), error="missing job")
    return with_note(_dispatch_job(runner, found.job), found.note)


def _dispatch_job(runner: Runner, job: _Job) -> Outcome:
    if job.status not in ("scheduled", "in_progress"):
        return Outcome(
            text=runner.say(
                _("Job %(job)s is not open: nothing to dispatch."),
                job=job_line(job, runner.language),
            ),
            success=False,
            error=f"job {job.id} is {job.status}",
        )
    nearest = runner.call("technicians_nearest", job_id=job.id, count=3)
    if (near := NearestTechnicians.of(nearest)) is None:
        return failed(runner, nearest, runner.say(_("I couldn't find free technicians")))
    free = near.technicians
    if not free:
        return _nobody_free(runner, job, near.zone)
    chosen = free[0]
    sent = runner.call("technician_dispatch", job_id=job.id, technician_id=chosen.id)
    return _dispatched(runner, job, chosen, free[1:], sent)


def _nobody_free(runner: Runner, job: _Job, zone: str | None) -> Outcome:
    nobody = (
        _(
            "No technician with the trade for job %(job)s is free now near %(zone)s. I "
            "dispatched nobody; I can move it to the first free slot."
        )
        if zone
        else _(
            "No technician with the trade for job %(job)s is free now. I dispatched nobody; I "
            "can move it to the first free slot."
        )
    )
    return Outcome(
        text=runner.say(nobody, job=_job_short(job, runner.language), zone=zone),
        success=False,
        error="no technician free",
        mutations=[job.mutation],
    )


def _dispatched(
    runner: Runner,
    job: _Job,
    chosen: TechnicianRow,
    others: Sequence[TechnicianRow],
    sent: ToolResult,
) -> Outcome:
    language = runner.language
    described = _job_short(job, language)
    who = _technician_line(runner, chosen)
    alternatives = ", ".join(_technician_line(runner, t) for t in others)
    tail = " " + runner.say(_("Also free: %(others)s."), others=alternatives) if others else ""
    if (approval := held_id(sent)) is not None:
        outcome = held(
            runner,
            approval,
            runner.say(
                _("For job %(job)s I propose sending %(who)s now. The dispatch"),
                job=described,
                who=who,
            ),
        )
        outcome.text += tail
        outcome.mutations.append(job.mutation)
        return outcome
    if (dispatched := Dispatched.of(sent)) is None:
        outcome = failed(runner, sent, runner.say(_("I couldn't send %(name)s"), name=chosen.name))
        outcome.mutations.append(job.mutation)
        return outcome
    started = when(dispatched.job.start, language)
    return Outcome(
        text=runner.say(
            _("Done: I dispatched %(who)s to job %(job)s; it starts %(start)s."),
            who=who,
            job=described,
            start=started,
        )
        + tail,
        mutations=[job_mutation(dispatched.job)],
    )


# --- assign_vehicle ---------------------------------------------------------------------------


def _next_job_of(step: Step, runner: Runner, technician: str) -> _Found:
    """The technician's next open job (one still to finish), within the coming two weeks."""
    today = runner.today
    span = {
        "date_from": today,
        "date_to": today + datetime.timedelta(days=NEXT_JOB_DAYS),
    }
    result, _chosen, note = call_for_technician(
        step, runner, "technician_jobs_affected", {"technician": technician, **span}
    )
    if (found := JobsAffected.of(result)) is None:
        problem = _technician_problem(runner, technician, result) or failed(
            runner,
            result,
            runner.say(pgettext_lazy("technician's jobs", "I couldn't look up their jobs")),
        )
        return _Found(problem=problem)
    upcoming = [job for job in found.jobs if job.end > runner.ctx.now]
    if not upcoming:
        name = found.technician.name
        problem = Outcome(
            text=runner.say(
                _(
                    "%(name)s has no open jobs in the next two weeks: there is nothing to assign "
                    "a vehicle to."
                ),
                name=name,
            ),
            success=False,
            error="no open job",
        )
        return _Found(problem=problem)
    return _Found(_Job.of(upcoming[0]), note=note)


def _job_for_vehicle(step: Step, runner: Runner) -> _Found:
    """The job booked earlier in this turn; else the named customer's job (the one under
    discussion or their next open one); else the named technician's next job; else the job
    under discussion."""
    booked = runner.earlier("job")
    if booked is not None and booked.data.get("start"):
        return _known(runner, booked.id)
    known = job_ref(step, runner)
    if step.entities.customer:
        if known is not None:
            return _known(runner, known)
        return _customer_open_job(step, runner, step.entities.date)
    if step.entities.technician:
        return _next_job_of(step, runner, step.entities.technician)
    if known is not None:
        return _known(runner, known)
    problem = ask(
        runner,
        runner.say(_("Which job is the vehicle for? Tell me the customer or the technician.")),
        error="missing job",
    )
    return _Found(problem=problem)


def _vehicle_words(step: Step) -> set[str]:
    """The words of the message that may describe a vehicle (names of people left out)."""
    names = fold(f"{step.entities.customer or ''} {step.entities.technician or ''}").split()
    return {
        word
        for word in re.findall(r"[a-z0-9ñ]+", fold(step.text))
        if len(word) >= 3 and word not in names and word not in _GENERIC_WORDS
    }


def _vehicle_matches(words: set[str], vehicle: FleetVehicle) -> int:
    described = set(re.findall(r"[a-z0-9ñ]+", fold(vehicle.description or "")))
    described -= _GENERIC_WORDS
    score = len(words & {w for w in described if len(w) >= 3})
    if words & _KIND_WORDS.get(vehicle.kind, set()):
        score += 1
    return score


def _described_vehicle(
    step: Step, runner: Runner, job: _Job
) -> tuple[FleetVehicle | None, Outcome | None, str]:
    """The vehicle the message describes ("la Kangoo blanca", "la moto"), when one fits; None
    when the message names none, so the tool picks the technician's usual or any free one.
    Several free ones fit: the operator's answer names one, best effort takes the first, else
    the list is the question (O8). The last item is a best-effort pick's note."""
    args: dict[str, Any] = {"start": job.start}
    if job.end is not None:
        args["end"] = job.end
    fleet = VehiclesAvailable.of(runner.call("vehicles_available", **args))
    if fleet is None:
        return None, None, ""  # the assignment itself still checks the vehicle
    words = _vehicle_words(step)
    free, busy = fleet.available, fleet.busy
    scored = [(_vehicle_matches(words, v), v) for v in (*free, *busy)]
    best = max((score for score, _v in scored), default=0)
    if best == 0:
        return None, None, ""
    top = [v for score, v in scored if score == best]
    # Already on this very job: assigning it again is harmless and says so.
    mine = [v for v in top if isinstance(v, BusyVehicle) and v.job_ids == (job.id,)]
    if mine:
        return mine[0], None, ""
    free_top = [v for v in top if v in free]
    if len(free_top) == 1:
        return free_top[0], None, ""
    if free_top:
        choice = choose(
            step, runner, free_top, _vehicle_text,
            many=runner.say(_("several free vehicles that match")),
        )  # fmt: skip
        if choice.picked is not None:
            return choice.picked, None, choice.note
        listing = bullets(_vehicle_text(v) for v in free_top)
        question = ask(
            runner,
            runner.say(
                _("Several free vehicles match:\n%(listing)s\nWhich one should I assign?"),
                listing=listing,
            ),
            error="several vehicles match",
            slot="vehicle_choice",
        )
        return None, question, ""
    return None, _vehicle_busy(runner, top[0], free, job), ""


def _vehicle_text(vehicle: VehicleRow) -> str:
    described = f" ({vehicle.description})" if vehicle.description else ""
    return f"{vehicle.plate}{described}"


def _vehicle_busy(
    runner: Runner, vehicle: FleetVehicle, free: Sequence[FleetVehicle], job: _Job
) -> Outcome:
    held_by = vehicle.job_ids if isinstance(vehicle, BusyVehicle) else ()
    jobs = ", ".join(f"#{i}" for i in held_by)
    others = ", ".join(_vehicle_text(v) for v in free[:5])
    language = runner.language
    moment = when(job.start, language)
    tail = (
        runner.say(_("Free then: %(others)s."), others=others)
        if others
        else runner.say(_("No other vehicle is free."))
    )
    busy = runner.say(
        _("%(vehicle)s is busy on %(moment)s (job %(jobs)s): I didn't assign it."),
        vehicle=_vehicle_text(vehicle),
        moment=moment,
        jobs=jobs,
    )
    return Outcome(
        text=f"{busy} {tail}",
        success=False,
        error="vehicle busy",
    )


@handles("assign_vehicle")
def assign_vehicle(step: Step, runner: Runner) -> Outcome:
    found = _job_for_vehicle(step, runner)
    if found.problem is not None or found.job is None:
        return found.problem or ask(runner, runner.say(_("Which job?")), error="missing job")
    job = found.job
    arguments: dict[str, Any] = {"job_id": job.id}
    plate = _PLATE.search(step.text)
    picked = ""
    if plate:
        arguments["plate"] = plate.group(1)
    else:
        vehicle, problem, picked = _described_vehicle(step, runner, job)
        if problem is not None:
            return problem
        if vehicle is not None:
            arguments["vehicle_id"] = vehicle.id
    result = runner.call("vehicle_assign", **arguments)
    notes = "\n".join(part for part in (found.note, picked) if part)
    return with_note(_assigned(runner, job, result), notes)


def _not_assigned(runner: Runner, job: _Job, result: ToolResult) -> Outcome:
    if result.error.startswith("no vehicle is free"):
        refusals = result.data.get("refusals") or []
        why = f" ({'; '.join(refusals)})" if refusals and services_speak(runner.language) else ""
        return Outcome(
            text=runner.say(
                _("No vehicle is free during job #%(id)s%(why)s. I assigned nothing."),
                id=job.id,
                why=why,
            ),
            success=False,
            error=result.error,
        )
    reason = service_reason(runner, result, runner.say(_("the vehicle is not available")))
    return Outcome(
        text=runner.say(
            _("I couldn't assign the vehicle to job #%(id)s: %(reason)s."),
            id=job.id,
            reason=reason,
        ),
        success=False,
        error=result.error,
    )


def _assigned(runner: Runner, job: _Job, result: ToolResult) -> Outcome:
    language = runner.language
    if (approval := held_id(result)) is not None:
        return held(
            runner, approval, runner.say(_("Assigning a vehicle to job #%(id)s"), id=job.id)
        )
    if (assigned := VehicleAssigned.of(result)) is None:
        return _not_assigned(runner, job, result)
    return Outcome(
        text=runner.say(
            _("Done: I assigned %(vehicle)s to job %(job)s."),
            vehicle=_vehicle_text(assigned.vehicle),
            job=job_line(assigned.job, language),
        ),
        mutations=[job_mutation(assigned.job)],
    )
