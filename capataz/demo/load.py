"""Load (or reload) the demo organisation «Climatización Río de la Plata».

Idempotent: the organisation is keyed by its slug, price items by code, users by username. The
records (customers, jobs, money…) are seeded once, when the organisation has no customers yet, so
a second run changes nothing; `reset=True` deletes the demo organisation first and restores the
demo users' password. A fixed seed makes
the data the same on every run, with dates relative to today in the organisation's timezone.

Seed data, so the ORM is written directly (in bulk, for speed) rather than through the services.
"""

from __future__ import annotations

import datetime
import random
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Model
from django.utils import timezone

from agents.models import Agent
from agents.services import agents_install_defaults
from business.models import (
    Absence,
    Address,
    Customer,
    Equipment,
    EscalationTicket,
    Invoice,
    InvoiceLine,
    Job,
    JobEvent,
    Membership,
    Organisation,
    Payment,
    PriceItem,
    Quote,
    QuoteLine,
    Technician,
    Vehicle,
)
from capataz.demo import data, finance, jobs, people
from capataz.demo.context import SeedContext

SLUG = str(data.ORG["slug"])


@dataclass
class DemoResult:
    organisation: Organisation
    seeded: bool
    counts: dict[str, int]
    users: list[tuple[str, str]]
    warnings: list[str] = field(default_factory=list)


def delete_demo() -> bool:
    """Delete the demo organisation and everything in it; False when there was none."""
    org = Organisation.objects.filter(slug=SLUG).first()
    if org is None:
        return False
    # Payments, invoices, quotes and jobs protect their parents: remove them leaf first.
    for model in (Payment, Invoice, Quote, Job):
        model._default_manager.filter(organisation=org).delete()
    org.delete()
    return True


def _ensure_org() -> Organisation:
    defaults = {key: value for key, value in data.ORG.items() if key != "slug"}
    org, _created = Organisation.objects.get_or_create(slug=SLUG, defaults=defaults)
    if not org.cuit:  # a demo loaded before documents printed the issuer's CUIT
        Organisation.objects.filter(pk=org.pk).update(cuit=data.ORG["cuit"])
        org.cuit = str(data.ORG["cuit"])
    return org


def _ensure_users(org: Organisation, reset: bool) -> dict[str, User]:
    """The three demo logins; passwords are set when a user is created or on reset."""
    user_model = get_user_model()
    names = [spec.username for spec in data.USERS]
    existing = user_model.objects.filter(username__in=names).count()
    # One hash for the three, and only when needed: hashing is the slowest step of the load,
    # and the password is printed on screen anyway.
    hashed = make_password(data.PASSWORD) if reset or existing < len(names) else ""
    users = {}
    for spec in data.USERS:
        user, created = user_model.objects.get_or_create(
            username=spec.username,
            defaults={
                "first_name": spec.first_name,
                "last_name": spec.last_name,
                "email": spec.email,
                "password": hashed,
            },
        )
        changed = created or reset
        if reset:
            user.password = hashed
        if spec.superuser and not (user.is_staff and user.is_superuser):
            user.is_staff = user.is_superuser = changed = True
        if changed:
            user.save()
        Membership.objects.update_or_create(
            user=user, organisation=org, defaults={"role": spec.role}
        )
        users[spec.username] = user
    return users


def _ensure_prices(org: Organisation) -> dict[str, PriceItem]:
    existing = {item.code: item for item in PriceItem.objects.filter(organisation=org)}
    missing = [
        PriceItem(
            organisation=org,
            code=p.code,
            name=p.name,
            name_en=p.name_en,
            category=p.category,
            unit_price=p.price,
            iva_rate=p.iva,
            keywords=p.keywords,
        )
        for p in data.PRICE_LIST
        if p.code not in existing
    ]
    for item in PriceItem.objects.bulk_create(missing):
        existing[item.code] = item
    return existing


def _install_agents(org: Organisation) -> list[str]:
    if not Agent.objects.filter(organisation=org).exists():
        agents_install_defaults(organisation=org)
    if not Agent.objects.filter(organisation=org).exists():
        return ["No hay agentes por defecto para copiar (¿faltan migraciones de agents?)."]
    return []


def _seed_records(ctx: SeedContext) -> None:
    people.seed_customers(ctx)
    people.seed_equipment(ctx)
    people.seed_crew(ctx)
    jobs.seed_jobs(ctx)
    finance.seed_quotes(ctx)
    finance.seed_invoices(ctx)
    finance.seed_tickets(ctx)


COUNTED: tuple[tuple[str, type[Model], str], ...] = (
    ("Membership", Membership, "organisation"),
    ("PriceItem", PriceItem, "organisation"),
    ("Customer", Customer, "organisation"),
    ("Address", Address, "organisation"),
    ("Equipment", Equipment, "organisation"),
    ("Technician", Technician, "organisation"),
    ("Absence", Absence, "organisation"),
    ("Vehicle", Vehicle, "organisation"),
    ("Job", Job, "organisation"),
    ("JobEvent", JobEvent, "organisation"),
    ("Quote", Quote, "organisation"),
    ("QuoteLine", QuoteLine, "quote__organisation"),
    ("Invoice", Invoice, "organisation"),
    ("InvoiceLine", InvoiceLine, "invoice__organisation"),
    ("Payment", Payment, "organisation"),
    ("EscalationTicket", EscalationTicket, "organisation"),
)


def demo_counts(org: Organisation) -> dict[str, int]:
    counts = {
        label: model._default_manager.filter(**{lookup: org}).count()
        for label, model, lookup in COUNTED
    }
    counts["Agent"] = Agent.objects.filter(organisation=org).count()
    return counts


def load_demo(*, reset: bool = False, now: datetime.datetime | None = None) -> DemoResult:
    """Create the demo organisation if needed and seed it once; see the module docstring."""
    with transaction.atomic():
        if reset:
            delete_demo()
        org = _ensure_org()
        users = _ensure_users(org, reset)
        prices = _ensure_prices(org)
        seeded = not Customer.objects.filter(organisation=org).exists()
        if seeded:
            ctx = SeedContext(
                org=org,
                rng=random.Random(data.SEED),
                now=now or timezone.now(),
                operator=users["operadora"],
                prices=prices,
            )
            _seed_records(ctx)
        warnings = _install_agents(org)
    return DemoResult(
        organisation=org,
        seeded=seeded,
        counts=demo_counts(org),
        users=[(spec.username, spec.role) for spec in data.USERS],
        warnings=warnings,
    )
