"""Tools of the escalation agent, and their typed results (agents/results.py)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Literal

from django.utils.translation import gettext_noop

from agents.context import TurnContext
from agents.lookups import resolve_customer
from agents.registry import Category, ToolError, ToolResult, done, get_scoped, tool
from agents.results import Result
from approvals import live
from business import services
from business.models import Customer, EscalationTicket, Job
from business.selectors import ticket_by_number

Reason = Literal["complaint", "emergency", "escalate", "frustration", "handoff"]
Priority = Literal["low", "normal", "high", "urgent"]

URGENT = "urgent"


@dataclass(frozen=True)
class Ticket(Result):
    id: int
    reason: str
    priority: str
    status: str
    summary: str
    customer_id: int | None
    customer: str | None
    job_id: int | None
    created_at: datetime.datetime  # on the organisation's clock


@dataclass(frozen=True)
class TicketResult(Result):
    """One ticket: opened (`ticket_create`) or found by its number (`ticket_find`)."""

    ticket: Ticket


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
    if ticket.priority == URGENT:  # the managers hear of it now, not on their next page load
        live.notify_emergency(
            organisation_id=ctx.organisation.pk, ticket_id=ticket.pk, summary=ticket.summary,
            conversation_id=ctx.conversation_id,
        )  # fmt: skip
    return done(f"ticket #{ticket.pk} opened ({ticket.priority})", _result(ctx, ticket))


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
    return done(f"ticket #{ticket.pk} ({ticket.status})", _result(ctx, ticket))


def _result(ctx: TurnContext, ticket: EscalationTicket) -> TicketResult:
    return TicketResult(
        Ticket(
            id=ticket.pk, reason=ticket.reason, priority=ticket.priority, status=ticket.status,
            summary=ticket.summary, customer_id=ticket.customer_id,
            customer=ticket.customer.name if ticket.customer else None, job_id=ticket.job_id,
            created_at=ctx.local(ticket.created_at),
        )
    )  # fmt: skip
