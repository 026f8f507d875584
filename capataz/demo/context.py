"""What the demo builders share while they seed one organisation."""

from __future__ import annotations

import datetime
import random
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo

from django.contrib.auth.models import User

from business.models import (
    Address,
    Customer,
    Job,
    Organisation,
    PriceItem,
    Technician,
    Vehicle,
)
from capataz.demo.data import ServiceSpec


@dataclass
class SeedContext:
    org: Organisation
    rng: random.Random
    now: datetime.datetime
    operator: User
    prices: dict[str, PriceItem]
    customers: list[Customer] = field(default_factory=list)
    # Keyed by customer pk: the address jobs go to and the zone it lies in.
    primary_address: dict[int, Address] = field(default_factory=dict)
    technicians: list[Technician] = field(default_factory=list)
    # Keyed by technician pk: the van they usually drive.
    vehicle_of: dict[int, Vehicle] = field(default_factory=dict)
    absence: tuple[int, datetime.date, datetime.date] | None = None
    jobs: list[Job] = field(default_factory=list)
    # Aligned with `jobs`: the kind of visit each job is.
    job_specs: list[ServiceSpec] = field(default_factory=list)

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.org.timezone)

    @property
    def today(self) -> datetime.date:
        return self.now.astimezone(self.tz).date()

    def at(self, day: datetime.date, clock: datetime.time) -> datetime.datetime:
        """An aware datetime on `day` at `clock`, in the organisation's timezone."""
        return datetime.datetime.combine(day, clock, tzinfo=self.tz)

    def office_moment(self, day: datetime.date) -> datetime.datetime:
        """A random moment of office hours on `day`, never later than now (it happened)."""
        minutes = self.rng.randint(8 * 60 + 30, 17 * 60 + 45)
        moment = self.at(day, datetime.time(minutes // 60, minutes % 60))
        return min(moment, self.now - datetime.timedelta(minutes=self.rng.randint(5, 90)))

    def days_ago(self, low: int, high: int) -> datetime.date:
        return self.today - datetime.timedelta(days=self.rng.randint(low, high))

    def customers_in(self, zone: str) -> list[Customer]:
        return [c for c in self.customers if self.primary_address[c.pk].zone == zone]
