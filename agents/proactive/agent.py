"""Handlers of the proactive agent (O11): work worth offering before anyone asks.

Each answers with the concrete list the office can act on — which customer, which equipment,
how overdue, which phone to call — instead of a general reminder, and says what to do next.
One tool call each.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable, Sequence

from django.utils.translation import gettext_lazy as _

from agents.base import Outcome, Runner, Step, handles
from agents.payloads import CustomerRow, EquipmentRow
from agents.phrasing import bullets, failed, full_date, when
from agents.proactive.tools import (
    DueEquipment,
    FollowUp,
    FollowUps,
    MaintenanceDue,
    SeasonalTargets,
    Target,
)
from agents.subjects import customer_ref, job_ref, same_person
from business.selectors import SEASONAL_CAMPAIGNS
from business.services import infer_skill
from business.validators import format_phone
from common.text import fold

LISTED = 12  # customers listed in one answer
DEFAULT_WITHIN_DAYS = 30
DEFAULT_FOLLOW_UP_DAYS = 14
MAX_FOLLOW_UP_DAYS = 90
MONTHS = (_("January"), _("February"), _("March"), _("April"), _("May"), _("June"), _("July"),
          _("August"), _("September"), _("October"), _("November"), _("December"))  # fmt: skip
_WEEK = re.compile(r"\b(?:semana|week)\b")
_MONTH = re.compile(r"\b(?:mes|month)\b")

# Each seasonal campaign's name and the pitch of its suggested message.
CAMPAIGNS = {
    "summer_ac": {
        "name": _("air conditioning before summer"),
        "pitch": _(
            "summer is coming and now is the best time to service your air conditioner "
            "(filter cleaning, gas and performance check) before you need it"
        ),
    },
    "winter_heating": {
        "name": _("heating and gas before winter"),
        "pitch": _(
            "winter is coming and now is the best time to check your heating and gas "
            "appliances (leaks, ventilation and performance) before you need them"
        ),
    },
}


def _equipment(row: EquipmentRow) -> str:
    return row.label


def _contact(customer: CustomerRow) -> str:
    return f" ({format_phone(customer.phone)})" if customer.phone else ""


def _by_customer[R: (DueEquipment, FollowUp, Target)](
    rows: Iterable[R],
) -> list[tuple[CustomerRow, list[R]]]:
    """Rows grouped by their customer, in the order the customers first appear."""
    groups: dict[int, tuple[CustomerRow, list[R]]] = {}
    for row in rows:
        groups.setdefault(row.customer.id, (row.customer, []))[1].append(row)
    return list(groups.values())


def _more(runner: Runner, shown: int, total: int) -> str:
    if total <= shown:
        return ""
    return "\n" + runner.say(_("(and %(n)s more)"), n=total - shown)


def _for_customer[R: (DueEquipment, FollowUp, Target)](
    step: Step, runner: Runner, rows: Sequence[R]
) -> list[R]:
    """Only the named customer's rows (a name as written, or one an earlier step produced)."""
    who = customer_ref(step, runner)
    if who is None or who.source == "discussed":
        return list(rows)
    return [
        row
        for row in rows
        if (who.id is not None and row.customer.id == who.id)
        or (who.id is None and same_person(who.name, row.customer.name))
    ]


# --- maintenance_due --------------------------------------------------------------------------


def _within_days(step: Step, runner: Runner) -> int:
    on = step.entities.date
    if on is not None and on > runner.today:
        return min((on - runner.today).days, 365)
    return DEFAULT_WITHIN_DAYS


def _due_text(runner: Runner, row: DueEquipment) -> str:
    language = runner.language
    days, due = row.days_overdue, full_date(row.due_on, language)
    equipment = _equipment(row)
    if days > 0:
        return runner.say(
            _("%(equipment)s, %(days)s days overdue (due %(due)s)"),
            equipment=equipment,
            days=days,
            due=due,
        )
    if days == 0:
        return runner.say(_("%(equipment)s, due today"), equipment=equipment)
    return runner.say(
        _("%(equipment)s, due in %(days)s days (%(due)s)"), equipment=equipment, days=-days, due=due
    )


def _due_group(runner: Runner, rows: list[DueEquipment], head: str) -> str:
    """The rows by customer under `head` (already in the reply's language)."""
    groups = _by_customer(rows)
    listing = bullets(
        f"{customer.name}{_contact(customer)}: "
        + "; ".join(_due_text(runner, row) for row in items)
        for customer, items in groups[:LISTED]
    )
    return f"{head}\n{listing}{_more(runner, min(len(groups), LISTED), len(groups))}"


@handles("maintenance_due")
def maintenance_due(step: Step, runner: Runner) -> Outcome:
    within = _within_days(step, runner)
    result = runner.call("maintenance_due_list", within_days=within)
    if (due := MaintenanceDue.of(result)) is None:
        return failed(runner, result, runner.say(_("I couldn't list maintenance")))
    rows = _for_customer(step, runner, due.equipment)
    skill = infer_skill(step.entities.service) if step.entities.service else None
    if skill:
        rows = [row for row in rows if row.skill == skill]
    if not rows:
        return Outcome(
            text=runner.say(
                _(
                    "No equipment is overdue or due for maintenance in the next %(days)s days "
                    "(those with a job already booked don't count)."
                ),
                days=within,
            )
        )
    overdue = [row for row in rows if row.days_overdue > 0]
    soon = [row for row in rows if row.days_overdue <= 0]
    # The tool lists the first 50; unfiltered, its totals are the real ones.
    whole = len(rows) == len(due.equipment)
    total = due.total if whole else len(rows)
    late = due.overdue if whole else len(overdue)
    customers = len(_by_customer(rows))
    parts = [
        runner.say(
            _(
                "%(total)s pieces of equipment of %(customers)s customers need maintenance "
                "(%(late)s overdue; those with a visit of that trade booked are not counted):"
            ),
            total=total,
            customers=customers,
            late=late,
        )
    ]
    if overdue:
        parts.append(_due_group(runner, overdue, runner.say(_("Overdue:"))))
    if soon:
        head = runner.say(_("Due in the next %(days)s days:"), days=within)
        parts.append(_due_group(runner, soon, head))
    parts.append(
        runner.say(
            _("Shall I book the visits? For example: “book a service for <customer> on Tuesday”.")
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


def _follow_up_line(runner: Runner, row: FollowUp) -> str:
    language = runner.language
    customer = row.customer
    values = {
        "id": row.job_id,
        "service": row.service,
        "customer": customer.name,
        "contact": _contact(customer),
        # A finished job has its moment; the list holds only finished ones.
        "finished": when(row.completed_at, language) if row.completed_at else "",
    }
    if row.technician:
        return runner.say(
            _(
                "#%(id)s %(service)s — %(customer)s%(contact)s, finished %(finished)s by "
                "%(technician)s"
            ),
            technician=row.technician,
            **values,
        )
    return runner.say(
        _("#%(id)s %(service)s — %(customer)s%(contact)s, finished %(finished)s"), **values
    )


@handles("follow_up")
def follow_up(step: Step, runner: Runner) -> Outcome:
    days = _follow_up_days(step, runner)
    result = runner.call("follow_up_list", days=days)
    if (listed := FollowUps.of(result)) is None:
        return failed(runner, result, runner.say(_("I couldn't list the follow-ups")))
    rows = _for_customer(step, runner, listed.jobs)
    job_id = job_ref(step, runner)
    if job_id is not None and step.entities.customer is None:
        rows = [row for row in rows if row.job_id == job_id] or rows
    if not rows:
        return Outcome(
            text=runner.say(
                _("No job finished in the last %(days)s days is waiting for a follow-up."),
                days=days,
            )
        )
    listing = bullets(_follow_up_line(runner, row) for row in rows[:LISTED])
    total = len(rows) if len(rows) < len(listed.jobs) else listed.total
    return Outcome(
        text=runner.say(
            _(
                "%(total)s jobs finished in the last %(days)s days without a follow-up, oldest "
                "first:\n%(listing)s%(more)s\nCall them to ask how the work turned out and "
                "whether they need anything else."
            ),
            total=total,
            days=days,
            listing=listing,
            more=_more(runner, min(len(rows), LISTED), total),
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


def _campaign_texts(runner: Runner, campaign: str) -> tuple[str, str]:
    """The campaign's name and pitch in the reply's language (its code and no pitch when it is
    not one of ours)."""
    texts = CAMPAIGNS.get(campaign)
    if texts is None:
        return campaign, ""
    return runner.say(texts["name"]), runner.say(texts["pitch"])


def _no_campaign(runner: Runner, today: datetime.date) -> Outcome:
    campaign, month = _next_campaign(today)
    return Outcome(
        text=runner.say(
            _(
                "There is no seasonal campaign right now. The next one is %(campaign)s, "
                "starting in %(month)s."
            ),
            campaign=_campaign_texts(runner, campaign)[0],
            month=runner.say(MONTHS[month - 1]),
        )
    )


def _target_line(runner: Runner, customer: CustomerRow, rows: list[Target]) -> str:
    language = runner.language

    def one(row: Target) -> str:
        if row.last_service_on is None:  # never serviced
            return runner.say(_("%(equipment)s (never serviced by us)"), equipment=_equipment(row))
        return runner.say(
            _("%(equipment)s (last service %(last)s)"),
            equipment=_equipment(row),
            last=full_date(row.last_service_on, language),
        )

    return f"{customer.name}{_contact(customer)}: " + "; ".join(one(row) for row in rows)


@handles("seasonal_reminder")
def seasonal_reminder(step: Step, runner: Runner) -> Outcome:
    result = runner.call("seasonal_targets")
    if (targets := SeasonalTargets.of(result)) is None:
        return failed(runner, result, runner.say(_("I couldn't prepare the campaign")))
    campaign = targets.campaign
    if not campaign:
        return _no_campaign(runner, targets.today)
    name, pitch = _campaign_texts(runner, campaign)
    rows = targets.equipment
    if not rows:
        return Outcome(
            text=runner.say(
                _(
                    "Campaign for %(campaign)s: no equipment to offer it to; everything is "
                    "serviced or already booked."
                ),
                campaign=name,
            )
        )
    groups = _by_customer(rows)
    never = sum(1 for row in rows if row.never_serviced)
    listing = bullets(_target_line(runner, c, items) for c, items in groups[:LISTED])
    more = _more(runner, min(len(groups), LISTED), len(groups))
    return Outcome(
        text=runner.say(
            _(
                # Translators: {name} is a placeholder the operator fills in, shown as written.
                # xgettext:no-python-brace-format
                "Campaign for %(campaign)s: %(total)s pieces of equipment of %(customers)s "
                "customers to offer a service to (%(never)s never serviced by us):\n"
                "%(listing)s%(more)s\nSuggested message: “Hi {name}, this is %(org)s: "
                "%(pitch)s. Shall we book a visit? Reply to this message and we'll arrange it.”"
            ),
            campaign=name,
            total=targets.total,
            customers=len(groups),
            never=never,
            listing=listing,
            more=more,
            org=runner.ctx.organisation.name,
            pitch=pitch,
        )
    )
