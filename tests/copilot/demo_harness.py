"""The demo harness of the end-to-end turn tests (tests/copilot/test_*_e2e.py): the demo
database loaded once per module and restored before every test, what the tests know about the
demo, one real turn (`ask`), what it changed (`Diff`), and the checks every case shares."""

from __future__ import annotations

import datetime
import io
import json
import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from zoneinfo import ZoneInfo

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from agents.defaults import DEFAULTS_FILE
from agents.events import EVENT_TYPES
from agents.services import agents_sync_defaults
from approvals.models import PendingAction
from business.models import (
    Absence,
    Address,
    Customer,
    Equipment,
    EscalationTicket,
    Invoice,
    Job,
    Organisation,
    PriceItem,
    Quote,
    Technician,
    Vehicle,
)
from business.scheduling import technicians_free
from business.services import jobs_bulk_reschedule as bulk_move
from common.text import fold
from copilot import router_cache
from copilot.answering import TurnResult
from copilot.models import AgentRun, Conversation, Message
from copilot.services import conversation_create
from tests.clock import reference_clock
from tests.copilot.conftest import INTENTS
from tests.copilot.turns import answer as answer_message

DEMO_SLUG = "demo"
OPEN = (Job.Status.SCHEDULED, Job.Status.IN_PROGRESS)
ES_DAYS = ("lunes", "martes", "miércoles", "jueves", "viernes", "sábado", "domingo")
EN_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


# --- the demo database: loaded once, restored before every test -------------------------------


def _seed() -> None:
    # A transactional test elsewhere may have flushed the templates the migration created.
    agents_sync_defaults()
    call_command("load_demo", reset=True, stdout=io.StringIO())


def _copy(source: Any, target: Any) -> None:
    source.backup(target)


class DemoDatabase:
    """The test database with the demo loaded, and the way back to it before each test.

    On SQLite the pristine demo and the state before the module are kept as in-memory copies
    and restored with the backup API; the ids stay the same, so the trained router does too.
    """

    def __init__(self) -> None:
        self.sqlite = connection.vendor == "sqlite"
        self._before: sqlite3.Connection | None = None
        self._demo: sqlite3.Connection | None = None

    def _snapshot(self) -> sqlite3.Connection:
        connection.ensure_connection()
        copy = sqlite3.connect(":memory:", check_same_thread=False)
        _copy(connection.connection, copy)
        return copy

    def load(self) -> None:
        if self.sqlite:
            self._before = self._snapshot()
        _seed()
        if self.sqlite:
            self._demo = self._snapshot()

    def restore_demo(self) -> None:
        if self._demo is None:
            call_command("flush", interactive=False, verbosity=0)
            _seed()
            return
        connection.ensure_connection()
        _copy(self._demo, connection.connection)

    def restore_before(self) -> None:
        """Leave the database as the module found it."""
        if self._before is None:
            call_command("flush", interactive=False, verbosity=0)
            agents_sync_defaults()
            return
        connection.ensure_connection()
        _copy(self._before, connection.connection)
        for copy in (self._before, self._demo):
            if copy is not None:
                copy.close()


def open_demo_database(django_db_blocker: Any) -> Iterator[DemoDatabase]:
    """The demo, loaded once for a module. The turn runs in worker threads with their own
    connections, so the data must be committed: the module holds database access itself
    instead of wrapping each test in a transaction. Afterwards the database is left as the
    module found it. The module runs on the reference clock (tests/clock.py): the demo, the
    messages' days and the expectations are the same whatever day the suite runs."""
    with reference_clock(), django_db_blocker.unblock():
        database = DemoDatabase()
        database.load()
        try:
            yield database
        finally:
            database.restore_before()
            router_cache.forget()


# --- what the tests know about the demo -------------------------------------------------------


def es_day(day: datetime.date) -> str:
    """ "jueves 26": how an operator names a day of the coming week."""
    return f"{ES_DAYS[day.weekday()]} {day.day}"


def en_day(day: datetime.date) -> str:
    """ "Thursday the 26th"."""
    suffix = {1: "st", 2: "nd", 3: "rd"}.get(day.day % 10, "th")
    if 11 <= day.day <= 13:
        suffix = "th"
    return f"{EN_DAYS[day.weekday()]} the {day.day}{suffix}"


@dataclass
class Demo:
    org: Organisation
    operator: Any
    tz: ZoneInfo
    today: datetime.date
    facts: dict[str, Any] = field(default_factory=dict)

    def customer(self, name: str) -> Customer:
        return Customer.objects.get(organisation=self.org, name=name)

    def technician(self, name: str) -> Technician:
        return Technician.objects.get(organisation=self.org, name=name)

    def local(self, moment: datetime.datetime) -> datetime.datetime:
        return moment.astimezone(self.tz)

    def at(self, day: datetime.date, hour: int, minute: int = 0) -> datetime.datetime:
        return datetime.datetime.combine(day, datetime.time(hour, minute), tzinfo=self.tz)

    def working_days(self, first_offset: int, count: int) -> list[datetime.date]:
        """Monday-to-Friday dates from today + `first_offset` on (the office's weekdays)."""
        days: list[datetime.date] = []
        day = self.today + datetime.timedelta(days=first_offset)
        while len(days) < count:
            if day.weekday() < 5:
                days.append(day)
            day += datetime.timedelta(days=1)
        return days

    def open_jobs(self) -> Any:
        return Job.objects.filter(organisation=self.org, status__in=OPEN)

    def single_job_customers(self) -> list[Job]:
        """Jobs of customers who have exactly one open job, scheduled two to twelve days ahead
        (so "the visit of X" names one job, and there is time to move it)."""
        counts: dict[int, int] = {}
        for customer_id in self.open_jobs().values_list("customer_id", flat=True):
            counts[customer_id] = counts.get(customer_id, 0) + 1
        first = self.at(self.today + datetime.timedelta(days=2), 0)
        last = self.at(self.today + datetime.timedelta(days=12), 0)
        jobs = (
            self.open_jobs()
            .filter(status=Job.Status.SCHEDULED, scheduled_start__range=(first, last))
            .select_related("customer", "technician")
            .order_by("scheduled_start", "pk")
        )
        picked = [job for job in jobs if counts[job.customer_id] == 1]
        assert picked, "the demo has no customer with exactly one open job in the coming days"
        return picked


def _uninvoiced_customers(demo: Demo) -> list[str]:
    """Customers (one of their name) whose latest finished job has no invoice yet: "invoice the
    last job" can be done for them (the demo bills most finished jobs at random)."""
    names = []
    for customer in Customer.objects.filter(organisation=demo.org).order_by("name"):
        if Customer.objects.filter(organisation=demo.org, name=customer.name).count() != 1:
            continue
        latest = (
            Job.objects.filter(customer=customer, status=Job.Status.DONE)
            .order_by("-scheduled_start")
            .first()
        )
        if latest is not None and not Invoice.objects.filter(job=latest).exists():
            names.append(customer.name)
    return names


def _facts(demo: Demo) -> dict[str, Any]:
    """The records and days the messages name (computed once, after the load)."""
    day_a, day_b, day_c = demo.working_days(2, 3)
    singles = demo.single_job_customers()
    facts: dict[str, Any] = {"day_a": day_a, "day_b": day_b, "day_c": day_c}
    for key, index in (("move_es", 0), ("move_en", 1), ("cancel_es", 2), ("cancel_en", 3),
                       ("vehicle_es", 4), ("vehicle_en", 5), ("dispatch_es", 6),
                       ("dispatch_en", 7)):  # fmt: skip
        job = singles[index % len(singles)]
        facts[key] = job.customer.name
        if key.startswith("move"):
            facts[f"{key}_to"] = _move_target(demo, job)
    facts["pool"] = list(
        Vehicle.objects.filter(organisation=demo.org, technician__isnull=True)
        .order_by("plate")
        .values_list("plate", flat=True)
    )
    facts.update(absence_facts(demo))
    facts.update(_bulk_facts(demo))
    uninvoiced = _uninvoiced_customers(demo)
    assert len(uninvoiced) >= 2, "the demo has no customers whose last finished job is unbilled"
    facts["invoice_es"], facts["invoice_en"] = uninvoiced[0], uninvoiced[-1]
    facts["book_es_hour"] = bookable_hour(demo, day_a, "ac")
    facts["book_en_hour"] = bookable_hour(demo, day_b, "heating")
    facts["idle_tech"] = _idle_technician(demo, day_b)
    return facts


def _idle_technician(demo: Demo, day: Any) -> str:
    """The first name of a technician (the only one with it) with no open job on `day`."""
    busy = set(
        demo.open_jobs()
        .filter(scheduled_start__range=(demo.at(day, 0), demo.at(day, 23, 59)))
        .values_list("technician_id", flat=True)
    )
    names = list(Technician.objects.filter(organisation=demo.org).order_by("name"))
    firsts = [t.name.split()[0] for t in names]
    for technician, first in zip(names, firsts, strict=True):
        if technician.pk not in busy and firsts.count(first) == 1:
            return first
    raise AssertionError("every technician has an open job that day")


def absence_facts(demo: Demo) -> dict[str, Any]:
    """The next working day and two technicians (not already absent) with open jobs that day."""
    for day in demo.working_days(1, 5):
        absent = Absence.objects.filter(
            organisation=demo.org, start_date__lte=day, end_date__gte=day
        ).values_list("technician_id", flat=True)
        busy = (
            demo.open_jobs()
            .filter(scheduled_start__range=(demo.at(day, 0), demo.at(day, 23, 59)))
            .exclude(technician_id__in=list(absent))
            .exclude(technician__isnull=True)
            .values_list("technician__name", flat=True)
        )
        names = sorted(set(busy))
        if names:
            return {"sick_day": day, "sick_es": names[0], "sick_en": names[-1]}
    raise AssertionError("no technician has open jobs in the coming working days")


def can_move(demo: Demo, jobs: Any, target: datetime.date) -> bool:
    """Whether at least one of `jobs` can move to `target` (a dry run of the bulk move): a
    bulk move where nothing can move files no approval, so a case must pick a movable day."""
    report = bulk_move(
        organisation=demo.org, jobs=list(jobs), to_date=target, reassign_if_busy=True,
        dry_run=True, now=timezone.now(),
    )  # fmt: skip
    return bool(report.moved)


def _bulk_facts(demo: Demo) -> dict[str, Any]:
    """A (day, zone) and a (day, technician) with open jobs two to nine days ahead that can move
    to the next working day."""
    zone_pick = tech_pick = None
    days = demo.working_days(2, 6)
    for source, target in zip(days, days[1:], strict=False):
        jobs = demo.open_jobs().filter(
            scheduled_start__range=(demo.at(source, 0), demo.at(source, 23, 59))
        )
        zones = sorted({z for z in jobs.values_list("address__zone", flat=True) if z})
        technicians = sorted({t for t in jobs.values_list("technician__name", flat=True) if t})
        for zone in reversed(zones):
            if zone_pick is None and can_move(demo, jobs.filter(address__zone=zone), target):
                zone_pick = (source, target, zone)
        for name in technicians:
            mine = jobs.filter(technician__name=name)
            if tech_pick is None and can_move(demo, mine, target):
                tech_pick = (source, target, name)
    assert zone_pick and tech_pick, "no open jobs in the coming days can move"
    return {
        "bulk_zone": zone_pick[2], "bulk_zone_from": zone_pick[0], "bulk_zone_to": zone_pick[1],
        "bulk_tech": tech_pick[2], "bulk_tech_from": tech_pick[0], "bulk_tech_to": tech_pick[1],
    }  # fmt: skip


BOOKING_HOURS = (14, 10, 11, 15, 9)


def bookable_hour(demo: Demo, day: datetime.date, skill: str) -> int:
    """An hour of `day` when someone with `skill` is free for two hours: a booking "el martes
    a las 14" must be possible as asked (the refusal with alternatives has its own tests)."""
    for hour in BOOKING_HOURS:
        start = demo.at(day, hour)
        if technicians_free(demo.org, start, start + datetime.timedelta(hours=2), skill):
            return hour
    raise AssertionError(f"nobody with {skill} is free on {day}")


def current_demo() -> Demo:
    org = Organisation.objects.get(slug=DEMO_SLUG)
    tz = ZoneInfo(org.timezone)
    operator = get_user_model().objects.get(username="operadora")
    return Demo(org=org, operator=operator, tz=tz, today=timezone.now().astimezone(tz).date())


def pristine_demo(database: DemoDatabase, facts: dict[str, Any]) -> Demo:
    """The demo as it was loaded (restored from the module's snapshot), with the module's facts."""
    database.restore_demo()
    demo = current_demo()
    demo.facts = facts
    return demo


# --- one turn ---------------------------------------------------------------------------------


@dataclass
class Turn:
    text: str
    result: TurnResult
    events: list[dict[str, Any]]
    runs: list[AgentRun]
    trace: dict[str, Any]

    @property
    def reply(self) -> str:
        return self.result.text

    @property
    def intents(self) -> list[str]:
        return [run.intent for run in self.runs]

    def types(self) -> list[str]:
        return [event["type"] for event in self.events]


def ask(demo: Demo, conversation: Conversation, text: str) -> Turn:
    """One turn as the panel and WhatsApp run it: stored, then run; its events from the log."""
    answered = answer_message(conversation, demo.operator.pk, text)
    result, events = answered.result, answered.events
    runs = list(AgentRun.objects.filter(turn_id=result.turn_id).order_by("created_at", "pk"))
    answer = Message.objects.filter(pk=result.assistant_message_id).first()
    return Turn(text, result, events, runs, answer.trace if answer else {})


def new_conversation(demo: Demo) -> Conversation:
    return conversation_create(organisation=demo.org, user=demo.operator, channel="panel")


# --- what changed -----------------------------------------------------------------------------


@dataclass
class Records:
    """The organisation's records a turn may touch, keyed by id."""

    jobs: dict[int, tuple[Any, ...]]
    customers: dict[int, tuple[Any, ...]]
    quotes: set[int]
    invoices: set[int]
    tickets: set[int]
    absences: set[int]
    pending: set[int]

    @classmethod
    def of(cls, org: Organisation) -> Records:
        def ids(model: Any) -> set[int]:
            return set(model.objects.filter(organisation=org).values_list("pk", flat=True))

        jobs = Job.objects.filter(organisation=org).values_list(
            "pk", "customer_id", "status", "scheduled_start", "technician_id", "vehicle_id"
        )
        customers = Customer.objects.filter(organisation=org).values_list(
            "pk", "name", "phone", "email", "cuit", "notes"
        )
        return cls(
            jobs={row[0]: row[1:] for row in jobs},
            customers={row[0]: row[1:] for row in customers},
            quotes=ids(Quote),
            invoices=ids(Invoice),
            tickets=ids(EscalationTicket),
            absences=ids(Absence),
            pending=ids(PendingAction),
        )


@dataclass
class Diff:
    before: Records
    after: Records

    @property
    def new_jobs(self) -> list[Job]:
        return list(Job.objects.filter(pk__in=self.after.jobs.keys() - self.before.jobs.keys()))

    @property
    def changed_jobs(self) -> set[int]:
        return {pk for pk, row in self.before.jobs.items() if self.after.jobs.get(pk) != row}

    @property
    def new_customers(self) -> list[Customer]:
        added = self.after.customers.keys() - self.before.customers.keys()
        return list(Customer.objects.filter(pk__in=added))

    @property
    def changed_customers(self) -> set[int]:
        return {
            pk for pk, row in self.before.customers.items() if self.after.customers.get(pk) != row
        }

    def added(self, kind: str) -> set[int]:
        return getattr(self.after, kind) - getattr(self.before, kind)

    @property
    def held(self) -> list[PendingAction]:
        return list(PendingAction.objects.filter(pk__in=self.added("pending")).order_by("pk"))

    @property
    def new_tickets(self) -> list[EscalationTicket]:
        return list(EscalationTicket.objects.filter(pk__in=self.added("tickets")))

    def assert_unchanged(self, *, but: tuple[str, ...] = ()) -> None:
        """Nothing changed except the kinds of record named in `but`."""
        checks = {
            "jobs": lambda: not self.new_jobs and not self.changed_jobs,
            "customers": lambda: not self.new_customers and not self.changed_customers,
            "quotes": lambda: not self.added("quotes"),
            "invoices": lambda: not self.added("invoices"),
            "tickets": lambda: not self.added("tickets"),
            "absences": lambda: not self.added("absences"),
            "pending": lambda: not self.added("pending"),
        }
        for kind, unchanged in checks.items():
            if kind not in but:
                assert unchanged(), f"the turn changed {kind}"


# --- checks shared by every case ---------------------------------------------------------------

SPANISH_WORDS = frozenset(
    ("el", "la", "los", "las", "de", "del", "para", "que", "con", "por", "un", "una", "es",
     "está", "al", "lo", "hay", "te", "tu", "sin", "se", "ya", "listo")
)  # fmt: skip
ENGLISH_WORDS = frozenset(
    ("the", "to", "for", "is", "are", "and", "you", "with", "your", "on", "of", "it", "this",
     "that", "we", "i", "i'm", "was", "has", "have", "be", "from", "done")
)  # fmt: skip
# Spanish of Argentina in an English reply, or its punctuation.
VOSEO = re.compile(
    r"\b(?:querés|podés|tenés|sabés|decime|pasame|avisame|fijate|contame|mirá|agendá|vos|sos)\b"
    r"|[¿¡]",
    re.IGNORECASE,
)
SPANISH_LETTERS = re.compile(r"[áéíóúñ]")


def record_phrases(org: Organisation) -> list[str]:
    """What the records say (names, services, streets, equipment, prices), longest first: a reply
    quotes them as they are, in Spanish, whatever its own language."""
    phrases: set[str] = {org.name, org.address}
    for model, fields in (
        (Customer, ("name",)),
        (Technician, ("name",)),
        (Job, ("service",)),
        (Address, ("street", "unit", "city")),
        (Equipment, ("kind", "brand", "model")),
        (PriceItem, ("name",)),
        (Vehicle, ("description",)),
    ):
        for row in model.objects.filter(organisation=org).values_list(*fields).distinct():
            phrases.update(row)
    return sorted((p for p in phrases if p), key=len, reverse=True)


def own_words(reply: str, org: Organisation) -> list[str]:
    """The words the copilot wrote itself: the reply without the records it quotes."""
    for phrase in record_phrases(org):
        reply = reply.replace(phrase, " ")
    return re.findall(r"[a-záéíóúñü']+", reply.lower())


def assert_language(reply: str, language: str, org: Organisation) -> None:
    words = own_words(reply, org)
    spanish = sum(w in SPANISH_WORDS or bool(SPANISH_LETTERS.search(w)) for w in words)
    english = sum(w in ENGLISH_WORDS for w in words)
    if language == "es":
        assert spanish > english, f"a Spanish message got a reply that is not Spanish: {reply!r}"
    else:
        assert english > spanish, f"an English message got a reply that is not English: {reply!r}"
        assert not VOSEO.search(reply), f"an English reply speaks Spanish: {reply!r}"


def assert_event_order(turn: Turn) -> None:
    types = turn.types()
    assert set(types) <= EVENT_TYPES
    assert "error" not in types, turn.events
    assert types[0] == "thinking"
    assert types[-1] == "completed"
    assert types[-2] == "consulted"
    assert {event["turn_id"] for event in turn.events} == {turn.result.turn_id}
    # One agent at a time: each step is logged as one `agent_start` carrying its end (the log
    # folds the pair), before the next agent starts.
    starts = [i for i, kind in enumerate(types) if kind == "agent_start"]
    assert len(starts) == len(turn.runs) >= 1
    assert "agent_end" not in types
    assert all("success" in turn.events[i] for i in starts)
    assert starts[-1] < types.index("consulted")
    streamed = "".join(event["text"] for event in turn.events if event["type"] == "text")
    assert streamed.strip() == turn.events[-1]["text"].strip() == turn.reply.strip()
    # The footer lists the agents that acted, from the execution rows.
    consulted = [(agent["agent"], agent["intent"]) for agent in turn.events[-2]["agents"]]
    assert consulted == [(run.agent, run.intent) for run in turn.runs if not run.yielded]


def assert_routed(turn: Turn, intents: list[str]) -> None:
    """The chain the router chose (AgentRun rows and the stored trace), each step done."""
    assert turn.intents == intents, f"{turn.text!r} was routed to {turn.intents}: {turn.reply}"
    assert [run.agent for run in turn.runs] == [INTENTS[intent] for intent in intents]
    assert [step["intent"] for step in turn.trace["steps"]] == intents
    for run in turn.runs:
        assert run.success and not run.yielded, f"{run.intent} failed ({run.error}): {turn.reply}"
    assert turn.result.ok


def assert_held(turn: Turn, diff: Diff, tools: list[str]) -> list[PendingAction]:
    """Actions waiting for a manager: filed for this conversation, announced by an event, and
    said in the reply; the records they would change are untouched."""
    held = diff.held
    assert [action.tool for action in held] == tools
    assert {action.status for action in held} == {PendingAction.Status.PENDING}
    requested = [e["approval_id"] for e in turn.events if e["type"] == "approval_requested"]
    assert requested == [action.pk for action in held]
    assert all(f"#{action.pk}" in turn.reply for action in held)
    diff.assert_unchanged(but=("pending",))
    return held


def shipped_examples() -> set[str]:
    agents = json.loads(DEFAULTS_FILE.read_text(encoding="utf-8"))
    examples: set[str] = set()
    for agent in agents:
        for intent in agent["intents"]:
            for key in ("examples_es", "examples_en"):
                value = intent.get(key) or []
                lines = value.splitlines() if isinstance(value, str) else value
                examples.update(comparable(line) for line in lines)
    return examples


def comparable(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", fold(text)))


MOVE_HOURS = (15, 14, 11, 10, 9, 16)


def _move_target(demo: Demo, job: Job) -> tuple[datetime.date, int]:
    """A working day and hour, two or more days ahead, when the job's own technician is free:
    "move it to Tuesday at 3pm" must be possible as asked (the refusal with alternatives has
    its own tests in tests/handlers)."""
    day = demo.local(job.scheduled_start).date()
    length = job.scheduled_end - job.scheduled_start
    for target in demo.working_days(2, 6):
        for hour in MOVE_HOURS:
            start = demo.at(target, hour)
            free = technicians_free(
                demo.org, start, start + length, job.skill, exclude_job_ids=[job.pk]
            )
            if target != day and job.technician in free:
                return target, hour
    raise AssertionError(f"{job.technician} is never free in the coming days")


def clock_en(hour: int) -> str:
    return f"{hour % 12 or 12}{'am' if hour < 12 else 'pm'}"
