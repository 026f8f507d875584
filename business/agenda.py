"""The Agenda by technician (the day at a glance): rows are technicians, columns the hours of a
day or the days of a week; jobs are blocks in them and the free slots show where a job fits.

Free time is `business.scheduling.free_slots` — the same availability the copilot books with
(work days and hours ∩ business hours, absences, open jobs) — on a one-hour grid.
"""

from __future__ import annotations

import datetime
from collections import defaultdict
from dataclasses import dataclass, field

from django.utils import timezone

from business.models import Job, Organisation, Technician
from business.scheduling import business_hours_on, free_slots, org_tz, work_window
from business.selectors import jobs_on_days

SLOT = datetime.timedelta(hours=1)
FREE_SHOWN_PER_DAY = 4  # week view: the first free hours of each day, as links


@dataclass
class Cell:
    start: datetime.datetime  # the hour (day view) or the day's midnight (week view), local
    jobs: list[Job] = field(default_factory=list)
    free: list[datetime.datetime] = field(default_factory=list)  # free slot starts, local
    free_total: int = 0
    links: list[tuple[datetime.datetime, str]] = field(default_factory=list)  # "book here"
    past: bool = False  # over before now: nothing can be booked there
    span: int = 1  # day view: the hour columns its jobs cover (a job is one block)
    covered: bool = False  # day view: inside the block of an earlier cell, not drawn

    def items(self) -> list[tuple[datetime.datetime, Job | None, str]]:
        """Jobs and free slots in time order: (start, job, "") or (start, None, link)."""
        shown: list[tuple[datetime.datetime, Job | None, str]] = [
            (job.scheduled_start, job, "") for job in self.jobs
        ]
        shown += [(moment, None, link) for moment, link in self.links]
        return sorted(shown, key=lambda item: (item[0], item[1] is None))

    off: bool = False  # the technician does not work then (day off, outside hours, absent)


@dataclass
class Row:
    technician: Technician
    cells: list[Cell]


@dataclass
class Board:
    first: datetime.date
    days: int
    columns: list[datetime.datetime]
    rows: list[Row]

    @property
    def last(self) -> datetime.date:
        return self.first + datetime.timedelta(days=self.days - 1)


def _hours(organisation: Organisation, day: datetime.date) -> list[int]:
    """The hours of the day view: the business hours (08–18 when closed that day)."""
    opening = business_hours_on(organisation, day)
    if opening is None:
        return list(range(8, 18))
    end = opening[1].hour + (1 if opening[1].minute else 0)
    return list(range(opening[0].hour, max(end, opening[0].hour + 1)))


def agenda_board(
    organisation: Organisation,
    first: datetime.date,
    days: int,
    *,
    now: datetime.datetime | None = None,
) -> Board:
    """The board for `days` (1 or 7) local days from `first`; free slots never in the past."""
    now = now or timezone.now()
    tz = org_tz(organisation)
    technicians = list(
        Technician.objects.filter(organisation=organisation, active=True).order_by("name", "pk")
    )
    last = first + datetime.timedelta(days=days - 1)
    jobs = jobs_on_days(organisation, first, days).exclude(status=Job.Status.CANCELLED)
    by_tech: dict[int, list[Job]] = defaultdict(list)
    for job in jobs:
        if job.technician_id is not None:
            by_tech[job.technician_id].append(job)
    slots = free_slots(
        organisation, day_from=first, day_to=last, duration=SLOT, step=SLOT, limit=None,
        after=now,
    )  # fmt: skip
    free: dict[int, list[datetime.datetime]] = defaultdict(list)
    for slot in slots:
        free[slot.technician.pk].append(slot.start.astimezone(tz))
    if days == 1:
        columns = [
            datetime.datetime.combine(first, datetime.time(h), tzinfo=tz)
            for h in _hours(organisation, first)
        ]
        span = SLOT
    else:
        columns = [
            datetime.datetime.combine(
                first + datetime.timedelta(days=n), datetime.time.min, tzinfo=tz
            )
            for n in range(days)
        ]
        span = datetime.timedelta(days=1)
    rows = []
    for tech in technicians:
        cells = []
        for start in columns:
            end = start + span
            cell = Cell(start=start)
            cell.jobs = [
                j
                for j in by_tech.get(tech.pk, [])
                if start <= j.scheduled_start.astimezone(tz) < end
            ]
            starts = [s for s in free.get(tech.pk, []) if start <= s < end]
            cell.free_total = len(starts)
            cell.free = starts if days == 1 else starts[:FREE_SHOWN_PER_DAY]
            cell.past = end <= now
            window = work_window(organisation, tech, start.date())
            if window is None:
                cell.off = True
            elif days == 1:
                cell.off = not (window[0] < end and window[1] > start) and not cell.jobs
            cells.append(cell)
        if days == 1:
            _join_blocks(cells)
        rows.append(Row(tech, cells))
    return Board(first=first, days=days, columns=columns, rows=rows)


def _join_blocks(cells: list[Cell]) -> None:
    """Day view: a job's cell spans the hours it lasts; a job starting inside that block (an
    overlap) joins it, and the block grows to its end."""
    index = 0
    while index < len(cells):
        cell = cells[index]
        if not cell.jobs:
            index += 1
            continue
        end = max(job.scheduled_end for job in cell.jobs)
        following = index + 1
        while following < len(cells) and cells[following].start < end:
            inner = cells[following]
            inner.covered = True
            cell.jobs += inner.jobs
            cell.free += inner.free
            if inner.jobs:
                end = max(end, *(job.scheduled_end for job in inner.jobs))
            following += 1
        cell.span = following - index
        index = following
