"""Demo customers (with addresses and equipment), technicians, their absence and the fleet."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from business.cuit import check_digit, format_cuit
from business.models import Absence, Address, Customer, Equipment, Technician, Vehicle
from capataz.demo import data
from capataz.demo.context import SeedContext
from common.text import strip_accents

ZONE_WEIGHTS = (35, 18, 16, 16, 15)
OVERDUE_SHARE = 0.15


@dataclass
class _CustomerDraft:
    customer: Customer
    zone: str
    street: str
    city: str
    unit: str = ""


def _ascii(text: str) -> str:
    """An e-mail address's part: ASCII only, so what has no ASCII base ("ß", "æ") is dropped
    rather than folded ("ss"), as the demo's addresses have always been made."""
    folded = strip_accents(text).encode("ascii", "ignore").decode()
    return folded.lower().replace(" ", "")


# Phones are stored in E.164, as every other entry stores them (business.validators).
def _mobile(ctx: SeedContext) -> str:
    rng = ctx.rng
    return f"+54911{rng.choice('4456')}{rng.randint(0, 999):03d}{rng.randint(0, 9999):04d}"


def _landline(ctx: SeedContext) -> str:
    rng = ctx.rng
    return f"+54114{rng.randint(0, 999):03d}{rng.randint(0, 9999):04d}"


def _cuit(ctx: SeedContext, prefixes: tuple[str, ...], base_first: str, used: set[str]) -> str:
    """A CUIT with its mod-11 digit; when a base has none, AFIP's fallback prefix is tried."""
    while True:
        base = ctx.rng.choice(base_first) + f"{ctx.rng.randint(0, 9_999_999):07d}"
        for prefix in prefixes:
            digit = check_digit(prefix + base)
            if digit != 10 and base not in used:
                used.add(base)
                return format_cuit(f"{prefix}{base}{digit}")


def _street(ctx: SeedContext, zone: str) -> tuple[str, str]:
    name, city = ctx.rng.choice(data.STREETS[zone])
    top = 6500 if zone == "CABA" else 3500
    return f"{name} {ctx.rng.randint(100, top)}", city


def _person(ctx: SeedContext, taken: set[str], used: set[str]) -> _CustomerDraft:
    rng = ctx.rng
    female = rng.random() < 0.5
    while True:
        first = rng.choice(data.FEMALE_FIRST if female else data.MALE_FIRST)
        surname = rng.choice(data.SURNAMES)
        name = f"{first} {surname}"
        if name not in taken:
            break
    taken.add(name)
    # About half the private customers gave a CUIT (monotributistas, people who want factura).
    cuit = _cuit(ctx, ("27" if female else "20", "23"), "23", used) if rng.random() < 0.5 else ""
    email = f"{_ascii(first)}.{_ascii(surname)}@{rng.choice(data.EMAIL_DOMAINS)}"
    customer = Customer(
        kind=Customer.Kind.PERSON,
        name=name,
        cuit=cuit,
        phone=_mobile(ctx),
        phone_alt=_landline(ctx) if rng.random() < 0.15 else "",
        email=email if rng.random() < 0.8 else "",
    )
    zone = rng.choices(data.ZONES, ZONE_WEIGHTS)[0]
    street, city = _street(ctx, zone)
    return _CustomerDraft(customer, zone, street, city, rng.choice(data.UNITS))


def _company(ctx: SeedContext, spec: tuple[str, str, str], used: set[str]) -> _CustomerDraft:
    name, zone, domain = spec
    prefix = "33" if ctx.rng.random() < 0.15 else "30"
    customer = Customer(
        kind=Customer.Kind.COMPANY,
        name=name,
        cuit=_cuit(ctx, (prefix,), "57", used),
        phone=_landline(ctx),
        phone_alt=_mobile(ctx),
        email=f"{ctx.rng.choice(('info', 'administracion', 'compras'))}@{domain}",
    )
    street, city = _street(ctx, zone)
    return _CustomerDraft(customer, zone, street, city)


def _consorcio(ctx: SeedContext, spec: tuple[str, str, str], used: set[str]) -> _CustomerDraft:
    street, city, zone = spec
    admin = ctx.rng.choice(data.SURNAMES)
    customer = Customer(
        kind=Customer.Kind.COMPANY,
        name=f"Consorcio {street}",
        # Most buildings gave the CUIT; a couple only ever paid cash and never did.
        cuit=_cuit(ctx, ("30",), "7", used) if ctx.rng.random() < 0.75 else "",
        phone=_mobile(ctx),
        email=f"consorcios@adm{_ascii(admin)}.com.ar",
        notes=f"Administración {admin} & Asoc. Coordinar con el encargado del edificio.",
    )
    return _CustomerDraft(customer, zone, street, city)


def _drafts(ctx: SeedContext) -> list[_CustomerDraft]:
    taken: set[str] = set()
    used: set[str] = set()
    drafts = [_person(ctx, taken, used) for _ in range(data.PERSON_COUNT)]
    drafts += [_company(ctx, spec, used) for spec in data.COMPANIES]
    drafts += [_consorcio(ctx, spec, used) for spec in data.CONSORCIOS]
    for draft in drafts:
        draft.customer.organisation = ctx.org
        draft.customer.created_at = ctx.office_moment(ctx.days_ago(45, 1100))
    return drafts


def seed_customers(ctx: SeedContext) -> None:
    drafts = _drafts(ctx)
    ctx.customers = Customer.objects.bulk_create([d.customer for d in drafts])
    addresses = [
        Address(
            organisation=ctx.org,
            customer=d.customer,
            street=d.street,
            unit=d.unit,
            city=d.city,
            zone=d.zone,
            is_primary=True,
        )
        for d in drafts
    ]
    # Some shops also have a depot or a second branch in the same zone.
    for d in drafts:
        if d.customer.kind == Customer.Kind.COMPANY and ctx.rng.random() < 0.3:
            street, city = _street(ctx, d.zone)
            unit = ctx.rng.choice(("Depósito", "Sucursal"))
            addresses.append(
                Address(
                    organisation=ctx.org,
                    customer=d.customer,
                    street=street,
                    unit=unit,
                    city=city,
                    zone=d.zone,
                    is_primary=False,
                )
            )
    Address.objects.bulk_create(addresses)
    ctx.primary_address = {a.customer.pk: a for a in addresses if a.is_primary}


def _equipment_kinds(ctx: SeedContext, customer: Customer) -> list[data.EquipmentSpec]:
    by_kind = {spec.kind: spec for spec in data.EQUIPMENT}
    if customer.name.startswith("Consorcio"):
        return [by_kind["Caldera central"], by_kind["Termotanque"]]
    if customer.kind == Customer.Kind.COMPANY:
        splits = [by_kind["Split 3000 frigorías"], by_kind["Split 4500 frigorías"]]
        return ctx.rng.choices(splits, k=ctx.rng.randint(2, 3))
    home = [s for s in data.EQUIPMENT if s.kind != "Caldera central"]
    return ctx.rng.sample(home, k=1 if ctx.rng.random() < 0.6 else 2)


def _service_dates(
    ctx: SeedContext, spec: data.EquipmentSpec, overdue: bool
) -> tuple[datetime.date, datetime.date | None]:
    """Installed and last-service dates, clear of the due date by weeks so `overdue` holds."""
    rng, interval = ctx.rng, spec.interval_months * 30
    if overdue:
        since = rng.randint(interval + 20, interval + 200)
    else:
        since = rng.randint(10, interval - 20)
    base = ctx.today - datetime.timedelta(days=since)
    if rng.random() < 0.1:  # never serviced since it was installed
        return base, None
    return base - datetime.timedelta(days=rng.randint(60, 1500)), base


def seed_equipment(ctx: SeedContext) -> None:
    pairs = [(c, spec) for c in ctx.customers for spec in _equipment_kinds(ctx, c)]
    overdue = set(ctx.rng.sample(range(len(pairs)), k=round(len(pairs) * OVERDUE_SHARE)))
    rows = []
    for index, (customer, spec) in enumerate(pairs):
        installed, last = _service_dates(ctx, spec, index in overdue)
        rows.append(
            Equipment(
                organisation=ctx.org,
                customer=customer,
                address=ctx.primary_address[customer.pk],
                kind=spec.kind,
                skill=spec.skill,
                brand=ctx.rng.choice(spec.brands),
                model=ctx.rng.choice(spec.models),
                installed_on=installed,
                last_service_on=last,
                service_interval_months=spec.interval_months,
            )
        )
    Equipment.objects.bulk_create(rows)


def seed_crew(ctx: SeedContext) -> None:
    """Technicians, the absence next week, and the vans with their usual drivers."""
    ctx.technicians = Technician.objects.bulk_create(
        Technician(
            organisation=ctx.org,
            name=t.name,
            phone=t.phone,
            skills=list(t.skills),
            zone=t.zone,
            work_start=t.start,
            work_end=t.end,
            work_days=list(t.days),
        )
        for t in data.TECHNICIANS
    )
    by_name = {t.name: t for t in ctx.technicians}
    vehicles = Vehicle.objects.bulk_create(
        Vehicle(
            organisation=ctx.org,
            plate=v.plate,
            kind=v.kind,
            fuel=v.fuel,
            description=v.description,
            technician=by_name[v.driver] if v.driver else None,
        )
        for v in data.VEHICLES
    )
    ctx.vehicle_of = {v.technician.pk: v for v in vehicles if v.technician is not None}
    # Next week's Monday to Friday (tomorrow onwards when today is Sunday).
    monday = ctx.today + datetime.timedelta(days=7 - ctx.today.weekday())
    absent = by_name[data.ABSENT_TECHNICIAN]
    friday = monday + datetime.timedelta(days=4)
    Absence.objects.create(
        organisation=ctx.org,
        technician=absent,
        start_date=monday,
        end_date=friday,
        reason=data.ABSENCE_REASON,
    )
    ctx.absence = (absent.pk, monday, friday)
