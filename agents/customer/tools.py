"""Tools of the customer agent."""

from __future__ import annotations

from agents.payloads import (
    amount,
    customer_data,
    equipment_data,
    invoice_data,
    job_data,
)
from agents.registry import (
    Category,
    ToolContext,
    ToolResult,
    get_scoped,
    success,
    tool,
)
from business.cuit import cuit_digits, cuit_problem, expected_check_digit, format_cuit
from business.models import Customer, Job
from business.selectors import customer_file

HISTORY_LIMIT = 20


@tool(
    category=Category.SAFE,
    description=(
        "Check an Argentine CUIT/CUIL: 11 digits, a known type prefix (20, 23, 24, 27 persons; "
        "30, 33, 34 companies) and the mod-11 check digit. Says why it is invalid and which "
        "check digit was expected."
    ),
    param_docs={"cuit": "The CUIT as written, with or without dashes (e.g. 20-12345678-6)."},
)
def cuit_check(ctx: ToolContext, *, cuit: str) -> ToolResult:
    digits = cuit_digits(cuit)
    problem = cuit_problem(cuit)
    expected = expected_check_digit(cuit)
    given = int(digits[10]) if problem == "check_digit" else None
    data = {
        "cuit": format_cuit(cuit),
        "valid": problem is None,
        "problem": problem,
        "length": len(digits),
        "prefix": digits[:2] if digits.isdigit() else None,
        "kind": _kind(digits[:2]) if problem is None else None,
        "given_check_digit": given,
        # None with problem "check_digit" means no digit fits this base: AFIP changes the prefix.
        "expected_check_digit": expected if problem == "check_digit" else None,
    }
    if problem is None:
        return success(f"{data['cuit']} valid", **data)
    detail = f" (expected {expected})" if problem == "check_digit" and expected is not None else ""
    return success(f"{data['cuit']} invalid: {problem}{detail}", **data)


def _kind(prefix: str) -> str:
    return "company" if prefix.startswith("3") else "person"


@tool(
    category=Category.SAFE,
    description=(
        "A customer's record and history: contact data, recent and upcoming jobs, equipment "
        "(with the next service date), invoices and the total balance owed."
    ),
    param_docs={"customer_id": "The customer's id."},
)
def customer_history(ctx: ToolContext, *, customer_id: int) -> ToolResult:
    customer = get_scoped(Customer, ctx, customer_id, "customer")
    file = customer_file(customer, recent_jobs=HISTORY_LIMIT)
    upcoming = [
        job.pk
        for job in file.jobs
        if job.status in Job.OPEN_STATUSES and job.scheduled_start >= ctx.now
    ]
    return success(
        f"customer #{customer.pk}: {len(file.jobs)} jobs, {len(file.invoices)} invoices",
        customer=customer_data(customer),
        jobs=[job_data(ctx, job) for job in file.jobs],
        upcoming_job_ids=upcoming,
        equipment=[equipment_data(item) for item in file.equipment],
        invoices=[invoice_data(row) for row in file.invoices[:HISTORY_LIMIT]],
        balance=amount(file.balance),
    )
