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

# What each default intent does, as a short verb phrase for "done: …" / "not done: …" lines.
INTENT_PHRASES: dict[str, tuple[str, str]] = {
    "book_job": ("agendar el trabajo", "book the job"),
    "reschedule": ("reprogramar el trabajo", "reschedule the job"),
    "cancel_job": ("cancelar el trabajo", "cancel the job"),
    "check_availability": ("ver la disponibilidad", "check availability"),
    "create_customer": ("dar de alta al cliente", "register the customer"),
    "search_customer": ("buscar al cliente", "look up the customer"),
    "update_customer": ("actualizar los datos del cliente", "update the customer"),
    "validate_cuit": ("validar el CUIT", "validate the CUIT"),
    "generate_quote": ("armar el presupuesto", "prepare the quote"),
    "generate_invoice": ("emitir la factura", "issue the invoice"),
    "payment_status": ("ver el estado de pago", "check the payment status"),
    "assign_vehicle": ("asignar el vehículo", "assign the vehicle"),
    "technician_sick": ("registrar la ausencia del técnico", "record the technician's absence"),
    "bulk_reschedule": ("reprogramar los trabajos", "reschedule the jobs"),
    "dispatch": ("despachar un técnico", "dispatch a technician"),
    "complaint": ("registrar el reclamo", "record the complaint"),
    "emergency": ("atender la emergencia", "handle the emergency"),
    "frustration_detected": ("derivar tu malestar a una persona", "pass your concern to a person"),
    "escalate": ("derivarte con una persona", "hand you over to a person"),
    "maintenance_due": ("ver los mantenimientos pendientes", "list maintenance due"),
    "follow_up": ("hacer el seguimiento", "follow up"),
    "seasonal_reminder": ("armar la campaña de temporada", "prepare the seasonal campaign"),
    "greeting": ("saludar", "say hello"),
    "farewell": ("despedirme", "say goodbye"),
    "hours": ("informar el horario", "give our hours"),
    "pricing_info": ("informar precios", "give prices"),
    "unknown": ("responder eso", "answer that"),
}


def t(language: str, *, es: str, en: str) -> str:
    return en if language == "en" else es


def intent_phrase(intent: str, language: str) -> str:
    es, en = INTENT_PHRASES.get(intent, (intent.replace("_", " "), intent.replace("_", " ")))
    return t(language, es=es, en=en)


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


def failure_line(step: StepSummary, language: str) -> str:
    phrase = intent_phrase(step.intent, language)
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


def _join(phrases: Sequence[str], language: str) -> str:
    if len(phrases) <= 1:
        return "".join(phrases)
    conjunction = t(language, es=" y ", en=" and ")
    return ", ".join(phrases[:-1]) + conjunction + phrases[-1]


def partial_success_line(steps: Sequence[StepSummary], language: str) -> str:
    """'Done / not done / waiting for approval' when the chain did not fully succeed; else ''."""
    done = [s for s in steps if s.ran and s.success and not s.pending]
    waiting = [s for s in steps if s.pending]
    not_done = [s for s in steps if not (s.ran and s.success) and not s.pending]
    if not waiting and not not_done:
        return ""
    if len(steps) == 1 and not waiting:
        return ""  # the failure line already says it
    parts: list[str] = []
    if done:
        phrases = _join([intent_phrase(s.intent, language) for s in done], language)
        parts.append(t(language, es=f"Hecho: {phrases}.", en=f"Done: {phrases}."))
    if waiting:
        phrases = _join([intent_phrase(s.intent, language) for s in waiting], language)
        parts.append(
            t(
                language,
                es=f"Esperando aprobación de un gerente: {phrases}.",
                en=f"Waiting for a manager's approval: {phrases}.",
            )
        )
    if not_done:
        phrases = _join([intent_phrase(s.intent, language) for s in not_done], language)
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


def directive_usage(name: str, language: str) -> str:
    return t(
        language,
        es=f"Escribí tu pedido después del nombre, por ejemplo: «#{name} …».",
        en=f"Write your request after the name, for example: “#{name} …”.",
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
