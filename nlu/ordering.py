"""From classified segments to the executed chain (TAXONOMY.md labelling rules).

- Small talk inside a request is courtesy, not an intent: greeting/farewell only stand alone.
- frustration_detected only when nothing actionable is asked (the anger is a signal).
- emergency covers the danger *and* sending someone (dispatch is absorbed) and goes first.
- Duplicates collapse unless they clearly target different entities.
- Dependencies first (an entity exists before it is used), otherwise the order of the text.
- A request whose verb asks to find (nlu/finding.py) reads as its intent's question form.

Which intent runs before which, goes first, absorbs another or has a question form is the
registry's (`IntentSpec`, passed in as `specs`); without specs the text's order is kept.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Sequence
from dataclasses import replace

from common.text import fold
from nlu.acts import read_act
from nlu.finding import asks_to_find
from nlu.reference import refers_to_existing
from nlu.values import IntentSpecs, Task, with_role

NO_SPECS: IntentSpecs = {}


def _distinct_targets(a: Task, b: Task) -> bool:
    """Two tasks with one intent are two requests when they name different customers/dates."""
    for key in ("customer", "date"):
        left, right = getattr(a.entities, key), getattr(b.entities, key)
        if left and right and left != right:
            return True
    return False


def _collapse(tasks: Sequence[Task]) -> list[Task]:
    kept: list[Task] = []
    for task in tasks:
        same = [k for k in kept if k.intent == task.intent]
        if same and not any(_distinct_targets(k, task) for k in same):
            continue
        kept.append(task)
    return kept


# Anger about the work done (the technician, the equipment, a visit, a bill) is a complaint;
# anger about the conversation itself ("nadie contesta", "this thing keeps failing") is frustration.
_ABOUT_THE_SERVICE = re.compile(
    r"\b(?:tecnic\w*|tech|technician|guy|plomero|gasista|electricista|visit\w*|vinieron|vino|"
    r"came|showed\s+up|instal\w*|arregl\w*|repar\w*|repair\w*|fix\w*|trabajo|job|cobr\w*|"
    r"charg\w*|factur\w*|bill\w*|split|aire|ac|calefon|caldera|termotanque|estufa|boiler|heater|"
    r"equipo|unit|ruido|noise|gotea\w*|leak\w*|perdida|roto|rompi\w*|broke\w*|mancha\w*|"
    r"sucio|mess|dirty|tarde|late|plata|money|refund|devuelvan)\b"
)


# Moving *the jobs* (plural) of someone or of a day is a bulk move, with or without "todos":
# "pasá los trabajos de Leandro al jueves", "move Kevin's jobs to Friday"; so is a move whose
# verb carries a plural object ("…todos sus trabajos del jueves | pasalos al lunes", "move
# them all to Monday"): the jobs were named before the verb, in the part before.
_MANY_JOBS = re.compile(
    r"\b(?:(?:los|sus)\s+(?:trabajos|turnos|servicios|services)|(?:las|sus)\s+visitas|"
    r"(?:the|his|her|their|\w+'s)\s+(?:jobs|appointments|visits|bookings))\b"
    r"|^\W*(?:\w+\s+)?\w{3,}[aei](?:me|se)?l[ao]s\b|\b(?:move|push|shift)\s+them\b"
)


def _retarget(task: Task, today: datetime.date | None, specs: IntentSpecs) -> Task:
    """Relabel by the registry's word (the intent's spec) where the classifier's neighbour is
    the right one: its question form, its existing-record form, its many-records form, anger
    about the work, a later day."""
    spec = specs.get(task.intent)
    if spec is None:
        return task
    folded = fold(task.text)
    if spec.found_as and asks_to_find(task.text):
        return _relabel(task, spec.found_as)
    if spec.existing_as and refers_to_existing(task.text):  # "mandame la factura, la última"
        return _relabel(task, spec.existing_as)
    if spec.about_work_as and _ABOUT_THE_SERVICE.search(folded):
        return replace(task, intent=spec.about_work_as)  # anger about the work: a complaint
    many = spec.many_as
    if many and any(label == many for label, _p in task.candidates) and _MANY_JOBS.search(folded):
        return replace(task, intent=many)  # "pasá los trabajos de Leandro": a bulk move
    later = today is not None and task.entities.date is not None and task.entities.date > today
    if spec.later_as and later:
        return replace(task, intent=spec.later_as)  # sending someone on a later day: a booking
    return task


def _relabel(task: Task, intent: str) -> Task:
    """The task as `intent`, at least as confident as the classifier was of that intent."""
    return replace(
        task, intent=intent, confidence=max(task.confidence, dict(task.candidates).get(intent, 0))
    )


# Below this the classifier is unsure of a part (the segmenter's bar for a part without a verb).
CLEAR = 0.9


def _setting_of_a_grievance(
    tasks: Sequence[Task], opens_request: Callable[[str], bool], grievances: frozenset[str]
) -> list[Task]:
    """A part just before a grievance that neither opens like a request nor reads clearly as one
    is how the grievance starts ("Jorge Cabrera está furioso, ¡el técnico llegó tarde!"), not
    a request of its own."""
    kept: list[Task] = []
    for index, task in enumerate(tasks):
        following = tasks[index + 1] if index + 1 < len(tasks) else None
        setting = (
            following is not None
            and following.intent in grievances
            and task.intent not in grievances
            and task.confidence < CLEAR
            and not opens_request(task.text)
        )
        if not setting:
            kept.append(task)
    return kept


def _without(tasks: Sequence[Task], dropped: Callable[[list[Task], Task], bool]) -> list[Task]:
    """The tasks, in order, less those `dropped(kept so far, task)` says go."""
    kept: list[Task] = []
    for task in tasks:
        if not dropped(kept, task):
            kept.append(task)
    return kept


def _telling_of_a_grievance(
    tasks: Sequence[Task], opens_request: Callable[[str], bool], grievances: frozenset[str]
) -> list[Task]:
    """A part right after a grievance that does not open like a request and tells rather than
    asks (the act model's statement) is the grievance going on ("el técnico nunca vino!! lo
    esperé toda la mañana y nadie me avisó"), not a request of its own, however its words read."""
    return _without(tasks, lambda kept, task: (
        bool(kept) and kept[-1].intent in grievances and task.intent not in grievances
        and not opens_request(task.text) and _tells(task.text)
    ))  # fmt: skip


def _asides(
    tasks: Sequence[Task], opens_request: Callable[[str], bool], outside: frozenset[str]
) -> list[Task]:
    """A later part read as out of scope that asks nothing — it neither opens like a request
    nor has a question mark — is an aside beside the request before it ("…el jueves, hace un
    ruido feo cuando arranca", "quería cancelar la visita, lo terminó arreglando mi cuñado"):
    TAXONOMY.md keeps `unknown` in a chain only for an out-of-scope *ask* ("…y cuánto está el
    dólar?", "y pedime un café")."""
    return _without(tasks, lambda kept, task: (
        task.intent in outside and any(t.intent not in outside for t in kept)
        and "?" not in task.text and not opens_request(task.text)
    ))  # fmt: skip


# How sure the act model must be that a part tells (a statement) for it to continue a grievance.
TELLS = 0.8


def _tells(text: str) -> bool:
    reading = read_act(text)
    return reading.act == "statement" and reading.confidence >= TELLS


def apply_labelling_rules(
    tasks: Sequence[Task],
    today: datetime.date | None = None,
    opens_request: Callable[[str], bool] | None = None,
    specs: IntentSpecs = NO_SPECS,
) -> tuple[list[Task], list[str]]:
    """Drop what the rules say is not an intent here; returns (tasks, notes for the trace)."""
    notes: list[str] = []
    retargeted = [_retarget(t, today, specs) for t in tasks]
    if [t.intent for t in retargeted] != [t.intent for t in tasks]:
        notes.append("relabelled: " + ", ".join(t.intent for t in retargeted))
    tasks = retargeted
    if opens_request is not None:
        grievances = with_role(specs, "grievance", "frustration")
        outside = with_role(specs, "out_of_scope")
        rules = (
            ("setting of a grievance", _setting_of_a_grievance, grievances),
            ("told with a grievance", _telling_of_a_grievance, grievances),
            ("aside", _asides, outside),
        )
        for note, rule, roles in rules:
            framed = rule(tasks, opens_request, roles)
            if len(framed) != len(tasks):
                notes.append(f"{note}: " + ", ".join(t.intent for t in tasks if t not in framed))
            tasks = framed
    intents = {t.intent for t in tasks}
    # The registry's roles: courtesy goes when anything else is said, frustration when a request
    # is (anger beside a request is that request's tone; alone, a person hears it).
    courtesy, frustration = with_role(specs, "courtesy"), with_role(specs, "frustration")
    actionable = intents - courtesy - frustration - with_role(specs, "out_of_scope")
    kept = list(tasks)
    if intents - courtesy:
        kept = [t for t in kept if t.intent not in courtesy]
    if actionable:
        kept = [t for t in kept if t.intent not in frustration]
    absorbed = {name for i in intents if i in specs for name in specs[i].absorbs}
    if absorbed:  # emergency covers sending someone for it
        kept = [t for t in kept if t.intent not in absorbed]
    if len(kept) != len(tasks):
        notes.append("dropped: " + ", ".join(t.intent for t in tasks if t not in kept))
    collapsed = _collapse(kept)
    if len(collapsed) != len(kept):
        notes.append("collapsed duplicates")
    return collapsed, notes


def order_chain(tasks: Sequence[Task], specs: IntentSpecs = NO_SPECS) -> tuple[list[Task], bool]:
    """Dependency order, stable otherwise; returns (ordered, whether anything moved)."""
    remaining = list(tasks)
    ordered: list[Task] = []

    def after(intent: str) -> frozenset[str]:
        spec = specs.get(intent)
        return frozenset(spec.after) if spec is not None else frozenset()

    while remaining:
        present = {t.intent for t in remaining}
        ready = [t for t in remaining if not (after(t.intent) & (present - {t.intent}))]
        first = [t for t in ready if t.intent in specs and specs[t.intent].first]
        pick = (first or ready or remaining)[0]
        ordered.append(pick)
        remaining.remove(pick)
    return ordered, [t.intent for t in ordered] != [t.intent for t in tasks]
