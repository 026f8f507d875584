"""The words of the orchestrator itself: partial-success lines, hand-offs, choices, failures.

Sub-agents write their own replies; this module writes only what the orchestrator adds around
them. The reply to a message is written in that message's language, not the interface's: the
sentences are gettext strings (English msgids, es-AR voseo in the catalogue) rendered with
`common.wording.say` in the message's language.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _
from django.utils.translation import override, pgettext_lazy

from agents import defaults, errors
from common.wording import django_language, say
from nlu.style import to_usted
from nlu.values import IntentSpecs


def intent_phrase(intent: str, language: str, specs: IntentSpecs | None = None) -> str:
    """What the intent does in words, as the registry says it (`IntentSpec.phrase_es/_en`)."""
    return defaults.intent_phrase(intent, language, specs)


@dataclass(frozen=True)
class StepSummary:
    """What the composer needs to know about one step of the chain."""

    intent: str
    text: str
    success: bool
    yielded: bool
    ran: bool
    pending: bool
    plan_limited: bool = False
    clarifying: bool = False  # it asked the operator for a missing detail (O8)


def failure_line(step: StepSummary, language: str, specs: IntentSpecs | None = None) -> str:
    phrase = intent_phrase(step.intent, language, specs)
    if step.yielded:
        return say(
            language,
            _("I'm not sure how to %(phrase)s, so I didn't do it rather than guess."),
            phrase=phrase,
        )
    if step.plan_limited:
        return say(
            language,
            _("To %(phrase)s needed more steps than allowed; it is only partly done."),
            phrase=phrase,
        )
    return say(
        language,
        _("I couldn't %(phrase)s: something failed on our side and it was logged."),
        phrase=phrase,
    )


def not_done_line(step: StepSummary, language: str, specs: IntentSpecs | None = None) -> str:
    """After a model's own words on a write it did not carry out: plainly, it is not done."""
    phrase = intent_phrase(step.intent, language, specs)
    return say(
        language, pgettext_lazy("a write the model did not carry out", "Not done: %(phrase)s."),
        phrase=phrase,
    )  # fmt: skip


def _join(phrases: Sequence[str], language: str) -> str:
    if len(phrases) <= 1:
        return "".join(phrases)
    return say(
        language, _("%(items)s and %(last)s"), items=", ".join(phrases[:-1]), last=phrases[-1]
    )


def held_line(actions: Sequence[tuple[int, str]], language: str) -> str:
    """What this turn asked a manager to approve, each by its number and in plain words."""
    listed = "; ".join(f"#{number}: {summary}" for number, summary in actions)
    return say(
        language,
        _("I asked a manager to approve %(listed)s. I will tell you here when they decide."),
        listed=listed,
    )


def partial_success_line(
    steps: Sequence[StepSummary], language: str, specs: IntentSpecs | None = None
) -> str:
    """'Done / not done / waiting for approval' when the chain did not fully succeed; else ''."""
    done = [s for s in steps if s.ran and s.success and not s.pending]
    waiting = [s for s in steps if s.pending]
    not_done = [s for s in steps if not (s.ran and s.success) and not s.pending]
    if not waiting and not not_done:
        return ""
    if not done and not not_done:
        return ""  # everything waits: the held line already says what and for whom
    if len(steps) == 1 and not waiting:
        return ""  # the failure line already says it
    parts: list[str] = []
    if done:
        phrases = _join([intent_phrase(s.intent, language, specs) for s in done], language)
        parts.append(
            say(language, pgettext_lazy("steps of a turn", "Done: %(phrases)s."), phrases=phrases)
        )
    if waiting:
        phrases = _join([intent_phrase(s.intent, language, specs) for s in waiting], language)
        parts.append(
            say(
                language,
                pgettext_lazy("steps of a turn", "Waiting for a manager's approval: %(phrases)s."),
                phrases=phrases,
            )
        )
    if not_done:
        phrases = _join([intent_phrase(s.intent, language, specs) for s in not_done], language)
        parts.append(
            say(
                language,
                pgettext_lazy("steps of a turn", "Not done: %(phrases)s."),
                phrases=phrases,
            )
        )
    return " ".join(parts)


def handoff_line(ticket_id: int | None, language: str) -> str:
    if ticket_id:
        return say(
            language,
            _(
                "I'm handing this over to a person on the team (#%(ticket)s); they will reply "
                "shortly."
            ),
            ticket=ticket_id,
        )
    # Nobody was told (the escalation agent is off or cannot open tickets): say so.
    return say(
        language,
        _(
            "I couldn't work this out, and I couldn't open a ticket for the team either: please "
            "tell someone at the office directly."
        ),
    )


def frustration_preface(language: str) -> str:
    return say(language, _("I understand the frustration; let's sort it out now."))


def agent_choice(
    typed: str, options: Sequence[tuple[str, str]], language: str, *, ambiguous: bool
) -> str:
    """The reply to `#name` when the name is unknown or matches several agents: a choice."""
    listed = "\n".join(f"- #{name} — {label}" for name, label in options)
    if ambiguous:
        head = say(
            language, _("“#%(typed)s” matches more than one agent. Which one do you mean?"),
            typed=typed,
        )  # fmt: skip
    else:
        head = say(language, _("There is no agent “#%(typed)s”. Pick one of these:"), typed=typed)
    return f"{head}\n{listed}"


def obligation_line(labels: list[str], language: str) -> str:
    """T3: the turn had to consult these agents and did not."""
    names = ", ".join(labels)
    return say(
        language,
        _("Note: this request had to consult %(names)s and could not; check it before going on."),
        names=names,
    )


def direct_line_opened(label: str, name: str, language: str) -> str:
    return say(
        language,
        _(
            "Direct line to %(label)s open: what you write goes to %(label)s as is, and its answer "
            "reaches you unchanged. Write “#exit” to go back to the copilot (or “#%(name)s …” "
            "for a single request)."
        ),
        label=label,
        name=name,
    )


def direct_line_closed(label: str, language: str) -> str:
    if not label:
        return say(language, _("No direct line is open: you are already talking to the copilot."))
    return say(
        language, _("Direct line to %(label)s closed. You are back with the copilot."), label=label
    )


def empty_reply(language: str) -> str:
    return say(language, _("I didn't get that. Could you put it another way?"))


def turn_failed(language: str) -> str:
    return say(
        language,
        _(
            "Something failed on our side and I couldn't answer. Your message is saved; "
            "please try again in a moment."
        ),
    )


@dataclass(frozen=True)
class Decision:
    """A manager's decision on a held action, as the conversation tells it."""

    approval_id: int
    status: str  # the action's status now: executed, rejected, expired, stale, failed…
    summary: str  # what it was, in the request's language
    decided_by: str = ""
    reason: str = ""


def decision_line(decision: Decision, problem: str, language: str) -> str:
    """ "Roberto aprobó la acción #12 (Cancelar el trabajo #221 …): hecho." and the other ends."""
    who = decision.decided_by or say(language, _("A manager"))
    what = f"#{decision.approval_id} ({decision.summary})"
    reason = (
        " " + say(language, _("Reason: %(reason)s."), reason=decision.reason)
        if decision.reason
        else ""
    )
    status = decision.status
    if status == "executed":
        done = say(language, _("%(who)s approved action %(what)s: done."), who=who, what=what)
        return done + reason
    if status == "stale":
        return say(
            language,
            _(
                "%(who)s approved action %(what)s, but I did not run it: %(problem)s. "
                "Ask again if it is still needed."
            ),
            who=who,
            what=what,
            problem=problem,
        )
    if status == "failed":
        return say(
            language, _("%(who)s approved action %(what)s, but it failed: %(problem)s."),
            who=who, what=what, problem=problem,
        )  # fmt: skip
    if status == "rejected":
        rejected = _("%(who)s rejected action %(what)s: it was not done.")
        return say(language, rejected, who=who, what=what) + reason
    if status == "expired":
        return say(
            language, _("The time to approve action %(what)s ran out: it was not done."), what=what
        )
    return say(language, _("Action %(what)s is under way."), what=what)


def decision_note(
    *, status: str, approval_id: int, summary: str, decided_by: str, language: str
) -> str:
    """The note a decision leaves in the conversation that asked for the action."""
    who = decided_by or say(language, _("A manager"))
    if status == "approved":
        return say(language, _("%(who)s approved action #%(id)s: %(summary)s."),
                   who=who, id=approval_id, summary=summary)  # fmt: skip
    if status == "rejected":
        return say(language, _("%(who)s rejected action #%(id)s: %(summary)s."),
                   who=who, id=approval_id, summary=summary)  # fmt: skip
    return say(language, _("Action #%(id)s expired without a decision: %(summary)s."),
               id=approval_id, summary=summary)  # fmt: skip


# What changed in the records a held action relied on, by the part that changed.
_CHANGED_PARTS: dict[str, Promise] = {
    "status": pgettext_lazy("changed records", "the status"),
    "start": pgettext_lazy("changed records", "the time"),
    "end": pgettext_lazy("changed records", "the time"),
    "technician_id": pgettext_lazy("changed records", "the technician"),
    "customer_id": pgettext_lazy("changed records", "the customer"),
    "moves": pgettext_lazy("changed records", "the jobs to move"),
    "not_moved": pgettext_lazy("changed records", "the jobs to move"),
    "affected_jobs": pgettext_lazy("changed records", "the affected jobs"),
    "active": pgettext_lazy("changed records", "whether the technician is active"),
    "lines": pgettext_lazy("changed records", "the lines to invoice"),
    "total": pgettext_lazy("changed records", "the amount"),
    "letter": pgettext_lazy("changed records", "the invoice letter"),
}
_CHANGED_RECORDS = pgettext_lazy("changed records", "the records")


def _lowered(sentence: str) -> str:
    """A sentence said inside another: "El trabajo…" → "el trabajo…"."""
    return sentence[:1].lower() + sentence[1:]


def changed_line(changed: Sequence[str], language: str) -> str:
    """ "cambió el horario y el técnico" / "ya no se puede: …" from the changed keys."""
    gone = [item for item in changed if item.startswith("gone: ")]
    if gone:
        with override(django_language(language)):
            words = errors.in_words(gone[0])
        why = _lowered(words.rstrip(".")) if words else gone[0][len("gone: ") :]
        return say(language, _("it can no longer be done: %(why)s"), why=why)
    parts: list[str] = []
    for key in changed:
        part = say(language, _CHANGED_PARTS.get(key.rsplit(".", 1)[-1], _CHANGED_RECORDS))
        if part not in parts:
            parts.append(part)
    return say(language, _("changed: %(parts)s"), parts=_join(parts, language))


def waiting_line(
    intents: Sequence[str],
    approvals: Sequence[int],
    language: str,
    specs: IntentSpecs | None = None,
) -> str:
    """The steps that wait for a manager's decision before they run."""
    phrases = _join([intent_phrase(intent, language, specs) for intent in intents], language)
    ids = ", ".join(f"#{approval}" for approval in approvals)
    return say(language, _("Once %(ids)s is approved I will go on to %(phrases)s."),
               ids=ids, phrases=phrases)  # fmt: skip


def deferred_line(intents: Sequence[str], language: str, specs: IntentSpecs | None = None) -> str:
    """The steps that wait for the operator's answer to the question before they run."""
    phrases = _join([intent_phrase(intent, language, specs) for intent in intents], language)
    return say(language, _("Once you answer I will go on to %(phrases)s."), phrases=phrases)


def dropped_line(intents: Sequence[str], language: str, specs: IntentSpecs | None = None) -> str:
    phrases = _join([intent_phrase(intent, language, specs) for intent in intents], language)
    return say(language, _("So I will not %(phrases)s either."), phrases=phrases)


def question_dropped(
    intent: str, later: Sequence[str], language: str, specs: IntentSpecs | None = None
) -> str:
    """ "Olvidalo" to a question (or with none open): a short acknowledgement, nothing done."""
    if not intent:
        return say(language, _("OK, I won't do anything."))
    phrase = intent_phrase(intent, language, specs)
    text = say(language, _("OK, dropped: I won't %(phrase)s. I changed nothing."), phrase=phrase)
    return f"{text} {dropped_line(later, language, specs)}" if later else text


def question_unanswered(unable: str, later: Sequence[str], language: str) -> str:
    """A reply that does not answer the question ("no sé", garbage): it is dropped, and the
    reply says what was not done and why — never a ticket, never a guess."""
    again = say(language, _("When you have it, ask me again."))
    lines = [unable, dropped_line(later, language) if later else "", again]
    return " ".join(line for line in lines if line)


def interrupted(
    *, asked: str, done: Sequence[str], held: Sequence[str], missing: Sequence[str], language: str
) -> str:
    """A turn cut short by a restart: what its tools did, what waits, what was not done."""
    quoted = " ".join(asked.split())
    quoted = quoted if len(quoted) <= 80 else quoted[:79] + "…"
    lines = [
        say(
            language,
            _("My answer to “%(asked)s” was cut short (the service restarted)."),
            asked=quoted,
        )
    ]
    if done:
        lines.append(say(language, _("Done before it stopped: %(done)s."), done="; ".join(done)))
    if held:
        lines.append(say(language, _("Waiting for approval: %(held)s."), held=", ".join(held)))
    if missing:
        lines.append(
            say(
                language,
                pgettext_lazy("a turn cut short by a restart", "Not done: %(missing)s."),
                missing=_join(missing, language),
            )
        )
    elif not done and not held:
        lines.append(say(language, _("Nothing was done yet.")))
    lines.append(
        say(
            language,
            _(
                "I won't redo it on my own, so nothing happens twice: "
                "ask again for whatever is missing."
            ),
        )
    )
    return "\n".join(lines)


def chunks(text: str, target: int = 3) -> list[str]:
    """A few pieces of the reply for progressive rendering; joined, they give back the text.

    Splits after paragraph or sentence ends, keeping the separators with the piece before, so
    the client simply appends each chunk.
    """
    if not text:
        return []
    pieces = [m.group(0) for m in re.finditer(r".+?(?:\n\n|(?<=[.!?…])\s+|$)", text, re.S)]
    pieces = [p for p in pieces if p]
    if len(pieces) <= target:
        return pieces
    size = -(-len(pieces) // target)  # ceil: at most `target` chunks
    return ["".join(pieces[i : i + size]) for i in range(0, len(pieces), size)]


def in_customer_style(text: str, profile: dict[str, Any], language: str) -> str:
    """A reply written to a customer (P4), in the register they use: a customer who writes
    "usted" is answered in usted, not in the office's voseo. Only Spanish changes."""
    register = profile.get("register")
    if language == "es" and isinstance(register, dict) and register.get("value") == "usted":
        text = to_usted(text)
    brevity = profile.get("brevity")
    if isinstance(brevity, dict) and brevity.get("value") == "brief":
        text = briefer(text, language)
    return text


BRIEF_LIST = 3
_LIST_ITEM = re.compile(r"^\s*(?:\d{1,2}[.)]|[-•*])\s+\S")


def briefer(text: str, language: str) -> str:
    """For a customer who writes briefly: each list keeps its first items and says how many
    more there are ("y 3 más"); nothing else of the reply is dropped."""
    out: list[str] = []
    run: list[str] = []

    def close() -> None:
        out.extend(run[:BRIEF_LIST])
        if len(run) > BRIEF_LIST:
            more = len(run) - BRIEF_LIST
            out.append(say(language, _("(and %(more)d more)"), more=more))
        run.clear()

    for line in text.split("\n"):
        if _LIST_ITEM.match(line):
            run.append(line)
            continue
        close()
        out.append(line)
    close()
    return "\n".join(out)
