"""Tools of the escalation agent."""

from __future__ import annotations

from typing import Literal

from django.utils.translation import gettext_noop

from agents.context import TurnContext
from agents.lookups import resolve_customer
from agents.payloads import local_iso
from agents.registry import Category, ToolError, ToolResult, get_scoped, success, tool
from approvals import live
from business import services
from business.models import Customer, EscalationTicket, Job
from business.selectors import ticket_by_number

Reason = Literal["complaint", "emergency", "escalate", "frustration", "handoff"]
Priority = Literal["low", "normal", "high", "urgent"]

URGENT = "urgent"

# Without an explicit priority, the reason decides: danger first, an angry customer next.
DEFAULT_PRIORITY: dict[str, str] = {
    "emergency": "urgent",
    "complaint": "high",
    "frustration": "high",
    "escalate": "normal",
    "handoff": "normal",
}


@tool(
    category=Category.SUGGEST,
    description=gettext_noop(
        "Open a ticket for a person to handle: a complaint, an emergency (gas leak, flooding, "
        "electrical fire), an explicit request for a supervisor, frustration, or a hand-off."
    ),
    param_docs={
        "reason": "complaint, emergency, escalate, frustration or handoff.",
        "summary": "What happened, in a sentence or two.",
        "priority": "low, normal, high or urgent (default from the reason).",
        "customer_id": "The customer concerned.",
        "customer": "The customer's name (when the id is not known).",
        "job_id": "The job concerned.",
    },
)
def ticket_create(
    ctx: TurnContext,
    *,
    reason: Reason,
    summary: str,
    priority: Priority | None = None,
    customer_id: int | None = None,
    customer: str | None = None,
    job_id: int | None = None,
) -> ToolResult:
    job = get_scoped(Job, ctx, job_id, "job") if job_id is not None else None
    who: Customer | None = None
    if customer_id is not None or customer:
        who = resolve_customer(ctx, customer_id, customer)
    ticket = services.ticket_create(
        organisation=ctx.organisation,
        reason=reason,
        summary=summary,
        priority=priority or DEFAULT_PRIORITY[reason],
        customer=who,
        job=job,
        conversation_id=ctx.conversation_id,
        actor=ctx.user,
    )
    data = _ticket_data(ctx, ticket)
    if ticket.priority == URGENT:  # the managers hear of it now, not on their next page load
        live.notify_emergency(
            organisation_id=ctx.organisation.pk, ticket_id=ticket.pk, summary=ticket.summary,
            conversation_id=ctx.conversation_id,
        )  # fmt: skip
    return success(f"ticket #{ticket.pk} opened ({ticket.priority})", ticket=data)


@tool(
    category=Category.SAFE,
    description=gettext_noop(
        "One ticket by its number (#12): reason, priority, status, customer and job."
    ),
    param_docs={"number": "The ticket's number (12 for ticket #12)."},
)
def ticket_find(ctx: TurnContext, *, number: int) -> ToolResult:
    ticket = ticket_by_number(ctx.organisation, number)
    if ticket is None:
        raise ToolError(f"ticket #{number} not found")
    return success(f"ticket #{ticket.pk} ({ticket.status})", ticket=_ticket_data(ctx, ticket))


def _ticket_data(ctx: TurnContext, ticket: EscalationTicket) -> dict[str, object]:
    return {
        "id": ticket.pk,
        "reason": ticket.reason,
        "priority": ticket.priority,
        "status": ticket.status,
        "summary": ticket.summary,
        "customer_id": ticket.customer_id,
        "customer": ticket.customer.name if ticket.customer else None,
        "job_id": ticket.job_id,
        "created_at": local_iso(ctx, ticket.created_at),
    }
