"""Value types shared by every part of the embedded understanding engine.

Plain dataclasses, no Django: the engine is trained, tested and benchmarked on its own.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Language = Literal["es", "en"]
Tier = Literal["rules", "classifier"]


@dataclass(frozen=True)
class Example:
    """One training utterance from the agent registry."""

    text: str
    intent: str
    agent: str
    lang: str = ""


# The entities a step can carry (`Entities` fields) that an intent may require before it writes.
ENTITY_NAMES = (
    "customer", "technician", "date", "time", "cuit", "amount", "service", "job_id",
    "quote_number", "invoice_number", "ticket_id", "address",
)  # fmt: skip


@dataclass(frozen=True)
class IntentSpec:
    """What the product knows about one intent, as the registry (`AgentIntent`) says it.

    The engine reads these instead of tables of its own: an admin who adds or edits an intent
    changes ordering, prerequisites and wording with no code change."""

    name: str
    agent: str = ""
    writes: bool = False  # the request changes records (a step is done only when a write ran)
    requires: tuple[str, ...] = ()  # entities (ENTITY_NAMES) a write needs before it runs
    after: tuple[str, ...] = ()  # intents that run before it when both are in one chain
    first: bool = False  # opens the chain (an emergency)
    # Its step creates the record the steps `after` it use (a customer, a job): while it waits
    # for a manager or for an answer they wait too; a step that only follows another goes on.
    creates: bool = False
    absorbs: tuple[str, ...] = ()  # intents it makes redundant in one chain
    # A fact the message may state instead of asking (nlu.prerequisites.STATEMENTS key) that
    # makes this intent a step of its own before the `stated_for` requests that build on it.
    stated_as: str = ""
    stated_for: tuple[str, ...] = ()
    found_as: str = ""  # its question form: a request that asks to find reads as this intent
    cue: bool = False  # words about it are only evidence inside another request
    phrase_es: str = ""  # "agendar el trabajo": for "hecho: …" / "no pude …" lines
    phrase_en: str = ""
    customers: bool = False  # customers writing on WhatsApp may use it
    tool: str = ""  # the tool that does its work
    # The record it acts on ("job", "customer", "technician" or ""): an elliptical follow-up
    # continues the one under discussion; the one person a technician request names is one.
    subject: str = ""
    corrected_by: str = ""  # right after it wrote, a correction reads as this intent
    picked_as: str = ""  # a pick among the options its answer listed reads as this intent
    existing_as: str = ""  # a request pointing at an existing record ("la última") reads as this
    # "own": it carries a date of its own (next to a move, two dates may be two requests');
    # "target": its date is the day something moves to ("del jueves al lunes" → the Monday).
    date_is: str = ""
    many_as: str = ""  # a request about many records ("los trabajos de Leandro") reads as this
    about_work_as: str = ""  # anger about the work done ("el calefón sigue roto") reads as this
    later_as: str = ""  # a request for a later day ("mandá a alguien el lunes") reads as this
    # A request that names an invoice by its number ("¿está paga la factura B 12?") reads as
    # this: the invoice exists already, so there is nothing to issue or quote.
    invoice_named_as: str = ""
    # The intent whose tool undoes the job it wrote (book_job → cancel_job): its answer offers an
    # undo, a new turn that calls that tool with the job's id.
    undone_by: str = ""
    # A request about a customer the message says is new (the fact this intent's
    # `stated_as` names) reads as this: update_customer → create_customer, "es nueva, cargala
    # con el cel …" has nothing to update.
    new_as: str = ""
    # "courtesy" (greeting, farewell) and "out_of_scope" (unknown) never act; "frustration" goes
    # to a person when nothing else is asked; "grievance" (a complaint) takes the unclear words
    # before it as its setting. The emergency is the intent that is `first`.
    role: str = ""
    # A goodbye ("gracias, chau"): the conversation ends and its customers' profiles are
    # extracted. A flag beside the role: the farewell stays a courtesy that never acts.
    ends_conversation: bool = False
    # The share of its registry examples that tell a fact instead of asking (the act model's
    # reading, set when the router is built; 1.0 until then). A write nobody asks for by telling
    # ("Carlos está enfermo" is an absence, "la factura ya la recibí" no request for one) does
    # not run from a plain statement.
    told: float = 1.0

    def phrase(self, language: str) -> str:
        text = self.phrase_en if language.startswith("en") else self.phrase_es
        return text or self.name.replace("_", " ")


IntentSpecs = dict[str, IntentSpec]

# Roles (IntentSpec.role) whose intents never act: a greeting, a goodbye, out of scope.
NEVER_ACTS = ("courtesy", "out_of_scope")


def with_role(specs: IntentSpecs, *roles: str) -> frozenset[str]:
    """The intents the registry gives one of these roles."""
    return frozenset(name for name, spec in specs.items() if spec.role in roles)


def first_intent(specs: IntentSpecs) -> str | None:
    """The intent that opens every chain (`first`): the emergency danger words force."""
    return next((name for name, spec in specs.items() if spec.first), None)


def ending(specs: IntentSpecs) -> frozenset[str]:
    """The intents that end the conversation (`ends_conversation`: a goodbye)."""
    return frozenset(name for name, spec in specs.items() if spec.ends_conversation)


def intent_of_role(specs: IntentSpecs, role: str) -> str | None:
    """The intent that plays this role (the first, should a registry give it to two)."""
    return next((name for name, spec in specs.items() if spec.role == role), None)


def specs_by_name(specs: Sequence[IntentSpec]) -> IntentSpecs:
    return {spec.name: spec for spec in specs}


@dataclass(frozen=True)
class Vocabulary:
    """Names known in the organisation's records, used to snap free text to real rows."""

    customers: tuple[str, ...] = ()
    technicians: tuple[str, ...] = ()


@dataclass(frozen=True)
class Context:
    """What the engine needs to know about "now" and the organisation."""

    today: datetime.date
    now: datetime.datetime  # aware, in the organisation's timezone
    tz: str
    vocabulary: Vocabulary = field(default_factory=Vocabulary)


@dataclass
class Entities:
    customer: str | None = None
    technician: str | None = None
    date: datetime.date | None = None
    time: str | None = None  # "HH:MM", 24 h, only when explicit
    cuit: str | None = None  # "NN-NNNNNNNN-N"
    amount: decimal.Decimal | None = None
    service: str | None = None
    job_id: int | None = None  # "el trabajo #265", "job 265", "#265": a job named by its number
    # Documents by their number, canonical as the product prints them (nlu.references).
    quote_number: str | None = None  # "P-000027" ("el presupuesto 27", "quote P-27")
    invoice_number: str | None = None  # "0001-00000012" ("la factura B 12")
    invoice_letter: str | None = None  # "A" / "B", only when written
    ticket_id: int | None = None  # "ticket #12", "reclamo 12"
    address: str | None = None  # "Av. Cabildo 2150", "Cabildo 500", "123 Florida St", as written
    # A date as written that does not exist ("31/11"): the step asks which day, never guesses.
    impossible_date: str | None = None
    # "morning" / "afternoon" / "evening" ("a la tarde"): filters slots; not a time.
    part_of_day: str | None = None
    customer_matched: bool = False  # True when snapped to a name in Vocabulary
    technician_matched: bool = False
    # A snapped name as the message wrote it, spelt as on file ("Martín" for "Martín Sosa"):
    # what evaluation files expect (names as written); the fields above are what handlers use.
    customer_written: str | None = None
    technician_written: str | None = None

    def as_eval_dict(self) -> dict[str, str]:
        """The evaluation-file keys (PRODUCT.md), only those with a value."""
        values: dict[str, str | None] = {
            "customer": self.customer_written or self.customer,
            "technician": self.technician_written or self.technician,
            "date": self.date.isoformat() if self.date else None,
            "time": self.time,
            "cuit": self.cuit,
            "amount": format_amount(self.amount) if self.amount is not None else None,
            "service": self.service,
        }
        return {key: value for key, value in values.items() if value}

    def merged_with(self, other: Entities) -> Entities:
        """A copy where empty fields are filled from `other` (self wins on conflicts)."""
        merged = Entities(**self.__dict__)
        for key, value in other.__dict__.items():
            if getattr(merged, key) in (None, False) and value not in (None, False):
                setattr(merged, key, value)
        # A person and how the message wrote them go together: a name of one's own never takes
        # how another part of the message wrote someone else.
        for person in ("customer", "technician"):
            if getattr(self, person) is not None:
                setattr(merged, f"{person}_written", getattr(self, f"{person}_written"))
        return merged


def format_amount(amount: decimal.Decimal) -> str:
    """A plain number: "15000", "12500.50" — no exponent, no thousands separators."""
    if amount % 1:
        return format(amount.quantize(decimal.Decimal("0.01")), "f")
    return format(amount.quantize(decimal.Decimal(1)), "f")


@dataclass
class Task:
    intent: str
    agent: str
    confidence: float
    text: str  # the segment of the message this task came from
    entities: Entities = field(default_factory=Entities)
    candidates: list[tuple[str, float]] = field(default_factory=list)  # top-3, for the trace


@dataclass
class Directive:
    """`#agent text`: a direct line to a named sub-agent; the caller checks the name."""

    agent: str
    text: str


@dataclass
class Understanding:
    tasks: list[Task]  # the dependency-ordered chain
    entities: Entities  # merged over the whole message
    language: Language
    directive: Directive | None
    tier: Tier
    trace: dict[str, Any] = field(default_factory=dict)

    @property
    def intents(self) -> list[str]:
        return [task.intent for task in self.tasks]

    @property
    def agents(self) -> list[str]:
        return [task.agent for task in self.tasks]
