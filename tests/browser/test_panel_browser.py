"""The panel in a real browser (issue 16.8): the operator's booking flow through the chat (and
its undo), a manager's inline approval, a reload in the middle of a turn, the phone layout and
an axe-core pass. Debian's Chromium through Playwright, against daphne
(tests/browser/conftest.py)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from agents.services import agents_install_defaults
from approvals.models import PendingAction
from business.models import Job
from copilot.models import Conversation
from copilot.services import conversation_create, message_add
from tests import factories
from tests.browser.conftest import axe_serious, wait_for
from tests.conftest import Cast
from tests.copilot.conftest import registry  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("registry")]


def _conversation(cast: Cast, user: Any, customer: Any, job: Any = None) -> Conversation:
    conversation = conversation_create(organisation=cast.org, user=user)
    conversation.state = {"customer_id": customer.pk, **({"job_id": job.pk} if job else {})}
    conversation.save()
    return conversation


def _send(page: Any, text: str) -> None:
    page.fill("#chat-input", text)
    page.press("#chat-input", "Enter")


def test_the_operator_books_through_the_chat_sees_the_customer_and_can_undo(
    cast: Cast, open_page: Any
) -> None:
    factories.make_technician(cast.org, "Carlos Gómez")
    customer = factories.make_customer(cast.org, "Claudia Bianchi", phone="+5491155550000")
    conversation = _conversation(cast, cast.operator, customer)
    page = open_page(cast.operator, f"/chat/{conversation.pk}/")
    # The message box has the focus on load: typing needs no Tab press (issue 28).
    assert page.evaluate("document.activeElement && document.activeElement.id") == "chat-input"
    context = page.locator("#chat-context")
    context.get_by_text("Claudia Bianchi").wait_for()

    _send(page, "agendale un service")
    reply = page.locator(".msg-assistant", has_text="Agendé el trabajo #")
    reply.wait_for()
    job = Job.objects.get(organisation=cast.org, customer=customer)
    # The live answer gets its actions; the side panel shows the new open job.
    undo = reply.get_by_test_id("undo")
    undo.wait_for()
    context.locator(f'a[href="/jobs/{job.pk}/"]').first.wait_for()
    # Copy puts the answer's text (only) on the clipboard.
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    reply.locator("[data-copy]").click()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith("Agendé el trabajo #") and "Copy" not in copied

    undo.click()
    # The undo is a new turn through the gate: a cancellation held for a manager, shown as a
    # read-only card to the operator; the job stays booked until then.
    card = page.get_by_test_id("approval-card")
    card.wait_for()
    assert card.locator("button").count() == 0
    assert wait_for(lambda: PendingAction.objects.filter(tool="job_cancel").exists())
    held = PendingAction.objects.get(tool="job_cancel")
    assert held.arguments["job_id"] == job.pk
    assert Job.objects.get(pk=job.pk).status == Job.Status.SCHEDULED
    reply.get_by_test_id("undo-done").wait_for()


def test_a_manager_approves_inline_and_the_card_follows_the_run(cast: Cast, open_page: Any) -> None:
    customer = factories.make_customer(cast.org, "Claudia Bianchi")
    job = factories.make_job(cast.org, customer)
    conversation = _conversation(cast, cast.manager, customer, job)
    page = open_page(cast.manager, f"/chat/{conversation.pk}/")
    _send(page, "cancelalo")
    card = page.get_by_test_id("approval-card")
    card.wait_for()
    approve = card.get_by_role("button", name="Aprobar").or_(
        card.get_by_role("button", name="Approve")
    )
    approve.click()
    # Decided once; the resumed turn runs the cancellation and the card ends as done.
    assert wait_for(lambda: Job.objects.get(pk=job.pk).status == Job.Status.CANCELLED)
    page.locator(".approval-card.approval-executed").wait_for()
    assert PendingAction.objects.get(tool="job_cancel").status == "executed"


def test_a_reload_in_the_middle_of_a_turn_still_gets_the_answer(cast: Cast, open_page: Any) -> None:
    customer = factories.make_customer(cast.org, "Claudia Bianchi")
    conversation = _conversation(cast, cast.operator, customer)
    page = open_page(cast.operator, f"/chat/{conversation.pk}/")
    _send(page, "contame despacio")
    page.locator(".msg-streaming").wait_for()  # the turn is under way
    page.reload()
    page.locator(".msg-assistant", has_text="acá está la respuesta lenta").wait_for()
    assert page.locator(".msg-user", has_text="contame despacio").count() == 1


def test_on_a_phone_the_send_button_and_the_panel_fit(cast: Cast, open_page: Any) -> None:
    customer = factories.make_customer(
        cast.org, "Claudia Bianchi", email="administracion@losgirasolesdelsur.edu.ar"
    )
    # A long unbroken value (an email) breaks inside its row instead of widening the page.
    record = open_page(cast.operator, f"/customers/{customer.pk}/", width=390)
    record.get_by_role("link", name=customer.email).wait_for()
    assert record.evaluate("document.documentElement.scrollWidth") <= 390
    conversation = _conversation(cast, cast.operator, customer)
    page = open_page(cast.operator, f"/chat/{conversation.pk}/", width=390)
    send = page.locator("#chat-form button[type=submit]")
    send.wait_for()
    box = send.bounding_box()
    assert box is not None
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    # A phone has no Shift+Enter: the keys' hint is hidden there (still the box's description).
    assert not page.locator("#chat-keys").is_visible()
    assert page.locator("#chat-input").get_attribute("aria-describedby") == "chat-keys"
    # The side panel starts folded on a phone and opens on demand.
    toggle = page.locator("#chat-context-toggle")
    assert toggle.get_attribute("open") is None
    page.locator("#chat-context-heading").click()
    page.locator("#chat-context").get_by_text("Claudia Bianchi").wait_for()
    # The Agenda scrolls inside its table, not the whole page.
    agenda = open_page(cast.operator, "/jobs/board/?span=week", width=390, locale="en")
    card = agenda.get_by_test_id("agenda")
    card.wait_for()
    edge = card.bounding_box()
    assert edge is not None and edge["x"] + edge["width"] <= 390, edge
    for name in ("← Previous", "Today", "Next →", "Day", "Week"):
        box = agenda.get_by_role("link", name=name, exact=True).bounding_box()
        assert box is not None and box["x"] + box["width"] <= edge["x"] + edge["width"], name


@pytest.mark.parametrize("path", ["/chat/", "/", "/jobs/board/"])
def test_axe_finds_nothing_serious(cast: Cast, open_page: Any, path: str) -> None:
    customer = factories.make_customer(cast.org, "Claudia Bianchi")
    technician = factories.make_technician(cast.org, "Carlos Gómez")
    factories.make_job(cast.org, customer, technician=technician)
    _conversation(cast, cast.operator, customer)
    page = open_page(cast.operator, path)
    page.wait_for_load_state("networkidle")
    assert axe_serious(page) == []


def test_the_admins_own_widgets_read_out_and_fit_a_phone(cast: Cast, open_page: Any) -> None:
    """Django's admin as the demo's admin (a superuser) sees it at 390 px: fields edited in a
    list's rows, autocomplete boxes and the filter boxes' help icons carry names
    (static/js/admin.js), and the index fits the window."""
    agents_install_defaults(organisation=cast.org)
    cast.admin.is_staff = cast.admin.is_superuser = True
    cast.admin.save()
    page = open_page(cast.admin, "/admin/", width=390)
    page.wait_for_load_state("networkidle")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    for path in ("/admin/agents/agent/", "/admin/business/job/add/", "/admin/auth/group/add/"):
        page.goto(page.url.split("/admin/")[0] + path)
        page.wait_for_load_state("networkidle")
        assert axe_serious(page) == [], path
    page.goto(page.url.split("/admin/")[0] + "/admin/agents/agent/")
    enabled = page.locator("#id_form-0-enabled")
    assert (enabled.get_attribute("aria-label") or "").startswith("Habilitado: ")


def test_a_free_hour_in_the_agenda_opens_the_chat_with_the_booking_prefilled(
    cast: Cast, open_page: Any
) -> None:
    factories.make_technician(cast.org, "Carlos Gómez")
    customer = factories.make_customer(cast.org, "Claudia Bianchi")
    conversation = _conversation(cast, cast.operator, customer)
    # Next week: this week's free hours are all past on a Saturday afternoon (free slots are
    # never offered in the past), and the test must pass on any day.
    next_week = datetime.date.today() + datetime.timedelta(days=7)
    page = open_page(cast.operator, f"/jobs/board/?span=week&date={next_week}", locale="en")
    free = page.locator(".agenda-free").first
    moment = free.get_attribute("data-free")
    assert moment is not None
    free.click()
    page.wait_for_url(f"**/chat/{conversation.pk}/**")
    typed = page.locator("#chat-input").input_value()
    day = f"{moment[8:10]}/{moment[5:7]}/{moment[:4]}"
    assert typed == f"Book a job for Carlos Gómez on {day} at {moment[11:16]}"
    assert "prefill" not in page.url  # a reload does not type it again


def _long_conversation(
    cast: Cast, answers: int, user: Any = None, job: bool = False
) -> Conversation:
    """A conversation of `answers` exchanges, each answer with its feedback controls (about a
    customer, and one of their jobs when `job`)."""
    customer = factories.make_customer(cast.org, "Claudia Bianchi")
    their_job = factories.make_job(cast.org, customer) if job else None
    conversation = _conversation(cast, user or cast.operator, customer, their_job)
    for number in range(answers):
        message_add(conversation=conversation, role="user", text=f"pregunta {number}")
        message_add(
            conversation=conversation, role="assistant", text=f"Respuesta número {number}.",
            language="es", agent="scheduling",
            trace={"consulted": [{"agent": "scheduling", "label": "Agenda", "success": True}]},
        )  # fmt: skip
    return conversation


TAB_STOPS = """() => Array.from(document.querySelectorAll('#chat-thread > li.msg')).map(
  (li) => Array.from(li.querySelectorAll('a[href], button, summary, input, [tabindex]'))
    .filter((n) => n.tabIndex >= 0 && !n.closest('[hidden]')).length)"""


def test_by_keyboard_each_answer_is_one_stop_and_arrows_move_inside_it(
    cast: Cast, open_page: Any
) -> None:
    conversation = _long_conversation(cast, answers=10)
    page = open_page(cast.operator, f"/chat/{conversation.pk}/")
    page.locator("#chat-thread > li.msg-assistant").nth(9).wait_for()
    # No Tab press to the message box: it has the focus on load.
    assert page.evaluate("document.activeElement.id") == "chat-input"
    assert page.locator("#chat-keys").is_visible()  # the keys, told under the box on a desktop
    stops = page.evaluate(TAB_STOPS)
    assert len(stops) == 20 and max(stops) == 1, stops
    # Inside an answer the arrow keys walk its controls, and come back round.
    answer = page.locator("#chat-thread > li.msg-assistant").first
    first = answer.locator("[tabindex='0']").first.element_handle()
    first.focus()
    count = answer.evaluate(
        "(li) => Array.from(li.querySelectorAll('a[href], button, summary')).length"
    )
    assert count > 1
    page.keyboard.press("ArrowRight")
    assert not first.evaluate("(n) => n === document.activeElement")
    assert answer.evaluate("(li) => li.contains(document.activeElement)")
    page.keyboard.press("ArrowLeft")
    assert first.evaluate("(n) => n === document.activeElement")
    # The skip link leads to the message box; on any other page it is the first Tab stop.
    page.focus(".skip-link")
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "chat-input"
    dashboard = open_page(cast.operator, "/")
    dashboard.keyboard.press("Tab")
    assert dashboard.evaluate("document.activeElement.className") == "skip-link"
    dashboard.keyboard.press("Enter")
    assert dashboard.evaluate("location.hash") == "#content"


def test_on_a_phone_a_new_answer_scrolls_into_view_and_is_announced(
    cast: Cast, open_page: Any
) -> None:
    factories.make_technician(cast.org, "Carlos Gómez")
    conversation = _long_conversation(cast, answers=8)
    page = open_page(cast.operator, f"/chat/{conversation.pk}/", width=390)
    page.locator("#chat-thread > li.msg-assistant").nth(7).wait_for()
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    _send(page, "agendale un service")
    reply = page.locator(".msg-assistant", has_text="Agendé el trabajo #")
    reply.wait_for()
    page.wait_for_function(
        "() => { const r = document.querySelector('#chat-thread > li:last-child')"
        ".getBoundingClientRect(); return r.top < window.innerHeight && r.bottom > 0; }"
    )
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.wait_for_function(
        "() => document.getElementById('chat-announce').textContent.includes('Agendé el trabajo')"
    )
    # The focus is back in the message box, ready for the next message.
    assert page.evaluate("document.activeElement.id") == "chat-input"


IN_THREAD = """() => { const thread = document.getElementById('chat-thread');
  const last = thread.querySelector(':scope > li:last-child').getBoundingClientRect();
  const box = thread.getBoundingClientRect();
  return last.bottom <= Math.min(box.bottom, window.innerHeight) + 2; }"""


def test_what_follows_an_answer_that_grew_is_still_brought_into_view(
    cast: Cast, open_page: Any
) -> None:
    # The held answer grows after it was scrolled to (its card, steps and actions); the
    # decision's result that comes next must still be scrolled into view on a desktop.
    conversation = _long_conversation(cast, answers=10, user=cast.manager, job=True)
    job = Job.objects.get(pk=conversation.state["job_id"])
    page = open_page(cast.manager, f"/chat/{conversation.pk}/")
    page.locator("#chat-thread > li.msg-assistant").nth(9).wait_for()
    _send(page, "cancelalo")
    card = page.get_by_test_id("approval-card")
    card.wait_for()
    card.get_by_role("button", name="Aprobar").or_(
        card.get_by_role("button", name="Approve")
    ).click()
    assert wait_for(lambda: Job.objects.get(pk=job.pk).status == Job.Status.CANCELLED)
    page.locator(".approval-card.approval-executed").wait_for()
    page.locator(".msg-assistant", has_text="aprobó la acción").wait_for()
    page.wait_for_timeout(800)  # the result's own actions arrive after it
    assert page.evaluate(IN_THREAD)


def _suggest(cast: Cast, customer: Any, service: str) -> None:
    from agents.models import ScheduleRun, Suggestion

    job = factories.make_job(cast.org, customer, status=Job.Status.DONE)
    run = ScheduleRun.objects.create(organisation=cast.org, detector="follow_ups")
    Suggestion.objects.create(
        organisation=cast.org, kind="follow_up", records={"job": job.pk}, customer=customer,
        subject=f"follow_up:job={job.pk}", dedupe_key=f"follow_up:job={job.pk}:",
        facts={"customer": customer.name, "service": service, "completed_on": "2026-01-02",
               "days_ago": 3, "technician": ""},
        tool="follow_up_record", arguments={"job_id": job.pk}, run=run,
    )  # fmt: skip


BOTH_CARDS_SHOWN = """() => {
  const cards = [...document.querySelectorAll('#suggestions-list li.suggestion')];
  return cards.length === 2 && cards.every((card) => {
    const actions = card.querySelector('.suggestion-actions');
    return actions !== null && actions.getBoundingClientRect().height > 0;
  });
}"""
CARD_BOXES = """() => [...document.querySelectorAll('#suggestions-list li.suggestion')]
  .map((card) => {
  const box = (el) => { const r = el.getBoundingClientRect();
    return {x: r.x, y: r.y, width: r.width, height: r.height}; };
  return [box(card.querySelector(':scope > div')), box(card.querySelector('.suggestion-actions'))];
})"""


def test_suggestion_buttons_sit_in_one_place_whatever_the_texts_length(
    cast: Cast, open_page: Any
) -> None:
    """Beside the text on a wide list, under it on a narrow one (the chat's side column, a
    phone) — for a card with a short text and one with a long text alike."""
    _suggest(cast, factories.make_customer(cast.org, "Ana Paz"), "aire")
    long_service = "mantenimiento preventivo de los equipos de aire del depósito " * 3
    _suggest(cast, factories.make_customer(cast.org, "Claudia Bianchi"), long_service)

    def boxes(page: Any) -> list[tuple[dict[str, float], dict[str, float]]]:
        # Measured in one go inside the page, once both cards show their buttons: the list
        # refreshes itself (htmx swaps it whole on the socket's word), and a card measured one
        # by one from here could be caught mid-swap (CI once read no box for one card's buttons).
        page.wait_for_function(BOTH_CARDS_SHOWN)
        found: list[tuple[dict[str, float], dict[str, float]]] = page.evaluate(CARD_BOXES)
        return [(text, actions) for text, actions in found]

    wide = boxes(open_page(cast.operator, "/suggestions/", width=1366))
    assert len(wide) == 2
    for text, actions in wide:
        assert actions["x"] >= text["x"] + text["width"] - 1  # beside
        assert abs(actions["y"] - text["y"]) < 2  # top-aligned
        assert actions["height"] < 60  # one row of buttons
    assert abs(wide[0][1]["x"] - wide[1][1]["x"]) < 2  # the same column for both
    for page in (
        open_page(cast.operator, "/suggestions/", width=390),
        open_page(cast.operator, "/chat/", width=1366),
    ):
        for text, actions in boxes(page):
            assert actions["y"] >= text["y"] + text["height"] - 1  # under
