"""A manager decides a held action in the chat: "aprobá la #12", "rechazá la cancelación de
Bianchi porque …", "approve #12".

`answer_order` finds the action (by number, or by words of its summary — ambiguity is asked back,
never guessed), decides it through the same service as the queue's buttons
(`approvals.services.action_decide`), and says what happened. An operator gets a clear refusal
(audited); the action keeps waiting. What the decision then sets off — the note and the resumed
turn in the conversation that asked — is copilot/receivers.py's.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import override

from approvals.models import PendingAction
from approvals.services import action_decide, may_decide
from copilot.models import Turn
from copilot.orchestration import replies
from nlu.decisions import DecisionOrder, summary_matches

LISTED = 5  # pending actions named when the order matches several or none


def answer_order(turn: Turn, order: DecisionOrder, language: str) -> tuple[str, dict[str, Any]]:
    """Decide the action the order names, if the speaker may; the reply and its trace."""
    organisation_id = turn.organisation_id
    pending = PendingAction.objects.filter(
        organisation_id=organisation_id, status=PendingAction.Status.PENDING
    ).order_by("created_at", "pk")
    trace: dict[str, Any] = {"order": "approve" if order.approve else "reject"}
    if order.approval_id is not None:
        action = PendingAction.objects.filter(
            pk=order.approval_id, organisation_id=organisation_id
        ).first()
        if action is None:
            return _none_like(order, list(pending[:LISTED]), language), trace
    else:
        matches = [
            a for a in pending
            if summary_matches(order.words, a.summary) or summary_matches(order.words, a.summary_en)
        ]  # fmt: skip
        if len(matches) != 1:
            listed = matches or list(pending)
            return _which(order, listed[:LISTED], bool(matches), language), trace
        action = matches[0]
    trace["approval_id"] = action.pk
    user = turn.user
    if user is None or not may_decide(user, action):
        if user is not None:
            action_decide(
                organisation_id=organisation_id,
                action_id=action.pk,
                actor=user,
                approve=order.approve,
                reason=order.reason,
            )  # fmt: skip  (audited as a refused decision)
        trace["code"] = "forbidden"
        return _refusal(action, language), trace
    decided = action_decide(
        organisation_id=organisation_id, action_id=action.pk, actor=user,
        approve=order.approve, reason=order.reason,
    )  # fmt: skip
    trace["code"] = decided.code
    return _outcome(decided.code, decided.action or action, language), trace


def _label(action: PendingAction, language: str) -> str:
    return f"#{action.pk} ({action.summary_in(language)})"


def _listing(actions: list[PendingAction], language: str) -> str:
    return "\n".join(f"- {_label(action, language)}" for action in actions)


def _none_like(order: DecisionOrder, pending: list[PendingAction], language: str) -> str:
    line = replies.t(
        language,
        es=f"No hay ninguna acción #{order.approval_id} en la cola de aprobaciones.",
        en=f"There is no action #{order.approval_id} in the approvals queue.",
    )
    if pending:
        line += "\n" + replies.t(language, es="Esperan:", en="Waiting:") + "\n"
        line += _listing(pending, language)
    return line


def _which(order: DecisionOrder, listed: list[PendingAction], several: bool, language: str) -> str:
    verb = replies.t(
        language,
        es="aprobar" if order.approve else "rechazar",
        en="approve" if order.approve else "reject",
    )
    if not listed:
        return replies.t(
            language,
            es="No hay acciones esperando una decisión.",
            en="No action is waiting for a decision.",
        )
    if several:
        head = replies.t(
            language,
            es=f"Hay varias que coinciden. ¿Cuál querés {verb}? Decime el número:",
            en=f"Several match. Which one do you want to {verb}? Tell me its number:",
        )
    elif order.words:
        head = replies.t(
            language,
            es=f"Ninguna acción pendiente coincide con eso. ¿Cuál querés {verb}? Esperan:",
            en=f"No pending action matches that. Which one do you want to {verb}? Waiting:",
        )
    else:
        head = replies.t(
            language,
            es=f"¿Cuál querés {verb}? Decime el número:",
            en=f"Which one do you want to {verb}? Tell me its number:",
        )
    return f"{head}\n{_listing(listed, language)}"


def _refusal(action: PendingAction, language: str) -> str:
    return replies.t(
        language,
        es=f"Solo un gerente o un administrador puede aprobar o rechazar acciones. "
        f"La acción {_label(action, language)} sigue esperando en la cola de aprobaciones.",
        en=f"Only a manager or an admin can approve or reject actions. "
        f"Action {_label(action, language)} is still waiting in the approvals queue.",
    )


def _outcome(code: str, action: PendingAction, language: str) -> str:
    label = _label(action, language)
    if code == "approved":
        return replies.t(
            language,
            es=f"Aprobaste la acción {label}. La ejecuto ahora y aviso en la conversación que "
            "la pidió.",
            en=f"You approved action {label}. I am running it now and will say so in the "
            "conversation that asked for it.",
        )
    if code == "rejected":
        return replies.t(
            language,
            es=f"Rechazaste la acción {label}: no se va a hacer. Aviso en la conversación que la "
            "pidió.",
            en=f"You rejected action {label}: it will not be done. I will say so in the "
            "conversation that asked for it.",
        )
    if code == "expired":
        return replies.t(
            language,
            es=f"La acción {label} ya venció: no se puede decidir y no se va a hacer.",
            en=f"Action {label} has expired: it can no longer be decided and will not run.",
        )
    with override("en" if language == "en" else "es-ar"):
        status = str(action.get_status_display())
    return replies.t(  # already decided by someone else (or by the same person twice)
        language,
        es=f"La acción {label} ya estaba decidida: {status}.",
        en=f"Action {label} was already decided: {status}.",
    )
