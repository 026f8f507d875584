"""A customer's own turn (WhatsApp, E2/issue 14.3): what its tools may read and touch.

When `TurnContext.customer_id` is set the turn acts for that customer, who may ask about and
book, move or cancel *their own* jobs, ask what they owe, find their quotes and invoices, ask
prices and complain — and never see or touch another customer's records. Two checks, both in
`agents/base.py` `Runner.call` (so the embedded handlers, the llm agents and an approved call
all pass through them):

- `pin` before a call: only the tools in `CUSTOMER_TOOLS` run; every customer argument becomes
  the customer's own id (a name in the message — "los trabajos de Bianchi" — is ignored); a job
  named by id must be theirs, else it reads as not found;
- `screen` after it: any record of another customer in the result (a job, an invoice, a quote,
  a customer) is dropped from a list, and a result that is about one is refused as not found;
  a typed result (agents/results.py) that lost a record loses its typed value too.
"""

from __future__ import annotations

from typing import Any

from agents.context import TurnContext
from agents.registry import ToolResult, failure
from business.models import Customer, Job
from business.selectors import scoped

# The tools a customer's turn may run (the approval rules still apply to each).
CUSTOMER_TOOLS = frozenset({
    "jobs_find", "slots_find", "job_book", "job_reschedule", "job_cancel",
    "payment_status", "quote_find", "price_list", "org_info", "ticket_create",
    "customers_find", "customer_history",
})  # fmt: skip
# Tools whose customer argument is always the customer's own, given or not ("mis trabajos").
_ALWAYS_OWN = frozenset({"jobs_find", "payment_status", "job_book", "ticket_create",
                         "customer_history"})  # fmt: skip
# Lists of customers in a result: only the customer's own entry stays.
_CUSTOMER_LISTS = frozenset({"customers", "candidates", "duplicates"})


NOT_FOR_CUSTOMERS = "is not available to customers"


class Refused(Exception):
    """The call is not the customer's to make (reported as a failed call, nothing run)."""


def pin(ctx: TurnContext, tool_name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments with the customer pinned; Refused when it may not run at all."""
    own = ctx.customer_id
    if own is None:
        return arguments
    if tool_name not in CUSTOMER_TOOLS:
        raise Refused(f"{tool_name} {NOT_FOR_CUSTOMERS}")
    pinned = {key: value for key, value in arguments.items() if key != "customer"}
    if tool_name in _ALWAYS_OWN or "customer_id" in arguments or "customer" in arguments:
        pinned["customer_id"] = own
    if tool_name == "customers_find":  # only themselves, whatever was asked
        customer = scoped(Customer, ctx.organisation).filter(pk=own).first()
        pinned = {"query": customer.name if customer is not None else "-"}
    job_id = pinned.get("job_id")
    if job_id not in (None, "") and not _own_job(ctx, job_id):
        raise Refused(f"job {job_id} not found")
    return pinned


def _own_job(ctx: TurnContext, job_id: object) -> bool:
    if ctx.customer_id is None:
        return True
    try:
        return (
            scoped(Job, ctx.organisation)
            .filter(pk=int(str(job_id)), customer_id=ctx.customer_id)
            .exists()
        )
    except ValueError:
        return False


def screen(ctx: TurnContext, result: ToolResult) -> ToolResult:
    """The result without any other customer's record (a result about one: not found)."""
    own = ctx.customer_id
    if own is None:
        return result
    data, foreign = _clean(result.data, own, key="")
    if foreign:
        return failure("not found")
    # A typed value stays only when nothing was dropped (else it would still show the rest).
    value = result.value if data == result.data else None
    return ToolResult(ok=result.ok, data=data, summary=result.summary, error=result.error,
                      value=value)  # fmt: skip


def _foreign(item: Any, own: int, key: str) -> bool:
    if not isinstance(item, dict):
        return False
    owner = item.get("customer_id")
    if isinstance(owner, int) and owner != own:
        return True
    if key in _CUSTOMER_LISTS or key == "customer":
        ident = item.get("id")
        return isinstance(ident, int) and ident != own
    return False


def _clean(value: Any, own: int, key: str) -> tuple[Any, bool]:
    """(value without foreign records in its lists, whether a foreign record stands alone)."""
    if isinstance(value, dict):
        if _foreign(value, own, key):
            return None, True
        cleaned: dict[str, Any] = {}
        for name, item in value.items():
            kept, foreign = _clean(item, own, name)
            if foreign:
                return None, True
            cleaned[name] = kept
        return cleaned, False
    if isinstance(value, list):
        items = []
        for item in value:
            if _foreign(item, own, key):
                continue
            kept, foreign = _clean(item, own, "")
            if foreign:
                continue
            items.append(kept)
        return items, False
    return value, False
