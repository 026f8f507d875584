"""Invoice numbers run per letter and point of sale (AFIP): "A 0001-00000001" and
"B 0001-00000001" are two different invoices."""

from __future__ import annotations

from importlib import import_module

import pytest
from django.db import IntegrityError, transaction

from business import services
from business.models import Invoice, IvaCondition, Organisation
from business.services import LineInput
from tests import factories

COMPANY_CUIT = "30-71234567-1"


def _invoice(org: Organisation, customer: object) -> Invoice:
    return services.invoice_create(
        organisation=org, customer=customer, lines=[LineInput("Visita", 1, 1000)]
    )


def test_letters_a_and_b_have_separate_sequences(org) -> None:
    person = factories.make_customer(org, "Ana Gómez")
    company = factories.make_customer(org, "Frío SA", kind="company", cuit=COMPANY_CUIT)
    numbers = [
        _invoice(org, who).full_number for who in (person, company, person, company, company)
    ]
    assert numbers == [
        "B 0001-00000001",
        "A 0001-00000001",
        "B 0001-00000002",
        "A 0001-00000002",
        "A 0001-00000003",
    ]


def test_each_point_of_sale_has_its_own_sequence(org) -> None:
    person = factories.make_customer(org, "Ana Gómez")
    _invoice(org, person)
    Organisation.objects.filter(pk=org.pk).update(point_of_sale=3)
    org.refresh_from_db()
    third = _invoice(org, person)
    assert (third.point_of_sale, third.full_number) == (3, "B 0003-00000001")
    org.point_of_sale = 1
    assert _invoice(org, person).full_number == "B 0001-00000002"


def test_a_monotributista_issues_letter_c(org) -> None:
    Organisation.objects.filter(pk=org.pk).update(iva_condition=IvaCondition.MONOTRIBUTO)
    org.refresh_from_db()
    company = factories.make_customer(org, "Frío SA", kind="company", cuit=COMPANY_CUIT)
    invoice = _invoice(org, company)
    assert invoice.full_number == "C 0001-00000001"
    # A letter C issuer charges no IVA: every line at 0 %, the total is the net.
    totals = invoice.totals()
    assert {line.iva_rate for line in invoice.lines.all()} == {0}
    assert totals["total"] == totals["net"] and totals["iva_total"] == 0


def test_the_same_number_is_refused_within_one_letter_only(org) -> None:
    person = factories.make_customer(org, "Ana Gómez")
    first = _invoice(org, person)
    factories.make_invoice(org, person, number=first.number, letter="A")  # A 0001-00000001: fine
    assert Invoice.objects.filter(organisation=org, number=first.number).count() == 2
    with pytest.raises(IntegrityError), transaction.atomic():
        factories.make_invoice(org, person, number=first.number, letter="B")
    assert Invoice.objects.filter(organisation=org, number=first.number).count() == 2


def test_another_organisation_starts_its_own_sequences(cast) -> None:
    _invoice(cast.org, factories.make_customer(cast.org, "Ana Gómez"))
    theirs = _invoice(cast.other_org, factories.make_customer(cast.other_org, "Beto"))
    assert theirs.full_number == "B 0001-00000001"


def test_the_migration_reads_the_point_of_sale_from_existing_numbers(org) -> None:
    from django.apps import apps

    migration = import_module("business.migrations.0004_invoice_numbering_per_letter")
    person = factories.make_customer(org, "Ana Gómez")
    old = factories.make_invoice(org, person, number="0003-00000005")
    usual = factories.make_invoice(org, person, number="0001-00000006")
    assert (old.point_of_sale, usual.point_of_sale) == (1, 1)
    migration.point_of_sale_from_number(apps, None)
    old.refresh_from_db()
    usual.refresh_from_db()
    assert (old.point_of_sale, old.number, usual.point_of_sale) == (3, "0003-00000005", 1)
