"""The Agenda by technician (`/jobs/board/`): a day or a week, each free slot a link that opens
the chat with a booking for it prefilled."""

from __future__ import annotations

import datetime

from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.formats import date_format
from django.utils.http import urlencode
from django.utils.translation import gettext

from business.agenda import agenda_board
from business.roles import permission_required
from business.selectors import org_today
from business.views import OrgRequest

SPANS = {"day": 1, "week": 7}
FIRST_DAY, LAST_DAY = datetime.date(1900, 1, 8), datetime.date(2999, 12, 24)


def _first(request: OrgRequest, today: datetime.date) -> tuple[datetime.date, str]:
    """The day asked for (today when missing or not a date) and a problem to say, if any."""
    raw = request.GET.get("date", "").strip()
    if not raw:
        return today, ""
    try:
        day = datetime.date.fromisoformat(raw)
    except ValueError:
        return today, gettext("“%(value)s” is not a date: showing today.") % {"value": raw[:20]}
    if not FIRST_DAY <= day <= LAST_DAY:
        return today, gettext("That date is out of range: showing today.")
    return day, ""


def book_here(technician: str, start: datetime.datetime) -> str:
    """The chat link of a free slot: the message to prefill, in the user's language."""
    text = gettext("Book a job for %(technician)s on %(date)s at %(time)s") % {
        "technician": technician,
        "date": date_format(start, "d/m/Y"),
        "time": start.strftime("%H:%M"),
    }
    return reverse("chat") + "?" + urlencode({"prefill": text})


@permission_required("view_records")
def agenda(request: OrgRequest) -> HttpResponse:
    organisation = request.organisation
    today = org_today(organisation)
    span = request.GET.get("span", "day")
    span = span if span in SPANS else "day"
    first, problem = _first(request, today)
    if span == "week":
        first -= datetime.timedelta(days=first.weekday())  # weeks start on Monday
    days = SPANS[span]
    board = agenda_board(organisation, first, days)
    for row in board.rows:
        for cell in row.cells:
            cell.links = [(moment, book_here(row.technician.name, moment)) for moment in cell.free]
    step = datetime.timedelta(days=days)
    context = {
        "board": board, "span": span, "today": today, "problem": problem,
        "previous": first - step, "next": first + step,
    }  # fmt: skip
    return render(request, "business/agenda.html", context)
