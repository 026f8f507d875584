"""What the registry says about a step before any handler or model runs it (issue 24).

- An intent nobody wrote a handler for (an admin added it with examples) is understood, routed
  and ordered like any other, and answers "I can't do that yet": it never writes.
- A write whose intent requires entities (`AgentIntent.requires`) asks for a missing one first.
- A customer writing on WhatsApp may only use the intents the registry opens to customers.

The words are gettext strings in the message's language (es-AR voseo, English).
"""

from __future__ import annotations

from django.utils import translation
from django.utils.functional import Promise
from django.utils.translation import gettext, gettext_lazy

from agents.base import CUSTOMER_ID, JOB_ID, Clarification, Outcome, Runner, Step
from agents.customer_scope import NOT_FOR_CUSTOMERS
from agents.defaults import intent_phrase
from agents.phrasing import unable
from agents.selectors import specs_of_agents
from nlu.values import Entities, IntentSpec

# How a question names each entity a write may require ("decime qué cliente").
_ASKED: dict[str, Promise] = {
    "customer": gettext_lazy("which customer"),
    "technician": gettext_lazy("which technician"),
    "date": gettext_lazy("which day"),
    "time": gettext_lazy("what time"),
    "cuit": gettext_lazy("the CUIT"),
    "amount": gettext_lazy("the amount"),
    "service": gettext_lazy("which service"),
    "job_id": gettext_lazy("which job"),
    "quote_number": gettext_lazy("which quote"),
    "invoice_number": gettext_lazy("which invoice"),
    "ticket_id": gettext_lazy("which ticket"),
    "address": gettext_lazy("the address"),
}
# The clarification slot (copilot/orchestration/clarify.py) a missing entity is asked as.
_SLOTS = {"job_id": "job"}


def cannot_yet(language: str) -> str:
    with translation.override(language):
        return gettext("I can't do that yet.")


def check(step: Step, runner: Runner) -> Outcome | None:
    """The step's answer when the registry stops it before it runs; None when it may run."""
    spec = specs_of_agents([runner.agent]).get(step.intent)
    if spec is None:
        return None
    if runner.ctx.customer_id is not None and not spec.customers:
        # Worded like the tools' refusal: the customer's reply says the office does that.
        return Outcome(
            text=f"{step.intent} {NOT_FOR_CUSTOMERS}", success=False,
            error=f"{step.intent} {NOT_FOR_CUSTOMERS}",
        )  # fmt: skip
    missing = _missing(spec, step.entities, runner)
    if missing is None:
        return None
    return _ask_for(missing, spec, runner)


def _missing(spec: IntentSpec, entities: Entities, runner: Runner) -> str | None:
    if not spec.writes:
        return None
    for name in spec.requires:
        if getattr(entities, name, None) not in (None, ""):
            continue
        if name == "customer" and (runner.ctx.customer_id or runner.state.get(CUSTOMER_ID)):
            continue  # the customer writing, or the one under discussion
        if name == "job_id" and runner.state.get(JOB_ID):
            continue
        return name
    return None


def _ask_for(entity: str, spec: IntentSpec, runner: Runner) -> Outcome:
    slot = _SLOTS.get(entity, entity)
    error = f"missing {entity}"
    if runner.best_effort:  # the conversation's question limit: say it, do not ask again
        return Outcome(text=unable(runner, slot), success=False, error=error)
    with translation.override(runner.language):
        text = gettext("To %(action)s, tell me %(detail)s.") % {
            "action": intent_phrase(spec.name, runner.language, {spec.name: spec}),
            "detail": str(_ASKED.get(entity, entity)),
        }
    return Outcome(
        text=text, success=False, error=error, clarify=Clarification(question=text, slot=slot)
    )
