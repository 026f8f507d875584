"""Writes to the company's records. Every change to tenant data goes through one of these.

Conventions: `<entity>_<verb>(*, organisation, ..., actor=None)`, keyword-only; each runs in one
transaction and either applies completely or raises `django.core.exceptions.ValidationError` with
messages a user can read (keyed by field where there is one) and nothing written. Objects passed
in must belong to `organisation` — a foreign object is reported like a missing one.

Error codes worth knowing for callers: "no_technician_free" (job_book/job_reschedule found nobody:
offer `scheduling.next_free_slots`), "technician_busy", "vehicle_busy", "duplicate_cuit",
"not_open", "over_balance".
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, connection, models, transaction
from django.db.models import QuerySet
from django.db.models.functions import Length
from django.utils import timezone
from django.utils.translation import gettext as _

from business import scheduling
from business.models import (
    Absence,
    Address,
    Customer,
    CustomerProfile,
    Equipment,
    EscalationTicket,
    Invoice,
    InvoiceLine,
    IvaCondition,
    Job,
    JobEvent,
    Organisation,
    Payment,
    PriceItem,
    Quote,
    QuoteLine,
    Skill,
    Technician,
    Vehicle,
    check_cuit_free,
    money,
)
from business.validators import check_period, clean_cuit, field_error, optional_phone

Actor = AbstractBaseUser | None

MAX_JOB_DURATION = datetime.timedelta(hours=12)
QUOTE_VALID_DAYS = 15
INVOICE_DUE_DAYS = 15
IVA_RATES = (Decimal("21"), Decimal("10.5"))
QUOTE_PREFIX, QUOTE_WIDTH = "P-", 6
INVOICE_WIDTH = 8  # "0001-00000012": the point of sale, then the sequence


class _Unset:
    """Marks a parameter the caller did not give (so `customer_update` can tell "" from absent)."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


_fail = field_error


def _ensure_org(obj: models.Model | None, organisation: Organisation, field_name: str) -> None:
    if obj is not None and getattr(obj, "organisation_id", None) != organisation.pk:
        raise _fail(field_name, _("Not found."), code="not_found")


def _user(actor: Actor) -> Any:
    """The actor to store on a row: only a real, saved, logged-in user."""
    return actor if actor is not None and actor.is_authenticated and actor.pk else None


# --- Customers -------------------------------------------------------------------------------


def _clean_cuit(organisation: Organisation, raw: str, exclude_pk: int | None = None) -> str:
    formatted = clean_cuit(raw)
    if not formatted:
        return ""
    # Two turns registering the same company at once must not both pass the check.
    Organisation.objects.select_for_update().filter(pk=organisation.pk).first()
    check_cuit_free(organisation.pk, formatted, exclude_pk)
    return formatted


def _clean_email(raw: str) -> str:
    email = (raw or "").strip().lower()
    if email:
        try:
            validate_email(email)
        except ValidationError:
            raise _fail(
                "email", _("That email address is not valid: %(raw)s") % {"raw": raw}
            ) from None
    return email


def _clean_kind(kind: str) -> str:
    if kind not in Customer.Kind.values:
        raise _fail("kind", _("A customer is a person or a company."))
    return kind


def _resolve_zone(zone: str, city: str) -> tuple[str, str]:
    """(zone, city) for a new address: the zone named, else the one the city lies in."""
    canonical = scheduling.zone_for(zone) if zone else scheduling.zone_for(city)
    if zone and canonical is None:
        canonical = zone.strip()  # an organisation may use its own zone names
    if canonical is None and not city:
        canonical = "CABA"
    if canonical is None:
        raise _fail(
            "zone",
            _("Which zone is %(city)s in? (CABA, Norte, Sur, Oeste or La Plata)") % {"city": city},
            code="zone_unknown",
        )
    return canonical, (city.strip() or ("CABA" if canonical == "CABA" else canonical))


def customer_create(
    *,
    organisation: Organisation,
    name: str,
    kind: str = Customer.Kind.PERSON,
    cuit: str = "",
    phone: str = "",
    phone_alt: str = "",
    email: str = "",
    notes: str = "",
    street: str = "",
    unit: str = "",
    city: str = "",
    zone: str = "",
    actor: Actor = None,
) -> Customer:
    name = " ".join((name or "").split())
    if not name:
        raise _fail("name", _("The customer's name is required."), code="required")
    with transaction.atomic():
        customer = Customer(
            organisation=organisation,
            kind=_clean_kind(kind),
            name=name,
            cuit=_clean_cuit(organisation, cuit),
            phone=optional_phone(phone),
            phone_alt=optional_phone(phone_alt, "phone_alt"),
            email=_clean_email(email),
            notes=notes.strip(),
        )
        address = _new_address(organisation, street, unit, city, zone)
        customer.save()
        if address is not None:
            address.customer = customer
            address.save()
    return customer


def _new_address(
    organisation: Organisation, street: str, unit: str, city: str, zone: str
) -> Address | None:
    street = " ".join((street or "").split())
    if not street:
        if zone.strip() or city.strip():
            raise _fail("street", _("Give the street and number too."), code="required")
        return None
    zone, city = _resolve_zone(zone.strip(), city.strip())
    return Address(
        organisation=organisation,
        street=street,
        unit=unit.strip(),
        city=city,
        zone=zone,
        is_primary=True,
    )


def customer_update(
    *,
    organisation: Organisation,
    customer: Customer,
    name: str = UNSET,
    kind: str = UNSET,
    cuit: str = UNSET,
    phone: str = UNSET,
    phone_alt: str = UNSET,
    email: str = UNSET,
    notes: str = UNSET,
    street: str = UNSET,
    unit: str = UNSET,
    city: str = UNSET,
    zone: str = UNSET,
    actor: Actor = None,
) -> Customer:
    """Change only the fields given. An empty string clears an optional field."""
    _ensure_org(customer, organisation, "customer")
    given = {
        "name": name, "kind": kind, "cuit": cuit, "phone": phone, "phone_alt": phone_alt,
        "email": email, "notes": notes,
    }  # fmt: skip
    address_fields = {"street": street, "unit": unit, "city": city, "zone": zone}
    address_changes = {k: v for k, v in address_fields.items() if v is not UNSET}
    with transaction.atomic():
        changes = _customer_changes(
            organisation, customer, {k: v for k, v in given.items() if v is not UNSET}
        )
        if changes:
            Customer.objects.filter(pk=customer.pk).update(**changes)
        if address_changes:
            _update_primary_address(organisation, customer, address_changes)
    # Only now: a failed update leaves the caller's object as it was, like the database.
    for key, value in changes.items():
        setattr(customer, key, value)
    return customer


def customer_blank(*, organisation: Organisation, customer: Customer) -> Customer:
    """The record's half of the right to be forgotten (capataz/forgetting.py: `customer_forget`
    is the whole, and the only caller): their personal data is blanked (the jobs, invoices and
    payments stay — the books must add up — but no longer say who) and what the copilot learnt
    of them (their profile) is deleted."""
    _ensure_org(customer, organisation, "customer")
    changes = {
        "name": _("Forgotten customer #%(id)s") % {"id": customer.pk},
        "cuit": "", "phone": "", "phone_alt": "", "email": "", "notes": "",
    }  # fmt: skip
    with transaction.atomic():
        Customer.objects.filter(pk=customer.pk).update(**changes)
        Address.objects.filter(customer=customer).update(street="—", unit="")
        CustomerProfile.objects.filter(organisation=organisation, customer=customer).delete()
    for key, value in changes.items():
        setattr(customer, key, value)
    return customer


def _customer_changes(
    organisation: Organisation, customer: Customer, given: dict[str, str]
) -> dict[str, str]:
    changes = {}
    for key, value in given.items():
        if key == "name":
            changes[key] = " ".join((value or "").split())
            if not changes[key]:
                raise _fail("name", _("The customer's name is required."), code="required")
        elif key == "kind":
            changes[key] = _clean_kind(value)
        elif key == "cuit":
            changes[key] = _clean_cuit(organisation, value, exclude_pk=customer.pk)
        elif key in ("phone", "phone_alt"):
            changes[key] = optional_phone(value, key)
        elif key == "email":
            changes[key] = _clean_email(value)
        else:
            changes[key] = value.strip()
    return changes


def _update_primary_address(
    organisation: Organisation, customer: Customer, changes: dict[str, str]
) -> None:
    address = customer.primary_address
    if address is None:
        new = _new_address(
            organisation,
            changes.get("street", ""),
            changes.get("unit", ""),
            changes.get("city", ""),
            changes.get("zone", ""),
        )
        if new is not None:
            new.customer = customer
            new.save()
        return
    if "street" in changes:
        address.street = " ".join(changes["street"].split())
        if not address.street:
            raise _fail("street", _("Give the street and number too."), code="required")
    if "unit" in changes:
        address.unit = changes["unit"].strip()
    if "city" in changes or "zone" in changes:
        zone = changes.get("zone", "")
        city = changes.get("city", address.city if zone else "")
        address.zone, address.city = _resolve_zone(zone.strip(), city.strip())
    address.save()


# --- Jobs ------------------------------------------------------------------------------------

# Folded keywords → trade and typical length of the visit. First match wins, so the more
# specific words come first ("calefactor" before "gas").
_SERVICE_SKILLS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("aire", "split", "ac ", "a/c", "climatiz", "refriger", "air condition"), Skill.AC),
    (
        ("calefa", "caldera", "radiador", "losa radiante", "estufa", "heating", "boiler"),
        Skill.HEATING,
    ),
    (("gas", "termotanque", "calefon", "anafe", "cocina"), Skill.GAS),
    (("electric", "enchufe", "tablero", "cable", "luz", "disyuntor", "termica"), Skill.ELECTRICAL),
    (
        (
            "plomer",
            "canilla",
            "caneria",
            "perdida de agua",
            "desagote",
            "inodoro",
            "cloaca",
            "agua",
            "plumb",
            "leak",
            "tap",
        ),
        Skill.PLUMBING,
    ),
)
_SERVICE_DURATIONS: tuple[tuple[tuple[str, ...], datetime.timedelta], ...] = (
    (("instala", "install", "obra"), datetime.timedelta(hours=4)),
    (
        ("revision", "presupuesto", "diagnost", "visita", "inspec", "check"),
        datetime.timedelta(hours=1),
    ),
)


def infer_skill(service: str) -> str | None:
    text = scheduling.fold_words(service) + " "
    for words, skill in _SERVICE_SKILLS:
        if any(word in text for word in words):
            return str(skill)
    return None


def service_duration(service: str) -> datetime.timedelta:
    """Typical length of a visit for `service`; two hours unless the words say otherwise."""
    text = scheduling.fold_words(service)
    for words, duration in _SERVICE_DURATIONS:
        if any(word in text for word in words):
            return duration
    return scheduling.DEFAULT_DURATION


def _event(job: Job, kind: str, actor: Actor, data: dict[str, Any], note: str = "") -> JobEvent:
    return JobEvent.objects.create(
        organisation_id=job.organisation_id,
        job=job,
        kind=kind,
        actor=_user(actor),
        note=note[:300],
        data=data,
    )


def _iso(organisation: Organisation, moment: datetime.datetime | None) -> str | None:
    """Local wall time with its offset: the job history reads like the office's clock."""
    return moment.astimezone(scheduling.org_tz(organisation)).isoformat() if moment else None


def _check_start(start: datetime.datetime, now: datetime.datetime | None) -> None:
    if timezone.is_naive(start):
        raise _fail("start", _("The start needs a date and time with its timezone."))
    if start < (now or timezone.now()):
        raise _fail("start", _("That time has already passed."), code="past")


def _writers_serialised() -> bool:
    """Inside a transaction that began holding the database's write lock (SQLite's
    `BEGIN IMMEDIATE`, this project's setting): no other writer can commit between a read and
    the write after it, so what was read is still true when the write lands."""
    options = connection.settings_dict.get("OPTIONS", {})
    mode = str(options.get("transaction_mode", "")).upper()
    return connection.vendor == "sqlite" and connection.in_atomic_block and mode in _LOCKED_MODES


_LOCKED_MODES = {"IMMEDIATE", "EXCLUSIVE"}


def _lock_technician(technician: Technician) -> None:
    """Serialise bookings per technician so two turns cannot double-book the same hour."""
    Technician.objects.select_for_update().filter(pk=technician.pk).first()


def _check_technician(
    organisation: Organisation,
    technician: Technician,
    start: datetime.datetime,
    end: datetime.datetime,
    skill: str,
    exclude_job_ids: Iterable[int] = (),
) -> None:
    _ensure_org(technician, organisation, "technician")
    _lock_technician(technician)
    problem = scheduling.technician_problem(
        organisation, technician, start, end, skill=skill, exclude_job_ids=exclude_job_ids
    )
    if problem:
        raise _fail("technician", problem, code="technician_busy")


def _pick_technician(
    organisation: Organisation,
    zone: str | None,
    skill: str,
    start: datetime.datetime,
    end: datetime.datetime,
    exclude_job_ids: Iterable[int] = (),
) -> Technician:
    exclude_job_ids = list(exclude_job_ids)
    free = scheduling.technicians_free(
        organisation, start, end, skill, zone=zone, exclude_job_ids=exclude_job_ids
    )
    for candidate in free:
        if _writers_serialised():
            return candidate  # read under the write lock: nobody can have taken them since
        # Free when we looked; check again holding the lock, since a concurrent booking may
        # have taken them in between.
        _lock_technician(candidate)
        if not scheduling.technician_problem(
            organisation, candidate, start, end, skill=skill, exclude_job_ids=exclude_job_ids
        ):
            return candidate
    raise _fail(
        "technician",
        _("No technician for that work is free at that time."),
        code="no_technician_free",
    )


def _vehicle_problem(
    organisation: Organisation,
    vehicle: Vehicle,
    start: datetime.datetime,
    end: datetime.datetime,
    exclude_job_ids: Iterable[int] = (),
) -> str | None:
    if not vehicle.active:
        return _("Vehicle %(plate)s is out of service.") % {"plate": vehicle.plate}
    clash = (
        Job.objects.filter(
            organisation=organisation,
            vehicle=vehicle,
            status__in=Job.OPEN_STATUSES,
            scheduled_start__lt=end,
            scheduled_end__gt=start,
        )
        .exclude(pk__in=list(exclude_job_ids))
        .first()
    )
    if clash is not None:
        return _("Vehicle %(plate)s is already on job #%(job)s at that time.") % {
            "plate": vehicle.plate,
            "job": clash.pk,
        }
    return None


def job_book(
    *,
    organisation: Organisation,
    customer: Customer,
    service: str,
    start: datetime.datetime,
    duration: datetime.timedelta | None = None,
    technician: Technician | None = None,
    skill: str | None = None,
    address: Address | None = None,
    notes: str = "",
    actor: Actor = None,
    now: datetime.datetime | None = None,
) -> Job:
    """Book a visit. Without a technician, the closest free one with the skill is picked."""
    _ensure_org(customer, organisation, "customer")
    _ensure_org(address, organisation, "address")
    service = " ".join((service or "").split())
    if not service:
        raise _fail("service", _("Say what the job is (the service)."), code="required")
    skill = skill or infer_skill(service) or Skill.AC
    if skill not in Skill.values:
        raise _fail("skill", _("Unknown trade: %(skill)s") % {"skill": skill})
    duration = duration or service_duration(service)
    if not datetime.timedelta(0) < duration <= MAX_JOB_DURATION:
        raise _fail("duration", _("A visit lasts between a few minutes and 12 hours."))
    _check_start(start, now)
    if address is not None and address.customer_id != customer.pk:
        raise _fail("address", _("That address belongs to another customer."))
    address = address or customer.primary_address
    end = start + duration
    with transaction.atomic():
        if technician is not None:
            _check_technician(organisation, technician, start, end, skill)
        else:
            zone = address.zone if address else None
            technician = _pick_technician(organisation, zone, skill, start, end)
        job = Job.objects.create(
            organisation=organisation,
            customer=customer,
            address=address,
            service=service,
            skill=skill,
            scheduled_start=start,
            scheduled_end=end,
            technician=technician,
            notes=notes.strip(),
        )
        _event(
            job,
            JobEvent.Kind.CREATED,
            actor,
            {
                "start": _iso(organisation, start),
                "end": _iso(organisation, end),
                "technician": technician.pk,
            },
        )
    return job


def _ensure_open(job: Job) -> None:
    if job.status not in Job.OPEN_STATUSES:
        raise _fail(
            "job",
            _("Job #%(job)s is %(status)s and can no longer change.")
            % {"job": job.pk, "status": job.get_status_display().lower()},
            code="not_open",
        )


def _locked_job(organisation: Organisation, job: Job) -> Job:
    """Re-read the job under a row lock so two writers cannot interleave on it."""
    _ensure_org(job, organisation, "job")
    fresh = Job.objects.select_for_update().get(pk=job.pk)
    _ensure_open(fresh)
    return fresh


def _copy_into[T: models.Model](target: T, source: T) -> T:
    """Refresh the caller's instance with what was saved (they keep using their object)."""
    for f in source._meta.concrete_fields:
        setattr(target, f.attname, getattr(source, f.attname))
    return target


def job_reschedule(
    *,
    organisation: Organisation,
    job: Job,
    start: datetime.datetime,
    technician: Technician | None = None,
    reassign_if_busy: bool = False,
    actor: Actor = None,
    now: datetime.datetime | None = None,
) -> Job:
    """Move a job keeping its length. `technician` changes who goes; with `reassign_if_busy` a
    job whose technician cannot make the new time goes to the closest free one instead."""
    _check_start(start, now)
    with transaction.atomic():
        locked = _locked_job(organisation, job)
        end = start + (locked.scheduled_end - locked.scheduled_start)
        chosen = _technician_for_move(
            organisation, locked, start, end, technician, reassign_if_busy
        )
        if locked.vehicle is not None:
            problem = _vehicle_problem(organisation, locked.vehicle, start, end, [locked.pk])
            if problem:
                raise _fail("vehicle", problem, code="vehicle_busy")
        before = (locked.scheduled_start, locked.technician_id)
        locked.scheduled_start, locked.scheduled_end = start, end
        locked.technician = chosen
        locked.updated_at = timezone.now()
        locked.save(update_fields=["scheduled_start", "scheduled_end", "technician", "updated_at"])
        _event(
            locked,
            JobEvent.Kind.RESCHEDULED,
            actor,
            {
                "from": _iso(organisation, before[0]),
                "to": _iso(organisation, start),
                "technician_from": before[1],
                "technician_to": chosen.pk,
            },
        )
    return _copy_into(job, locked)


def _technician_for_move(
    organisation: Organisation,
    job: Job,
    start: datetime.datetime,
    end: datetime.datetime,
    technician: Technician | None,
    reassign_if_busy: bool,
) -> Technician:
    zone = job.address.zone if job.address else None
    if technician is not None:
        _check_technician(organisation, technician, start, end, job.skill, [job.pk])
        return technician
    if job.technician is None:
        return _pick_technician(organisation, zone, job.skill, start, end, [job.pk])
    try:
        _check_technician(organisation, job.technician, start, end, job.skill, [job.pk])
    except ValidationError:
        if not reassign_if_busy:
            raise
        return _pick_technician(organisation, zone, job.skill, start, end, [job.pk])
    return job.technician


def job_cancel(
    *, organisation: Organisation, job: Job, reason: str = "", actor: Actor = None
) -> Job:
    with transaction.atomic():
        locked = _locked_job(organisation, job)
        locked.status = Job.Status.CANCELLED
        locked.updated_at = timezone.now()
        locked.save(update_fields=["status", "updated_at"])
        _event(locked, JobEvent.Kind.CANCELLED, actor, {"reason": reason.strip()}, reason.strip())
    return _copy_into(job, locked)


def job_assign_technician(
    *, organisation: Organisation, job: Job, technician: Technician, actor: Actor = None
) -> Job:
    with transaction.atomic():
        locked = _locked_job(organisation, job)
        _check_technician(
            organisation,
            technician,
            locked.scheduled_start,
            locked.scheduled_end,
            locked.skill,
            [locked.pk],
        )
        previous = locked.technician_id
        locked.technician = technician
        locked.updated_at = timezone.now()
        locked.save(update_fields=["technician", "updated_at"])
        _event(locked, JobEvent.Kind.ASSIGNED, actor, {"from": previous, "to": technician.pk})
    return _copy_into(job, locked)


def job_assign_vehicle(
    *, organisation: Organisation, job: Job, vehicle: Vehicle, actor: Actor = None
) -> Job:
    _ensure_org(vehicle, organisation, "vehicle")
    with transaction.atomic():
        locked = _locked_job(organisation, job)
        Vehicle.objects.select_for_update().filter(pk=vehicle.pk).first()
        problem = _vehicle_problem(
            organisation, vehicle, locked.scheduled_start, locked.scheduled_end, [locked.pk]
        )
        if problem:
            raise _fail("vehicle", problem, code="vehicle_busy")
        previous = locked.vehicle_id
        locked.vehicle = vehicle
        locked.updated_at = timezone.now()
        locked.save(update_fields=["vehicle", "updated_at"])
        _event(
            locked,
            JobEvent.Kind.VEHICLE,
            actor,
            {"from": previous, "to": vehicle.pk, "plate": vehicle.plate},
        )
    return _copy_into(job, locked)


def job_complete(
    *,
    organisation: Organisation,
    job: Job,
    notes: str = "",
    serviced_equipment: Sequence[Equipment] = (),
    completed_at: datetime.datetime | None = None,
    actor: Actor = None,
) -> Job:
    """Mark an open job done; equipment serviced on the visit gets its last-service date."""
    for item in serviced_equipment:
        _ensure_org(item, organisation, "equipment")
        if item.customer_id != job.customer_id:
            raise _fail("equipment", _("That equipment belongs to another customer."))
    completed_at = completed_at or timezone.now()
    with transaction.atomic():
        locked = _locked_job(organisation, job)
        locked.status = Job.Status.DONE
        locked.completed_at = completed_at
        if notes.strip():
            locked.notes = f"{locked.notes}\n{notes.strip()}".strip()
        locked.updated_at = timezone.now()
        locked.save(update_fields=["status", "completed_at", "notes", "updated_at"])
        day = scheduling.local_date(organisation, completed_at)
        Equipment.objects.filter(pk__in=[e.pk for e in serviced_equipment]).update(
            last_service_on=day
        )
        _event(
            locked,
            JobEvent.Kind.STATUS,
            actor,
            {"status": Job.Status.DONE, "equipment": [e.pk for e in serviced_equipment]},
            notes.strip(),
        )
    for item in serviced_equipment:
        item.last_service_on = day
    return _copy_into(job, locked)


def job_follow_up_record(
    *, organisation: Organisation, job: Job, note: str, actor: Actor = None
) -> JobEvent:
    """Record that the customer was contacted after a finished job (see recently_completed_jobs)."""
    _ensure_org(job, organisation, "job")
    if job.status != Job.Status.DONE:
        raise _fail("job", _("Only finished jobs get a follow-up."), code="not_done")
    if not note.strip():
        raise _fail("note", _("Write what the customer said."), code="required")
    with transaction.atomic():
        return _event(job, JobEvent.Kind.NOTE, actor, {"follow_up": True}, note.strip())


# --- Absences and redistribution ---------------------------------------------------------------


def technician_absence_record(
    *,
    organisation: Organisation,
    technician: Technician,
    start_date: datetime.date,
    end_date: datetime.date | None = None,
    reason: str = "",
    actor: Actor = None,
) -> Absence:
    """Record that a technician will not work from `start_date` to `end_date` (inclusive)."""
    _ensure_org(technician, organisation, "technician")
    end_date = end_date or start_date
    check_period(start_date, end_date, "end_date", _("The absence ends before it starts."))
    with transaction.atomic():
        _lock_technician(technician)
        overlapping = Absence.objects.filter(
            organisation=organisation,
            technician=technician,
            start_date__lte=end_date,
            end_date__gte=start_date,
        ).first()
        if overlapping is not None:
            raise _fail(
                "start_date",
                _("%(name)s is already recorded as absent from %(from)s to %(to)s.")
                % {
                    "name": technician.name,
                    "from": overlapping.start_date.strftime("%d/%m"),
                    "to": overlapping.end_date.strftime("%d/%m"),
                },
                code="already_absent",
            )
        return Absence.objects.create(
            organisation=organisation,
            technician=technician,
            start_date=start_date,
            end_date=end_date,
            reason=reason.strip(),
        )


@dataclass(frozen=True)
class Move:
    """One job that moves: from whom and when to whom and when."""

    job: Job
    old_start: datetime.datetime
    new_start: datetime.datetime
    old_technician: Technician | None
    new_technician: Technician | None


@dataclass(frozen=True)
class Stuck:
    """One job that could not move, and why (a sentence for the user)."""

    job: Job
    reason: str


@dataclass
class MoveReport:
    moved: list[Move] = field(default_factory=list)
    not_moved: list[Stuck] = field(default_factory=list)
    dry_run: bool = False


def _affected_jobs(organisation: Organisation, absence: Absence) -> list[Job]:
    tz = scheduling.org_tz(organisation)
    first = datetime.datetime.combine(absence.start_date, datetime.time.min, tzinfo=tz)
    after_last = datetime.datetime.combine(
        absence.end_date + datetime.timedelta(days=1), datetime.time.min, tzinfo=tz
    )
    return list(
        Job.objects.filter(
            organisation=organisation,
            technician_id=absence.technician_id,
            status__in=Job.OPEN_STATUSES,
            scheduled_start__gte=first,
            scheduled_start__lt=after_last,
        ).select_related("address", "technician", "customer")
    )


def jobs_redistribute(
    *,
    organisation: Organisation,
    absence: Absence,
    dry_run: bool = False,
    actor: Actor = None,
) -> MoveReport:
    """Give each open job of an absent technician to a free colleague with the skill, closest
    by zone first; same time. Jobs nobody can take stay as they are and are reported.

    With `dry_run` nothing is saved: the report is the proposal (for an approval)."""
    _ensure_org(absence, organisation, "absence")
    report = MoveReport(dry_run=dry_run)
    with transaction.atomic():
        for job in _affected_jobs(organisation, absence):
            _redistribute_one(organisation, job, absence.technician, report, actor)
        if dry_run:
            transaction.set_rollback(True)
    if dry_run:
        for move in report.moved:
            move.job.refresh_from_db()
    return report


def _redistribute_one(
    organisation: Organisation, job: Job, absent: Technician, report: MoveReport, actor: Actor
) -> None:
    zone = job.address.zone if job.address else None
    duration = job.scheduled_end - job.scheduled_start
    candidate = scheduling.nearest_free_technician(
        organisation,
        zone,
        job.skill,
        job.scheduled_start,
        duration=duration,
        exclude=[absent],
        exclude_job_ids=[job.pk],
    )
    if candidate is None:
        reason = _("Nobody with that trade is free at that time.")
        report.not_moved.append(Stuck(job, reason))
        return
    try:
        with transaction.atomic():
            job_assign_technician(
                organisation=organisation, job=job, technician=candidate, actor=actor
            )
    except ValidationError as exc:
        report.not_moved.append(Stuck(job, " ".join(exc.messages)))
        return
    report.moved.append(Move(job, job.scheduled_start, job.scheduled_start, absent, candidate))


def jobs_bulk_reschedule(
    *,
    organisation: Organisation,
    jobs: Iterable[Job],
    shift_days: int | None = None,
    to_date: datetime.date | None = None,
    reassign_if_busy: bool = False,
    dry_run: bool = False,
    actor: Actor = None,
    now: datetime.datetime | None = None,
) -> MoveReport:
    """Move many jobs by `shift_days` or to `to_date`, each keeping its time of day and length.

    Each job moves completely or not at all (its own savepoint); conflicts are reported per job.
    Jobs are moved from the far end first so a job never collides with one of the same batch
    that has yet to move. `dry_run` reports what would happen and saves nothing.
    """
    if (shift_days is None) == (to_date is None):
        raise _fail("to_date", _("Say either how many days to move the jobs or to which date."))
    if shift_days == 0:
        raise _fail("shift_days", _("Moving by zero days changes nothing."))
    batch = list(jobs)
    for job in batch:
        _ensure_org(job, organisation, "jobs")
    report = MoveReport(dry_run=dry_run)
    tz = scheduling.org_tz(organisation)
    forward = shift_days is None or shift_days > 0
    batch.sort(key=lambda j: j.scheduled_start, reverse=forward)
    with transaction.atomic():
        for job in batch:
            local = job.scheduled_start.astimezone(tz)
            day = to_date or local.date() + datetime.timedelta(days=shift_days or 0)
            target = datetime.datetime.combine(day, local.time(), tzinfo=tz)
            _move_one(organisation, job, target, reassign_if_busy, report, actor, now)
        if dry_run:
            transaction.set_rollback(True)
    if dry_run:
        for move in report.moved:
            move.job.refresh_from_db()
    report.moved.sort(key=lambda m: m.old_start)
    return report


def _move_one(
    organisation: Organisation,
    job: Job,
    target: datetime.datetime,
    reassign_if_busy: bool,
    report: MoveReport,
    actor: Actor,
    now: datetime.datetime | None,
) -> None:
    old_start, old_technician = job.scheduled_start, job.technician
    try:
        with transaction.atomic():
            job_reschedule(
                organisation=organisation,
                job=job,
                start=target,
                reassign_if_busy=reassign_if_busy,
                actor=actor,
                now=now,
            )
    except ValidationError as exc:
        report.not_moved.append(Stuck(job, " ".join(exc.messages)))
        return
    report.moved.append(Move(job, old_start, target, old_technician, job.technician))


# --- Quotes, invoices and payments -------------------------------------------------------------


@dataclass(frozen=True)
class LineInput:
    """A line for a quote or an invoice: a price-list item (by object or code) or a free line."""

    description: str = ""
    quantity: Decimal | int | str = 1
    unit_price: Decimal | int | str | None = None
    iva_rate: Decimal | int | str | None = None
    price_item: PriceItem | str | None = None


@dataclass(frozen=True)
class _Line:
    description: str
    quantity: Decimal
    unit_price: Decimal
    iva_rate: Decimal


def _decimal(value: object, field_name: str) -> Decimal:
    try:
        number = Decimal(str(value).replace(",", "."))
    except (InvalidOperation, ValueError):
        raise _fail(field_name, _("%(value)s is not a number.") % {"value": value}) from None
    if not number.is_finite():
        raise _fail(field_name, _("%(value)s is not a number.") % {"value": value})
    return number


def _clean_line(organisation: Organisation, line: LineInput, index: int) -> _Line:
    item = line.price_item
    if isinstance(item, str):
        item = PriceItem.objects.filter(organisation=organisation, code=item).first()
        if item is None:
            raise _fail(
                "lines", _("Line %(n)s: that item is not in the price list.") % {"n": index}
            )
    _ensure_org(item, organisation, "lines")
    description = " ".join((line.description or (item.name if item else "")).split())
    price = line.unit_price if line.unit_price is not None else (item.unit_price if item else None)
    rate = line.iva_rate if line.iva_rate is not None else (item.iva_rate if item else "21")
    if not description:
        raise _fail("lines", _("Line %(n)s needs a description.") % {"n": index})
    if price is None:
        raise _fail("lines", _("Line %(n)s needs a price.") % {"n": index})
    quantity, unit_price = _decimal(line.quantity, "lines"), _decimal(price, "lines")
    iva_rate = _decimal(rate, "lines")
    if quantity <= 0 or unit_price < 0:
        raise _fail("lines", _("Line %(n)s: quantity and price must be positive.") % {"n": index})
    if iva_rate not in IVA_RATES:
        raise _fail("lines", _("Line %(n)s: IVA is 21%% or 10.5%%.") % {"n": index})
    return _Line(description[:200], quantity, money(unit_price), iva_rate)


def _clean_lines(organisation: Organisation, lines: Sequence[LineInput]) -> list[_Line]:
    if not lines:
        raise _fail("lines", _("Add at least one line."), code="required")
    return [_clean_line(organisation, line, n) for n, line in enumerate(lines, start=1)]


def _next_number(
    documents: QuerySet[Any], organisation: Organisation, prefix: str, width: int
) -> str:
    """The next number of one sequence (`documents` is that sequence: the organisation's quotes,
    or its invoices of one letter and point of sale). Call inside a transaction: the
    organisation row is locked so concurrent writers take turns (on SQLite the write lock does
    the same), and the unique constraint backs it up (`_create_numbered` retries)."""
    Organisation.objects.select_for_update().filter(pk=organisation.pk).first()
    last = (
        documents.filter(organisation=organisation, number__startswith=prefix)
        .annotate(width=Length("number"))
        .order_by("-width", "-number")
        .values_list("number", flat=True)
        .first()
    )
    tail = last[len(prefix) :] if last else "0"
    sequence = int(tail) + 1 if tail.isdigit() else 1
    return f"{prefix}{sequence:0{width}d}"


def _create_numbered(create: Any, attempts: int = 3) -> Any:
    """Run `create()` (which numbers a document) again if a concurrent writer took the number."""
    for attempt in range(attempts):
        try:
            with transaction.atomic():
                return create()
        except IntegrityError:
            if attempt == attempts - 1:
                raise
    return None  # pragma: no cover - the loop always returns or raises


def quote_create(
    *,
    organisation: Organisation,
    customer: Customer,
    lines: Sequence[LineInput],
    job: Job | None = None,
    valid_days: int = QUOTE_VALID_DAYS,
    notes: str = "",
    actor: Actor = None,
) -> Quote:
    _ensure_org(customer, organisation, "customer")
    _ensure_org(job, organisation, "job")
    if job is not None and job.customer_id != customer.pk:
        raise _fail("job", _("That job belongs to another customer."))
    clean = _clean_lines(organisation, lines)
    today = timezone.localdate(timezone=scheduling.org_tz(organisation))

    def create() -> Quote:
        quote = Quote.objects.create(
            organisation=organisation,
            customer=customer,
            job=job,
            notes=notes.strip(),
            number=_next_number(Quote.objects.all(), organisation, QUOTE_PREFIX, QUOTE_WIDTH),
            valid_until=today + datetime.timedelta(days=valid_days),
        )
        QuoteLine.objects.bulk_create(QuoteLine(quote=quote, **line.__dict__) for line in clean)
        return quote

    with transaction.atomic():
        quote: Quote = _create_numbered(create)
    return quote


def invoice_letter(customer: Customer, organisation: Organisation | None = None) -> str:
    """C when the issuer is monotributista or exempt (it does not charge IVA); otherwise A for
    companies with a CUIT (they discriminate IVA), B for everyone else."""
    issuer = organisation or customer.organisation
    if issuer.iva_condition in (IvaCondition.MONOTRIBUTO, IvaCondition.EXENTO):
        return Invoice.Letter.C
    if customer.kind == Customer.Kind.COMPANY and customer.cuit:
        return Invoice.Letter.A
    return Invoice.Letter.B


def invoice_number_prefix(point_of_sale: int) -> str:
    return f"{point_of_sale:04d}-"


def _invoice_source(
    organisation: Organisation,
    job: Job | None,
    quote: Quote | None,
    lines: Sequence[LineInput] | None,
) -> list[_Line]:
    if lines:
        return _clean_lines(organisation, lines)
    if quote is None and job is not None:
        quote = (
            Quote.objects.filter(organisation=organisation, job=job)
            .exclude(status=Quote.Status.REJECTED)
            .order_by("-created_at", "-pk")
            .first()
        )
    if quote is None:
        raise _fail("lines", _("Nothing to invoice: give the lines or a quote."), code="required")
    return [
        _Line(line.description, line.quantity, line.unit_price, line.iva_rate)
        for line in quote.lines.order_by("pk")
    ]


def invoice_create(
    *,
    organisation: Organisation,
    customer: Customer | None = None,
    job: Job | None = None,
    quote: Quote | None = None,
    lines: Sequence[LineInput] | None = None,
    issued_on: datetime.date | None = None,
    notes: str = "",
    actor: Actor = None,
) -> Invoice:
    """Issue an invoice from explicit lines, a quote, or the job's latest quote."""
    for obj, name in ((customer, "customer"), (job, "job"), (quote, "quote")):
        _ensure_org(obj, organisation, name)
    customer = customer or (job.customer if job else None) or (quote.customer if quote else None)
    if customer is None:
        raise _fail("customer", _("Whom is the invoice for?"), code="required")
    for obj, name in ((job, "job"), (quote, "quote")):
        if obj is not None and obj.customer_id != customer.pk:
            raise _fail(name, _("That belongs to another customer."))
    job = job or (quote.job if quote else None)
    issued_on = issued_on or timezone.localdate(timezone=scheduling.org_tz(organisation))
    clean = _invoice_source(organisation, job, quote, lines)

    letter = invoice_letter(customer, organisation)
    point_of_sale = organisation.point_of_sale
    if letter == Invoice.Letter.C:  # a monotributista or exempt issuer charges no IVA
        clean = [dataclasses.replace(line, iva_rate=Decimal("0")) for line in clean]

    def create() -> Invoice:
        sequence = Invoice.objects.filter(letter=letter, point_of_sale=point_of_sale)
        prefix = invoice_number_prefix(point_of_sale)
        invoice = Invoice.objects.create(
            organisation=organisation,
            customer=customer,
            job=job,
            quote=quote,
            notes=notes.strip(),
            number=_next_number(sequence, organisation, prefix, INVOICE_WIDTH),
            letter=letter,
            point_of_sale=point_of_sale,
            status=Invoice.Status.ISSUED,
            issued_on=issued_on,
            due_on=issued_on + datetime.timedelta(days=INVOICE_DUE_DAYS),
        )
        InvoiceLine.objects.bulk_create(
            InvoiceLine(invoice=invoice, **line.__dict__) for line in clean
        )
        return invoice

    with transaction.atomic():
        if job is not None:
            Job.objects.select_for_update().filter(pk=job.pk).first()
            already = Invoice.objects.filter(job=job, status=Invoice.Status.ISSUED).first()
            if already is not None:
                raise _fail(
                    "job",
                    _("Job #%(job)s is already invoiced (%(number)s).")
                    % {"job": job.pk, "number": already.number},
                    code="already_invoiced",
                )
        if quote is not None:  # a quote without a job is invoiced once too
            Quote.objects.select_for_update().filter(pk=quote.pk).first()
            already = Invoice.objects.filter(quote=quote, status=Invoice.Status.ISSUED).first()
            if already is not None:
                raise _fail(
                    "quote",
                    _("Quote %(quote)s is already invoiced (%(number)s).")
                    % {"quote": quote.number, "number": already.number},
                    code="already_invoiced",
                )
        invoice: Invoice = _create_numbered(create)
    return invoice


def payment_record(
    *,
    organisation: Organisation,
    invoice: Invoice,
    amount: Decimal | int | str,
    method: str = Payment.Method.TRANSFER,
    received_on: datetime.date | None = None,
    reference: str = "",
    actor: Actor = None,
) -> Payment:
    _ensure_org(invoice, organisation, "invoice")
    value = money(_decimal(amount, "amount"))
    if value <= 0:
        raise _fail("amount", _("The amount must be more than zero."))
    if method not in Payment.Method.values:
        raise _fail("method", _("Unknown payment method: %(method)s") % {"method": method})
    with transaction.atomic():
        locked = Invoice.objects.select_for_update().get(pk=invoice.pk)
        if locked.status != Invoice.Status.ISSUED:
            raise _fail("invoice", _("Only issued invoices take payments."), code="not_issued")
        balance = locked.balance()
        if value > balance:
            raise _fail(
                "amount",
                _("That is more than the balance of invoice %(number)s ($%(balance)s).")
                % {"number": locked.number, "balance": balance},
                code="over_balance",
            )
        return Payment.objects.create(
            organisation=organisation,
            invoice=locked,
            amount=value,
            method=method,
            received_on=received_on or timezone.localdate(timezone=scheduling.org_tz(organisation)),
            reference=reference.strip()[:80],
        )


# --- Escalation tickets ------------------------------------------------------------------------


def ticket_create(
    *,
    organisation: Organisation,
    reason: str,
    summary: str,
    priority: str = EscalationTicket.Priority.NORMAL,
    customer: Customer | None = None,
    job: Job | None = None,
    conversation_id: int | None = None,
    actor: Actor = None,
) -> EscalationTicket:
    _ensure_org(customer, organisation, "customer")
    _ensure_org(job, organisation, "job")
    if reason not in EscalationTicket.Reason.values:
        raise _fail("reason", _("Unknown reason: %(reason)s") % {"reason": reason})
    if priority not in EscalationTicket.Priority.values:
        raise _fail("priority", _("Unknown priority: %(priority)s") % {"priority": priority})
    summary = (summary or "").strip()
    if not summary:
        raise _fail("summary", _("Say what happened."), code="required")
    customer = customer or (job.customer if job else None)
    with transaction.atomic():
        return EscalationTicket.objects.create(
            organisation=organisation,
            reason=reason,
            priority=priority,
            summary=summary,
            customer=customer,
            job=job,
            conversation_id=conversation_id,
            created_by=_user(actor),
        )


def ticket_update_status(
    *, organisation: Organisation, ticket: EscalationTicket, status: str, actor: Actor = None
) -> EscalationTicket:
    _ensure_org(ticket, organisation, "ticket")
    if status not in EscalationTicket.Status.values:
        raise _fail("status", _("Unknown status: %(status)s") % {"status": status})
    with transaction.atomic():
        EscalationTicket.objects.filter(pk=ticket.pk).update(status=status)
        ticket.status = status
    return ticket


# --- Equipment seen in a customer's photo (issue 14.5) -----------------------------------------


def equipment_from_reading(
    *, organisation: Organisation, customer: Customer, kind: str = "", brand: str = "",
    model: str = "", capacity: str = "",
) -> Equipment | None:  # fmt: skip
    """The customer's equipment a photo showed: the one of the same brand and model; with only
    a brand, their one equipment of that brand; with neither, their one equipment. Else a new
    one when the photo named a brand or a model; None when it cannot tell which (nothing is
    invented). Blank brand and model of the matched row are filled in."""
    _ensure_org(customer, organisation, "customer")
    brand, model = brand.strip()[:60], model.strip()[:60]
    owned = Equipment.objects.filter(organisation=organisation, customer=customer)
    if brand and model:
        found = list(owned.filter(brand__iexact=brand, model__iexact=model)[:2])
        if not found:
            found = list(owned.filter(brand__iexact=brand, model="")[:2])
    elif brand:
        found = list(owned.filter(brand__iexact=brand)[:2])
    elif model:
        found = list(owned.filter(model__iexact=model)[:2])
    else:
        found = list(owned[:2])
    with transaction.atomic():
        if len(found) == 1:
            equipment = found[0]
            changed = [name for name, value in (("brand", brand), ("model", model))
                       if value and not getattr(equipment, name)]  # fmt: skip
            for name in changed:
                setattr(equipment, name, brand if name == "brand" else model)
            if changed:
                equipment.save(update_fields=changed)
            return equipment
        if not (brand or model) or found:
            return None  # nothing named, or several alike: not guessed
        parts = (kind.strip() or _("Equipment"), capacity.strip())
        label = " ".join(part for part in parts if part)
        return Equipment.objects.create(
            organisation=organisation, customer=customer, kind=label[:60], brand=brand,
            model=model, address=customer.primary_address,
        )  # fmt: skip


def job_note_add(
    *, organisation: Organisation, job: Job, note: str, data: dict[str, Any], actor: Actor = None
) -> JobEvent:
    """A note on the job's history (e.g. what a customer's photo showed)."""
    _ensure_org(job, organisation, "job")
    with transaction.atomic():
        return _event(job, JobEvent.Kind.NOTE, actor, data, note)
