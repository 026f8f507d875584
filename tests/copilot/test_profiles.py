"""Customer profiles (P3): extracted at a farewell and from idle conversations, from what was
said and from the records, every field with its sources; cheap per-message signals; tasks that
end cleanly on rows deleted meanwhile."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pytest
from django.utils import timezone

from agents.models import Agent
from business.models import Customer, CustomerProfile, EscalationTicket
from business.profiles import customer_profile_edit
from capataz.forgetting import customer_forget
from copilot import memory_tasks, profiles
from copilot.models import Conversation, Message
from copilot.services import conversation_create, message_add
from nlu.values import Task
from tests import factories
from tests.conftest import Cast
from tests.copilot.conftest import ScriptedRouter, add_intent, task
from tests.copilot.turns import answer

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("registry", "handlers"),
]


def tuesdays(count: int) -> list[datetime.date]:
    monday = factories.next_monday()
    return [monday + datetime.timedelta(days=1 + 7 * week) for week in range(count)]


def book_tuesdays(cast: Cast, conversation: Conversation, router: ScriptedRouter) -> Customer:
    """The operator registers Nora Gómez and books her three Tuesdays at 9, then says bye."""
    factories.make_technician(cast.org)
    router.script["alta de Nora Gómez"] = [task("create_customer", customer="Nora Gómez")]
    answer(conversation, cast.operator.pk, "alta de Nora Gómez")
    for number, tuesday in enumerate(tuesdays(3)):
        text = f"agendale service {number}"
        router.script[text] = [task("book_job", service="Service", date=tuesday, time="09:00")]
        answer(conversation, cast.operator.pk, text)
    return Customer.objects.get(organisation=cast.org, name="Nora Gómez")


def test_a_farewell_extracts_the_preferred_day_and_time_with_their_sources(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    customer = book_tuesdays(cast, conversation, router)
    assert not CustomerProfile.objects.filter(customer=customer).exists()
    router.script["gracias, chau"] = [task("farewell")]

    answer(conversation, cast.operator.pk, "gracias, chau")

    fields = CustomerProfile.objects.get(customer=customer).fields
    asked = list(
        Message.objects.filter(conversation=conversation, text__startswith="agendale").values_list(
            "pk", flat=True
        )
    )
    assert fields["preferred_days"]["value"] == "tuesday"
    assert fields["preferred_time"]["value"] == "morning 09:00"
    for name in ("preferred_days", "preferred_time"):
        cited = fields[name]["sources"]
        assert {f"message:{pk}" for pk in asked} <= set(cited)  # the messages that booked them
        assert any(source.startswith("job:") for source in cited)
        assert datetime.datetime.fromisoformat(fields[name]["at"]).date() == timezone.now().date()
    conversation.refresh_from_db()
    assert conversation.profiled_at is not None


def test_what_was_said_and_the_records_fill_the_other_fields(
    cast: Cast, conversation: Conversation
) -> None:
    customer = factories.make_customer(cast.org, "Ana Ríos", phone="1145678901", notes="Timbre 3B")
    equipment = factories.make_equipment(cast.org, customer, kind="Split", brand="Surrey")
    invoice = factories.make_invoice(cast.org, customer)
    invoice.due_on = timezone.localdate() - datetime.timedelta(days=10)
    invoice.save()
    factories.make_payment(cast.org, invoice, amount=Decimal("1"), received_on=invoice.due_on)
    ticket = EscalationTicket.objects.create(
        organisation=cast.org, customer=customer, reason="complaint", summary="Llegaron tarde"
    )
    said = message_add(
        conversation=conversation, role="user", text="Ana prefiere los jueves a la tarde"
    )
    conversation.state = {"customer_id": customer.pk}
    conversation.save()

    learnt = profiles.extract_for_conversation(cast.org.pk, conversation.pk)[customer.pk]

    assert learnt["preferred_days"] == {
        "value": "thursday", "sources": [f"message:{said.pk}"], "at": learnt["preferred_days"]["at"]
    }  # fmt: skip
    assert learnt["preferred_time"]["value"] == "afternoon"
    assert learnt["channel"]["value"] == "phone"
    assert learnt["equipment"]["sources"] == [f"equipment:{equipment.pk}"]
    assert "Timbre 3B" in learnt["address_notes"]["value"]
    assert learnt["payment"]["value"].startswith("pays late")
    assert learnt["payment"]["sources"] == [f"invoice:{invoice.pk}"]
    assert learnt["sensitivities"]["sources"] == [f"ticket:{ticket.pk}"]
    assert "Llegaron tarde" in learnt["sensitivities"]["value"]
    assert CustomerProfile.objects.get(customer=customer).extracted_at is not None


def test_a_customer_writing_on_whatsapp_teaches_register_and_language_every_message(
    cast: Cast, router: ScriptedRouter
) -> None:
    customer = factories.make_customer(cast.org, "Ana Ríos")
    conversation = conversation_create(organisation=cast.org, user=None, channel="whatsapp")
    conversation.state = {"customer_id": customer.pk}
    conversation.customer = customer  # the WhatsApp sender, matched (else: registration first)
    conversation.save()

    answer(conversation, None, "Buenas tardes, quisiera saber si usted podría venir")

    message = Message.objects.filter(conversation=conversation, role="user").get()
    fields = CustomerProfile.objects.get(customer=customer).fields
    assert fields["register"]["value"] == "usted"
    assert fields["register"]["sources"] == [f"message:{message.pk}"]
    assert fields["language"]["value"] == "es"

    # The same register again writes nothing: the turn read the profile already.
    written = CustomerProfile.objects.get(customer=customer).updated_at
    answer(conversation, None, "Disculpe, ¿usted sabe a qué hora vendrían?")
    again = CustomerProfile.objects.get(customer=customer)
    assert again.updated_at == written
    assert again.fields["register"]["sources"] == [f"message:{message.pk}"]


def test_the_panel_operators_words_are_not_the_customers_register(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    customer = factories.make_customer(cast.org, "Ana Ríos")
    conversation.state = {"customer_id": customer.pk}
    conversation.save()

    answer(conversation, cast.operator.pk, "¿podés buscar a Ana?")

    assert not CustomerProfile.objects.filter(customer=customer).exists()


def test_a_managers_field_is_never_overwritten_by_extraction(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    customer = book_tuesdays(cast, conversation, router)
    customer_profile_edit(
        organisation=cast.org, customer=customer, values={"preferred_days": "friday"},
        actor=cast.manager,
    )  # fmt: skip

    profiles.extract_for_conversation(cast.org.pk, conversation.pk)

    fields = CustomerProfile.objects.get(customer=customer).fields
    assert fields["preferred_days"]["value"] == "friday"
    assert fields["preferred_days"]["sources"] == [f"manager:{cast.manager.pk}"]
    assert fields["preferred_time"]["value"] == "morning 09:00"  # extraction filled the rest


def test_the_idle_sweep_takes_each_quiet_conversation_once(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    customer = book_tuesdays(cast, conversation, router)
    fresh = conversation_create(organisation=cast.org, user=cast.operator)
    an_hour_ago = timezone.now() - datetime.timedelta(hours=1)
    Conversation.objects.filter(pk=conversation.pk).update(updated_at=an_hour_ago)

    # Celery's "never join inside a task" flag is one per process, not per thread: a task another
    # test's thread is still running eagerly sets it. These ran eagerly already; no join waits.
    assert memory_tasks.sweep_idle_conversations.delay().get(disable_sync_subtasks=False) == 1
    assert CustomerProfile.objects.get(customer=customer).fields["preferred_days"]["value"]
    assert (
        memory_tasks.sweep_idle_conversations.delay().get(disable_sync_subtasks=False) == 0
    )  # once
    fresh.refresh_from_db()
    assert fresh.profiled_at is None  # not idle yet


def test_tasks_given_deleted_rows_end_cleanly(cast: Cast, conversation: Conversation) -> None:
    customer = factories.make_customer(cast.org, "Ana Ríos")
    conversation.state = {"customer_id": customer.pk}
    conversation.save()
    customer.delete()

    assert (
        memory_tasks.extract_profiles.delay(cast.org.pk, conversation.pk).get(
            disable_sync_subtasks=False
        )
        == 0
    )
    assert (
        memory_tasks.extract_profiles.delay(cast.org.pk, 999_999).get(disable_sync_subtasks=False)
        == 0
    )
    # another organisation's conversation is the same as a missing one
    assert (
        memory_tasks.extract_profiles.delay(cast.other_org.pk, conversation.pk).get(
            disable_sync_subtasks=False
        )
        == 0
    )
    assert not CustomerProfile.objects.exists()


def test_forgetting_a_customer_clears_the_profile(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    customer = book_tuesdays(cast, conversation, router)
    profiles.extract_for_conversation(cast.org.pk, conversation.pk)
    assert CustomerProfile.objects.filter(customer=customer).exists()

    customer_forget(organisation=cast.org, customer=customer, actor=cast.manager)

    customer.refresh_from_db()
    assert not CustomerProfile.objects.filter(customer=customer).exists()
    assert "Gómez" not in customer.name and customer.phone == "" and customer.email == ""


# --- style adaptation (P4): replies written to the customer ----------------------------------


def whatsapp_with(cast: Cast, register: str) -> Conversation:
    customer = factories.make_customer(cast.org, "Ana Ríos")
    customer_profile_edit(
        organisation=cast.org, customer=customer, values={"register": register},
        actor=cast.manager,
    )  # fmt: skip
    conversation = conversation_create(organisation=cast.org, user=None, channel="whatsapp")
    conversation.state = {"customer_id": customer.pk}
    conversation.customer = customer  # the WhatsApp sender, matched (else: registration first)
    conversation.save()
    return conversation


def test_a_customer_who_writes_usted_is_answered_in_usted(
    cast: Cast, router: ScriptedRouter
) -> None:
    conversation = whatsapp_with(cast, "usted")
    router.script["hola"] = [task("greeting")]

    turn = answer(conversation, None, "hola")

    assert turn.result.text == "¡Hola! ¿En qué le ayudo?"
    assert turn.events[-1]["text"] == turn.result.text  # stored, streamed and completed alike


def test_the_office_panel_keeps_its_voseo(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    ana = whatsapp_with(cast, "usted").state["customer_id"]
    conversation.state = {"customer_id": ana}
    conversation.save()
    router.script["hola"] = [task("greeting")]

    assert answer(conversation, cast.operator.pk, "hola").result.text == "¡Hola! ¿En qué te ayudo?"


def test_what_someone_says_the_customer_prefers_beats_their_jobs(
    cast: Cast, conversation: Conversation
) -> None:
    customer = factories.make_customer(cast.org, "Ana Ríos")
    wednesday = tuesdays(1)[0] + datetime.timedelta(days=1)
    for week in range(3):
        start = datetime.datetime.combine(
            wednesday + datetime.timedelta(weeks=week), datetime.time(15), tzinfo=timezone.UTC
        )
        factories.make_job(cast.org, customer, start)
    said = message_add(conversation=conversation, role="user", text="Ana prefiere los martes")
    conversation.state = {"customer_id": customer.pk}
    conversation.save()

    learnt = profiles.extract_for_conversation(cast.org.pk, conversation.pk)[customer.pk]

    assert learnt["preferred_days"]["value"] == "tuesday"
    assert learnt["preferred_days"]["sources"] == [f"message:{said.pk}"]


@pytest.mark.parametrize("ends", [True, False])
def test_an_intent_the_admin_says_ends_the_conversation_extracts_the_profiles(
    cast: Cast,
    conversation: Conversation,
    router: ScriptedRouter,
    registry: dict[str, Agent],
    ends: bool,
) -> None:
    """The registry's `ends_conversation`, not the name "farewell": an intent an admin adds
    with the flag closes the conversation like the shipped goodbye; without it, it does not."""
    customer = book_tuesdays(cast, conversation, router)
    add_intent(
        registry["general"], name="see_you", examples_es="nos vemos el lunes", role="courtesy",
        ends_conversation=ends,
    )  # fmt: skip
    router.use_registry(cast.org)
    router.script["nos vemos el lunes"] = [Task("see_you", "general", 0.9, "nos vemos el lunes")]

    answer(conversation, cast.operator.pk, "nos vemos el lunes")

    assert CustomerProfile.objects.filter(customer=customer).exists() is ends
