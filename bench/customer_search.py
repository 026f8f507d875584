"""Speed of `customers_search` over a few thousand customers, on a throw-away test database.

    .venv/bin/python bench/customer_search.py [--customers 5000] [--repeat 20]
    DATABASE_URL=postgres://... .venv/bin/python bench/customer_search.py

Creates the test database (like pytest-django), loads N customers with accented names, phones,
CUITs and addresses, then times typical office queries. Prints one JSON object with p50/max ms
per query (wall clock, and this process's CPU time, which a busy shared machine inflates less;
on SQLite the database runs in-process so CPU time includes it) and how many customers each
returned. Target: p50 ≤ 50 ms at 5,000 customers.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "capataz.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

from business.cuit import check_digit  # noqa: E402
from business.models import Address, Customer, Organisation  # noqa: E402
from business.selectors import customers_search  # noqa: E402

FIRST = ["Juan", "María", "José", "Ana", "Lucía", "Martín", "Sofía", "Nicolás", "Valentina"]
LAST = ["Pérez", "González", "Rodríguez", "Gómez", "Fernández", "López", "Díaz", "Núñez", "Sosa"]
STREETS = ["Av. Mitre", "Hipólito Yrigoyen", "Belgrano", "San Martín", "Av. Rivadavia", "Cabildo"]
ZONES = ["CABA", "Norte", "Sur", "Oeste", "La Plata"]
QUERIES = ["perez", "Núñez María", "4567-8901", "20-30000123", "mitre sur", "sofia gomez", "zz"]


def load(organisation: Organisation, count: int) -> None:
    names = itertools.cycle(itertools.product(FIRST, LAST))
    customers = []
    for n in range(count):
        first, last = next(names)
        base = f"20{30000000 + n:08d}"
        digit = check_digit(base)
        customers.append(
            Customer(
                organisation=organisation,
                name=f"{first} {last} {n}",
                phone=f"+5411{40000000 + n * 7919 % 60000000:08d}",
                cuit=f"{base[:2]}-{base[2:]}-{digit}" if digit != 10 else "",
                email=f"cliente{n}@example.com",
            )
        )
    Customer.objects.bulk_create(customers, batch_size=1000)
    Address.objects.bulk_create(
        (
            Address(
                organisation=organisation,
                customer=customer,
                street=f"{STREETS[customer.pk % len(STREETS)]} {customer.pk % 4000}",
                zone=ZONES[customer.pk % len(ZONES)],
            )
            for customer in Customer.objects.filter(organisation=organisation)
        ),
        batch_size=1000,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--customers", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        organisation = Organisation.objects.create(name="Bench", slug="bench")
        load(organisation, args.customers)
        results = {}
        for query in QUERIES:
            wall, cpu, found = [], [], 0
            for _ in range(args.repeat):
                started, started_cpu = time.perf_counter(), time.process_time()
                found = len(customers_search(organisation, query))
                wall.append((time.perf_counter() - started) * 1000)
                cpu.append((time.process_time() - started_cpu) * 1000)
            results[query] = {
                "p50_ms": round(statistics.median(wall), 1),
                "p50_cpu_ms": round(statistics.median(cpu), 1),
                "max_ms": round(max(wall), 1),
                "found": found,
            }
        vendor = connection.vendor
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
    print(json.dumps({"customers": args.customers, "database": vendor, "queries": results}))


if __name__ == "__main__":
    main()
