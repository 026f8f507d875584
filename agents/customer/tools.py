"""Tools of the customer agent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from django.utils.translation import gettext_lazy as _
from django.utils.translation import gettext_noop

from agents.context import TurnContext
from agents.lookups import resolve_customer
from agents.payloads import (
    CustomerFile,
    CustomerRow,
    CustomersFound,
    EquipmentRow,
    cents,
    customer_data,
    customer_row,
    equipment_row,
    invoice_record,
    job_row,
)
from agents.registry import (
    Category,
    Preview,
    ToolError,
    ToolResult,
    done,
    failure,
    get_scoped,
    previews,
    tool,
)
from agents.results import Result
from business import services
from business.cuit import cuit_digits, cuit_problem, expected_check_digit, format_cuit
from business.duplicates import customer_duplicates
from business.models import Customer, Job
from business.selectors import customer_file, customers_at_address, customers_search
from common.wording import say

HISTORY_LIMIT = 20
FIND_LIMIT = 10
DUPLICATE = "possible_duplicate"  # the code of a create refused for a likely duplicate
# Why a customer on file looks like the one to register, as the model reads it.
_WHY = {
    "name": "similar name", "phone": "same phone", "cuit": "same CUIT", "address": "same address"
}  # fmt: skip
CustomerKind = Literal["person", "company"]


@dataclass(frozen=True)
class CuitCheck(Result):
    """`cuit_check`: whether a CUIT/CUIL is valid, and why not."""

    cuit: str  # formatted with dashes when it has 11 digits
    valid: bool
    problem: str | None  # length, prefix, check_digit…
    length: int
    prefix: str | None
    kind: str | None  # person or company, when valid
    given_check_digit: int | None
    # None with problem "check_digit" means no digit fits this base: AFIP changes the prefix.
    expected_check_digit: int | None


@dataclass(frozen=True)
class CustomerCreated(Result):
    customer: CustomerRow


@dataclass(frozen=True)
class CustomerUpdated(Result):
    customer: CustomerRow
    before: CustomerRow
    changed: tuple[str, ...]  # the fields given, sorted


@tool(
    category=Category.SAFE,
    description=gettext_noop(
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
    check = CuitCheck(
        cuit=format_cuit(cuit), valid=problem is None, problem=problem, length=len(digits),
        prefix=digits[:2] if digits.isdigit() else None,
        kind=_kind(digits[:2]) if problem is None else None, given_check_digit=given,
        expected_check_digit=expected if problem == "check_digit" else None,
    )  # fmt: skip
    if problem is None:
        return done(f"{check.cuit} valid", check)
    detail = f" (expected {expected})" if problem == "check_digit" and expected is not None else ""
    return done(f"{check.cuit} invalid: {problem}{detail}", check)


def _kind(prefix: str) -> str:
    return "company" if prefix.startswith("3") else "person"


@tool(
    category=Category.SAFE,
    description=gettext_noop(
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
    customer.organisation = ctx.organisation  # resolved within it: no second read of the row
    file = customer_file(customer, recent_jobs=HISTORY_LIMIT)
    upcoming = tuple(
        job.pk
        for job in file.jobs
        if job.status in Job.OPEN_STATUSES and job.scheduled_start >= ctx.now
    )
    return done(
        f"customer #{customer.pk}: {len(file.jobs)} jobs, {len(file.invoices)} invoices",
        CustomerFile(
            customer=customer_row(customer),
            jobs=tuple(job_row(ctx, job) for job in file.jobs),
            upcoming_job_ids=upcoming,
            equipment=tuple(equipment_row(item) for item in file.equipment),
            invoices=tuple(invoice_record(row) for row in file.invoices[:HISTORY_LIMIT]),
            balance=cents(file.balance),
        ),
    )


@tool(
    category=Category.SAFE,
    description=gettext_noop(
        "Find customers by name, phone, CUIT, email or street (any part of it). Returns their "
        "ids and contact data."
    ),
    param_docs={
        "query": "What to look for, e.g. 'Pérez', '4567-8901' or '20-12345678-6'.",
        "address": "Instead of a query: the customers at this street address ('Cabildo 2150').",
    },
)
def customers_find(ctx: TurnContext, *, query: str = "", address: str = "") -> ToolResult:
    if not query.strip() and not address.strip():
        raise ToolError("give a query or an address")
    found = (
        customers_at_address(ctx.organisation, address, limit=FIND_LIMIT + 1)
        if address.strip()
        else customers_search(ctx.organisation, query, limit=FIND_LIMIT + 1)
    )
    shown = found[:FIND_LIMIT]
    return done(
        f"{len(shown)} customers",
        CustomersFound(
            customers=tuple(customer_row(c) for c in shown), truncated=len(found) > len(shown)
        ),
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
    description=gettext_noop(
        "Register a new customer (name required; phone, address, CUIT optional). It first looks "
        "for likely duplicates (a similar name, the same phone, CUIT or address): when there are "
        "any it creates nothing and lists them, so the operator can say whether it is one of "
        "them; call it again with confirmed_new=true only after they said it is a new one."
    ),
    param_docs={
        **_CONTACT_DOCS,
        "confirmed_new": "True only after the operator confirmed it is a new customer, not one "
        "of the likely duplicates an earlier call listed.",
    },
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
    confirmed_new: bool = False,
) -> ToolResult:
    fields = _given(
        kind=kind, cuit=cuit, phone=phone, phone_alt=phone_alt, email=email, street=street,
        unit=unit, city=city, zone=zone, notes=notes,
    )  # fmt: skip
    if not confirmed_new:
        refusal = _duplicates_refusal(ctx, name, fields)
        if refusal is not None:
            return failure(str(refusal), **refusal.data)
    customer = services.customer_create(
        organisation=ctx.organisation, name=name, actor=ctx.user, **fields
    )
    return done(f"customer #{customer.pk} created", CustomerCreated(customer_row(customer)))


def _duplicates_refusal(ctx: TurnContext, name: str, fields: dict[str, Any]) -> ToolError | None:
    """Why the customer is not created: the likely duplicates already on file (None: none)."""

    def given(key: str) -> str:
        return str(fields.get(key) or "")

    likely = customer_duplicates(
        ctx.organisation, name=name, phone=given("phone"), cuit=given("cuit"),
        street=given("street"), unit=given("unit"), city=given("city"),
    )  # fmt: skip
    if not likely:
        return None
    listing = "; ".join(
        f"#{item.record.pk} {item.record.name} ({', '.join(_WHY[r] for r in item.reasons)})"
        for item in likely
    )
    return ToolError(
        f"possible duplicate, nothing created: {listing}. Ask the operator whether the customer "
        "is one of these. If it is, work with that customer's id and do not create another; "
        "if they say it is a new customer, call customer_create again with confirmed_new=true.",
        code=DUPLICATE,
        duplicates=[
            {**customer_data(item.record), "matched": list(item.reasons)} for item in likely
        ],
    )


@previews(customer_create)
def _customer_create_preview(
    ctx: TurnContext, *, name: str, confirmed_new: bool = False, **fields: Any
) -> Preview:
    """Held only when an agent's approval rules ask for it. A likely duplicate stops it before
    any manager sees it, as it stops the call itself; one created meanwhile stops the approved
    call when it runs."""
    if not confirmed_new and (refusal := _duplicates_refusal(ctx, name, fields)) is not None:
        raise refusal
    where = ", ".join(str(fields[key]) for key in ("street", "city", "zone") if fields.get(key))
    extra = f" ({where})" if where else ""
    summary = _("Register the customer %(name)s%(extra)s")
    return Preview(
        summary_es=say("es", summary, name=name, extra=extra),
        summary_en=say("en", summary, name=name, extra=extra),
    )


@tool(
    category=Category.SUGGEST,
    description=gettext_noop(
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
    before = customer_row(row)
    services.customer_update(organisation=ctx.organisation, customer=row, actor=ctx.user, **fields)
    row.refresh_from_db()
    return done(
        f"customer #{row.pk} updated",
        CustomerUpdated(customer=customer_row(row), before=before, changed=tuple(sorted(fields))),
    )


@dataclass(frozen=True)
class EquipmentSeen(Result):
    """`equipment_record`: the customer's equipment matched or recorded, None when it cannot
    tell which."""

    equipment: EquipmentRow | None


@tool(
    category=Category.SUGGEST,
    description=gettext_noop(
        "The customer's equipment a photo or their words describe: their one of that brand and "
        "model (a blank brand or model filled in), else a new one when a brand or a model is "
        "given; none when it cannot tell which (nothing is invented)."
    ),
    param_docs={
        "customer_id": "The customer whose equipment it is.",
        "kind": "What it is (split, boiler…).",
        "brand": "The brand.",
        "model": "The model.",
        "capacity": "Its capacity (3000 frigorías…).",
    },
)
def equipment_record(
    ctx: TurnContext, *, customer_id: int, kind: str | None = None, brand: str | None = None,
    model: str | None = None, capacity: str | None = None,
) -> ToolResult:  # fmt: skip
    customer = get_scoped(Customer, ctx, customer_id, "customer")
    equipment = services.equipment_from_reading(
        organisation=ctx.organisation, customer=customer, kind=kind or "", brand=brand or "",
        model=model or "", capacity=capacity or "",
    )  # fmt: skip
    if equipment is None:
        return done(f"no equipment of customer #{customer.pk} told apart", EquipmentSeen(None))
    return done(f"equipment #{equipment.pk}", EquipmentSeen(equipment_row(equipment)))
