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

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _
from django.utils.translation import override

from approvals.models import PendingAction
from approvals.services import action_decide, may_decide
from common.wording import say
from copilot.models import Turn
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
    line = say(
        language, _("There is no action #%(id)s in the approvals queue."), id=order.approval_id
    )
    if pending:
        line += "\n" + say(language, _("Waiting:")) + "\n"
        line += _listing(pending, language)
    return line


# The question that lists the actions an order may mean, by (what matched, approve?).
_WHICH: dict[tuple[str, bool], Promise] = {
    ("several", True): _("Several match. Which one do you want to approve? Tell me its number:"),
    ("several", False): _("Several match. Which one do you want to reject? Tell me its number:"),
    ("none", True): _("No pending action matches that. Which one do you want to approve? Waiting:"),
    ("none", False): _("No pending action matches that. Which one do you want to reject? Waiting:"),
    ("ask", True): _("Which one do you want to approve? Tell me its number:"),
    ("ask", False): _("Which one do you want to reject? Tell me its number:"),
}


def _which(order: DecisionOrder, listed: list[PendingAction], several: bool, language: str) -> str:
    if not listed:
        return say(language, _("No action is waiting for a decision."))
    matched = "several" if several else "none" if order.words else "ask"
    head = say(language, _WHICH[matched, order.approve])
    return f"{head}\n{_listing(listed, language)}"


def _refusal(action: PendingAction, language: str) -> str:
    return say(
        language,
        _(
            "Only a manager or an admin can approve or reject actions. "
            "Action %(label)s is still waiting in the approvals queue."
        ),
        label=_label(action, language),
    )


def _outcome(code: str, action: PendingAction, language: str) -> str:
    label = _label(action, language)
    if code == "approved":
        return say(
            language,
            _(
                "You approved action %(label)s. I am running it now and will say so in the "
                "conversation that asked for it."
            ),
            label=label,
        )
    if code == "rejected":
        return say(
            language,
            _(
                "You rejected action %(label)s: it will not be done. I will say so in the "
                "conversation that asked for it."
            ),
            label=label,
        )
    if code == "expired":
        return say(
            language,
            _("Action %(label)s has expired: it can no longer be decided and will not run."),
            label=label,
        )
    with override("en" if language == "en" else "es-ar"):
        status = str(action.get_status_display())
    return say(  # already decided by someone else (or by the same person twice)
        language, _("Action %(label)s was already decided: %(status)s."), label=label, status=status
    )
