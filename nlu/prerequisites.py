"""Prerequisites stated as facts (TAXONOMY.md's chain order, O2).

An operator often states what a request builds on instead of asking for it: "mové los trabajos
de Diego al jueves, está enfermo", "agendale una visita a Rosa Díaz, es clienta nueva", "he is off
sick on Wednesday". The fact is a step of its own — recording the absence, registering the
customer — that must run before the request that depends on it. `add_stated` adds that step when
a task of the chain depends on it, the message states the fact, and the chain does not already
hold it; a message that states nothing gets nothing added.

Stdlib only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from nlu.normalize import fold
from nlu.values import Entities, Task

STATED_CONFIDENCE = 0.9  # a fact the message states in so many words


@dataclass(frozen=True)
class Fact:
    prerequisite: str  # the intent whose step records it
    for_intents: frozenset[str]  # requests that build on it
    pattern: re.Pattern[str]  # matched on folded text


_ABSENT = re.compile(
    r"\b(?:"
    # Spanish: "está enfermo", "se enfermó", "anda engripado", "tiene fiebre", "no viene",
    # "faltó", "está de licencia", "se accidentó", "se lesionó"
    r"(?:esta|anda|quedo|se puso|cayo|amanecio|sigue)\s+(?:muy\s+)?(?:enferm|engripad|"
    r"con fiebre|con gripe|con covid|descompuest|internad|de licencia|de reposo)\w*|"
    r"se\s+(?:enfermo|engripo|descompuso|accidento|lesiono|quebro|siente mal)|"
    r"(?:tiene|con)\s+(?:fiebre|gripe|covid|angina|licencia|carpeta medica|parte medico)|"
    r"no\s+(?:viene|vino|va a venir|puede venir|puede trabajar|trabaja|se presenta|se presento)|"
    r"(?:falta|falto|faltara)\s+(?:hoy|manana|el|toda|esta)|"
    r"(?:esta|queda)\s+(?:ausente|de baja|fuera de servicio)|"
    # English: "is off sick", "called in sick", "is out sick", "has the flu", "won't come in"
    r"(?:is|he's|she's|they're|got|went|called in|calling in|phoned in|off|out)\s+"
    r"(?:off\s+|out\s+)?(?:sick|ill|unwell)|"
    r"(?:has|got|caught)\s+(?:the\s+|a\s+)?(?:flu|covid|fever|cold)|"
    r"(?:won't|will not|can't|cannot|isn't going to)\s+(?:come|make it|be in|work)|"
    r"(?:is|will be)\s+(?:absent|on sick leave|on leave|off work)|"
    r"(?:sick|medical)\s+leave|day off sick"
    r")\b"
)
_NEW_CUSTOMER = re.compile(
    r"\b(?:"
    r"(?:es|son)\s+(?:un|una|unos|unas)?\s*client[ea]s?\s+nuev[oa]s?|"
    r"client[ea]s?\s+nuev[oa]s?|nuev[oa]s?\s+client[ea]s?|"
    r"(?:todavia|aun)\s+no\s+(?:es|son|esta|estan)\s+(?:client|registrad|cargad|en el sistema)|"
    r"no\s+(?:esta|estan|lo tenemos|la tenemos|figura|existe)\s+(?:registrad|cargad|en el sistema|"
    r"dad[oa] de alta)\w*|"
    r"nunca\s+(?:nos\s+)?(?:llamo|contrato|trabajamos con)|"
    r"(?:is|are)\s+(?:a\s+)?new\s+(?:customer|client)s?|new\s+(?:customer|client)|"
    r"first[- ]time\s+(?:customer|client)|"
    r"(?:isn't|is not|aren't|are not|not)\s+(?:yet\s+)?(?:registered|in the system|on file|"
    r"a customer)"
    r")\b"
)
FACTS = (
    Fact(
        "technician_sick",
        frozenset({"bulk_reschedule", "dispatch"}),
        _ABSENT,
    ),
    Fact(
        "create_customer",
        frozenset({"book_job", "generate_quote"}),
        _NEW_CUSTOMER,
    ),
)
_CLAUSE = re.compile(r"[^,;.!?\n]+")


def stated_clause(text: str, pattern: re.Pattern[str]) -> str | None:
    """The clause of `text` (original spelling) that states the fact, or None."""
    for match in _CLAUSE.finditer(text):
        if pattern.search(fold(match.group())):
            return match.group().strip()
    return None


def add_stated(
    tasks: Sequence[Task], text: str, agent_for: dict[str, str] | None = None
) -> tuple[list[Task], list[str]]:
    """The chain with each stated prerequisite a task of it depends on; (tasks, added intents)."""
    present = {task.intent for task in tasks}
    added: list[Task] = []
    for fact in FACTS:
        if fact.prerequisite in present or not (present & fact.for_intents):
            continue
        clause = stated_clause(text, fact.pattern)
        if clause is None:
            continue
        agent = (agent_for or {}).get(fact.prerequisite, "")
        candidates = [(fact.prerequisite, STATED_CONFIDENCE)]
        added.append(
            Task(fact.prerequisite, agent, STATED_CONFIDENCE, clause, Entities(), candidates)
        )
        present.add(fact.prerequisite)
    return [*added, *tasks], [task.intent for task in added]
