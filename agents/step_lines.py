"""What one tool call did, in the operator's words, and the records it touched.

The panel's "what I did" block shows one line per tool call. The line is written here, when the
call ends, from the call's *structured* result (counts, ids, the held approval) through
translatable templates — one per tool and outcome, plurals through `ngettext` — in the turn's
language; it travels in the `tool_result` event, so the live view and a reload show the same
words. The tool's own `summary` stays what it is: a terse English line for the trace and the
models, never shown to an operator.

The records (`RecordRef`) come from the same structured result, never from generated text: the
answer's record chips are built from them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.utils.functional import Promise
from django.utils.translation import (
    gettext,
    gettext_lazy,
    gettext_noop,
    ngettext,
    ngettext_lazy,
    override,
    pgettext,
)

from agents.events import RecordRef
from agents.registry import ToolResult

# The kinds of record an answer can link to (copilot/answers.py maps each to its page).
RECORD_KINDS = ("job", "customer", "quote", "invoice", "ticket", "approval")
LIST_CAP = 5  # records taken from one list (a search's hits): the first few, not all of them
LIST_SUBJECTS = {"payment_status": "invoices"}  # a list that is the call's subject anyway


def _n(data: dict[str, Any], key: str) -> int:
    value = data.get(key)
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    return len(value) if isinstance(value, list | tuple) else 0


def _total(data: dict[str, Any], key: str) -> int:
    total = data.get("total")
    return total if isinstance(total, int) and not isinstance(total, bool) else _n(data, key)


def _name(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    if isinstance(value, dict):
        return str(value.get("name") or value.get("customer") or "")
    return str(value or "")


def _job_id(data: dict[str, Any]) -> object:
    job = data.get("job")
    return job.get("id") if isinstance(job, dict) else "?"


def _jobs_find(d: dict[str, Any]) -> str:
    n = _total(d, "jobs")
    return ngettext("Found %(count)s job", "Found %(count)s jobs", n) % {"count": n}


def _slots_find(d: dict[str, Any]) -> str:
    n = _n(d, "slots")
    if d.get("requested_range_full"):
        return ngettext(
            "That time is taken: found %(count)s other free slot",
            "That time is taken: found %(count)s other free slots",
            n,
        ) % {"count": n}
    return ngettext("Found %(count)s free slot", "Found %(count)s free slots", n) % {"count": n}


def _technicians(d: dict[str, Any]) -> str:
    n = _n(d, "technicians")
    return ngettext("Found %(count)s technician free", "Found %(count)s technicians free", n) % {
        "count": n
    }


def _customers_find(d: dict[str, Any]) -> str:
    n = _n(d, "customers")
    return ngettext("Found %(count)s customer", "Found %(count)s customers", n) % {"count": n}


def _customer_history(d: dict[str, Any]) -> str:
    jobs, invoices = _n(d, "jobs"), _n(d, "invoices")
    return gettext("Read %(customer)s’s file: %(jobs)s, %(invoices)s") % {
        "customer": _name(d, "customer"),
        "jobs": ngettext("%(count)s job", "%(count)s jobs", jobs) % {"count": jobs},
        "invoices": ngettext("%(count)s invoice", "%(count)s invoices", invoices)
        % {"count": invoices},
    }


def _payment_status(d: dict[str, Any]) -> str:
    n = _n(d, "invoices")
    if not n:
        return gettext("Checked payments: nothing owed")
    return ngettext(
        "Checked payments: %(count)s unpaid invoice, $ %(owed)s owed",
        "Checked payments: %(count)s unpaid invoices, $ %(owed)s owed",
        n,
    ) % {"count": n, "owed": d.get("total_owed", "")}


def _moves(d: dict[str, Any]) -> str:
    moved, stuck = _n(d, "moved"), _n(d, "not_moved")
    if d.get("dry_run"):
        line = ngettext(
            "Planned: %(count)s job would move", "Planned: %(count)s jobs would move", moved
        ) % {"count": moved}
    else:
        line = ngettext("Moved %(count)s job", "Moved %(count)s jobs", moved) % {"count": moved}
    if stuck:
        line += " · " + ngettext(
            "%(count)s could not be moved", "%(count)s could not be moved", stuck
        ) % {"count": stuck}
    return line


def _affected(d: dict[str, Any]) -> str:
    n = _n(d, "jobs")
    return ngettext("%(count)s job affected", "%(count)s jobs affected", n) % {"count": n}


def _absence(d: dict[str, Any]) -> str:
    n = _n(d, "affected_job_ids")
    return ngettext(
        "Recorded %(name)s’s absence: %(count)s job affected",
        "Recorded %(name)s’s absence: %(count)s jobs affected",
        n,
    ) % {"name": _name(d.get("absence") or {}, "technician"), "count": n}


def _counted(template: Promise, key: str) -> Callable[[dict[str, Any]], str]:
    """`template` is an `ngettext_lazy(one, other, "count")`: marked where it is written (so
    makemessages finds it), its plural chosen by the count when the line is written."""

    def line(d: dict[str, Any]) -> str:
        n = _total(d, key)
        return str(template % {"count": n})

    return line


def _quote(d: dict[str, Any], template: str) -> str:
    quote = d.get("quote") or {}
    return gettext(template) % {"number": quote.get("number", ""), "total": quote.get("total", "")}


def _invoice(d: dict[str, Any]) -> str:
    invoice = d.get("invoice") or {}
    return gettext("Issued invoice %(letter)s %(number)s for $ %(total)s") % {
        "letter": invoice.get("letter", ""),
        "number": invoice.get("number", ""),
        "total": invoice.get("total", ""),
    }


def _ticket_create(d: dict[str, Any]) -> str:
    ticket = d.get("ticket") or {}
    if ticket.get("priority") == "urgent":
        return gettext("Opened urgent ticket #%(id)s") % {"id": ticket.get("id", "")}
    return gettext("Opened ticket #%(id)s") % {"id": ticket.get("id", "")}


# Each tool's line when it succeeded, from its structured data. `gettext` runs when the line is
# written (under the turn's language), so the templates are marked where they are used.
DONE: dict[str, Callable[[dict[str, Any]], str]] = {
    "jobs_find": _jobs_find,
    "slots_find": _slots_find,
    "technicians_free": _technicians,
    "technicians_nearest": _technicians,
    "job_book": lambda d: gettext("Booked job #%(id)s") % {"id": _job_id(d)},
    "job_reschedule": lambda d: gettext("Moved job #%(id)s") % {"id": _job_id(d)},
    "job_cancel": lambda d: gettext("Cancelled job #%(id)s") % {"id": _job_id(d)},
    "customers_find": _customers_find,
    "customer_history": _customer_history,
    "customer_create": lambda d: (
        gettext("Created customer %(name)s") % {"name": _name(d, "customer")}
    ),
    "customer_update": lambda d: (
        gettext("Updated customer %(name)s") % {"name": _name(d, "customer")}
    ),
    "cuit_check": lambda d: (
        gettext("Checked the CUIT: valid")
        if d.get("valid")
        else gettext("Checked the CUIT: not valid")
    ),
    "price_list": _counted(
        ngettext_lazy("Read %(count)s price", "Read %(count)s prices", "count"), "items"
    ),
    "payment_status": _payment_status,
    "quote_find": lambda d: _quote(d, gettext_noop("Found quote %(number)s")),
    "quote_create": lambda d: _quote(d, gettext_noop("Made quote %(number)s for $ %(total)s")),
    "invoice_create": _invoice,
    "vehicles_available": _counted(
        ngettext_lazy("Found %(count)s vehicle free", "Found %(count)s vehicles free", "count"),
        "available",
    ),
    "technician_jobs_affected": _affected,
    "vehicle_assign": lambda d: (
        gettext("Assigned vehicle %(plate)s to job #%(id)s")
        % {"plate": (d.get("vehicle") or {}).get("plate", ""), "id": _job_id(d)}
    ),
    "technician_absence_record": _absence,
    "jobs_redistribute": _moves,
    "jobs_bulk_reschedule": _moves,
    "technician_dispatch": lambda d: (
        gettext("Sent %(name)s to job #%(id)s") % {"name": _name(d, "technician"), "id": _job_id(d)}
    ),
    "org_info": lambda d: gettext("Read the company’s details and hours"),
    "maintenance_due_list": _counted(
        ngettext_lazy(
            "%(count)s piece of equipment due for service",
            "%(count)s pieces of equipment due for service",
            "count",
        ),
        "equipment",
    ),
    "follow_up_list": _counted(
        ngettext_lazy("%(count)s job to follow up", "%(count)s jobs to follow up", "count"), "jobs"
    ),
    "seasonal_targets": _counted(
        ngettext_lazy(
            "%(count)s customer for the season’s campaign",
            "%(count)s customers for the season’s campaign",
            "count",
        ),
        "equipment",
    ),
    "follow_up_record": lambda d: (
        gettext("Recorded the follow-up of job #%(id)s") % {"id": d.get("job_id", "")}
    ),
    "ticket_create": _ticket_create,
    "ticket_find": lambda d: (
        gettext("Found ticket #%(id)s") % {"id": (d.get("ticket") or {}).get("id", "")}
    ),
}

# Each tool's line when it could not do its work (the reason is in the trace, for supervisors).
FAILED: dict[str, Promise] = {
    "jobs_find": gettext_lazy("Could not find that job"),
    "slots_find": gettext_lazy("Could not look for free slots"),
    "technicians_free": gettext_lazy("Could not look for free technicians"),
    "technicians_nearest": gettext_lazy("Could not look for the nearest technicians"),
    "job_book": gettext_lazy("Could not book the job"),
    "job_reschedule": gettext_lazy("Could not move the job"),
    "job_cancel": gettext_lazy("Could not cancel the job"),
    "customers_find": gettext_lazy("Could not find that customer"),
    "customer_history": gettext_lazy("Could not read the customer’s file"),
    "customer_create": gettext_lazy("Could not create the customer"),
    "customer_update": gettext_lazy("Could not update the customer"),
    "cuit_check": gettext_lazy("Could not check the CUIT"),
    "price_list": gettext_lazy("Could not read the price list"),
    "payment_status": gettext_lazy("Could not check the payments"),
    "quote_find": gettext_lazy("Could not find that quote"),
    "quote_create": gettext_lazy("Could not make the quote"),
    "invoice_create": gettext_lazy("Could not issue the invoice"),
    "vehicles_available": gettext_lazy("Could not look for free vehicles"),
    "technician_jobs_affected": gettext_lazy("Could not find the affected jobs"),
    "vehicle_assign": gettext_lazy("Could not assign a vehicle"),
    "technician_absence_record": gettext_lazy("Could not record the absence"),
    "jobs_redistribute": gettext_lazy("Could not redistribute the jobs"),
    "jobs_bulk_reschedule": gettext_lazy("Could not move the jobs"),
    "technician_dispatch": gettext_lazy("Could not send a technician"),
    "org_info": gettext_lazy("Could not read the company’s details"),
    "maintenance_due_list": gettext_lazy("Could not list the equipment due for service"),
    "follow_up_list": gettext_lazy("Could not list the jobs to follow up"),
    "seasonal_targets": gettext_lazy("Could not list the season’s campaign"),
    "follow_up_record": gettext_lazy("Could not record the follow-up"),
    "ticket_create": gettext_lazy("Could not open the ticket"),
    "ticket_find": gettext_lazy("Could not find that ticket"),
}

NOT_ENABLED_PREFIX = "tool "  # Runner.call's refusal: "tool <name> not enabled"


def tool_line(tool: str, result: ToolResult, language: str) -> str:
    """The call's line in `language` ("es" or "en")."""
    with override("en" if language == "en" else "es-ar"):
        return _line(tool, result)


def _line(tool: str, result: ToolResult) -> str:
    data = result.data if isinstance(result.data, dict) else {}
    if result.ok and data.get("held"):
        return gettext("Asked a manager to approve it (#%(id)s)") % {
            "id": data.get("pending_approval_id", "")
        }
    if result.ok:
        write = DONE.get(tool)
        try:
            return write(data) if write else pgettext("tool step", "Done")
        except (TypeError, ValueError, AttributeError):  # an odd shape: say it ran, no more
            return pgettext("tool step", "Done")
    if result.error.startswith(NOT_ENABLED_PREFIX) and result.error.endswith("not enabled"):
        return gettext("This agent may not do that here (a tool not enabled for it)")
    if data.get("changed"):
        return gettext("Not done: the records changed since it was asked for")
    return str(FAILED.get(tool, gettext_lazy("Could not do it")))


# --- the records a result names ------------------------------------------------------------


def _ref(kind: str, item: object) -> RecordRef | None:
    if not isinstance(item, dict):
        return None
    pk = item.get("id")
    if not isinstance(pk, int) or isinstance(pk, bool):
        return None
    return {"kind": kind, "id": pk, "label": _label(kind, item)}


def _label(kind: str, item: dict[str, Any]) -> str:
    if kind == "customer":
        return str(item.get("name") or f"#{item['id']}")
    if kind == "quote" and item.get("number"):
        return str(item["number"])
    if kind == "invoice" and item.get("number"):
        return f"{item.get('letter', '')} {item['number']}".strip()
    return f"#{item['id']}"


def _job_ids(ids: Iterable[object]) -> list[RecordRef]:
    return [
        {"kind": "job", "id": pk, "label": f"#{pk}"}
        for pk in ids
        if isinstance(pk, int) and not isinstance(pk, bool)
    ]


def records_of(tool: str, result: ToolResult) -> list[RecordRef]:
    """The records a call's structured result names: the one it acted on first, then the first
    few of any list it found. Each (kind, id) once."""
    data = result.data if isinstance(result.data, dict) else {}
    found: list[RecordRef | None] = []
    if result.ok and isinstance(data.get("pending_approval_id"), int):
        pk = data["pending_approval_id"]
        found.append({"kind": "approval", "id": pk, "label": f"#{pk}"})
    for kind in ("job", "ticket", "quote", "invoice", "customer"):
        found.append(_ref(kind, data.get(kind)))
    # A list is what the call found (a search, the unpaid invoices) only when it names no record
    # of its own or the list is its subject; a customer's file lists their history, which the
    # answer is not about.
    subject_list = LIST_SUBJECTS.get(tool)
    for key, kind in (("jobs", "job"), ("customers", "customer"), ("invoices", "invoice")):
        items = data.get(key)
        if isinstance(items, list) and (not any(found) or key == subject_list):
            found.extend(_ref(kind, item) for item in items[:LIST_CAP])
    moved = [m.get("job_id") for m in data.get("moved") or [] if isinstance(m, dict)]
    found.extend(_job_ids(moved[:LIST_CAP]))
    found.extend(_job_ids(list(data.get("affected_job_ids") or [])[:LIST_CAP]))
    unique: dict[tuple[str, int], RecordRef] = {}
    for ref in found:
        if ref is not None:
            unique.setdefault((ref["kind"], ref["id"]), ref)
    return list(unique.values())
