"""Dependency ordering and the labelling rules that shape a chain."""

from __future__ import annotations

from dataclasses import replace

from nlu import Context, Entities, Router, Task
from nlu.ordering import apply_labelling_rules, order_chain
from nlu.values import IntentSpec
from tests.nlu.training_examples import specs

SPECS = specs()


def _tasks(*intents: str) -> list[Task]:
    return [Task(intent, "", 0.9, intent) for intent in intents]


def _chain(*intents: str) -> list[str]:
    kept, _notes = apply_labelling_rules(_tasks(*intents), specs=SPECS)
    ordered, _moved = order_chain(kept, SPECS)
    return [t.intent for t in ordered]


def test_a_customer_is_created_before_it_is_used() -> None:
    assert _chain("book_job", "create_customer") == ["create_customer", "book_job"]
    assert _chain("generate_quote", "create_customer") == ["create_customer", "generate_quote"]


def test_a_job_is_booked_before_it_is_invoiced_or_given_a_vehicle() -> None:
    assert _chain("generate_invoice", "book_job") == ["book_job", "generate_invoice"]
    assert _chain("assign_vehicle", "book_job") == ["book_job", "assign_vehicle"]


def test_a_sick_technician_comes_before_moving_their_jobs() -> None:
    assert _chain("bulk_reschedule", "technician_sick") == ["technician_sick", "bulk_reschedule"]


def test_emergency_goes_first_and_absorbs_dispatch() -> None:
    assert _chain("payment_status", "emergency", "dispatch") == ["emergency", "payment_status"]


def test_independent_intents_keep_the_text_order() -> None:
    assert _chain("search_customer", "create_customer") == ["search_customer", "create_customer"]
    assert _chain("validate_cuit", "create_customer") == ["validate_cuit", "create_customer"]
    assert _chain("create_customer", "validate_cuit") == ["create_customer", "validate_cuit"]
    assert _chain("cancel_job", "book_job") == ["cancel_job", "book_job"]


def test_three_step_chain() -> None:
    assert _chain("generate_invoice", "create_customer", "book_job") == [
        "create_customer",
        "book_job",
        "generate_invoice",
    ]


def test_courtesy_and_anger_next_to_a_request_are_not_intents() -> None:
    assert _chain("greeting", "book_job", "farewell") == ["book_job"]
    assert _chain("frustration_detected", "reschedule") == ["reschedule"]
    assert _chain("frustration_detected") == ["frustration_detected"]
    assert _chain("unknown", "book_job") == ["unknown", "book_job"]


def test_duplicates_collapse_unless_they_target_different_entities() -> None:
    assert _chain("book_job", "book_job") == ["book_job"]
    tasks = [
        Task("book_job", "", 0.9, "a", Entities(customer="Gómez")),
        Task("book_job", "", 0.9, "b", Entities(customer="Sosa")),
    ]
    kept, _ = apply_labelling_rules(tasks, specs=SPECS)
    assert [t.entities.customer for t in kept] == ["Gómez", "Sosa"]


def test_order_reports_whether_it_moved_anything() -> None:
    assert order_chain(_tasks("book_job", "create_customer"), SPECS)[1]
    assert not order_chain(_tasks("create_customer", "book_job"), SPECS)[1]


def test_anger_about_the_work_done_is_a_complaint() -> None:
    tasks = [
        Task("frustration_detected", "escalation", 0.7, "ESTOY HARTA, el calefón sigue roto!!!")
    ]
    kept, notes = apply_labelling_rules(tasks, specs=SPECS)
    assert [t.intent for t in kept] == ["complaint"]
    assert notes


def test_anger_about_the_conversation_stays_frustration() -> None:
    tasks = [Task("frustration_detected", "escalation", 0.7, "NADIE CONTESTA!!! no doy más")]
    kept, _ = apply_labelling_rules(tasks, specs=SPECS)
    assert [t.intent for t in kept] == ["frustration_detected"]


def test_sending_someone_on_a_later_day_is_a_booking() -> None:
    import datetime

    today = datetime.date(2026, 11, 18)
    later = Task(
        "dispatch", "fleet", 0.7, "mandá a alguien el lunes", Entities(date=today.replace(day=23))
    )
    now = Task("dispatch", "fleet", 0.7, "mandá a alguien ya", Entities(date=today))
    assert [t.intent for t in apply_labelling_rules([later], today, specs=SPECS)[0]] == ["book_job"]
    assert [t.intent for t in apply_labelling_rules([now], today, specs=SPECS)[0]] == ["dispatch"]


def _relabelled(text: str, candidates: list[tuple[str, float]]) -> str:
    task = Task("reschedule", "", 0.6, text, Entities(), candidates)
    return apply_labelling_rules([task], specs=SPECS)[0][0].intent


def test_moving_the_jobs_of_someone_is_a_bulk_move() -> None:
    candidates = [("reschedule", 0.6), ("bulk_reschedule", 0.2)]
    assert _relabelled("pasá los trabajos de Leandro al jueves", candidates) == "bulk_reschedule"
    assert _relabelled("move Kevin's jobs to Friday", candidates) == "bulk_reschedule"
    assert _relabelled("pasá el trabajo de Leandro al jueves", candidates) == "reschedule"


def test_a_move_whose_verb_carries_a_plural_object_is_a_bulk_move() -> None:
    """In "…todos sus trabajos del jueves | pasalos al lunes" the jobs are named before the
    verb, in the part before (a held-out dictated line read it as one job's move)."""
    candidates = [("reschedule", 0.88), ("bulk_reschedule", 0.09)]
    assert _relabelled("pasalos al lunes o sea al lunes 23", candidates) == "bulk_reschedule"
    assert _relabelled("bueno movelas para el viernes", candidates) == "bulk_reschedule"
    assert _relabelled("move them all to Monday", candidates) == "bulk_reschedule"
    assert _relabelled("pasalo al lunes", candidates) == "reschedule"
    assert _relabelled("pasala para el viernes a las 10", candidates) == "reschedule"


def test_a_bulk_move_needs_the_registry_to_have_it() -> None:
    assert _relabelled("pasá los turnos al jueves", [("reschedule", 0.6)]) == "reschedule"


def _opens_request(text: str) -> bool:
    return text.lower().startswith(("mandá", "agendá", "send"))


def test_an_unclear_lead_into_a_grievance_is_its_setting() -> None:
    lead = Task("technician_sick", "", 0.65, "Jorge Cabrera está furioso")
    grievance = Task("frustration_detected", "", 0.97, "¡el técnico llegó tarde! UNA VERGÜENZA!!!")
    kept, notes = apply_labelling_rules([lead, grievance], None, _opens_request, specs=SPECS)
    assert [t.intent for t in kept] == ["complaint"]
    assert any("setting" in note for note in notes)


def test_a_clear_or_verb_led_part_before_a_grievance_stays() -> None:
    clear = Task("technician_sick", "", 0.95, "Ramón está con fiebre")
    asked = Task("dispatch", "", 0.6, "mandá a alguien a lo de Ana")
    grievance = Task("complaint", "", 0.9, "el técnico dejó todo sucio")
    for first in (clear, asked):
        kept, _ = apply_labelling_rules([first, grievance], None, _opens_request, specs=SPECS)
        assert [t.intent for t in kept] == [first.intent, "complaint"]


def test_a_part_that_goes_on_telling_a_grievance_is_the_grievance() -> None:
    """However sure its words: "lo esperé toda la mañana" tells, it asks for nothing."""
    grievance = Task("complaint", "", 0.98, "el técnico nunca apareció!!")
    telling = Task("bulk_reschedule", "", 0.95, "lo esperé toda la mañana y nadie me avisó nada")
    kept, notes = apply_labelling_rules([grievance, telling], None, _opens_request, specs=SPECS)
    assert [t.intent for t in kept] == ["complaint"]
    assert notes == ["told with a grievance: bulk_reschedule"]  # the trace says which rule


def test_a_request_after_a_grievance_stays() -> None:
    grievance = Task("complaint", "", 0.96, "Claudia está furiosa porque ayer no fue nadie")
    for asked in (
        Task("dispatch", "", 0.9, "mandá a alguien hoy mismo"),
        Task("reschedule", "", 0.6, "¿me la pasás para mañana a las 9?"),
    ):
        kept, _ = apply_labelling_rules([grievance, asked], None, _opens_request, specs=SPECS)
        assert [t.intent for t in kept] == ["complaint", asked.intent], asked.text


def test_an_out_of_scope_part_that_asks_nothing_is_an_aside() -> None:
    cancel = Task("cancel_job", "", 0.99, "quería cancelar la visita de mañana")
    aside = Task("unknown", "", 0.94, "lo terminó arreglando mi cuñado")
    kept, notes = apply_labelling_rules([cancel, aside], None, _opens_request, specs=SPECS)
    assert [t.intent for t in kept] == ["cancel_job"]
    assert notes == ["aside: unknown"]


def test_an_out_of_scope_ask_stays_in_the_chain() -> None:
    book = Task("book_job", "", 0.99, "agendá a Pérez el jueves")
    for ask in ("y cuánto está el dólar?", "send me a joke"):
        asked = Task("unknown", "", 0.99, ask)
        kept, _ = apply_labelling_rules([book, asked], None, _opens_request, specs=SPECS)
        assert [t.intent for t in kept] == ["book_job", "unknown"], ask
    alone = Task("unknown", "", 0.9, "lo terminó arreglando mi cuñado")
    kept, _ = apply_labelling_rules([alone], None, _opens_request, specs=SPECS)
    assert [t.intent for t in kept] == ["unknown"]  # nothing to be an aside to


def test_an_unclear_part_not_followed_by_a_grievance_stays() -> None:
    lead = Task("technician_sick", "", 0.46, "Ramón se siente mal")
    asked = Task("dispatch", "", 0.99, "mandá a alguien a lo de Ledesma")
    kept, _ = apply_labelling_rules([lead, asked], None, _opens_request, specs=SPECS)
    assert [t.intent for t in kept] == ["technician_sick", "dispatch"]


def test_an_intent_the_registry_adds_is_ordered_by_its_spec_alone() -> None:
    specs = SPECS | {
        "order_parts": IntentSpec("order_parts", "fleet", writes=True, after=("book_job",)),
        "site_survey": IntentSpec("site_survey", "fleet", first=True, absorbs=("dispatch",)),
    }
    kept, _notes = apply_labelling_rules(
        _tasks("order_parts", "dispatch", "book_job", "site_survey"), specs=specs
    )
    ordered, moved = order_chain(kept, specs)
    assert moved
    assert [t.intent for t in ordered] == ["site_survey", "book_job", "order_parts"]
    # Without the registry's word nothing moves and nothing is absorbed.
    assert [t.intent for t in order_chain(_tasks("order_parts", "book_job"))[0]] == [
        "order_parts", "book_job",
    ]  # fmt: skip


def test_a_create_request_that_points_at_an_existing_record_reads_as_its_existing_form() -> None:
    text = "mandame la factura de Graciela Ibarra, la ultima"
    task = Task("generate_invoice", "financial", 0.6, text, Entities(), [("payment_status", 0.3)])
    kept, _ = apply_labelling_rules([task], specs=SPECS)
    assert [(t.intent, t.confidence) for t in kept] == [("payment_status", 0.6)]
    # A new invoice for past work stays one; without the registry's `existing_as` nothing moves.
    new = replace(task, text="facturale a Gómez el service de ayer")
    assert [t.intent for t in apply_labelling_rules([new], specs=SPECS)[0]] == ["generate_invoice"]
    plain = SPECS | {"generate_invoice": replace(SPECS["generate_invoice"], existing_as="")}
    assert [t.intent for t in apply_labelling_rules([task], specs=plain)[0]] == ["generate_invoice"]


def test_the_one_person_a_technician_request_names_is_the_technician(
    router: Router, ctx: Context
) -> None:
    text = "move Sosa jobs, he is sick"
    read = router.understand(text, ctx)
    assert [t.intent for t in read.tasks] == ["technician_sick"]
    assert (read.entities.technician, read.entities.customer) == ("Sosa", None)
    # The registry's subject says so: without it the name stays where extraction put it.
    sick = replace(SPECS["technician_sick"], subject="")
    plain = replace(router, specs=router.specs | {"technician_sick": sick})
    assert plain.understand(text, ctx).entities.customer == "Sosa"


def test_the_relabelling_rules_are_the_registrys_word() -> None:
    import datetime

    today = datetime.date(2026, 11, 18)
    angry = Task("frustration_detected", "escalation", 0.7, "ESTOY HARTA, el calefón sigue roto!!!")
    bulk = Task("reschedule", "", 0.6, "pasá los trabajos de Leandro al jueves", Entities(),
                [("reschedule", 0.6), ("bulk_reschedule", 0.2)])  # fmt: skip
    later = Task(
        "dispatch", "fleet", 0.7, "mandá a alguien el lunes", Entities(date=today.replace(day=23))
    )
    cases = [(angry, "about_work_as", "complaint"), (bulk, "many_as", "bulk_reschedule"),
             (later, "later_as", "book_job")]  # fmt: skip
    for task, field, relabelled in cases:
        assert apply_labelling_rules([task], today, specs=SPECS)[0][0].intent == relabelled
        plain = SPECS | {task.intent: replace(SPECS[task.intent], **{field: ""})}
        assert apply_labelling_rules([task], today, specs=plain)[0][0].intent == task.intent
