"""Which customer or job a step is about, without a tool call.

In order: the one the message names, the one an earlier step of this turn produced (a customer
just registered, a job just booked), or the one under discussion in the conversation's state.
A named customer wins over the remembered one unless they are the same person ("Juan" after
"registrá a Juan Pérez"), so an earlier step's id is reused instead of a name that may now be
ambiguous with a namesake.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from agents.base import Mutation, Runner, Step
from agents.payloads import JobRow
from agents.phrasing import job_label
from common.text import fold

Source = Literal["named", "earlier", "discussed"]


@dataclass(frozen=True)
class CustomerRef:
    id: int | None
    name: str
    source: Source

    def args(self) -> dict[str, Any]:
        """The tool arguments that select this customer."""
        return {"customer_id": self.id} if self.id is not None else {"customer": self.name}


def same_person(one: str, other: str) -> bool:
    """Whether two spellings plausibly name the same customer: every word of the shorter one
    starts a word of the longer one ("Juan" / "Juan Pérez", "perez" / "Juan Pérez")."""
    a, b = fold(one).split(), fold(other).split()
    if not a or not b:
        return False
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    return all(any(word.startswith(part.rstrip(".")) for word in long_) for part in short)


def customer_ref(step: Step, runner: Runner) -> CustomerRef | None:
    named = (step.entities.customer or "").strip()
    created = runner.earlier("customer")
    if created is not None and (not named or same_person(named, created.label)):
        return CustomerRef(created.id, created.label, "earlier")
    booked = runner.earlier("job")
    if booked is not None and isinstance(booked.data.get("customer_id"), int):
        name = str(booked.data.get("customer") or "")
        if not named or same_person(named, name):
            return CustomerRef(booked.data["customer_id"], name, "earlier")
    if named:
        return CustomerRef(None, named, "named")
    state = runner.state
    if isinstance(state.get("customer_id"), int):
        return CustomerRef(
            state["customer_id"], str(state.get("customer_label") or ""), "discussed"
        )
    return None


def job_ref(step: Step, runner: Runner) -> int | None:
    """The job the message names by its number; else the job this turn produced or the one
    under discussion, when it fits a named customer."""
    if step.entities.job_id is not None:
        return step.entities.job_id
    named = (step.entities.customer or "").strip()
    booked = runner.earlier("job")
    if booked is not None:
        owner = str(booked.data.get("customer") or "")
        if not named or not owner or same_person(named, owner):
            return booked.id
    state = runner.state
    job_id = state.get("job_id")
    if not isinstance(job_id, int):
        return None
    owner = str(state.get("customer_label") or "")
    if named and owner and not same_person(named, owner):
        return None
    return job_id


def job_mutation(job: JobRow | dict[str, Any]) -> Mutation:
    """The context mutation a step emits for the job it booked or acted on (a typed row, or a
    job's JSON); its data is JSON, as the conversation's state keeps it."""
    data = job.as_json() if isinstance(job, JobRow) else job
    return Mutation(
        kind="job",
        id=int(data["id"]),
        label=job_label(job),
        data={
            key: data.get(key)
            for key in ("customer_id", "customer", "service", "start", "technician", "status")
        },
    )
