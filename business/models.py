"""Tenancy (organisations, memberships) and the field-service company's records.

Every tenant row carries its organisation; reads go through `business.selectors`, writes through
`business.services`. Money is `Decimal` in ARS.
"""

from __future__ import annotations

import datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone
from django.utils.timezone import now
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from business.validators import (
    check_period,
    clean_cuit,
    field_error,
    iva_bounds,
    non_negative,
    optional_phone,
    positive,
)

CENT = Decimal("0.01")


def money(value: Decimal) -> Decimal:
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


def choice_label(choices: type[models.TextChoices], code: str) -> str:
    """A stored code by its label in the reader's language; a code no longer among the choices
    as it is (screens show the label, the data keeps the code)."""
    try:
        return str(choices(code).label)
    except ValueError:
        return code


def weekdays_monday_to_friday() -> list[int]:
    return [0, 1, 2, 3, 4]


def local_today() -> datetime.date:
    return timezone.localdate()


def default_business_hours() -> dict[str, list[str]]:
    weekdays = {day: ["08:00", "18:00"] for day in ("mon", "tue", "wed", "thu", "fri")}
    return {**weekdays, "sat": ["09:00", "13:00"], "sun": []}


def has_organisation(model: type[models.Model]) -> bool:
    """Whether rows of `model` belong to one organisation each (tenant data)."""
    return any(field.name == "organisation" for field in model._meta.concrete_fields)


def organisation_mismatches(record: models.Model) -> dict[str, ValidationError]:
    """The related records named on `record` that belong to another organisation (a user who is
    not a member of it counts as one): the tenancy rule every form and the admin enforce."""
    organisation_id = getattr(record, "organisation_id", None)
    errors: dict[str, ValidationError] = {}
    if organisation_id is None:
        return errors
    for field in record._meta.concrete_fields:
        value = getattr(record, field.attname)
        related = field.related_model
        if related is None or field.name == "organisation" or value is None:
            continue
        rows: models.QuerySet[Any]
        if related._meta.label == settings.AUTH_USER_MODEL:
            rows = Membership.objects.filter(user_id=value, organisation_id=organisation_id)
        elif has_organisation(related):
            rows = related._default_manager.filter(pk=value, organisation_id=organisation_id)
        else:
            continue
        if not rows.exists():
            message = gettext("Pick one of this organisation's records.")
            errors[field.name] = ValidationError(message, code="other_organisation")
    return errors


class TenantRecord:
    """A record of one organisation: `clean()` refuses related records of another one."""

    def clean(self) -> None:
        super().clean()  # type: ignore[misc]
        errors = organisation_mismatches(self)  # type: ignore[arg-type]
        if errors:
            raise ValidationError(errors)


class IvaCondition(models.TextChoices):
    RESPONSABLE_INSCRIPTO = "responsable_inscripto", _("IVA Responsable Inscripto")
    MONOTRIBUTO = "monotributo", _("Responsable Monotributo")
    EXENTO = "exento", _("IVA Sujeto Exento")
    CONSUMIDOR_FINAL = "consumidor_final", _("Consumidor Final")


class Organisation(models.Model):
    class Engine(models.TextChoices):
        EMBEDDED = "embedded", _("Embedded (offline)")
        LLM = "llm", _("Language model")
        HYBRID = "hybrid", _("Hybrid")

    name = models.CharField(_("name"), max_length=200)
    slug = models.SlugField(_("slug"), unique=True)
    timezone = models.CharField(
        _("timezone"), max_length=64, default="America/Argentina/Buenos_Aires"
    )
    language = models.CharField(
        _("language"), max_length=8, choices=[("es", "Español"), ("en", "English")], default="es"
    )
    business_hours = models.JSONField(_("business hours"), default=default_business_hours)
    phone = models.CharField(_("phone"), max_length=40, blank=True)
    email = models.EmailField(_("email"), blank=True)
    address = models.CharField(_("address"), max_length=200, blank=True)
    # What a quote or invoice prints about the issuer (AFIP's "datos del emisor").
    cuit = models.CharField(_("CUIT"), max_length=13, blank=True)
    iva_condition = models.CharField(
        _("IVA condition"),
        max_length=24,
        choices=IvaCondition.choices,
        default=IvaCondition.RESPONSABLE_INSCRIPTO,
    )
    point_of_sale = models.PositiveSmallIntegerField(
        _("point of sale"), default=1, validators=[MinValueValidator(1), MaxValueValidator(9999)]
    )
    engine = models.CharField(
        _("engine"), max_length=16, choices=Engine.choices, default=Engine.EMBEDDED
    )
    created_at = models.DateTimeField(default=now, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("organisation")
        verbose_name_plural = _("organisations")
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        super().clean()
        self.phone = optional_phone(self.phone)
        self.cuit = clean_cuit(self.cuit)


class Role(models.TextChoices):
    OPERATOR = "operator", _("Operator")
    MANAGER = "manager", _("Manager")
    ADMIN = "admin", _("Admin")


class Membership(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="memberships",
        verbose_name=_("user"),
    )
    organisation = models.ForeignKey(
        Organisation,
        on_delete=models.CASCADE,
        related_name="memberships",
        verbose_name=_("organisation"),
    )
    role = models.CharField(_("role"), max_length=16, choices=Role.choices, default=Role.OPERATOR)
    created_at = models.DateTimeField(default=now, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("membership")
        verbose_name_plural = _("memberships")
        constraints = [
            models.UniqueConstraint(fields=["user", "organisation"], name="unique_membership")
        ]

    def __str__(self) -> str:
        return f"{self.user} @ {self.organisation} ({self.role})"


class PriceItem(TenantRecord, models.Model):
    """One line of the organisation's price list (used for quotes and general questions)."""

    organisation = models.ForeignKey(
        Organisation,
        on_delete=models.CASCADE,
        related_name="price_items",
        verbose_name=_("organisation"),
    )
    code = models.SlugField(_("code"), max_length=60)
    name = models.CharField(_("name"), max_length=200)
    name_en = models.CharField(_("name (English)"), max_length=200, blank=True)
    category = models.CharField(_("category"), max_length=40, blank=True)
    unit_price = models.DecimalField(
        _("unit price (ARS, before IVA)"),
        max_digits=14,
        decimal_places=2,
        validators=[non_negative],
    )
    iva_rate = models.DecimalField(
        _("IVA %"), max_digits=5, decimal_places=2, default=Decimal("21"), validators=iva_bounds
    )
    keywords = models.CharField(_("keywords"), max_length=300, blank=True)

    class Meta:
        verbose_name = _("price item")
        verbose_name_plural = _("price list")
        ordering = ["category", "name"]
        constraints = [
            models.UniqueConstraint(fields=["organisation", "code"], name="unique_price_code")
        ]

    def __str__(self) -> str:
        return f"{self.name} ${self.unit_price}"


class Skill(models.TextChoices):
    AC = "ac", _("Air conditioning")
    HEATING = "heating", _("Heating")
    PLUMBING = "plumbing", _("Plumbing")
    ELECTRICAL = "electrical", _("Electrical")
    GAS = "gas", _("Gas")


class Customer(TenantRecord, models.Model):
    class Kind(models.TextChoices):
        PERSON = "person", _("Person")
        COMPANY = "company", _("Company")

    organisation = models.ForeignKey(
        Organisation,
        on_delete=models.CASCADE,
        related_name="customers",
        verbose_name=_("organisation"),
    )
    kind = models.CharField(_("kind"), max_length=10, choices=Kind.choices, default=Kind.PERSON)
    name = models.CharField(_("name"), max_length=200)
    cuit = models.CharField(_("CUIT"), max_length=13, blank=True)
    phone = models.CharField(_("phone"), max_length=40, blank=True)
    phone_alt = models.CharField(_("alternative phone"), max_length=40, blank=True)
    email = models.EmailField(_("email"), blank=True)
    notes = models.TextField(_("notes"), blank=True)
    created_at = models.DateTimeField(default=now, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("customer")
        verbose_name_plural = _("customers")
        ordering = ["name"]
        indexes = [models.Index(fields=["organisation", "name"])]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        super().clean()
        self.cuit = clean_cuit(self.cuit)
        self.phone = optional_phone(self.phone)
        self.phone_alt = optional_phone(self.phone_alt, "phone_alt")
        check_cuit_free(self.organisation_id, self.cuit, self.pk)

    @property
    def iva_condition(self) -> str:
        """What a document prints for the customer: a company with a CUIT is taken as
        Responsable Inscripto (it gets factura A), anyone else as Consumidor Final."""
        if self.kind == self.Kind.COMPANY and self.cuit:
            return str(IvaCondition.RESPONSABLE_INSCRIPTO.label)
        return str(IvaCondition.CONSUMIDOR_FINAL.label)

    @property
    def primary_address(self) -> Address | None:
        # Through .all() so a prefetch of the addresses is used (no query per customer in lists).
        addresses = list(self.addresses.all())
        return next((a for a in addresses if a.is_primary), addresses[0] if addresses else None)


class CustomerProfile(TenantRecord, models.Model):
    """What the copilot learnt of a customer (P3): one row per customer, each field a
    `{"value": …, "sources": ["message:12", "job:40", …], "at": ISO date-time}` so every fact says
    where it came from and when. Filled by the copilot's extraction (on farewell and on idle
    conversations) and by cheap per-message signals; a manager may edit or clear it, and a
    customer's right to be forgotten deletes it. A field a manager wrote is theirs: extraction
    never overwrites it (its source is `manager:<user id>`)."""

    FIELDS = (
        "preferred_days", "preferred_time", "channel", "language", "register", "brevity",
        "equipment", "address_notes", "payment", "sensitivities",
    )  # fmt: skip

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="+", verbose_name=_("organisation")
    )
    customer = models.OneToOneField(
        Customer, on_delete=models.CASCADE, related_name="profile", verbose_name=_("customer")
    )
    fields = models.JSONField(_("profile"), default=dict, blank=True)
    extracted_at = models.DateTimeField(null=True, blank=True, verbose_name=_("extracted at"))
    updated_at = models.DateTimeField(default=now, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("customer profile")
        verbose_name_plural = _("customer profiles")

    def __str__(self) -> str:
        return f"{_('Profile')}: {self.customer}"


def check_cuit_free(organisation_id: int, cuit: str, exclude_pk: int | None) -> None:
    """One customer per CUIT in an organisation."""
    twins = Customer.objects.filter(organisation_id=organisation_id, cuit=cuit)
    if exclude_pk is not None:
        twins = twins.exclude(pk=exclude_pk)
    twin = twins.first() if cuit else None
    if twin is not None:
        message = gettext("Customer %(name)s already has that CUIT.") % {"name": twin.name}
        raise field_error("cuit", message, "duplicate_cuit")


class Address(TenantRecord, models.Model):
    organisation = models.ForeignKey(
        Organisation,
        on_delete=models.CASCADE,
        related_name="addresses",
        verbose_name=_("organisation"),
    )
    customer = models.ForeignKey(
        Customer, on_delete=models.CASCADE, related_name="addresses", verbose_name=_("customer")
    )
    street = models.CharField(_("street and number"), max_length=200)
    unit = models.CharField(_("floor / unit"), max_length=40, blank=True)
    city = models.CharField(_("city"), max_length=100, default="CABA")
    zone = models.CharField(_("zone"), max_length=40)
    is_primary = models.BooleanField(_("primary"), default=True)

    class Meta:
        verbose_name = _("address")
        verbose_name_plural = _("addresses")

    def __str__(self) -> str:
        """ "Av. Cabildo 3500 4B, CABA (Belgrano)"; the zone only when it says more than the city
        (never "CABA (CABA)")."""
        unit = f" {self.unit}" if self.unit else ""
        place = self.city or ""
        if self.zone and self.zone.strip().casefold() != place.strip().casefold():
            place = f"{place} ({self.zone})" if place else self.zone
        return f"{self.street}{unit}, {place}" if place else f"{self.street}{unit}"


class Technician(TenantRecord, models.Model):
    organisation = models.ForeignKey(
        Organisation,
        on_delete=models.CASCADE,
        related_name="technicians",
        verbose_name=_("organisation"),
    )
    name = models.CharField(_("name"), max_length=200)
    phone = models.CharField(_("phone"), max_length=40, blank=True)
    skills = models.JSONField(_("skills"), default=list)
    zone = models.CharField(_("zone"), max_length=40)
    work_start = models.TimeField(_("starts"), default=datetime.time(8, 0))
    work_end = models.TimeField(_("ends"), default=datetime.time(17, 0))
    work_days = models.JSONField(_("working days (0=Monday)"), default=weekdays_monday_to_friday)
    active = models.BooleanField(_("active"), default=True)

    class Meta:
        verbose_name = _("technician")
        verbose_name_plural = _("technicians")
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        super().clean()
        self.phone = optional_phone(self.phone)
        message = gettext("The working day ends before it starts.")
        check_period(self.work_start, self.work_end, "work_end", message)


class Absence(TenantRecord, models.Model):
    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, verbose_name=_("organisation")
    )
    technician = models.ForeignKey(
        Technician, on_delete=models.CASCADE, related_name="absences", verbose_name=_("technician")
    )
    start_date = models.DateField(_("from"))
    end_date = models.DateField(_("to"))
    reason = models.CharField(_("reason"), max_length=200, blank=True)

    class Meta:
        verbose_name = _("absence")
        verbose_name_plural = _("absences")
        ordering = ["-start_date"]

    def __str__(self) -> str:
        return f"{self.technician} {self.start_date}–{self.end_date}"

    def clean(self) -> None:
        super().clean()
        message = gettext("The absence ends before it starts.")
        check_period(self.start_date, self.end_date, "end_date", message)


class Vehicle(TenantRecord, models.Model):
    class Kind(models.TextChoices):
        VAN = "van", _("Van")
        PICKUP = "pickup", _("Pick-up")
        CAR = "car", _("Car")
        MOTORBIKE = "motorbike", _("Motorbike")

    class Fuel(models.TextChoices):
        PETROL = "petrol", _("Petrol")
        DIESEL = "diesel", _("Diesel")
        CNG = "cng", _("CNG")
        ELECTRIC = "electric", _("Electric")

    organisation = models.ForeignKey(
        Organisation,
        on_delete=models.CASCADE,
        related_name="vehicles",
        verbose_name=_("organisation"),
    )
    plate = models.CharField(_("plate"), max_length=12)
    kind = models.CharField(_("type"), max_length=12, choices=Kind.choices, default=Kind.VAN)
    fuel = models.CharField(_("fuel"), max_length=12, choices=Fuel.choices, default=Fuel.DIESEL)
    description = models.CharField(_("description"), max_length=120, blank=True)
    technician = models.ForeignKey(
        Technician,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="vehicles",
        verbose_name=_("usual driver"),
    )
    active = models.BooleanField(_("active"), default=True)

    class Meta:
        verbose_name = _("vehicle")
        verbose_name_plural = _("vehicles")
        ordering = ["plate"]
        constraints = [
            models.UniqueConstraint(fields=["organisation", "plate"], name="unique_plate")
        ]

    def __str__(self) -> str:
        return f"{self.plate} ({self.get_kind_display()})"


class Job(TenantRecord, models.Model):
    class Status(models.TextChoices):
        SCHEDULED = "scheduled", _("Scheduled")
        IN_PROGRESS = "in_progress", _("In progress")
        DONE = "done", _("Done")
        CANCELLED = "cancelled", _("Cancelled")

    OPEN_STATUSES = (Status.SCHEDULED, Status.IN_PROGRESS)

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="jobs", verbose_name=_("organisation")
    )
    customer = models.ForeignKey(
        Customer, on_delete=models.PROTECT, related_name="jobs", verbose_name=_("customer")
    )
    address = models.ForeignKey(
        Address, on_delete=models.SET_NULL, null=True, blank=True, verbose_name=_("address")
    )
    service = models.CharField(_("service"), max_length=200)
    skill = models.CharField(_("trade"), max_length=16, choices=Skill.choices, default=Skill.AC)
    status = models.CharField(
        _("status"), max_length=16, choices=Status.choices, default=Status.SCHEDULED
    )
    scheduled_start = models.DateTimeField(_("starts"))
    scheduled_end = models.DateTimeField(_("ends"))
    technician = models.ForeignKey(
        Technician,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="jobs",
        verbose_name=_("technician"),
    )
    vehicle = models.ForeignKey(
        Vehicle,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="jobs",
        verbose_name=_("vehicle"),
    )
    notes = models.TextField(_("notes"), blank=True)
    completed_at = models.DateTimeField(null=True, blank=True, verbose_name=_("completed at"))
    created_at = models.DateTimeField(default=now, verbose_name=_("created at"))
    updated_at = models.DateTimeField(default=now, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("job")
        verbose_name_plural = _("jobs")
        ordering = ["scheduled_start"]
        indexes = [
            models.Index(fields=["organisation", "scheduled_start"]),
            models.Index(fields=["technician", "scheduled_start"]),
        ]

    def __str__(self) -> str:
        start = timezone.localtime(self.scheduled_start).strftime("%d/%m %H:%M")
        return f"#{self.pk} {self.service} — {self.customer} {start}"

    def clean(self) -> None:
        super().clean()
        message = gettext("The job ends before it starts.")
        check_period(self.scheduled_start, self.scheduled_end, "scheduled_end", message)


class JobEvent(TenantRecord, models.Model):
    """The history of a job: every change a service makes leaves one row."""

    class Kind(models.TextChoices):
        CREATED = "created", _("Created")
        RESCHEDULED = "rescheduled", _("Rescheduled")
        CANCELLED = "cancelled", _("Cancelled")
        ASSIGNED = "assigned", _("Technician assigned")
        VEHICLE = "vehicle", _("Vehicle assigned")
        STATUS = "status", _("Status changed")
        NOTE = "note", _("Note")

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, verbose_name=_("organisation")
    )
    job = models.ForeignKey(
        Job, on_delete=models.CASCADE, related_name="events", verbose_name=_("job")
    )
    kind = models.CharField(max_length=16, choices=Kind.choices, verbose_name=_("kind"))
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        verbose_name=_("actor"),
    )
    data = models.JSONField(default=dict, verbose_name=_("data"))
    note = models.CharField(max_length=300, blank=True, verbose_name=_("note"))
    at = models.DateTimeField(default=now, verbose_name=_("at"))

    class Meta:
        verbose_name = _("job event")
        verbose_name_plural = _("job events")
        ordering = ["at", "pk"]


class Equipment(TenantRecord, models.Model):
    organisation = models.ForeignKey(
        Organisation,
        on_delete=models.CASCADE,
        related_name="equipment",
        verbose_name=_("organisation"),
    )
    customer = models.ForeignKey(
        Customer, on_delete=models.CASCADE, related_name="equipment", verbose_name=_("customer")
    )
    address = models.ForeignKey(
        Address, on_delete=models.SET_NULL, null=True, blank=True, verbose_name=_("address")
    )
    kind = models.CharField(_("type"), max_length=60)
    skill = models.CharField(_("trade"), max_length=16, choices=Skill.choices, default=Skill.AC)
    brand = models.CharField(_("brand"), max_length=60, blank=True)
    model = models.CharField(_("model"), max_length=60, blank=True)
    installed_on = models.DateField(_("installed"), null=True, blank=True)
    last_service_on = models.DateField(_("last service"), null=True, blank=True)
    service_interval_months = models.PositiveSmallIntegerField(
        _("service interval (months)"), default=12
    )

    class Meta:
        verbose_name = _("equipment")
        verbose_name_plural = _("equipment")
        ordering = ["customer__name", "kind"]

    def __str__(self) -> str:
        return f"{self.kind} {self.brand} ({self.customer})"

    @property
    def next_service_on(self) -> datetime.date | None:
        base = self.last_service_on or self.installed_on
        if base is None:
            return None
        month_index = base.month - 1 + self.service_interval_months
        year, month = base.year + month_index // 12, month_index % 12 + 1
        day = min(base.day, 28)
        return datetime.date(year, month, day)


class DocumentLine(models.Model):
    """A priced line of a quote or an invoice: quantity × unit price, plus IVA."""

    description = models.CharField(_("description"), max_length=200)
    quantity = models.DecimalField(
        _("quantity"), max_digits=10, decimal_places=2, default=1, validators=[positive]
    )
    unit_price = models.DecimalField(
        _("unit price"), max_digits=14, decimal_places=2, validators=[non_negative]
    )
    iva_rate = models.DecimalField(
        _("IVA %"), max_digits=5, decimal_places=2, default=Decimal("21"), validators=iva_bounds
    )

    class Meta:
        abstract = True

    @property
    def net(self) -> Decimal:
        return money(self.quantity * self.unit_price)

    @property
    def iva(self) -> Decimal:
        return money(self.net * self.iva_rate / Decimal(100))

    @property
    def total(self) -> Decimal:
        return self.net + self.iva


def prefetched_or_read(row: models.Model, to_attr: str, relation: str, *order_by: str) -> list[Any]:
    """A relation's rows as `Prefetch(relation, to_attr=to_attr)` left them on `row`, or read
    now (in `order_by`'s order, when given) when they were not prefetched."""
    prefetched = getattr(row, to_attr, None)
    if prefetched is not None:
        return list(prefetched)
    related = getattr(row, relation)
    return list(related.order_by(*order_by) if order_by else related.all())


class PricedDocument(TenantRecord, models.Model):
    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, verbose_name=_("organisation")
    )
    customer = models.ForeignKey(Customer, on_delete=models.PROTECT, verbose_name=_("customer"))
    job = models.ForeignKey(
        Job, on_delete=models.SET_NULL, null=True, blank=True, verbose_name=_("job")
    )
    number = models.CharField(_("number"), max_length=20)
    currency = models.CharField(max_length=3, default="ARS", verbose_name=_("currency"))
    notes = models.TextField(_("notes"), blank=True)
    created_at = models.DateTimeField(default=now, verbose_name=_("created at"))

    class Meta:
        abstract = True

    # What `Prefetch("lines", to_attr=LINES)` fills: a plain list. Django's default prefetch
    # builds a related queryset for each document, which dominated reading many invoices.
    LINES = "line_list"

    def line_items(self) -> list[Any]:
        """The document's lines: the prefetched list when there is one, else one query, in the
        order they were written."""
        return prefetched_or_read(self, self.LINES, "lines", "pk")

    def totals(self) -> dict[str, Any]:
        """Net, IVA per rate, and total — computed from the lines, never stored twice."""
        net = Decimal("0.00")
        iva_by_rate: dict[str, Decimal] = {}
        for line in self.line_items():
            net += line.net
            key = f"{line.iva_rate.normalize():f}"
            iva_by_rate[key] = iva_by_rate.get(key, Decimal("0.00")) + line.iva
        iva_total = sum(iva_by_rate.values(), Decimal("0.00"))
        return {"net": net, "iva": iva_by_rate, "iva_total": iva_total, "total": net + iva_total}


class Quote(PricedDocument):
    class Status(models.TextChoices):
        DRAFT = "draft", _("Draft")
        SENT = "sent", _("Sent")
        ACCEPTED = "accepted", _("Accepted")
        REJECTED = "rejected", _("Rejected")

    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.DRAFT, verbose_name=_("status")
    )
    valid_until = models.DateField(_("valid until"), null=True, blank=True)

    class Meta:
        verbose_name = _("quote")
        verbose_name_plural = _("quotes")
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["organisation", "number"], name="unique_quote_number")
        ]

    def __str__(self) -> str:
        return f"{_('Quote')} {self.number}"


class QuoteLine(DocumentLine):
    quote = models.ForeignKey(
        Quote, on_delete=models.CASCADE, related_name="lines", verbose_name=_("quote")
    )

    class Meta(DocumentLine.Meta):
        verbose_name = _("quote line")
        verbose_name_plural = _("quote lines")


class Invoice(PricedDocument):
    class Status(models.TextChoices):
        DRAFT = "draft", _("Draft")
        ISSUED = "issued", _("Issued")
        VOID = "void", _("Void")

    class Letter(models.TextChoices):
        A = "A", "A"
        B = "B", "B"
        C = "C", "C"

    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.ISSUED, verbose_name=_("status")
    )
    letter = models.CharField(_("type"), max_length=1, choices=Letter.choices, default=Letter.B)
    # Each letter and point of sale has its own sequence (AFIP): "B 0001-00000012". `number`
    # keeps the point of sale as its prefix, so it reads the same wherever it is printed.
    point_of_sale = models.PositiveSmallIntegerField(_("point of sale"), default=1)
    # The quote it was issued from, when it was: a quote is invoiced once, with or without a job.
    quote = models.ForeignKey(
        Quote, on_delete=models.SET_NULL, null=True, blank=True, related_name="invoices",
        verbose_name=_("quote"),
    )  # fmt: skip
    issued_on = models.DateField(_("issued"), default=local_today)
    due_on = models.DateField(_("due"), null=True, blank=True)

    class Meta:
        verbose_name = _("invoice")
        verbose_name_plural = _("invoices")
        ordering = ["-issued_on", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["organisation", "letter", "point_of_sale", "number"],
                name="unique_invoice_number_per_letter_and_pos",
            )
        ]

    def __str__(self) -> str:
        return f"{_('Invoice')} {self.full_number}"

    @property
    def full_number(self) -> str:
        """The number as printed: letter, point of sale and sequence, "B 0001-00000012"."""
        return f"{self.letter} {self.number}"

    def clean(self) -> None:
        super().clean()
        message = gettext("The invoice is due before it is issued.")
        check_period(self.issued_on, self.due_on, "due_on", message)

    PAYMENTS = "payment_list"

    def payment_items(self) -> list[Payment]:
        """The invoice's payments: the prefetched list when there is one, else one query."""
        return prefetched_or_read(self, self.PAYMENTS, "payments")

    def amount_paid(self) -> Decimal:
        total = self.payments.aggregate(s=models.Sum("amount"))["s"]
        return money(total or Decimal("0"))

    def balance(self) -> Decimal:
        return self.totals()["total"] - self.amount_paid()


class InvoiceLine(DocumentLine):
    invoice = models.ForeignKey(
        Invoice, on_delete=models.CASCADE, related_name="lines", verbose_name=_("invoice")
    )

    class Meta(DocumentLine.Meta):
        verbose_name = _("invoice line")
        verbose_name_plural = _("invoice lines")


class Payment(TenantRecord, models.Model):
    class Method(models.TextChoices):
        CASH = "cash", _("Cash")
        TRANSFER = "transfer", _("Bank transfer")
        CARD = "card", _("Card")
        MERCADOPAGO = "mercadopago", "Mercado Pago"

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, verbose_name=_("organisation")
    )
    invoice = models.ForeignKey(
        Invoice, on_delete=models.PROTECT, related_name="payments", verbose_name=_("invoice")
    )
    amount = models.DecimalField(
        _("amount"), max_digits=14, decimal_places=2, validators=[positive]
    )
    method = models.CharField(
        max_length=12, choices=Method.choices, default=Method.TRANSFER, verbose_name=_("method")
    )
    received_on = models.DateField(_("received"), default=local_today)
    reference = models.CharField(_("reference"), max_length=80, blank=True)

    class Meta:
        verbose_name = _("payment")
        verbose_name_plural = _("payments")
        ordering = ["-received_on"]


class EscalationTicket(TenantRecord, models.Model):
    class Priority(models.TextChoices):
        LOW = "low", _("Low")
        NORMAL = "normal", _("Normal")
        HIGH = "high", _("High")
        URGENT = "urgent", _("Urgent")

    class Reason(models.TextChoices):
        COMPLAINT = "complaint", _("Complaint")
        EMERGENCY = "emergency", _("Emergency")
        ESCALATE = "escalate", _("Asked for a person")
        FRUSTRATION = "frustration", _("Frustration")
        HANDOFF = "handoff", _("Copilot handed off")

    class Status(models.TextChoices):
        OPEN = "open", _("Open")
        IN_PROGRESS = "in_progress", _("In progress")
        RESOLVED = "resolved", _("Resolved")

    organisation = models.ForeignKey(
        Organisation,
        on_delete=models.CASCADE,
        related_name="tickets",
        verbose_name=_("organisation"),
    )
    customer = models.ForeignKey(
        Customer, on_delete=models.SET_NULL, null=True, blank=True, verbose_name=_("customer")
    )
    job = models.ForeignKey(
        Job, on_delete=models.SET_NULL, null=True, blank=True, verbose_name=_("job")
    )
    priority = models.CharField(
        max_length=8, choices=Priority.choices, default=Priority.NORMAL, verbose_name=_("priority")
    )
    reason = models.CharField(max_length=12, choices=Reason.choices, verbose_name=_("reason"))
    summary = models.TextField(_("summary"))
    status = models.CharField(
        max_length=12, choices=Status.choices, default=Status.OPEN, verbose_name=_("status")
    )
    conversation_id = models.BigIntegerField(
        null=True, blank=True, verbose_name=_("conversation id")
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        verbose_name=_("created by"),
    )
    created_at = models.DateTimeField(default=now, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("ticket")
        verbose_name_plural = _("tickets")
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"#{self.pk} {self.get_reason_display()} ({self.priority})"
