"""Turning what a tool was given (an id, or a name as the operator wrote it) into one row of the
organisation — or a clear "not found" / "ambiguous, here are the candidates" failure."""

from __future__ import annotations

from agents.context import TurnContext
from agents.payloads import customer_data, technician_data
from agents.registry import ToolError, get_scoped
from business.models import Customer, Technician
from business.selectors import customers_search, scoped
from common.text import fold

MAX_CANDIDATES = 5


def resolve_customer(ctx: TurnContext, customer_id: int | None, name: str | None) -> Customer:
    if customer_id is not None:
        return get_scoped(Customer, ctx, customer_id, "customer")
    if not name:
        raise ToolError("give customer_id or customer")
    matches = customers_search(ctx.organisation, name, limit=MAX_CANDIDATES + 1)
    return _one(matches, name, "customer", [customer_data(c) for c in matches])


def resolve_technician(ctx: TurnContext, technician_id: int | None, name: str | None) -> Technician:
    if technician_id is not None:
        return get_scoped(Technician, ctx, technician_id, "technician")
    if not name:
        raise ToolError("give technician_id or technician")
    wanted = fold(name).split()
    technicians = scoped(Technician, ctx.organisation).filter(active=True)
    # Every word given must start a word of the name: "carlos", "gomez", "Carlos G." all match.
    matches = [
        t
        for t in technicians
        if all(any(w.startswith(part.rstrip(".")) for w in fold(t.name).split()) for part in wanted)
    ]
    return _one(matches, name, "technician", [technician_data(t) for t in matches])


def _one[T](matches: list[T], name: str, label: str, candidates: list[object]) -> T:
    if not matches:
        raise ToolError(f"{label} '{name}' not found")
    if len(matches) > 1:
        exact = [m for m in matches if fold(str(m)) == fold(name)]
        if len(exact) == 1:
            return exact[0]
        raise ToolError(
            f"{label} '{name}' is ambiguous ({len(matches)} matches)",
            candidates=candidates[:MAX_CANDIDATES],
        )
    return matches[0]
