"""Tools of the customer agent."""

from __future__ import annotations

from typing import Any, Literal

from agents.context import TurnContext
from agents.lookups import resolve_customer
from agents.payloads import (
    customer_data,
    decimal_str,
    equipment_data,
    invoice_data,
    job_data,
)
from agents.registry import Category, Preview, ToolError, ToolResult, previews, success, tool
from business import services
from business.cuit import cuit_digits, cuit_problem, expected_check_digit, format_cuit
from business.models import Customer, Job
from business.selectors import customer_file, customers_search

HISTORY_LIMIT = 20
FIND_LIMIT = 10
CustomerKind = Literal["person", "company"]


@tool(
    category=Category.SAFE,
    description=(
        "Check an Argentine CUIT/CUIL: 11 digits, a known type prefix (20, 23, 24, 27 persons; "
        "30, 33, 34 companies) and the mod-11 check digit. Says why it is invalid and which "
        "check digit was expected."
    ),
    param_docs={"cuit": "The CUIT as written, with or without dashes (e.g. 20-12345678-6)."},
)
def cuit_check(ctx: TurnContext, *, cuit: str) -> ToolResult:
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
    param_docs={
        "customer_id": "The customer's id.",
        "customer": "The customer's name (when the id is not known).",
    },
)
def customer_history(
    ctx: TurnContext, *, customer_id: int | None = None, customer: str | None = None
) -> ToolResult:
    customer_row = resolve_customer(ctx, customer_id, customer)
    return _history(ctx, customer_row)


def _history(ctx: TurnContext, customer: Customer) -> ToolResult:
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
        balance=decimal_str(file.balance),
    )


@tool(
    category=Category.SAFE,
    description=(
        "Find customers by name, phone, CUIT, email or street (any part of it). Returns their "
        "ids and contact data."
    ),
    param_docs={"query": "What to look for, e.g. 'Pérez', '4567-8901' or '20-12345678-6'."},
)
def customers_find(ctx: TurnContext, *, query: str) -> ToolResult:
    found = customers_search(ctx.organisation, query, limit=FIND_LIMIT + 1)
    shown = found[:FIND_LIMIT]
    return success(
        f"{len(shown)} customers",
        customers=[customer_data(c) for c in shown],
        truncated=len(found) > len(shown),
    )


# Contact fields shared by create and update (their docs, once).
_CONTACT_DOCS = {
    "name": "Full name or company name.",
    "kind": "A person or a company.",
    "cuit": "CUIT/CUIL, with or without dashes.",
    "phone": "Phone, e.g. 11 4567-8901.",
    "phone_alt": "Another phone.",
    "email": "Email address.",
    "street": "Street and number of the address.",
    "unit": "Floor / unit.",
    "city": "City or locality, e.g. Lanús.",
    "zone": "Working zone (CABA, Norte, Sur, Oeste, La Plata); default from the city.",
    "notes": "Free notes about the customer.",
}


def _given(**fields: Any) -> dict[str, Any]:
    """Only the fields the model actually sent (None means "not given"; "" clears)."""
    return {key: value for key, value in fields.items() if value is not None}


@tool(
    category=Category.SUGGEST,
    description=(
        "Register a new customer (name required; phone, address, CUIT optional). The answer "
        "lists existing customers with the same name, in case it is a duplicate."
    ),
    param_docs=_CONTACT_DOCS,
)
def customer_create(
    ctx: TurnContext,
    *,
    name: str,
    kind: CustomerKind | None = None,
    cuit: str | None = None,
    phone: str | None = None,
    phone_alt: str | None = None,
    email: str | None = None,
    street: str | None = None,
    unit: str | None = None,
    city: str | None = None,
    zone: str | None = None,
    notes: str | None = None,
) -> ToolResult:
    namesakes = [customer_data(c) for c in customers_search(ctx.organisation, name, limit=5)]
    fields = _given(
        kind=kind, cuit=cuit, phone=phone, phone_alt=phone_alt, email=email, street=street,
        unit=unit, city=city, zone=zone, notes=notes,
    )  # fmt: skip
    customer = services.customer_create(
        organisation=ctx.organisation, name=name, actor=ctx.user, **fields
    )
    return success(
        f"customer #{customer.pk} created",
        customer=customer_data(customer),
        possible_duplicates=namesakes,
    )


@previews(customer_create)
def _customer_create_preview(ctx: TurnContext, *, name: str, **fields: Any) -> Preview:
    """Held only when an agent's approval rules ask for it; relies on no record (a namesake
    created meanwhile does not stop it: the answer lists possible duplicates)."""
    where = ", ".join(str(fields[key]) for key in ("street", "city", "zone") if fields.get(key))
    extra = f" ({where})" if where else ""
    return Preview(
        summary_es=f"Dar de alta al cliente {name}{extra}",
        summary_en=f"Register the customer {name}{extra}",
    )


@tool(
    category=Category.SUGGEST,
    description=(
        "Change a customer's data: only the fields given change; an empty string clears an "
        "optional field. Address fields change the primary address."
    ),
    param_docs={
        "customer_id": "The customer to change.",
        "customer": "The customer to change, by name (when the id is not known).",
        **_CONTACT_DOCS,
    },
)
def customer_update(
    ctx: TurnContext,
    *,
    customer_id: int | None = None,
    customer: str | None = None,
    name: str | None = None,
    kind: CustomerKind | None = None,
    cuit: str | None = None,
    phone: str | None = None,
    phone_alt: str | None = None,
    email: str | None = None,
    street: str | None = None,
    unit: str | None = None,
    city: str | None = None,
    zone: str | None = None,
    notes: str | None = None,
) -> ToolResult:
    row = resolve_customer(ctx, customer_id, customer)
    fields = _given(
        name=name, kind=kind, cuit=cuit, phone=phone, phone_alt=phone_alt, email=email,
        street=street, unit=unit, city=city, zone=zone, notes=notes,
    )  # fmt: skip
    if not fields:
        raise ToolError("nothing to change: give at least one field")
    before = customer_data(row)
    services.customer_update(organisation=ctx.organisation, customer=row, actor=ctx.user, **fields)
    row.refresh_from_db()
    return success(
        f"customer #{row.pk} updated",
        customer=customer_data(row),
        before=before,
        changed=sorted(fields),
    )
