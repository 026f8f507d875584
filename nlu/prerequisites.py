"""Prerequisites stated as facts (TAXONOMY.md's chain order, O2).

An operator often states what a request builds on instead of asking for it: "mové los trabajos
de Diego al jueves, está enfermo", "agendale una visita a Rosa Díaz, es clienta nueva", "he is off
sick on Wednesday". The fact is a step of its own — recording the absence, registering the
customer — that must run before the request that depends on it. `add_stated` adds that step when
a task of the chain depends on it, the message states the fact, and the chain does not already
hold it; a message that states nothing gets nothing added. Which intent records which fact and
who builds on it is the registry's (`IntentSpec.stated_as` / `stated_for`); the wording of each
fact is here.

Stdlib only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from common.text import fold
from nlu.values import Entities, IntentSpecs, Task

STATED_CONFIDENCE = 0.9  # a fact the message states in so many words


@dataclass(frozen=True)
class Fact:
    prerequisite: str  # the intent whose step records it
    for_intents: frozenset[str]  # requests that build on it
    pattern: re.Pattern[str]  # matched on folded text
    unless: re.Pattern[str] | None = None  # a clause that also matches this is about else


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
    r"a customer)|"
    # "no lo dimos de alta", "todavía no la cargamos"; the person being the subject left out:
    # a clause that opens "es nueva" / "son nuevos" ("…, es nueva, cargala con el cel …").
    r"no\s+(?:lo|la|los|las)\s+(?:dimos|damos|hemos\s+dado|di|tenemos)\s+(?:de\s+alta|cargad)|"
    r"no\s+(?:lo|la|los|las)\s+(?:cargamos|registramos|tenemos\s+en\s+el\s+sistema)|"
    r"\b(?:i'?m|i\s+am|we'?re|we\s+are)\s+new(?:\s+here)?\b|"
    # The customer's own word on WhatsApp: "soy nueva", "es la primera vez que les escribo",
    # "first time contacting you".
    r"(?:soy|somos)\s+nuev[oa]s?(?=\s*(?:$|[,.;!?]|aca|aqui|como|client))|"
    r"primera\s+vez\s+que\s+(?:les|los|las|te|le)\s+(?:escrib|llam|contrat|consult|pid)\w*|"
    r"first\s+time\s+(?:contacting|calling|writing\s+to|using|booking\s+with)\s+(?:you|your)"
    r")\b|^\s*(?:y\s+)?(?:es|son)\s+nuev[oa]s?(?:\s+(?:aca|aqui))?\s*$"
)
# A job that was never entered ("el trabajo nunca se cargó", "que todavía no está cargada",
# "the Walsh job isn't in the system yet") must be booked before it is invoiced or given a van.
_NOT_ENTERED = re.compile(
    r"\b(?:"
    r"(?:nunca|no|todavia\s+no|aun\s+no)\s+(?:se\s+)?(?:cargo|cargamos|agendo|agendamos|registro|"
    r"registramos|anoto|anotamos)\b|"
    r"no\s+(?:esta|estaba|estan|figura|aparece)\s+(?:todavia\s+|aun\s+)?(?:cargad|agendad|"
    r"registrad|anotad|en\s+el\s+sistema|en\s+la\s+agenda)|"
    r"(?:was|has\s+been|were|got)\s+never\s+(?:entered|booked|logged|scheduled|put\s+in)|"
    r"never\s+(?:got\s+)?(?:entered|booked|logged)|"
    r"(?:isn't|is\s+not|wasn't|was\s+not|aren't|are\s+not)\s+(?:yet\s+)?(?:in\s+the\s+system|"
    r"entered|booked|logged|on\s+the\s+schedule)"
    r")"
)
# What a job is called: a clause about one is not about a new customer.
_JOB = re.compile(
    r"\b(?:trabajo|trabajos|laburo|laburos|visita|visitas|turno|turnos|service|servicio|orden|"
    r"job|jobs|visit|appointment|work\s+order)\b"
)
# The facts a message may state, by the name an intent's `stated_as` gives (the registry says
# which intent records each fact and which requests build on it): (pattern, unless).
STATEMENTS: dict[str, tuple[re.Pattern[str], re.Pattern[str] | None]] = {
    "absent": (_ABSENT, None),
    "not_entered": (_NOT_ENTERED, None),
    "new_customer": (_NEW_CUSTOMER, _JOB),
}


def facts_of(specs: IntentSpecs) -> tuple[Fact, ...]:
    """The stated facts the registry's intents declare, in the registry's order."""
    facts = []
    for spec in specs.values():
        statement = STATEMENTS.get(spec.stated_as)
        if statement is not None and spec.stated_for:
            pattern, unless = statement
            facts.append(Fact(spec.name, frozenset(spec.stated_for), pattern, unless))
    return tuple(facts)


_CLAUSE = re.compile(r"[^,;.!?\n]+")
_PARTS = re.compile(r"[^,;:.!?\n]+")


def stated_clause(
    text: str, pattern: re.Pattern[str], unless: re.Pattern[str] | None = None
) -> str | None:
    """The clause of `text` (original spelling) that states the fact, or None."""
    for match in _CLAUSE.finditer(text):
        folded = fold(match.group())
        if pattern.search(folded) and not (unless and unless.search(folded)):
            return match.group().strip()
    return None


def settle_facts(
    tasks: Sequence[Task], is_request: Callable[[str], bool], specs: IntentSpecs
) -> list[Task]:
    """The parts of the chain that only state a fact, read as that fact.

    "Sosa se lesionó la rodilla, mandá a otro" or "la señora Lamas nunca nos llamó, quiere un
    service" hold a part that asks nothing: the classifier reads it by its words (an
    emergency, the customer's file). When it states a fact a request of the chain builds on,
    it is the fact's step — or nothing, when another part already asks for that step ("ese
    laburo no está cargado; cargalo para mañana"). While a customer is being registered a part
    that only names them ("se llama Horacio Benegas") is part of the registration, not a search.
    """
    intents = [task.intent for task in tasks]
    facts = facts_of(specs)
    settled: list[Task] = []
    for k, task in enumerate(tasks):
        others = set(intents[:k] + intents[k + 1 :])
        if any(is_request(clause.strip()) for clause in _PARTS.findall(task.text)):
            settled.append(task)
            continue
        fact = _stated_by(task.text, others, facts)
        if fact is not None and fact.prerequisite in others:
            continue
        if fact is not None:
            candidates = [(fact.prerequisite, STATED_CONFIDENCE)]
            task = Task(fact.prerequisite, task.agent, STATED_CONFIDENCE, task.text,
                        task.entities, candidates)  # fmt: skip
        elif _found_while_created(task.intent, others, specs) and not asked(task.text):
            continue
        settled.append(task)
    return settled


def asked(part: str, request: str = "") -> bool:
    """The part is a question of its own ("¿qué técnicos tenemos libres el 15/12? y
    programame…"): it holds a question mark, or the message puts one right after it ("qué onda
    el clima pal finde? | y agendame…": the cut took the mark)."""
    if "?" in part or "¿" in part:
        return True
    at = request.find(part) if part else -1
    return at >= 0 and request[at + len(part) :].lstrip()[:1] == "?"


def _found_while_created(intent: str, others: set[str], specs: IntentSpecs) -> bool:
    """A part read as the question form of a creation also in the chain ("se llama Horacio
    Benegas" beside registering him) is part of that creation."""
    return any(specs[other].found_as == intent for other in others if other in specs)


def _stated_by(text: str, others: set[str], facts: Sequence[Fact]) -> Fact | None:
    folded = fold(text)
    for fact in facts:
        if not (others & fact.for_intents) or not fact.pattern.search(folded):
            continue
        if fact.unless is None or not fact.unless.search(folded):
            return fact
    return None


def add_stated(
    tasks: Sequence[Task], text: str, specs: IntentSpecs
) -> tuple[list[Task], list[str]]:
    """The chain with each stated prerequisite a task of it depends on; (tasks, added intents)."""
    present = {task.intent for task in tasks}
    added: list[Task] = []
    used: set[str] = set()
    for fact in facts_of(specs):
        if fact.prerequisite in present or not (present & fact.for_intents):
            continue
        clause = stated_clause(text, fact.pattern, fact.unless)
        if clause is None or clause in used:
            continue  # one clause states one fact ("que todavía no está cargada": the job)
        used.add(clause)
        agent = specs[fact.prerequisite].agent
        candidates = [(fact.prerequisite, STATED_CONFIDENCE)]
        added.append(
            Task(fact.prerequisite, agent, STATED_CONFIDENCE, clause, Entities(), candidates)
        )
        present.add(fact.prerequisite)
    return [*added, *tasks], [task.intent for task in added]


def read_as_stated_new(
    tasks: Sequence[Task], text: str, specs: IntentSpecs
) -> tuple[list[Task], list[str]]:
    """A request whose registry `new_as` records a fact the message states reads as that
    intent: "agendame a Carla Mendoza …, es nueva, cargala con el cel …" asks nobody's record
    to be updated; her details are part of registering her. When the chain registers her
    already, that step takes them. Returns (tasks, "from → to" for each one read anew)."""
    present = {task.intent for task in tasks}
    kept: list[Task] = []
    renamed: list[str] = []
    for task in tasks:
        spec = specs.get(task.intent)
        target = specs.get(spec.new_as) if spec is not None and spec.new_as else None
        statement = STATEMENTS.get(target.stated_as) if target is not None else None
        if target is None or statement is None or stated_clause(text, *statement) is None:
            kept.append(task)
            continue
        renamed.append(f"{task.intent} → {target.name}")
        if target.name in present:
            _fold_into([*kept, *tasks], target.name, task)
            continue
        present.add(target.name)
        share = dict(task.candidates).get(target.name, 0.0)  # updating is not what was meant
        kept.append(
            Task(target.name, target.agent, round(min(1.0, task.confidence + share), 4),
                 task.text, task.entities, task.candidates)
        )  # fmt: skip
    return kept, renamed


def _fold_into(tasks: Sequence[Task], intent: str, task: Task) -> None:
    """`task`'s words and entities join the chain's step of `intent`: the details of "es nueva,
    cargala con el cel 11 6789 0011" belong to registering her."""
    step = next(other for other in tasks if other.intent == intent)
    if task.text not in step.text:
        step.text = task.text if step.text in task.text else f"{step.text}, {task.text}"
    step.entities = step.entities.merged_with(task.entities)
