"""The words of the orchestrator itself: partial-success lines, hand-offs, choices, failures.

Sub-agents write their own replies; this module writes only what the orchestrator adds around
them, in the language of the message (es-AR voseo first, English second). The reply to a
message is written in that message's language, not the interface's, so these are plain es/en
pairs rather than gettext strings.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agents import defaults
from nlu.style import to_usted
from nlu.values import IntentSpecs


def t(language: str, *, es: str, en: str) -> str:
    return en if language == "en" else es


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
        return t(
            language,
            es=f"No estoy seguro de cómo {phrase}: no lo hice para no equivocarme.",
            en=f"I'm not sure how to {phrase}, so I didn't do it rather than guess.",
        )
    if step.plan_limited:
        return t(
            language,
            es=f"Para {phrase} hacían falta más pasos de los permitidos; quedó a medias.",
            en=f"To {phrase} needed more steps than allowed; it is only partly done.",
        )
    return t(
        language,
        es=f"No pude {phrase}: hubo un error interno y quedó registrado.",
        en=f"I couldn't {phrase}: something failed on our side and it was logged.",
    )


def not_done_line(step: StepSummary, language: str, specs: IntentSpecs | None = None) -> str:
    """After a model's own words on a write it did not carry out: plainly, it is not done."""
    phrase = intent_phrase(step.intent, language, specs)
    return t(language, es=f"No quedó hecho: {phrase}.", en=f"Not done: {phrase}.")


def _join(phrases: Sequence[str], language: str) -> str:
    if len(phrases) <= 1:
        return "".join(phrases)
    conjunction = t(language, es=" y ", en=" and ")
    return ", ".join(phrases[:-1]) + conjunction + phrases[-1]


def held_line(actions: Sequence[tuple[int, str]], language: str) -> str:
    """What this turn asked a manager to approve, each by its number and in plain words."""
    listed = "; ".join(f"#{number}: {summary}" for number, summary in actions)
    return t(
        language,
        es=f"Pedí la aprobación de un gerente para {listed}. Te aviso acá cuando decida.",
        en=f"I asked a manager to approve {listed}. I will tell you here when they decide.",
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
        parts.append(t(language, es=f"Hecho: {phrases}.", en=f"Done: {phrases}."))
    if waiting:
        phrases = _join([intent_phrase(s.intent, language, specs) for s in waiting], language)
        parts.append(
            t(
                language,
                es=f"Esperando aprobación de un gerente: {phrases}.",
                en=f"Waiting for a manager's approval: {phrases}.",
            )
        )
    if not_done:
        phrases = _join([intent_phrase(s.intent, language, specs) for s in not_done], language)
        parts.append(t(language, es=f"Sin hacer: {phrases}.", en=f"Not done: {phrases}."))
    return " ".join(parts)


def handoff_line(ticket_id: int | None, language: str) -> str:
    ticket = f" (#{ticket_id})" if ticket_id else ""
    return t(
        language,
        es=f"Le paso la conversación a una persona del equipo{ticket}: te va a responder en breve.",
        en=f"I'm handing this over to a person on the team{ticket}; they will reply shortly.",
    )


def frustration_preface(language: str) -> str:
    return t(
        language,
        es="Entiendo la molestia, lo resolvemos ya.",
        en="I understand the frustration; let's sort it out now.",
    )


def agent_choice(
    typed: str, options: Sequence[tuple[str, str]], language: str, *, ambiguous: bool
) -> str:
    """The reply to `#name` when the name is unknown or matches several agents: a choice."""
    listed = "\n".join(f"- #{name} — {label}" for name, label in options)
    if ambiguous:
        head = t(
            language,
            es=f"«#{typed}» puede ser más de un agente. ¿Con cuál querés hablar?",
            en=f"“#{typed}” matches more than one agent. Which one do you mean?",
        )
    else:
        head = t(
            language,
            es=f"No hay ningún agente «#{typed}». Elegí uno de estos:",
            en=f"There is no agent “#{typed}”. Pick one of these:",
        )
    return f"{head}\n{listed}"


def obligation_line(labels: list[str], language: str) -> str:
    """T3: the turn had to consult these agents and did not."""
    names = ", ".join(labels)
    return t(
        language,
        es=(
            f"Atención: este pedido tenía que consultar a {names} y no se pudo; revisalo "
            "antes de seguir."
        ),
        en=f"Note: this request had to consult {names} and could not; check it before going on.",
    )


def direct_line_opened(label: str, name: str, language: str) -> str:
    return t(
        language,
        es=(
            f"Línea directa con {label} abierta: lo que escribas va a {label} tal cual, y su "
            f"respuesta te llega sin cambios. Escribí «#salir» para volver al copiloto "
            f"(o «#{name} …» para un solo pedido)."
        ),
        en=(
            f"Direct line to {label} open: what you write goes to {label} as is, and its answer "
            f"reaches you unchanged. Write “#exit” to go back to the copilot (or “#{name} …” "
            f"for a single request)."
        ),
    )


def direct_line_closed(label: str, language: str) -> str:
    if not label:
        return t(
            language,
            es="No hay una línea directa abierta: ya estás hablando con el copiloto.",
            en="No direct line is open: you are already talking to the copilot.",
        )
    return t(
        language,
        es=f"Línea directa con {label} cerrada. Volviste al copiloto.",
        en=f"Direct line to {label} closed. You are back with the copilot.",
    )


def empty_reply(language: str) -> str:
    return t(
        language,
        es="No entendí el pedido. ¿Me lo contás de otra forma?",
        en="I didn't get that. Could you put it another way?",
    )


def turn_failed(language: str) -> str:
    return t(
        language,
        es="Algo falló de nuestro lado y no pude responder. Tu mensaje quedó guardado; "
        "probá de nuevo en un momento.",
        en="Something failed on our side and I couldn't answer. Your message is saved; "
        "please try again in a moment.",
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
    who = decision.decided_by or t(language, es="Un gerente", en="A manager")
    what = f"#{decision.approval_id} ({decision.summary})"
    reason = (
        f" {t(language, es='Motivo', en='Reason')}: {decision.reason}." if decision.reason else ""
    )
    status = decision.status
    if status == "executed":
        return t(language, es=f"{who} aprobó la acción {what}: hecho.{reason}",
                 en=f"{who} approved action {what}: done.{reason}")  # fmt: skip
    if status == "stale":
        return t(
            language,
            es=f"{who} aprobó la acción {what}, pero no la hice: {problem}. "
            "Si sigue haciendo falta, pedímela de nuevo.",
            en=f"{who} approved action {what}, but I did not run it: {problem}. "
            "Ask again if it is still needed.",
        )
    if status == "failed":
        return t(language, es=f"{who} aprobó la acción {what}, pero falló: {problem}.",
                 en=f"{who} approved action {what}, but it failed: {problem}.")  # fmt: skip
    if status == "rejected":
        return t(language, es=f"{who} rechazó la acción {what}: no se hizo.{reason}",
                 en=f"{who} rejected action {what}: it was not done.{reason}")  # fmt: skip
    if status == "expired":
        return t(language, es=f"Venció el plazo para aprobar la acción {what}: no se hizo.",
                 en=f"The time to approve action {what} ran out: it was not done.")  # fmt: skip
    return t(language, es=f"La acción {what} está en curso.", en=f"Action {what} is under way.")


def decision_note(
    *, status: str, approval_id: int, summary: str, decided_by: str, language: str
) -> str:
    """The note a decision leaves in the conversation that asked for the action."""
    who = decided_by or t(language, es="Un gerente", en="A manager")
    if status == "approved":
        return t(language, es=f"{who} aprobó la acción #{approval_id}: {summary}.",
                 en=f"{who} approved action #{approval_id}: {summary}.")  # fmt: skip
    if status == "rejected":
        return t(language, es=f"{who} rechazó la acción #{approval_id}: {summary}.",
                 en=f"{who} rejected action #{approval_id}: {summary}.")  # fmt: skip
    return t(language, es=f"Venció sin decisión la acción #{approval_id}: {summary}.",
             en=f"Action #{approval_id} expired without a decision: {summary}.")  # fmt: skip


# What changed in the records a held action relied on, by the part that changed.
_CHANGED_PARTS: dict[str, tuple[str, str]] = {
    "status": ("el estado", "the status"),
    "start": ("el horario", "the time"),
    "end": ("el horario", "the time"),
    "technician_id": ("el técnico", "the technician"),
    "customer_id": ("el cliente", "the customer"),
    "moves": ("los trabajos a mover", "the jobs to move"),
    "not_moved": ("los trabajos a mover", "the jobs to move"),
    "affected_jobs": ("los trabajos afectados", "the affected jobs"),
    "active": ("si el técnico está activo", "whether the technician is active"),
    "lines": ("las líneas a facturar", "the lines to invoice"),
    "total": ("el importe", "the amount"),
    "letter": ("el tipo de factura", "the invoice letter"),
}


def changed_line(changed: Sequence[str], language: str) -> str:
    """ "cambió el horario y el técnico" / "ya no se puede: …" from the changed keys."""
    gone = [item[len("gone: ") :] for item in changed if item.startswith("gone: ")]
    if gone:
        return t(language, es="ya no se puede: ", en="it can no longer be done: ") + gone[0]
    parts: list[str] = []
    for key in changed:
        es, en = _CHANGED_PARTS.get(key.rsplit(".", 1)[-1], ("los datos", "the records"))
        part = t(language, es=es, en=en)
        if part not in parts:
            parts.append(part)
    return t(language, es="cambió ", en="changed: ") + _join(parts, language)


def waiting_line(
    intents: Sequence[str],
    approvals: Sequence[int],
    language: str,
    specs: IntentSpecs | None = None,
) -> str:
    """The steps that wait for a manager's decision before they run."""
    phrases = _join([intent_phrase(intent, language, specs) for intent in intents], language)
    ids = ", ".join(f"#{approval}" for approval in approvals)
    return t(language, es=f"Cuando se apruebe {ids} sigo con: {phrases}.",
             en=f"Once {ids} is approved I will go on to {phrases}.")  # fmt: skip


def deferred_line(intents: Sequence[str], language: str, specs: IntentSpecs | None = None) -> str:
    """The steps that wait for the operator's answer to the question before they run."""
    phrases = _join([intent_phrase(intent, language, specs) for intent in intents], language)
    return t(language, es=f"Cuando me contestes sigo con: {phrases}.",
             en=f"Once you answer I will go on to {phrases}.")  # fmt: skip


def dropped_line(intents: Sequence[str], language: str, specs: IntentSpecs | None = None) -> str:
    phrases = _join([intent_phrase(intent, language, specs) for intent in intents], language)
    return t(language, es=f"Por eso tampoco voy a {phrases}.",
             en=f"So I will not {phrases} either.")  # fmt: skip


def question_dropped(
    intent: str, later: Sequence[str], language: str, specs: IntentSpecs | None = None
) -> str:
    """ "Olvidalo" to a question (or with none open): a short acknowledgement, nothing done."""
    if not intent:
        return t(language, es="Dale, no hago nada.", en="OK, I won't do anything.")
    phrase = intent_phrase(intent, language, specs)
    text = t(language, es=f"Listo, lo dejo: no voy a {phrase}. No hice ningún cambio.",
             en=f"OK, dropped: I won't {phrase}. I changed nothing.")  # fmt: skip
    return f"{text} {dropped_line(later, language, specs)}" if later else text


def question_unanswered(unable: str, later: Sequence[str], language: str) -> str:
    """A reply that does not answer the question ("no sé", garbage): it is dropped, and the
    reply says what was not done and why — never a ticket, never a guess."""
    again = t(language, es="Cuando tengas el dato, pedímelo de nuevo.",
              en="When you have it, ask me again.")  # fmt: skip
    lines = [unable, dropped_line(later, language) if later else "", again]
    return " ".join(line for line in lines if line)


def interrupted(
    *, asked: str, done: Sequence[str], held: Sequence[str], missing: Sequence[str], language: str
) -> str:
    """A turn cut short by a restart: what its tools did, what waits, what was not done."""
    quoted = " ".join(asked.split())
    quoted = quoted if len(quoted) <= 80 else quoted[:79] + "…"
    lines = [
        t(
            language,
            es=f"Se cortó mi respuesta a «{quoted}» (se reinició el servicio).",
            en=f"My answer to “{quoted}” was cut short (the service restarted).",
        )
    ]
    if done:
        lines.append(
            t(language, es="Alcancé a hacer: ", en="Done before it stopped: ")
            + "; ".join(done)
            + "."
        )
    if held:
        lines.append(
            t(language, es="Quedó esperando aprobación: ", en="Waiting for approval: ")
            + ", ".join(held)
            + "."
        )
    if missing:
        lines.append(
            t(language, es="No llegué a: ", en="Not done: ") + _join(missing, language) + "."
        )
    elif not done and not held:
        lines.append(t(language, es="No llegué a hacer nada.", en="Nothing was done yet."))
    lines.append(
        t(
            language,
            es="No lo repito por mi cuenta para no hacer nada dos veces: "
            "si falta algo, pedímelo de nuevo.",
            en="I won't redo it on my own, so nothing happens twice: "
            "ask again for whatever is missing.",
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
            out.append(t(language, es=f"(y {more} más)", en=f"(and {more} more)"))
        run.clear()

    for line in text.split("\n"):
        if _LIST_ITEM.match(line):
            run.append(line)
            continue
        close()
        out.append(line)
    close()
    return "\n".join(out)
