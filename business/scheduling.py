"""Availability: pure reads over technicians, absences and open jobs. Nothing here writes.

A technician can take work on a day when the day is one of their `work_days`, the organisation is
open that day (`Organisation.business_hours`) and no `Absence` covers it. Their window that day is
the intersection of their own hours and the organisation's; an open job (scheduled or in progress)
blocks its interval. All datetimes are aware and computed in the organisation's timezone.

Zones ("closest by zone"): the Buenos Aires metropolitan area is split into five working zones.
Travel between them follows the main corridors, so the adjacency below is what a dispatcher would
say is "next door" — CABA touches the three conurbano corridors, La Plata is reached through the
south::

    Norte ── CABA ── Sur ── La Plata
       \\      |      /
        ─── Oeste ───

A zone's distance to another is the number of hops in that graph (same zone 0, neighbour 1, ...);
an unknown zone sorts last. "Este" is accepted as another name for La Plata (the south-east).
"""

from __future__ import annotations

import datetime
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from zoneinfo import ZoneInfo

from django.utils import timezone
from django.utils.translation import gettext as _

from business.models import Absence, Job, Organisation, Technician
from common.text import fold

Interval = tuple[datetime.datetime, datetime.datetime]

DEFAULT_DURATION = datetime.timedelta(hours=2)
DEFAULT_STEP = datetime.timedelta(minutes=60)
WEEKDAY_KEYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")

# --- Zones -----------------------------------------------------------------------------------

ZONES = ("CABA", "Norte", "Sur", "Oeste", "La Plata")

ZONE_NEIGHBOURS: dict[str, tuple[str, ...]] = {
    "CABA": ("Norte", "Oeste", "Sur"),
    "Norte": ("CABA", "Oeste"),
    "Oeste": ("CABA", "Norte", "Sur"),
    "Sur": ("CABA", "Oeste", "La Plata"),
    "La Plata": ("Sur",),
}

# Folded spellings operators use for each zone.
_ZONE_ALIASES: dict[str, str] = {
    "caba": "CABA",
    "capital": "CABA",
    "capital federal": "CABA",
    "ciudad": "CABA",
    "ciudad de buenos aires": "CABA",
    "ciudad autonoma de buenos aires": "CABA",
    "norte": "Norte",
    "zona norte": "Norte",
    "gba norte": "Norte",
    "sur": "Sur",
    "zona sur": "Sur",
    "gba sur": "Sur",
    "oeste": "Oeste",
    "zona oeste": "Oeste",
    "gba oeste": "Oeste",
    "la plata": "La Plata",
    "gran la plata": "La Plata",
    "este": "La Plata",
    "zona este": "La Plata",
}

# Localities (barrios and partidos) an address may name instead of a zone.
_LOCALITY_ZONES: dict[str, tuple[str, ...]] = {
    "CABA": (
        "palermo",
        "belgrano",
        "caballito",
        "flores",
        "recoleta",
        "almagro",
        "boedo",
        "nunez",
        "villa urquiza",
        "villa crespo",
        "villa devoto",
        "colegiales",
        "san telmo",
        "la boca",
        "barracas",
        "balvanera",
        "once",
        "retiro",
        "microcentro",
        "puerto madero",
        "saavedra",
        "mataderos",
        "liniers",
        "villa lugano",
        "parque patricios",
        "chacarita",
        "coghlan",
    ),
    "Norte": (
        "vicente lopez",
        "olivos",
        "florida",
        "munro",
        "san isidro",
        "martinez",
        "beccar",
        "acassuso",
        "tigre",
        "san fernando",
        "victoria",
        "pilar",
        "escobar",
        "nordelta",
        "general pacheco",
        "don torcuato",
        "san martin",
        "villa ballester",
        "jose c. paz",
        "malvinas argentinas",
        "los polvorines",
        "boulogne",
    ),
    "Oeste": (
        "moron",
        "haedo",
        "castelar",
        "ramos mejia",
        "la matanza",
        "san justo",
        "ituzaingo",
        "hurlingham",
        "merlo",
        "moreno",
        "tres de febrero",
        "caseros",
        "ciudadela",
        "villa luzuriaga",
        "isidro casanova",
        "gonzalez catan",
        "padua",
        "paso del rey",
    ),
    "Sur": (
        "avellaneda",
        "lanus",
        "lomas de zamora",
        "banfield",
        "temperley",
        "quilmes",
        "bernal",
        "adrogue",
        "almirante brown",
        "burzaco",
        "longchamps",
        "berazategui",
        "florencio varela",
        "esteban echeverria",
        "monte grande",
        "ezeiza",
        "wilde",
        "sarandi",
        "remedios de escalada",
    ),
    "La Plata": (
        "la plata",
        "city bell",
        "gonnet",
        "manuel b. gonnet",
        "berisso",
        "ensenada",
        "tolosa",
        "villa elisa",
        "los hornos",
        "ringuelet",
    ),
}
_LOCALITY_TO_ZONE = {place: zone for zone, places in _LOCALITY_ZONES.items() for place in places}


@lru_cache(maxsize=32768)
def fold_words(text: str) -> str:
    """`fold`, then dashes as spaces and one space ("Lanús-Oeste" → "lanus oeste"): places and
    names are written both ways, so their words are compared, not their punctuation."""
    return " ".join(fold(text or "").replace("-", " ").split())


def zone_for(text: str) -> str | None:
    """The canonical zone named by `text` (a zone, an alias or a known locality), else None."""
    key = fold_words(text)
    if not key:
        return None
    for zone in ZONES:
        if key == fold_words(zone):
            return zone
    return _ZONE_ALIASES.get(key) or _LOCALITY_TO_ZONE.get(key)


def zone_aliases(zone: str) -> list[str]:
    """Every spelling that stands for the same zone (for `__iexact` filters over stored text)."""
    canonical = zone_for(zone)
    if canonical is None:
        return [zone]
    names = {canonical} | {alias for alias, z in _ZONE_ALIASES.items() if z == canonical}
    return sorted(names)


def zone_distance(a: str | None, b: str | None) -> int:
    """Hops between two zones in ZONE_NEIGHBOURS; 9 when either is unknown or unreachable."""
    start, goal = zone_for(a or ""), zone_for(b or "")
    if start is None or goal is None:
        return 9
    seen, queue = {start}, deque([(start, 0)])
    while queue:
        zone, hops = queue.popleft()
        if zone == goal:
            return hops
        for neighbour in ZONE_NEIGHBOURS.get(zone, ()):
            if neighbour not in seen:
                seen.add(neighbour)
                queue.append((neighbour, hops + 1))
    return 9


# --- Working windows -------------------------------------------------------------------------


def org_tz(organisation: Organisation) -> ZoneInfo:
    return ZoneInfo(organisation.timezone or "America/Argentina/Buenos_Aires")


def local_date(organisation: Organisation, moment: datetime.datetime) -> datetime.date:
    return moment.astimezone(org_tz(organisation)).date()


def _parse_hhmm(value: object) -> datetime.time | None:
    try:
        hours, minutes = str(value).split(":")
        return datetime.time(int(hours), int(minutes))
    except (ValueError, TypeError):
        return None


def business_hours_on(
    organisation: Organisation, day: datetime.date
) -> tuple[datetime.time, datetime.time] | None:
    """The organisation's opening hours that weekday; None when closed (or badly configured)."""
    hours = (organisation.business_hours or {}).get(WEEKDAY_KEYS[day.weekday()]) or []
    if len(hours) != 2:
        return None
    opens, closes = _parse_hhmm(hours[0]), _parse_hhmm(hours[1])
    if opens is None or closes is None or opens >= closes:
        return None
    return opens, closes


def work_window(
    organisation: Organisation, technician: Technician, day: datetime.date
) -> Interval | None:
    """When `technician` can work on `day`: their hours ∩ business hours; None if off that day.

    Absences are not looked at here (they need a query); see `technician_problem`.
    """
    if day.weekday() not in (technician.work_days or []):
        return None
    opening = business_hours_on(organisation, day)
    if opening is None:
        return None
    begins = max(technician.work_start, opening[0])
    ends = min(technician.work_end, opening[1])
    if begins >= ends:
        return None
    tz = org_tz(organisation)
    return (
        datetime.datetime.combine(day, begins, tzinfo=tz),
        datetime.datetime.combine(day, ends, tzinfo=tz),
    )


def has_skill(technician: Technician, skill: str | None) -> bool:
    return not skill or skill in (technician.skills or [])


# --- The calendar: absences and busy intervals loaded once per question ----------------------


@dataclass
class Calendar:
    """Absences and open-job intervals of some technicians over a date range."""

    absences: dict[int, list[tuple[datetime.date, datetime.date]]] = field(default_factory=dict)
    busy: dict[int, list[tuple[datetime.datetime, datetime.datetime, int | None]]] = field(
        default_factory=dict
    )

    def is_absent(self, technician: Technician, day: datetime.date) -> bool:
        return any(a <= day <= b for a, b in self.absences.get(technician.pk, []))

    def clash(
        self, technician: Technician, start: datetime.datetime, end: datetime.datetime
    ) -> int | None | bool:
        """The id of an open job overlapping [start, end) (True for a planned one), else False."""
        for busy_start, busy_end, job_id in self.busy.get(technician.pk, []):
            if busy_start < end and busy_end > start:
                return job_id if job_id is not None else True
        return False

    def busy_on(self, technician: Technician, window: Interval) -> list[Interval]:
        return sorted(
            (s, e)
            for s, e, _ in self.busy.get(technician.pk, [])
            if s < window[1] and e > window[0]
        )


def load_calendar(
    organisation: Organisation,
    technicians: Sequence[Technician],
    start: datetime.datetime,
    end: datetime.datetime,
    *,
    exclude_job_ids: Iterable[int] = (),
    extra_busy: Mapping[int, Sequence[Interval]] | None = None,
) -> Calendar:
    """One query for absences, one for open jobs. `extra_busy` adds planned (unsaved) intervals."""
    ids = [t.pk for t in technicians]
    calendar = Calendar(absences=defaultdict(list), busy=defaultdict(list))
    absences = Absence.objects.filter(
        organisation=organisation,
        technician_id__in=ids,
        start_date__lte=local_date(organisation, end),
        end_date__gte=local_date(organisation, start),
    ).values_list("technician_id", "start_date", "end_date")
    for tech_id, first, last in absences:
        calendar.absences[tech_id].append((first, last))
    jobs = (
        Job.objects.filter(
            organisation=organisation,
            technician_id__in=ids,
            status__in=Job.OPEN_STATUSES,
            scheduled_start__lt=end,
            scheduled_end__gt=start,
        )
        .exclude(pk__in=list(exclude_job_ids))
        .values_list("technician_id", "scheduled_start", "scheduled_end", "pk")
    )
    for tech_id, job_start, job_end, job_id in jobs:
        calendar.busy[tech_id].append((job_start, job_end, job_id))
    for tech_id, intervals in (extra_busy or {}).items():
        calendar.busy[tech_id].extend((s, e, None) for s, e in intervals)
    return calendar


def active_technicians(organisation: Organisation, skill: str | None = None) -> list[Technician]:
    technicians = Technician.objects.filter(organisation=organisation, active=True)
    # Skills live in a JSON list; filtering in Python keeps SQLite and PostgreSQL identical.
    return [t for t in technicians if has_skill(t, skill)]


def technician_problem(
    organisation: Organisation,
    technician: Technician,
    start: datetime.datetime,
    end: datetime.datetime,
    *,
    skill: str | None = None,
    exclude_job_ids: Iterable[int] = (),
    calendar: Calendar | None = None,
) -> str | None:
    """Why `technician` cannot take [start, end), as a sentence for the user; None when free."""
    if not technician.active:
        return _("%(name)s is not an active technician.") % {"name": technician.name}
    if not has_skill(technician, skill):
        return _("%(name)s does not do that kind of work.") % {"name": technician.name}
    day = local_date(organisation, start)
    window = work_window(organisation, technician, day)
    if window is None:
        return _("%(name)s does not work on %(day)s.") % {
            "name": technician.name,
            "day": day.strftime("%d/%m/%Y"),
        }
    if start < window[0] or end > window[1]:
        return _("That is outside %(name)s's hours (%(from)s to %(to)s).") % {
            "name": technician.name,
            "from": window[0].strftime("%H:%M"),
            "to": window[1].strftime("%H:%M"),
        }
    calendar = calendar or load_calendar(
        organisation, [technician], start, end, exclude_job_ids=exclude_job_ids
    )
    if calendar.is_absent(technician, day):
        return _("%(name)s is absent on %(day)s.") % {
            "name": technician.name,
            "day": day.strftime("%d/%m/%Y"),
        }
    clash = calendar.clash(technician, start, end)
    if clash is not False:
        return _("%(name)s already has a job at that time.") % {"name": technician.name}
    return None


# --- Questions ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Slot:
    technician: Technician
    start: datetime.datetime
    end: datetime.datetime
    zone_distance: int


def _free_intervals(window: Interval, busy: list[Interval]) -> list[Interval]:
    free, cursor = [], window[0]
    for busy_start, busy_end in busy:
        if busy_start > cursor:
            free.append((cursor, min(busy_start, window[1])))
        cursor = max(cursor, busy_end)
    if cursor < window[1]:
        free.append((cursor, window[1]))
    return [(s, e) for s, e in free if s < e]


def _ceil_to_step(moment: datetime.datetime, step: datetime.timedelta) -> datetime.datetime:
    """Round up to the next wall-clock multiple of `step` (slots start at 09:00, not 09:07)."""
    midnight = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    elapsed = moment - midnight
    steps = -(-elapsed // step)  # ceiling division of timedeltas
    return midnight + steps * step


def _day_slots(
    technician: Technician,
    window: Interval,
    busy: list[Interval],
    *,
    duration: datetime.timedelta,
    step: datetime.timedelta,
    after: datetime.datetime,
) -> list[Interval]:
    slots = []
    for free_start, free_end in _free_intervals(window, busy):
        cursor = _ceil_to_step(max(free_start, after), step)
        while cursor + duration <= free_end:
            slots.append((cursor, cursor + duration))
            cursor += step
    return slots


# Parts of the day as windows for a slot's local start ("a la tarde" = from noon to 19:00).
# "a la tarde" is after lunch: an office that hears it means from 14 (a 12:00 or 13:00 visit is
# "al mediodía", in neither part).
DAY_PARTS: dict[str, tuple[datetime.time, datetime.time]] = {
    "morning": (datetime.time(0), datetime.time(12)),
    "afternoon": (datetime.time(14), datetime.time(19)),
    "evening": (datetime.time(19), datetime.time.max),
}


def _within(start: datetime.datetime, tz: ZoneInfo, part: str | None) -> bool:
    if part is None:
        return True
    first, last = DAY_PARTS[part]
    return first <= start.astimezone(tz).time() < last


def day_part_of(clock: datetime.time) -> str:
    """The part of the day a local time falls in ("" at midday, in none of them)."""
    return next((part for part, (first, last) in DAY_PARTS.items() if first <= clock < last), "")


def _days(day_from: datetime.date, day_to: datetime.date) -> list[datetime.date]:
    return [day_from + datetime.timedelta(days=n) for n in range((day_to - day_from).days + 1)]


def free_slots(
    organisation: Organisation,
    *,
    day_from: datetime.date,
    day_to: datetime.date | None = None,
    skill: str | None = None,
    zone: str | None = None,
    duration: datetime.timedelta = DEFAULT_DURATION,
    limit: int | None = 50,
    step: datetime.timedelta = DEFAULT_STEP,
    after: datetime.datetime | None = None,
    technician: Technician | None = None,
    part_of_day: str | None = None,
) -> list[Slot]:
    """Every (technician, start, end) free for `duration` between the two dates (inclusive).

    Slots start on the `step` grid of the wall clock, never before `after` (default: now), and
    inside `part_of_day` (a key of DAY_PARTS) when given; they are ordered by start, then zone
    distance to `zone`, then technician name.
    """
    day_to = day_to or day_from
    after = after or timezone.now()
    technicians = [technician] if technician else active_technicians(organisation, skill)
    tz = org_tz(organisation)
    range_start = datetime.datetime.combine(day_from, datetime.time.min, tzinfo=tz)
    range_end = datetime.datetime.combine(day_to, datetime.time.max, tzinfo=tz)
    calendar = load_calendar(organisation, technicians, range_start, range_end)
    found: list[Slot] = []
    for tech in technicians:
        distance = zone_distance(zone, tech.zone) if zone else 0
        for day in _days(day_from, day_to):
            window = work_window(organisation, tech, day)
            if window is None or calendar.is_absent(tech, day):
                continue
            busy = calendar.busy_on(tech, window)
            for start, end in _day_slots(
                tech, window, busy, duration=duration, step=step, after=after
            ):
                if _within(start, tz, part_of_day):
                    found.append(Slot(tech, start, end, distance))
    found.sort(key=lambda s: (s.start, s.zone_distance, s.technician.name, s.technician.pk))
    return found[:limit] if limit else found


def next_free_slots(
    organisation: Organisation,
    *,
    after: datetime.datetime | None = None,
    skill: str | None = None,
    zone: str | None = None,
    duration: datetime.timedelta = DEFAULT_DURATION,
    count: int = 3,
    horizon_days: int = 21,
    technician: Technician | None = None,
    part_of_day: str | None = None,
) -> list[Slot]:
    """The next `count` distinct start times with somebody free ("offer three concrete slots").

    For each start time the best technician by zone is offered; searched a week at a time up to
    `horizon_days` ahead.
    """
    after = after or timezone.now()
    first_day = local_date(organisation, after)
    offered: dict[datetime.datetime, Slot] = {}
    for week in range(0, horizon_days, 7):
        day_from = first_day + datetime.timedelta(days=week)
        day_to = min(
            day_from + datetime.timedelta(days=6),
            first_day + datetime.timedelta(days=horizon_days - 1),
        )
        for slot in free_slots(
            organisation,
            day_from=day_from,
            day_to=day_to,
            skill=skill,
            zone=zone,
            duration=duration,
            limit=None,
            after=after,
            technician=technician,
            part_of_day=part_of_day,
        ):
            offered.setdefault(slot.start, slot)
            if len(offered) >= count:
                return list(offered.values())
    return list(offered.values())


def technicians_free(
    organisation: Organisation,
    start: datetime.datetime,
    end: datetime.datetime,
    skill: str | None = None,
    *,
    zone: str | None = None,
    exclude: Iterable[Technician] = (),
    exclude_job_ids: Iterable[int] = (),
    extra_busy: Mapping[int, Sequence[Interval]] | None = None,
) -> list[Technician]:
    """Active technicians with `skill` free for the whole of [start, end).

    Ordered by zone distance to `zone` (when given), then by how many jobs they already have that
    day (spread the work), then by name.
    """
    excluded = {t.pk for t in exclude}
    candidates = [t for t in active_technicians(organisation, skill) if t.pk not in excluded]
    day = local_date(organisation, start)
    tz = org_tz(organisation)
    day_start = datetime.datetime.combine(day, datetime.time.min, tzinfo=tz)
    day_end = datetime.datetime.combine(day, datetime.time.max, tzinfo=tz)
    calendar = load_calendar(
        organisation,
        candidates,
        min(start, day_start),
        max(end, day_end),
        exclude_job_ids=exclude_job_ids,
        extra_busy=extra_busy,
    )
    free = [
        t
        for t in candidates
        if technician_problem(organisation, t, start, end, skill=skill, calendar=calendar) is None
    ]

    def rank(tech: Technician) -> tuple[int, int, str, int]:
        window = (day_start, day_end)
        load = len(calendar.busy_on(tech, window))
        return (zone_distance(zone, tech.zone) if zone else 0, load, tech.name, tech.pk)

    return sorted(free, key=rank)


def nearest_free_technician(
    organisation: Organisation,
    zone: str | None,
    skill: str | None,
    at: datetime.datetime,
    *,
    duration: datetime.timedelta = DEFAULT_DURATION,
    exclude: Iterable[Technician] = (),
    exclude_job_ids: Iterable[int] = (),
    extra_busy: Mapping[int, Sequence[Interval]] | None = None,
) -> Technician | None:
    """The free technician closest by zone: same zone, then neighbours, then anyone."""
    free = technicians_free(
        organisation,
        at,
        at + duration,
        skill,
        zone=zone,
        exclude=exclude,
        exclude_job_ids=exclude_job_ids,
        extra_busy=extra_busy,
    )
    return free[0] if free else None
