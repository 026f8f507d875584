"""Organisations' copies of the shipped intents get the values of the fields a migration adds
(agents.defaults.fill_shipped, run by 0016 and 0018); intents they added keep the defaults."""

from __future__ import annotations

from importlib import import_module
from typing import Any

import pytest
from django.apps import apps

from agents.models import AgentIntent
from agents.services import agents_install_defaults
from tests.conftest import Cast

pytestmark = pytest.mark.django_db

migration = import_module("agents.migrations.0018_intent_subject_corrections_defaults")
relabels = import_module("agents.migrations.0020_intent_relabel_forms_defaults")
dates = import_module("agents.migrations.0022_intent_date_is_defaults")
roles_migration = import_module("agents.migrations.0024_intent_role_defaults")
endings = import_module("agents.migrations.0026_intent_ends_conversation_defaults")
named_invoices = import_module("agents.migrations.0028_intent_invoice_named_as_defaults")
inverses = import_module("agents.migrations.0030_intent_undone_by_defaults")
new_customers = import_module("agents.migrations.0034_intent_new_as_defaults")


def test_copies_get_the_shipped_subject_correction_pick_and_existing_form(cast: Cast) -> None:
    agents_install_defaults(organisation=cast.org)
    copies = AgentIntent.objects.filter(agent__organisation=cast.org)
    # As the rows looked before 0017: the new fields at their defaults.
    copies.update(subject="", corrected_by="", picked_as="", existing_as="")
    fleet = copies.get(name="technician_sick").agent
    added = AgentIntent.objects.create(agent=fleet, name="order_parts", writes=True)

    migration.fill(apps, None)

    values = {
        row.name: (row.subject, row.corrected_by, row.picked_as, row.existing_as)
        for row in copies.filter(name__in=["book_job", "check_availability", "generate_invoice",
                                           "technician_sick", "greeting"])
    }  # fmt: skip
    assert values == {
        "book_job": ("customer", "reschedule", "book_job", ""),
        "check_availability": ("", "", "book_job", ""),
        "generate_invoice": ("job", "", "", "payment_status"),
        "technician_sick": ("technician", "", "", ""),
        "greeting": ("", "", "", ""),
    }
    added.refresh_from_db()
    assert (added.subject, added.corrected_by, added.picked_as, added.existing_as) == ("",) * 4
    # Earlier facts are not touched by this migration's keys.
    assert copies.get(name="book_job").writes is True


def test_copies_get_the_shipped_relabel_forms(cast: Cast) -> None:
    agents_install_defaults(organisation=cast.org)
    copies = AgentIntent.objects.filter(agent__organisation=cast.org)
    copies.update(many_as="", about_work_as="", later_as="")

    relabels.fill(apps, None)

    values = {
        row.name: (row.many_as, row.about_work_as, row.later_as)
        for row in copies.filter(name__in=["reschedule", "frustration_detected", "dispatch",
                                           "book_job"])
    }  # fmt: skip
    assert values == {
        "reschedule": ("bulk_reschedule", "", ""),
        "frustration_detected": ("", "complaint", ""),
        "dispatch": ("", "", "book_job"),
        "book_job": ("", "", ""),
    }


def test_copies_get_the_shipped_date_roles(cast: Cast) -> None:
    agents_install_defaults(organisation=cast.org)
    copies = AgentIntent.objects.filter(agent__organisation=cast.org)
    copies.update(date_is="")

    dates.fill(apps, None)

    roles = dict(copies.exclude(date_is="").values_list("name", "date_is"))
    assert roles == {
        "book_job": "own", "cancel_job": "own", "check_availability": "own",
        "reschedule": "target", "bulk_reschedule": "target",
    }  # fmt: skip


def test_copies_get_the_shipped_roles_and_added_intents_stay_requests(cast: Cast) -> None:
    agents_install_defaults(organisation=cast.org)
    copies = AgentIntent.objects.filter(agent__organisation=cast.org)
    copies.update(role="")
    general = copies.get(name="greeting").agent
    added = AgentIntent.objects.create(agent=general, name="thanks")

    roles_migration.fill(apps, None)

    assert dict(copies.exclude(role="").values_list("name", "role")) == {
        "greeting": "courtesy", "farewell": "courtesy", "unknown": "out_of_scope",
        "frustration_detected": "frustration", "complaint": "grievance",
    }  # fmt: skip
    added.refresh_from_db()
    assert added.role == ""


NAMED = ("generate_invoice", "generate_quote", "pricing_info", "search_customer", "unknown")


@pytest.mark.parametrize(
    ("module", "field", "shipped", "empty"),
    [
        (endings, "ends_conversation", {"farewell": True}, False),
        (named_invoices, "invoice_named_as", dict.fromkeys(NAMED, "payment_status"), ""),
        (inverses, "undone_by", {"book_job": "cancel_job"}, ""),
        (new_customers, "new_as", {"update_customer": "create_customer"}, ""),
    ],
)
def test_copies_get_the_shipped_value_and_added_intents_keep_the_default(
    cast: Cast, module: Any, field: str, shipped: dict[str, Any], empty: Any
) -> None:
    agents_install_defaults(organisation=cast.org)
    copies = AgentIntent.objects.filter(agent__organisation=cast.org)
    copies.update(**{field: empty})
    added = AgentIntent.objects.create(agent=copies.get(name="greeting").agent, name="see_you")

    module.fill(apps, None)

    assert dict(copies.exclude(**{field: empty}).values_list("name", field)) == shipped
    added.refresh_from_db()
    assert getattr(added, field) == empty


booking_found_as = import_module("agents.migrations.0035_book_job_found_as")


def test_book_job_s_new_question_form_replaces_only_the_old_shipped_value(cast: Cast) -> None:
    agents_install_defaults(organisation=cast.org)
    copies = AgentIntent.objects.filter(agent__organisation=cast.org, name="book_job")
    assert copies.get().found_as == "check_availability"  # a new install ships it
    copies.update(found_as="")  # as an organisation's copy looked before 0035
    booking_found_as.forward(apps, None)
    assert copies.get().found_as == "check_availability"
    booking_found_as.backward(apps, None)
    assert copies.get().found_as == ""
    copies.update(found_as="search_customer")  # an admin's own choice is kept
    booking_found_as.forward(apps, None)
    assert copies.get().found_as == "search_customer"
