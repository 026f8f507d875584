"""The JSON shapes tools return for business rows: ids, ISO dates in the org's timezone, money as
strings. One place, so every agent describes a job (or a customer…) the same way."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.urls import reverse

from agents.context import TurnContext
from agents.results import Result
from business.models import (
    Address,
    Customer,
    Equipment,
    Job,
    PriceItem,
    Technician,
    Vehicle,
)
from business.scheduling import zone_distance
from business.selectors import InvoiceRow


def cents(value: Decimal) -> Decimal:
    """Money as the tools report it: to the cent."""
    return value.quantize(Decimal("0.01"))


def decimal_str(value: Decimal) -> str:
    return f"{cents(value)}"


def local_iso(ctx: TurnContext, moment: datetime.datetime | None) -> str | None:
    if moment is None:
        return None
    return ctx.local(moment).isoformat(timespec="minutes")


def address_data(address: Address | None) -> dict[str, Any] | None:
    if address is None:
        return None
    return {"id": address.pk, "text": str(address), "zone": address.zone}


@dataclass(frozen=True)
class CustomerRow(Result):
    """A customer as the tools describe one (a typed result's part, agents/results.py)."""

    id: int
    name: str
    kind: str
    cuit: str
    phone: str
    email: str
    address: str  # the primary address; "" when there is none
    zone: str


def customer_row(customer: Customer) -> CustomerRow:
    address = customer.primary_address
    return CustomerRow(
        id=customer.pk, name=customer.name, kind=customer.kind, cuit=customer.cuit,
        phone=customer.phone, email=customer.email, address=str(address) if address else "",
        zone=address.zone if address else "",
    )  # fmt: skip


def customer_data(customer: Customer) -> dict[str, Any]:
    return customer_row(customer).as_json()


@dataclass(frozen=True)
class TechnicianRow(Result):
    id: int
    name: str
    skills: tuple[str, ...]
    zone: str
    phone: str
    zone_distance: int | None = None  # hops from the zone asked about; None: none was asked

    def as_json(self) -> dict[str, Any]:
        data = super().as_json()
        if self.zone_distance is None:  # the dicts had no key for it, not a null
            del data["zone_distance"]
        return data


def technician_row(technician: Technician, near: str | None = None) -> TechnicianRow:
    """`near`: a zone to measure the distance from (hops between zones, 0 = same zone)."""
    return TechnicianRow(
        id=technician.pk, name=technician.name, skills=tuple(technician.skills),
        zone=technician.zone, phone=technician.phone,
        zone_distance=zone_distance(near, technician.zone) if near else None,
    )  # fmt: skip


def technician_data(technician: Technician, near: str | None = None) -> dict[str, Any]:
    return technician_row(technician, near).as_json()


@dataclass(frozen=True)
class VehicleRow(Result):
    id: int
    plate: str
    kind: str
    description: str
    technician_id: int | None  # its usual driver


def vehicle_row(vehicle: Vehicle) -> VehicleRow:
    return VehicleRow(
        id=vehicle.pk, plate=vehicle.plate, kind=vehicle.kind, description=vehicle.description,
        technician_id=vehicle.technician_id,
    )  # fmt: skip


def vehicle_data(vehicle: Vehicle) -> dict[str, Any]:
    return vehicle_row(vehicle).as_json()


@dataclass(frozen=True)
class JobRow(Result):
    """A job (visit) as the tools describe one; its moments on the organisation's clock."""

    id: int
    customer_id: int
    customer: str
    service: str
    skill: str
    status: str
    start: datetime.datetime
    end: datetime.datetime
    technician_id: int | None
    technician: str | None
    vehicle_id: int | None
    vehicle: str | None  # the plate
    address: str
    zone: str


def job_row(ctx: TurnContext, job: Job) -> JobRow:
    return JobRow(
        id=job.pk, customer_id=job.customer_id, customer=job.customer.name, service=job.service,
        skill=job.skill, status=job.status, start=ctx.local(job.scheduled_start),
        end=ctx.local(job.scheduled_end), technician_id=job.technician_id,
        technician=job.technician.name if job.technician else None, vehicle_id=job.vehicle_id,
        vehicle=job.vehicle.plate if job.vehicle else None,
        address=str(job.address) if job.address else "",
        zone=job.address.zone if job.address else "",
    )  # fmt: skip


def job_data(ctx: TurnContext, job: Job) -> dict[str, Any]:
    return job_row(ctx, job).as_json()


@dataclass(frozen=True)
class JobsFound(Result):
    """`jobs_find` (the scheduling agent's, read by other agents too)."""

    jobs: tuple[JobRow, ...]  # at most its limit
    total: int
    truncated: bool


@dataclass(frozen=True)
class Slot(Result):
    """A free slot of `slots_find`: when, and the technician who is free then."""

    start: datetime.datetime  # on the organisation's clock
    end: datetime.datetime
    technician_id: int
    technician: str
    technician_zone: str
    zone_distance: int | None  # hops from the zone asked about
    # The other technicians free for the same start and length, best-ranked first.
    also_free: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Slot:
        """A slot from its JSON: a refusal's alternatives, which are failure data."""
        return cls(
            start=datetime.datetime.fromisoformat(data["start"]),
            end=datetime.datetime.fromisoformat(data["end"]),
            technician_id=data["technician_id"], technician=data["technician"],
            technician_zone=data["technician_zone"], zone_distance=data["zone_distance"],
            also_free=tuple(data.get("also_free") or ()),
        )  # fmt: skip


@dataclass(frozen=True)
class NearestTechnicians(Result):
    """`technicians_nearest` (the fleet agent's, read by the escalation agent too)."""

    technicians: tuple[TechnicianRow, ...]  # nearest to the zone first
    zone: str | None
    skill: str | None
    at: datetime.datetime


@dataclass(frozen=True)
class EquipmentRow(Result):
    """One piece of a customer's equipment (a typed result's part, agents/results.py)."""

    id: int
    customer_id: int
    kind: str
    skill: str
    brand: str
    model: str
    installed_on: datetime.date | None
    last_service_on: datetime.date | None
    next_service_on: datetime.date | None

    @property
    def label(self) -> str:
        """ "Split Surrey 619PHCD": what it is, as far as it is known."""
        return " ".join(part for part in (self.kind, self.brand, self.model) if part)


def equipment_row(item: Equipment) -> EquipmentRow:
    return EquipmentRow(
        id=item.pk, customer_id=item.customer_id, kind=item.kind, skill=item.skill,
        brand=item.brand, model=item.model, installed_on=item.installed_on,
        last_service_on=item.last_service_on, next_service_on=item.next_service_on,
    )  # fmt: skip


def equipment_data(item: Equipment) -> dict[str, Any]:
    return equipment_row(item).as_json()


@dataclass(frozen=True)
class InvoiceRecord(Result):
    """One invoice with what is paid and owed of it (a typed result's part). Not
    business.selectors.InvoiceRow, the query's row it is made from."""

    id: int
    number: str
    letter: str
    status: str
    state: str  # unpaid, partial, paid…
    customer_id: int
    job_id: int | None
    issued_on: datetime.date
    due_on: datetime.date | None
    total: Decimal
    paid: Decimal
    balance: Decimal
    pdf: str

    @property
    def label(self) -> str:
        """ "A 0001-00000012": the invoice as printed."""
        return f"{self.letter} {self.number}"


def invoice_fields(row: InvoiceRow) -> dict[str, Any]:
    """An `InvoiceRecord`'s fields, for it and for the kinds that add to it."""
    invoice = row.invoice
    return {
        "id": invoice.pk, "number": invoice.number, "letter": invoice.letter,
        "status": invoice.status, "state": row.state, "customer_id": invoice.customer_id,
        "job_id": invoice.job_id, "issued_on": invoice.issued_on, "due_on": invoice.due_on,
        "total": cents(row.total), "paid": cents(row.paid), "balance": cents(row.balance),
        "pdf": reverse("invoice_pdf", args=[invoice.pk]),
    }  # fmt: skip


def invoice_record(row: InvoiceRow) -> InvoiceRecord:
    return InvoiceRecord(**invoice_fields(row))


def invoice_data(row: InvoiceRow) -> dict[str, Any]:
    return invoice_record(row).as_json()


@dataclass(frozen=True)
class PriceItemRow(Result):
    """One item of the price list, named in the reader's language; its price before IVA."""

    id: int
    code: str
    name: str
    category: str
    unit_price: Decimal
    iva_rate: Decimal  # 21, 10.5


def price_item_row(item: PriceItem, language: str = "es") -> PriceItemRow:
    name = item.name_en if language == "en" and item.name_en else item.name
    return PriceItemRow(
        id=item.pk, code=item.code, name=name, category=item.category,
        unit_price=cents(item.unit_price), iva_rate=item.iva_rate.normalize(),
    )  # fmt: skip


def price_item_data(item: PriceItem, language: str = "es") -> dict[str, Any]:
    return price_item_row(item, language).as_json()


# Typed results of tools that more than one agent reads (sub-agent packages import no other
# sub-agent's package): customers_find and customer_history (customer agent; escalation and
# scheduling read them too), price_list (financial agent's module; the general agent's too).


@dataclass(frozen=True)
class CustomersFound(Result):
    """`customers_find`: the first few customers that match, and whether there were more."""

    customers: tuple[CustomerRow, ...]
    truncated: bool


@dataclass(frozen=True)
class CustomerFile(Result):
    """`customer_history`: a customer's record and history."""

    customer: CustomerRow
    jobs: tuple[JobRow, ...]  # newest first
    upcoming_job_ids: tuple[int, ...]
    equipment: tuple[EquipmentRow, ...]
    invoices: tuple[InvoiceRecord, ...]
    balance: Decimal  # owed over all their invoices


@dataclass(frozen=True)
class PriceList(Result):
    """`price_list`: the items (all, or those that match), prices before IVA."""

    items: tuple[PriceItemRow, ...]
    currency: str


def document_totals(totals: dict[str, Any]) -> dict[str, Any]:
    return {
        "net": decimal_str(totals["net"]),
        "iva": {rate: decimal_str(value) for rate, value in totals["iva"].items()},
        "iva_total": decimal_str(totals["iva_total"]),
        "total": decimal_str(totals["total"]),
    }


def job_relied_on(data: dict[str, Any]) -> dict[str, Any]:
    """What a held call about a job relies on: that it is still the same visit."""
    keys = ("id", "status", "start", "end", "technician_id", "customer_id")
    return {key: data.get(key) for key in keys}


def job_link(data: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "job", "id": data["id"], "label": f"#{data['id']}"}


def customer_link(data: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "customer", "id": data["customer_id"], "label": data["customer"]}
