"""Act only when sure (issue 24.4, 24.5): a doubtful write never runs.

A step that would write is *doubtful* when
- its text is a question ("¿qué vehículos tenemos libres mañana?" read as assign_vehicle) with
  no request verb in it ("¿quién está más cerca? mandalo ya" asks to act): a question never
  writes, whatever the classifier's confidence (an emergency is never held back);
- its confidence is below its agent's threshold (`Agent.min_confidence`);
- its text states a fact and the confidence is below `STATEMENT_FLOOR` ("mmm fijate lo del
  otro día con el tema ese del equipo" read as bulk_reschedule at 0.39): a statement may ask
  for a write (a technician off sick, a complaint) but only a clear one;
- it acts on a job and nothing says which: no job, customer, technician, day or address in
  the message and nobody under discussion (then only a quiet reading replaces it; without one
  its handler asks for the job, in its own words).
The delegate node (orchestration/delegate.py) then runs the best reading that writes nothing and
clears its own agent's gate, if there is one; otherwise the step asks ONE short question with
the top two or three readings, as a clarification (orchestration/clarify.py, slot "reading:…"): the
answer — "el segundo", "1", or the reading's words — resumes the chosen reading. A doubtful
write never yields, so it never hands the turn to a person through a ticket either.

An `unknown` reading with little confidence and a domain reading close behind ("necesito algo
para mañana") asks the same question instead of listing what the copilot does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.utils import translation
from django.utils.translation import gettext

from agents.base import Clarification, Outcome, Step
from agents.models import Agent
from copilot.orchestration import clarify
from copilot.orchestration.replies import intent_phrase
from nlu.acts import ActReading, imperative, read_act, tells_the_past, wants
from nlu.values import NEVER_ACTS, IntentSpec, IntentSpecs, with_role

# Measured on the golden set (bench/write_gate.py): 0.5 held back "Mike's got the flu, he's out
# the rest of the week" (0.42); 0.4 still holds "mmm fijate lo del otro día…" (0.39).
STATEMENT_FLOOR = 0.4
QUESTION_FLOOR = 0.5  # the act's own probability: below it the text is not read as a question
# A write whose registry examples tell a fact less often than this is not run from a statement
# the act model gives a request less than TOLD_REQUEST_BELOW (`only_told`): 0.5, the statement
# read before a request (0.1 let "Le asigné la camioneta … hace un rato, solo te aviso" through
# at 0.39; bench/write_gate.py's coverage and wrong writes were the same at both).
TOLD_SHARE = 0.25
TOLD_REQUEST_BELOW = 0.5
# Readings worth offering: a candidate this far below the top one is not what was meant.
OFFER_FLOOR = 0.05
OFFERED = 3
# `unknown` below this, with a domain reading at OFFER_FLOOR or more, asks instead.
VAGUE_BELOW = 0.5
# A question's best reading that writes nothing runs from this score, even below its agent's
# gate ("¿qué turnos hay el jueves para un service de aire…?" read as book_job 0.72,
# check_availability 0.18): nothing it does can write, and asking back costs the operator a turn.
QUESTION_READING_FLOOR = 0.1


def doubt(
    agent: Agent,
    step: Step,
    subject: dict[str, Any],
    *,
    spec: IntentSpec | None = None,
    lifted: bool = False,
) -> str:
    """Why a write step is doubtful ("question", "confidence", "statement", "entities"), or "".
    A step `lifted` to its gate because it continues the job under discussion ("pasalo al
    viernes", orchestration/nodes.py) is judged by its act only: the subject is what it acts on.
    `spec` is the step's intent as the registry says (whether it writes on a job)."""
    if never_held(spec):
        return ""
    act = read_act(step.text)
    if act.act == "question" and act.confidence >= QUESTION_FLOOR and not asks_to_act(step.text):
        return "question"
    if lifted:
        return ""
    if only_told(act, step.text, spec):
        return "statement"
    if step.confidence < agent.min_confidence:
        return "confidence"
    if act.act == "statement" and step.confidence < STATEMENT_FLOOR:
        return "statement"
    if on_a_job(spec) and not _names_a_job(step, subject):
        return "entities"
    return ""


def doubt_model(step: Step, message: str, support: float, *, spec: IntentSpec | None = None) -> str:
    """Why a write the orchestrator model asked for is doubtful, or "": the operator's message
    is a question, or a statement the embedded reading hardly supports (`support`, its score
    for that intent) — in hybrid the model reads exactly the messages the router is unsure of."""
    if never_held(spec):
        return ""
    act = read_act(message)
    if act.act == "question" and act.confidence >= QUESTION_FLOOR and not asks_to_act(message):
        return "question"
    if act.act == "statement" and support < STATEMENT_FLOOR:
        return "statement"
    return ""


def only_told(act: ActReading, text: str, spec: IntentSpec | None) -> bool:
    """A report of what happened ("gracias, la factura ya la recibí", "llegó la factura de
    Edesur": a verb in the past, the act model sure it is a statement, no request verb and
    nobody wanting anything in it) read as a write its registry examples almost never tell
    (`IntentSpec.told` below TOLD_SHARE: an invoice is asked for, an absence or a grievance is
    told). The act model alone takes typed-fast requests for statements ("give ignacio the
    truck", "vengan"); the past tense is what a report has and a request has not."""
    return (
        spec is not None
        and spec.told < TOLD_SHARE
        and act.act == "statement"
        and act.scores.get("request", 0.0) < TOLD_REQUEST_BELOW
        and tells_the_past(text)
        and not asks_to_act(text)
        and not wants(text)
    )


def never_held(spec: IntentSpec | None) -> bool:
    """A danger is never held back: an intent that opens the chain (the registry's `first`, an
    emergency) runs its handler, the safety path (and the signals force it anyway)."""
    return spec is not None and spec.first


def on_a_job(spec: IntentSpec | None) -> bool:
    """A write on one job (the registry's subject "job"); a cue (a complaint's words) is not."""
    return spec is not None and spec.writes and spec.subject == "job" and not spec.cue


def _names_a_job(step: Step, subject: dict[str, Any]) -> bool:
    found = step.entities
    named = found.job_id or found.customer or found.technician or found.date or found.address
    return bool(named or subject.get("job_id") or subject.get("customer_id"))


def asks_to_act(text: str) -> bool:
    """A request verb inside a question ("¿quién está más cerca? mandalo ya"): it asks to act."""
    return imperative(text)


def vague(step: Step, specs: IntentSpecs) -> bool:
    """An out-of-scope reading that is really a vague domain request ("necesito algo para…")."""
    if step.intent not in with_role(specs, "out_of_scope") or step.confidence >= VAGUE_BELOW:
        return False
    never = with_role(specs, *NEVER_ACTS)
    return any(i not in never and s >= OFFER_FLOOR for i, s in step.candidates)


def quiet_reading(
    step: Step,
    intent_agents: dict[str, str],
    agents: dict[str, Agent],
    writes: Callable[[str], bool],
    *,
    never: frozenset[str],
    question: bool = False,
) -> Step | None:
    """The best candidate that writes nothing, acts (not one of the `never` intents: courtesy,
    out of scope) and clears its own agent's gate (for a `question`, the best one from
    QUESTION_READING_FLOOR)."""
    for intent, score in step.candidates:
        agent = agents.get(intent_agents.get(intent, ""))
        if agent is None or writes(intent) or intent in never:
            continue
        floor = (
            min(agent.min_confidence, QUESTION_READING_FLOOR) if question else agent.min_confidence
        )
        if score >= floor:
            # Chosen by the act, it runs as sure as its gate asks (as a resumed choice does).
            return Step(
                index=step.index, intent=intent, agent=agent.name,
                confidence=max(score, agent.min_confidence),
                text=step.text, entities=step.entities, candidates=[], rerouted_from=step.agent,
            )  # fmt: skip
    return None


def offered(
    step: Step, intent_agents: dict[str, str], agents: dict[str, Agent], never: frozenset[str]
) -> list[str]:
    """The readings the question offers: the step's own, then the next candidates of enabled
    agents (none that never acts; a third only when not far behind), at most `OFFERED`."""
    ranked = [(step.intent, step.confidence), *step.candidates]
    top = max(score for _, score in ranked)
    readings: list[str] = []
    for intent, score in ranked:
        if intent in readings or intent in never:
            continue
        if intent_agents.get(intent) not in agents:
            continue
        if len(readings) >= 2 and score < top * OFFER_FLOOR:
            continue  # two readings are always offered when there are two; a third must count
        readings.append(intent)
    return readings[:OFFERED]


def ask(readings: list[str], language: str) -> Outcome:
    """One short question that lists the readings (numbered, so "el segundo" picks one)."""
    with translation.override("en" if language == "en" else "es-ar"):
        opening = gettext(
            "I'm not sure what you need, so I haven't done anything yet. Which of these?"
        )
    lines = [f"{n}. {intent_phrase(intent, language)}" for n, intent in enumerate(readings, 1)]
    question = "\n".join([opening, *lines])
    return Outcome(
        text=question, success=True, clarify=Clarification(question, clarify.reading_slot(readings))
    )
