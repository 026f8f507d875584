"""Bad input gets a clear error, never a 500: a WhatsApp number another organisation uses, a
JSONL line nested past any sense, and values that are no key in the admin's related fields."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from agents.services import agents_install_defaults
from business.models import Customer, Invoice, Job, Membership, Quote
from evaluation.datasets import DatasetError, dataset_import
from evaluation.forms import CaseForm
from evaluation.models import Case, Dataset
from evaluation.services import EvaluationError, load_cases
from tests import factories
from tests.conftest import Cast
from whatsapp.models import WhatsAppAccount

pytestmark = pytest.mark.django_db

GARBAGE = ["abc", "1; DROP", "9999999999999999999999", "\x00", "-1", "1.5"]
DEEP = "[" * 100_000 + "]" * 100_000
DEEP_CASE = '{"input": "hola", "expected_intents": ["hours"], "tags": ' + DEEP + "}"


def _as_admin(user: Any) -> Client:
    user.is_staff = True  # an organisation's admin: staff with every model permission
    user.save()
    user.user_permissions.set(Permission.objects.all())
    client = Client()
    client.force_login(user)
    return client


# --- (a) a WhatsApp number in use elsewhere -----------------------------------------------------


def test_a_number_another_organisation_uses_is_a_form_error_that_names_no_one(
    cast: Cast,
) -> None:
    theirs = WhatsAppAccount(organisation=cast.other_org)
    theirs.phone_number_id = "1100220033"
    theirs.save()
    client = _as_admin(cast.admin)

    response = client.post(
        "/admin/whatsapp/whatsappaccount/add/",
        {"organisation": cast.org.pk, "active": "on", "template_language": "es_AR",
         "phone_number_id": " 1100220033 "},
    )  # fmt: skip

    page = response.content.decode()
    assert response.status_code == 200
    assert "ya está conectado a otra cuenta" in page
    assert cast.other_org.name not in page and cast.other_org.slug not in page
    assert not WhatsAppAccount.objects.filter(organisation=cast.org).exists()
    mine = client.post(
        "/admin/whatsapp/whatsappaccount/add/",
        {"organisation": cast.org.pk, "active": "on", "template_language": "es_AR",
         "phone_number_id": "1100220044"},
    )  # fmt: skip
    assert mine.status_code == 302
    account = WhatsAppAccount.objects.get(organisation=cast.org)
    again = client.post(  # its own number, typed again on its own account: fine
        f"/admin/whatsapp/whatsappaccount/{account.pk}/change/",
        {"organisation": cast.org.pk, "active": "on", "template_language": "es_AR",
         "phone_number_id": "1100220044"},
    )  # fmt: skip
    assert again.status_code == 302


# --- (b) JSONL nested at any depth --------------------------------------------------------------


def test_a_deeply_nested_line_is_named_by_number_and_nothing_is_stored(cast: Cast) -> None:
    agents_install_defaults(organisation=cast.org)
    dataset = Dataset.objects.create(organisation=cast.org, name="mine")
    good = '{"input": "¿a qué hora abren?", "expected_intents": ["hours"]}'
    with pytest.raises(DatasetError) as caught:
        dataset_import(dataset, "\n".join([good, DEEP, DEEP_CASE, "[" * 33 + "]" * 33]))
    assert [p.split(":")[0] for p in caught.value.problems] == ["línea 2", "línea 3", "línea 4"]
    assert not Case.objects.filter(dataset=dataset).exists()


def test_the_import_page_answers_a_deep_line_with_its_error(cast: Cast) -> None:
    agents_install_defaults(organisation=cast.org)
    dataset = Dataset.objects.create(organisation=cast.org, name="mine")
    client = Client()
    client.force_login(cast.manager)
    response = client.post(f"/evaluation/datasets/{dataset.pk}/import/", {"text": DEEP})
    assert response.status_code == 400 and "línea 1" in response.content.decode()


def test_a_deep_line_in_a_cases_file_is_an_evaluation_error(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text(DEEP_CASE + "\n")
    with pytest.raises(EvaluationError, match="cases.jsonl:1: nested more than 32"):
        load_cases(path)


def test_deep_expected_entities_in_the_case_form_are_a_field_error(cast: Cast) -> None:
    agents_install_defaults(organisation=cast.org)
    form = CaseForm(
        {"input": "hola", "expected_intents": "hours", "expected_entities": DEEP},
        organisation=cast.org,
    )
    assert not form.is_valid() and "expected_entities" in form.errors


# --- (c) values that are no key in the admin's related fields --------------------------------


@pytest.mark.parametrize("junk", GARBAGE)
@pytest.mark.parametrize("user", ["superuser", "organisation admin"])
def test_a_non_key_customer_in_the_admin_is_a_form_error(
    cast: Cast, django_user_model: Any, user: str, junk: str
) -> None:
    customer = factories.make_customer(cast.org)
    job = factories.make_job(cast.org, customer)
    quote = Quote.objects.create(organisation=cast.org, customer=customer, number="P-1")
    invoice = Invoice.objects.create(organisation=cast.org, customer=customer, number="F-1")
    if user == "superuser":
        client = Client()
        client.force_login(django_user_model.objects.create_superuser("root", "r@x.com", "pw"))
    else:
        client = _as_admin(cast.admin)
    for model, row in ((Job, job), (Quote, quote), (Invoice, invoice)):
        base = f"/admin/business/{model._meta.model_name}"
        for url in (f"{base}/add/", f"{base}/{row.pk}/change/"):
            response = client.post(url, {"organisation": cast.org.pk, "customer": junk})
            assert response.status_code == 200, (url, junk)
            assert "errorlist" in response.content.decode()
    job.refresh_from_db()
    assert job.customer == customer  # nothing changed


@pytest.mark.parametrize("junk", [*GARBAGE, ""])
def test_a_non_key_member_in_the_organisation_page_is_a_form_error(
    cast: Cast, django_user_model: Any, junk: str
) -> None:
    root = django_user_model.objects.create_superuser("root", "r@x.com", "pw")
    client = Client()
    client.force_login(root)
    url = f"/admin/business/organisation/{cast.org.pk}/change/"
    page = client.get(url).content.decode()
    prefix = re.search(r'name="([\w-]+)-TOTAL_FORMS"', page)
    assert prefix is not None
    name = prefix.group(1)
    members = list(Membership.objects.filter(organisation=cast.org).order_by("pk"))
    data: dict[str, Any] = {
        "name": cast.org.name, "slug": cast.org.slug, "timezone": cast.org.timezone,
        "language": cast.org.language, "engine": cast.org.engine, "business_hours": "{}",
        f"{name}-TOTAL_FORMS": len(members) + 1, f"{name}-INITIAL_FORMS": len(members),
        f"{name}-MIN_NUM_FORMS": 0, f"{name}-MAX_NUM_FORMS": 1000,
    }  # fmt: skip
    for i, member in enumerate(members):
        row = {"id": member.pk, "user": member.user_id, "role": member.role}
        data |= {f"{name}-{i}-{key}": value for key, value in row.items()}
    new = len(members)
    data |= {f"{name}-{new}-user": junk or "x", f"{name}-{new}-role": "operator"}
    response = client.post(url, data)
    assert response.status_code == 200
    assert "errorlist" in response.content.decode()
    assert Membership.objects.filter(organisation=cast.org).count() == len(members)
    assert Customer.objects.count() == 0  # nothing else was touched
