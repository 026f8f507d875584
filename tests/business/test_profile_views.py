"""The customer page's profile card (P3): everyone in the organisation reads what the copilot
learnt, with its sources; managers correct or clear it; operators cannot; an outsider with staff
permissions sees and edits nothing."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from business.models import CustomerProfile
from business.profiles import customer_profile_learn, profile_field
from tests import factories
from tests.conftest import Cast

pytestmark = pytest.mark.django_db


@pytest.fixture
def learnt(cast: Cast) -> Any:
    customer = factories.make_customer(cast.org, "Nora Gómez")
    customer_profile_learn(
        organisation=cast.org, customer_id=customer.pk,
        fields={
            "preferred_days": profile_field("tuesday", ["message:7", "job:3"], timezone.now()),
            "register": profile_field("usted", ["message:9"], timezone.now()),
        },
    )  # fmt: skip
    return customer


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_an_operator_reads_the_profile_with_its_sources_but_gets_no_form(
    cast: Cast, learnt: Any
) -> None:
    text = _client(cast.operator).get(reverse("customer_detail", args=[learnt.pk])).content.decode()
    assert 'data-profile-field="preferred_days">martes' in text  # in the reader's language
    assert "message:7, job:3" in text
    assert reverse("customer_profile", args=[learnt.pk]) not in text


def test_a_manager_corrects_a_field_and_empties_another(cast: Cast, learnt: Any) -> None:
    client = _client(cast.manager)
    page = client.get(reverse("customer_detail", args=[learnt.pk])).content.decode()
    assert reverse("customer_profile", args=[learnt.pk]) in page

    response = client.post(
        reverse("customer_profile", args=[learnt.pk]),
        {"preferred_days": "viernes", "register": "", "channel": "whatsapp"},
    )

    assert response.status_code == 302
    fields = CustomerProfile.objects.get(customer=learnt).fields
    assert fields["preferred_days"]["value"] == "viernes"
    assert fields["preferred_days"]["sources"] == [f"manager:{cast.manager.pk}"]
    assert fields["channel"]["value"] == "whatsapp"
    assert "register" not in fields


def test_fields_sent_back_as_shown_stay_learnt(cast: Cast, learnt: Any) -> None:
    # The form shows every learnt field and posts them all back: only the one changed becomes
    # the manager's; the others keep their sources, so later extraction may still improve them.
    _client(cast.manager).post(
        reverse("customer_profile", args=[learnt.pk]),
        {"preferred_days": "tuesday", "register": "voseo"},
    )
    fields = CustomerProfile.objects.get(customer=learnt).fields
    assert fields["preferred_days"]["sources"] == ["message:7", "job:3"]
    assert fields["register"] == {**fields["register"], "value": "voseo"}
    assert fields["register"]["sources"] == [f"manager:{cast.manager.pk}"]


def test_a_manager_clears_the_profile(cast: Cast, learnt: Any) -> None:
    response = _client(cast.manager).post(reverse("customer_profile_clear", args=[learnt.pk]))
    assert response.status_code == 302
    assert not CustomerProfile.objects.filter(customer=learnt).exists()


def test_an_operator_cannot_edit_or_clear(cast: Cast, learnt: Any) -> None:
    client = _client(cast.operator)
    before = CustomerProfile.objects.get(customer=learnt).fields
    edit = client.post(reverse("customer_profile", args=[learnt.pk]), {"preferred_days": "x"})
    clear = client.post(reverse("customer_profile_clear", args=[learnt.pk]))
    assert (edit.status_code, clear.status_code) == (403, 403)
    assert CustomerProfile.objects.get(customer=learnt).fields == before


def test_an_outsider_sees_and_edits_nothing(cast: Cast, learnt: Any) -> None:
    client = _client(cast.outsider)
    before = CustomerProfile.objects.get(customer=learnt).fields
    assert client.get(reverse("customer_detail", args=[learnt.pk])).status_code == 404
    edit = client.post(reverse("customer_profile", args=[learnt.pk]), {"preferred_days": "x"})
    clear = client.post(reverse("customer_profile_clear", args=[learnt.pk]))
    assert (edit.status_code, clear.status_code) == (404, 404)
    assert CustomerProfile.objects.get(customer=learnt).fields == before


def test_a_too_long_correction_is_refused_and_changes_nothing(cast: Cast, learnt: Any) -> None:
    before = CustomerProfile.objects.get(customer=learnt).fields
    response = _client(cast.manager).post(
        reverse("customer_profile", args=[learnt.pk]), {"preferred_days": "x" * 201}
    )
    assert response.status_code == 400
    assert CustomerProfile.objects.get(customer=learnt).fields == before


def test_the_admin_forgets_a_customer_and_their_profile_but_not_another_orgs(
    cast: Cast, learnt: Any
) -> None:
    foreign = factories.make_customer(cast.other_org, "Nora Gómez")
    cast.admin.is_staff = True
    cast.admin.save()
    cast.admin.user_permissions.set(Permission.objects.all())
    url = reverse("admin:business_customer_changelist")

    response = _client(cast.admin).post(
        url, {"action": "forget_customers", "_selected_action": [learnt.pk, foreign.pk]}
    )

    assert response.status_code == 302
    learnt.refresh_from_db()
    foreign.refresh_from_db()
    assert learnt.name.endswith(f"#{learnt.pk}") and learnt.phone == ""
    assert not CustomerProfile.objects.filter(customer=learnt).exists()
    assert foreign.name == "Nora Gómez"  # another organisation's row is out of reach
