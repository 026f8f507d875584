"""A step's or a tool call's error as a person reads it, in the reader's language (issue 28.1).

Tools and the turn store their errors as short English codes ("missing customer", "job 12 is
cancelled", "invoice_create is not available to customers"): stable strings that logs, tests and
the evaluation match. Screens show `in_words(code)` instead; a code this table does not know
(an exception's text, an HTTP failure) comes back as None and is shown as code.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from django.utils.translation import get_language, gettext
from django.utils.translation import gettext_lazy as _

from agents.customer_scope import NOT_FOR_CUSTOMERS
from agents.defaults import intent_phrase
from agents.registry import get_tool
from business.models import Job, choice_label

# Codes without parameters.
_FIXED = {
    "missing job": _("It needed to know which job."),
    "missing customer": _("It needed to know which customer."),
    "missing date": _("It needed a date."),
    "missing target date": _("It needed the new date."),
    "missing target": _("It needed to know what to change it to."),
    "missing service": _("It needed the service."),
    "missing selection": _("It needed one of the options to be chosen."),
    "missing query": _("It needed something to search for."),
    "missing name": _("It needed a name."),
    "missing field": _("It needed to know which detail to change."),
    "missing cuit": _("It needed a CUIT."),
    "missing technician": _("It needed a technician."),
    "no open job": _("There was no open job."),
    "possible duplicate": _("A similar customer is already on file."),
    "no quote": _("No quote was found."),
    "vehicle busy": _("The vehicle is busy at that time."),
    "several vehicles match": _("Several vehicles match."),
    "several jobs": _("Several jobs match."),
    "several jobs that day": _("There are several jobs that day."),
    "several customers": _("Several customers match."),
    "several customers on file": _("Several customers on file match."),
    "several customers at the address": _("There are several customers at that address."),
    "runner died mid-turn": _("The process answering stopped in the middle of the turn."),
    "quote rejected": _("The quote was rejected."),
    "quote of another customer": _("The quote is another customer's."),
    "quote already invoiced": _("The quote is already invoiced."),
    "nothing can move": _("Nothing could be moved."),
    "no technician free": _("No technician is free at that time."),
    "no price for the job's service": _("The job's service has no price."),
    "no jobs to move": _("There were no jobs to move."),
    "no job that day": _("There is no job that day."),
    "no free slots": _("There are no free slots."),
    "no done job": _("There is no finished job."),
    "left to a person (human mode)": _("Left to a person: the conversation is in human mode."),
    "impossible date": _("That date does not exist."),
    "empty price list": _("The price list is empty."),
    "day full": _("The day is full."),
    "customer not found": _("The customer was not found."),
    "ambiguous invoice number": _("That invoice number matches several invoices."),
    "address not on file": _("The address is not on file."),
    "the records changed since it was asked for": _("The records changed since it was asked for."),
}


def _action(code: str) -> str:
    """A tool by its label's first sentence, an intent by its phrase, anything else as it is."""
    try:
        return get_tool(code).headline.rstrip(".")
    except KeyError:
        return intent_phrase(code, (get_language() or "es")[:2])


def _job_status(status: str) -> str:
    return choice_label(Job.Status, status).lower()


# Codes with parameters: a pattern and how to say it.
_PATTERNS: list[tuple[re.Pattern[str], Callable[[re.Match[str]], str]]] = [
    (
        re.compile(rf"^(?P<what>\w+) {re.escape(NOT_FOR_CUSTOMERS)}$"),
        lambda m: (
            gettext("A customer cannot ask for this on WhatsApp: %(action)s.")
            % {"action": _action(m["what"])}
        ),
    ),
    (
        # A held call whose record went away before it ran ("gone: …", agents/base.py).
        re.compile(r"^gone: (?P<why>.+)$"),
        lambda m: in_words(m["why"]) or "",
    ),
    (
        re.compile(r"^job #?(?P<id>\d+) is (?P<status>\w+)(?:: nothing to \w+)?$"),
        lambda m: (
            gettext("Job #%(id)s is %(status)s.")
            % {"id": m["id"], "status": _job_status(m["status"])}
        ),
    ),
    (
        re.compile(r"^job (?P<id>\S+) not found$"),
        lambda m: gettext("Job #%(id)s was not found.") % {"id": m["id"]},
    ),
    (
        re.compile(r"^\w+ \S+ is not this customer's$"),
        lambda m: gettext("That record belongs to another customer."),
    ),
    (
        re.compile(r"^agent (?P<agent>\S+) is (?:not enabled|disabled)$"),
        lambda m: gettext("The agent %(agent)s is switched off.") % {"agent": m["agent"]},
    ),
    (
        re.compile(r"^tool (?P<tool>\w+) not enabled$"),
        lambda m: gettext("This agent may not use: %(action)s.") % {"action": _action(m["tool"])},
    ),
    (
        re.compile(r"^not done: no tool carried out (?P<intent>\w+)$"),
        lambda m: (
            gettext("Not done: no tool carried out %(action)s.") % {"action": _action(m["intent"])}
        ),
    ),
    (
        re.compile(r"^no handler for (?P<intent>\w+)$"),
        lambda m: (
            gettext("No agent knows how to %(action)s yet.") % {"action": _action(m["intent"])}
        ),
    ),
    (
        re.compile(r"^missing value for (?P<field>\w+)$"),
        lambda m: gettext("It needed the new value of %(field)s.") % {"field": m["field"]},
    ),
    (
        re.compile(r"^invalid cuit: (?P<problem>.+)$"),
        lambda m: gettext("The CUIT is not valid (%(problem)s).") % {"problem": m["problem"]},
    ),
    (
        re.compile(r"^model failed: (?P<kind>.+)$"),
        lambda m: gettext("The model failed (%(kind)s).") % {"kind": m["kind"]},
    ),
]


def in_words(code: str) -> str | None:
    """The error in the reader's language; None when a part of it is not a known code (the
    screen then shows the stored text as code). Several errors joined by "; " are said each."""
    parts = [part.strip() for part in str(code or "").split("; ") if part.strip()]
    said = [_one(part) for part in parts]
    if not said or any(words is None for words in said):
        return None
    return " ".join(words for words in said if words)


def _one(code: str) -> str | None:
    if (fixed := _FIXED.get(code)) is not None:
        return str(fixed)
    for pattern, say in _PATTERNS:
        if (match := pattern.match(code)) is not None:
            return say(match)
    return None
