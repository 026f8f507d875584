"""One language per screen (issue 28.1): every page and panel fragment of the demo, rendered in
es-AR as the operator, the manager and the admin, shows no English word of a kept list and no raw
internal reference (`job:258`, `None`, `{{`); in English, none of our own Spanish.

The pages come from the URLconf (the admin's per-model pages from its registry), each id-taking
one with one demo record of its kind; the htmx fragments a page loads (`hx-get`) are requested
as htmx requests. The demo is the one `manage.py load_demo` loads, plus what a working day adds:
real turns (a search, a booking, a quote, a cancellation held for approval), the proactive
detectors' suggestions, a dataset with a run, an answer's feedback and an A/B test. The counts
are logged (`pytest --log-cli-level=INFO`).
"""

from __future__ import annotations

import json
import logging
import re
import zoneinfo
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urlparse

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.db.models import Model
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from agents.abtest import abtest_start
from agents.models import ABTest, Agent, Detector, ProactiveSchedule, Suggestion
from agents.proactive.services import detector_run
from agents.services import agent_save
from approvals.models import PendingAction
from business.models import Customer, Invoice, Job, Quote
from copilot.models import Conversation, Message
from evaluation.datasets import golden_install
from evaluation.feedback import feedback_record
from evaluation.models import Case, Dataset, Feedback, Run
from evaluation.runs import run_create, run_execute
from tests.copilot.demo_harness import (
    Demo,
    Turn,
    ask,
    bookable_hour,
    current_demo,
    es_day,
    new_conversation,
    open_demo_database,
)

pytestmark = pytest.mark.django_db

logger = logging.getLogger(__name__)
ROLES = {"operator": "operadora", "manager": "gerente", "admin": "admin"}

# English a Spanish screen must not show: whole words, case-sensitive (a label's capital), none
# of them Spanish too ("No", "Total", "Email", "Error", "Tickets", "Admin" are).
ENGLISH = re.compile(
    r"\b(Customers?|Jobs?|Invoices?|Quotes?|Technicians?|Vehicles?|Approve[ds]?|Reject(?:ed)?|"
    r"Pending|Created|Updated|Status|Save|Delete|Search|Filter|Yes|Today|Tomorrow|Yesterday|"
    r"Tools?|Settings|Enabled|Disabled|Submit|Back|Next|Previous|Week|Sign out|Unpaid|Paid|"
    r"Amount|Description|Phone|Address|Open|Closed|Details|Name|Date|Price|Runs?|Accept|Dismiss|"
    r"Answers?|Message|Steps?|Organi[sz]ation|Schedule|Overview|Change|Add|View|History|"
    r"booked|cancelled|scheduled|held for approval|jobs|customers|invoices|the|and|with|of|for|"
    r"Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|January|February|March|April|"
    r"June|July|August|September|October|November|December|[ap]\.m\.|None|agents?|"
    r"embedded|hybrid|executed|expired|failed|routed|"
    r"Can (?:add|change|delete|view))\b"
)
# Internal references and template or formatting leftovers, in any language (a Python `None` is
# in the English list: "None available" is English on an English screen).
RAW = re.compile(
    r"\b(?:job|customer|invoice|quote|ticket|technician|vehicle|agent|payment|conversation|"
    r"message|equipment):\d+\b|\[object|\{\{|\{%|%\(\w+\)"
)
# Our own Spanish on an English screen (the records themselves are Spanish and stay so).
SPANISH = re.compile(
    r"\b(Guardar|Buscar|Pendientes?|Aprobar|Rechazar|Trabajos?|Clientes?|Facturas?|"
    r"Presupuestos?|Técnicos?|Vehículos?|Hoy|Mañana|Estado|Agenda|Descartar|Aceptar|Inicio|"
    r"lunes|martes|miércoles|jueves|viernes|sábado|domingo|enero|febrero|marzo|abril|junio|"
    r"julio|agosto|septiembre|octubre|noviembre|diciembre|Listo|Reservé|Encontré)\b"
)
# A code's identifier in a sentence (`book_job`, `job_cancel`): a person reads the intent's or
# the tool's label; the id stays only as a `title`, in code, or in the form field that edits it.
SNAKE = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")
LANGUAGES = {"es-ar": ENGLISH, "en": SPANISH}
# Not pages: sign-out, the language switch, webhooks, files and downloads.
SKIP = re.compile(r"^/(logout|i18n|whatsapp/webhook|whatsapp/media)/|/pdf/$|/export/$")
# Where text is shown as typed, not written by us: a form field's value, code and JSON.
QUOTED = {"script", "style", "template", "textarea", "pre", "code"}
# Where an admin picks a code's value: a form field's options (the id may stand as typed there).
FIELDS = {"select", "datalist"}
SHOWN_ATTRIBUTES = ("title", "aria-label", "placeholder", "alt")
VOID = {"area", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
# Admin pages of other packages, walked on their own (the superuser's).
THIRD_PARTY = {"django_celery_beat", "axes"}
_CONVERTER = re.compile(r"<(?:\w+:)?(\w+)>")


@dataclass
class Page:
    url: str
    text: str
    hx_gets: list[str] = field(default_factory=list)
    prose: str = ""  # the text nodes alone, outside form fields: where ids must not show


class _Visible(HTMLParser):
    """The text a person sees or hears in the page's language: text nodes and the labelling
    attributes, outside an element that says it is in another language (`lang="es"` around a
    Spanish message on an English screen, as screen readers need it)."""

    def __init__(self, language: str) -> None:
        super().__init__(convert_charrefs=True)
        self.language = language[:2]
        self.parts: list[str] = []
        self.hx_gets: list[str] = []
        self.prose: list[str] = []
        self._quoted = 0
        self._open: list[str] = []  # the open elements, to know when a form field closes
        self._fields: list[int] = []  # the depths at which form fields opened
        self._foreign: list[str] = []  # the open tags since an element in another language

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("hx-get"):
            self.hx_gets.append(str(values["hx-get"]))
        if tag == "html":
            return
        lang = (values.get("lang") or "")[:2]
        if self._foreign or (lang and lang != self.language):
            if tag not in VOID:
                self._foreign.append(tag)
            return
        if tag in QUOTED:
            self._quoted += 1
        if tag not in VOID:
            self._open.append(tag)
            # A widget Django renders for a form field (`id="id_tools"`: the tool checkboxes).
            if tag in FIELDS or str(values.get("id") or "").startswith("id_"):
                self._fields.append(len(self._open))
        self.parts += [str(values[a]) for a in SHOWN_ATTRIBUTES if values.get(a)]

    def handle_endtag(self, tag: str) -> None:
        if self._foreign:
            if tag in self._foreign:
                del self._foreign[len(self._foreign) - 1 - self._foreign[::-1].index(tag) :]
            return
        if tag in QUOTED and self._quoted:
            self._quoted -= 1
        if tag in self._open:
            del self._open[len(self._open) - 1 - self._open[::-1].index(tag) :]
            self._fields = [depth for depth in self._fields if depth <= len(self._open)]

    def handle_data(self, data: str) -> None:
        if not self._quoted and not self._foreign and not _is_json(data) and not _a_zone(data):
            self.parts.append(data)
            if not self._fields:
                self.prose.append(data)


ZONES = zoneinfo.available_timezones()


def _a_zone(text: str) -> bool:
    """A time zone's IANA name ("America/Port of Spain" in a schedule's zone list): data."""
    return text.strip().replace(" ", "_") in ZONES  # shown with spaces for underscores


def _is_json(text: str) -> bool:
    """A record's JSON shown as stored (the admin's read-only JSON fields): data, like <pre>."""
    text = text.strip()
    if not text.startswith(("{", "[")):
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def visible(url: str, html: str, language: str = "es") -> Page:
    parser = _Visible(language)
    parser.feed(html)
    text = re.sub(r"\s+", " ", " · ".join(p for p in parser.parts if p.strip()))
    prose = re.sub(r"\s+", " ", " · ".join(p for p in parser.prose if p.strip()))
    return Page(url, text, parser.hx_gets, prose)


def hits(page: Page, pattern: re.Pattern[str], *, prose: bool = False) -> list[str]:
    found = []
    text = page.prose if prose else page.text
    for match in pattern.finditer(text):
        start, end = max(match.start() - 40, 0), match.end() + 40
        found.append(f"{page.url}: «{match.group(0)}» in …{text[start:end]}…")
    return found


# --- the demo, with a working day on it -------------------------------------------------------


def _turns(demo: Demo) -> tuple[Conversation, Turn]:
    """Five turns in one conversation; the booking's is returned (steps, chips, memory)."""
    conversation = new_conversation(demo)
    day = demo.working_days(2, 1)[0]
    hour = bookable_hour(demo, day, "ac")
    single = demo.single_job_customers()[0]
    job_day = es_day(demo.local(single.scheduled_start).date())
    turns: list[Turn] = []
    for text in (
        "Pasame la ficha de Claudia Álvarez",
        f"Agendale a Graciela Ibarra un service de split el {es_day(day)} a las {hour}",
        "Haceme un presupuesto de instalación de split 3000 frigorías para Panadería La Espiga",
        f"Cancelá el trabajo de {single.customer.name} del {job_day}, avisó que no va a estar",
        "¿Qué clientes tienen el service vencido este mes?",
    ):
        turns.append(ask(demo, conversation, text))
    return conversation, turns[1]


def _evaluation(demo: Demo, admin_user: Any, answer: Message) -> None:
    golden_install(demo.org)  # the demo may have it already
    dataset = Dataset.objects.filter(organisation=demo.org).order_by("pk").first()
    assert dataset is not None
    run = run_create(organisation=demo.org, user=admin_user, dataset=dataset)
    run_execute(run.pk)
    feedback_record(user=demo.operator, message=answer, rating="down", should_be="scheduling")
    agent = Agent.objects.get(organisation=demo.org, name="customer")
    agent_save(agent=agent, changes={"min_confidence": 0.5})
    versions = list(agent.versions.order_by("number").values_list("number", flat=True))
    abtest_start(
        organisation=demo.org, agent=agent, version_a=versions[0], version_b=versions[-1],
        share_b=50,
    )  # fmt: skip


@dataclass
class Walk:
    demo: Demo
    records: dict[str, Model]
    ids: dict[str, str] = field(default_factory=dict)


@pytest.fixture(scope="module")
def walk(django_db_setup: None, django_db_blocker: Any) -> Iterator[Walk]:
    database = open_demo_database(django_db_blocker)
    next(database)
    try:
        with django_db_blocker.unblock():
            yield _working_day()
    finally:
        next(database, None)


def _working_day() -> Walk:
    demo = current_demo()
    conversation, booking = _turns(demo)
    for detector in Detector.values:
        detector_run(detector=detector, organisation_id=demo.org.pk)
    assert booking.result.assistant_message_id is not None, booking.reply
    answer = Message.objects.get(pk=booking.result.assistant_message_id)
    admin_user = get_user_model().objects.get(username="admin")
    _evaluation(demo, admin_user, answer)
    org = demo.org
    records: dict[str, Model | None] = {
        "job": Job.objects.filter(organisation=org).order_by("pk").first(),
        "customer": Customer.objects.filter(organisation=org).order_by("pk").first(),
        "invoice": Invoice.objects.filter(organisation=org).order_by("pk").first(),
        "quote": Quote.objects.filter(organisation=org).order_by("-pk").first(),
        "conversation": conversation,
        "answer": answer,
        "question": conversation.messages.filter(role=Message.Role.USER).first(),
        "action": PendingAction.objects.filter(organisation=org).first(),
        "suggestion": Suggestion.objects.filter(organisation=org).first(),
        "schedule": ProactiveSchedule.objects.filter(organisation=org).first(),
        "dataset": Dataset.objects.filter(organisation=org).first(),
        "case": Case.objects.filter(organisation=org).first(),
        "run": Run.objects.filter(organisation=org).first(),
        "feedback": Feedback.objects.filter(organisation=org).first(),
        "abtest": ABTest.objects.filter(organisation=org).first(),
    }
    missing = [kind for kind, row in records.items() if row is None]
    assert missing == [], f"the working day left no {missing}"
    kept = {kind: row for kind, row in records.items() if row is not None}
    return Walk(demo, kept, {"turn_id": booking.result.turn_id})


# --- the pages ---------------------------------------------------------------------------------

# Which record fills each id of a URL name (a URL added without a row here fails the walk).
ARGUMENTS: dict[str, dict[str, str]] = {
    "job_detail": {"pk": "job"},
    "customer_detail": {"pk": "customer"},
    "customer_profile": {"pk": "customer"},
    "customer_profile_clear": {"pk": "customer"},
    "invoice_detail": {"pk": "invoice"},
    "invoice_pdf": {"pk": "invoice"},
    "quote_detail": {"pk": "quote"},
    "quote_pdf": {"pk": "quote"},
    "chat_detail": {"conversation_id": "conversation"},
    "chat_answer": {"conversation_id": "conversation", "turn_id": "turn_id"},
    "trace_conversation": {"conversation_id": "conversation"},
    "trace_turn": {"turn_id": "turn_id"},
    "chat_context": {"conversation_id": "conversation"},
    "chat_answer_actions": {"conversation_id": "conversation", "message_id": "answer"},
    "chat_answer_undo": {"conversation_id": "conversation", "message_id": "answer"},
    "chat_approval_card": {"action_id": "action"},
    "chat_approval_decide": {"action_id": "action"},
    "approval_detail": {"action_id": "action"},
    "approval_decide": {"action_id": "action"},
    "suggestion_accept": {"pk": "suggestion"},
    "suggestion_dismiss": {"pk": "suggestion"},
    "evaluation:dataset": {"pk": "dataset"},
    "evaluation:dataset_import": {"pk": "dataset"},
    "evaluation:dataset_export": {"pk": "dataset"},
    "evaluation:case_new": {"pk": "dataset"},
    "evaluation:case": {"pk": "case"},
    "evaluation:case_delete": {"pk": "case"},
    "evaluation:run": {"pk": "run"},
    "evaluation:run_progress": {"pk": "run"},
    "evaluation:calibration": {"pk": "run"},
    "evaluation:calibration_apply": {"pk": "run"},
    "evaluation:feedback_case": {"pk": "feedback"},
    "evaluation:feedback_dismiss": {"pk": "feedback"},
    "evaluation:message_case": {"pk": "question"},
    "evaluation:answer_feedback": {"message_id": "answer"},
    "abtest_detail": {"test_id": "abtest"},
    "abtest_stop": {"test_id": "abtest"},
    "abtest_promote": {"test_id": "abtest"},
    "abtest_offline": {"test_id": "abtest"},
    "whatsapp:media": {"media_id": "answer"},
    "whatsapp:take": {"conversation_id": "conversation"},
    "whatsapp:release": {"conversation_id": "conversation"},
    "whatsapp:reply": {"conversation_id": "conversation"},
}


def _patterns(entries: list[Any], prefix: str = "", space: str = "") -> Iterator[tuple[str, str]]:
    for entry in entries:
        if isinstance(entry, URLResolver):
            inner = f"{space}{entry.namespace}:" if entry.namespace else space
            yield from _patterns(entry.url_patterns, prefix + str(entry.pattern), inner)
        elif isinstance(entry, URLPattern) and entry.name:
            yield prefix + str(entry.pattern), space + entry.name


def _value(walk: Walk, kind: str) -> str:
    return walk.ids[kind] if kind in walk.ids else str(walk.records[kind].pk)


def panel_urls(walk: Walk) -> list[str]:
    """Every named URL of the panel (the admin's apart), ids filled from the walk's records."""
    urls = []
    for pattern, name in _patterns(get_resolver().url_patterns):
        if pattern.startswith(("admin/", "^")):
            continue
        needed = _CONVERTER.findall(pattern)
        assert set(needed) <= set(ARGUMENTS.get(name, {})), f"no record for {name} ({pattern})"
        kwargs = {arg: _value(walk, kind) for arg, kind in ARGUMENTS.get(name, {}).items()}
        urls.append(reverse(name, kwargs=kwargs))
    return [url for url in urls if not SKIP.search(url)]


def admin_urls(walk: Walk, third_party: bool = False) -> list[str]:
    """The admin's index, each app's, and each model's list, add form and one change form: of
    our apps, or (`third_party`) of the libraries' apps, which superusers alone are let into."""
    urls = [reverse("admin:index")]
    for model in admin.site._registry:
        meta = model._meta
        if (meta.app_label in THIRD_PARTY) != third_party:
            continue
        urls.append(reverse("admin:app_list", args=[meta.app_label]))
        urls.append(reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist"))
        rows = model._default_manager.all()
        if "organisation" in {f.name for f in meta.fields}:
            rows = rows.filter(organisation=walk.demo.org)
        row = rows.order_by("pk").first()
        if row is not None:
            urls.append(reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[row.pk]))
        urls.append(reverse(f"admin:{meta.app_label}_{meta.model_name}_add"))
    return list(dict.fromkeys(urls))


def _html(response: Any) -> str | None:
    if response.status_code in (301, 302, 303, 405) or getattr(response, "streaming", False):
        return None
    if not response.get("Content-Type", "").startswith("text/html"):
        return None
    return str(response.content.decode())


def render_all(client: Client, urls: list[str], language: str) -> list[Page]:
    """Each page, then each htmx fragment the pages load (once per URL)."""
    pages: list[Page] = []
    fragments: list[str] = []
    for url in urls:
        html = _html(client.get(url))
        if html is not None:
            page = visible(url, html, language)
            pages.append(page)
            fragments += [u for u in page.hx_gets if not urlparse(u).netloc]
    for url in dict.fromkeys(fragments):
        html = _html(client.get(url, HTTP_HX_REQUEST="true"))
        if html is not None:
            pages.append(visible(f"{url} (htmx)", html, language))
    return pages


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("role", ROLES)
def test_every_screen_speaks_one_language(walk: Walk, role: str, language: str) -> None:
    user = get_user_model().objects.get(username=ROLES[role])
    client = Client(raise_request_exception=True, HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(user)
    urls = panel_urls(walk) + (admin_urls(walk) if user.is_staff else [])
    pages = render_all(client, urls, language)

    # English screens: the panel's own text (the admin's read-only record fields can carry no
    # `lang`, and the demo's records are Spanish).
    checked = [p for p in pages if language != "en" or not p.url.startswith("/admin/")]
    found = [hit for page in checked for hit in hits(page, LANGUAGES[language])]
    found += [hit for page in pages for hit in hits(page, RAW)]
    found += [hit for page in pages for hit in hits(page, SNAKE, prose=True)]
    logger.info("%s in %s: %d pages rendered, %d hits", role, language, len(pages), len(found))
    assert len(pages) > (150 if user.is_staff else 30)
    if found:
        pytest.fail(f"{len(found)} hits:\n" + "\n".join(found), pytrace=False)


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_libraries_admin_pages_speak_one_language_too(walk: Walk, language: str) -> None:
    """The beat schedules (django-celery-beat) and the sign-in records (django-axes): the demo's
    admin is a superuser and sees them, in the libraries' words (capataz/library_words.py) and
    with the crontab schedules described in the reader's language."""
    client = Client(raise_request_exception=True, HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(get_user_model().objects.get(username=ROLES["admin"], is_superuser=True))
    client.get(reverse("admin:index"))  # a sign-in record for the access logs' pages
    pages = render_all(client, admin_urls(walk, third_party=True), language)
    found = [hit for page in pages for hit in hits(page, ENGLISH)] if language != "en" else []
    found += [hit for page in pages for hit in hits(page, RAW)]
    logger.info("library admin pages in %s: %d rendered, %d hits", language, len(pages), len(found))
    assert len(pages) > 20
    if found:
        pytest.fail(f"{len(found)} hits:\n" + "\n".join(found), pytrace=False)


def test_the_walk_catches_what_it_looks_for() -> None:
    page = visible(
        "/x/",
        '<p title="Save">Trabajo <b>job:258</b> de None</p><script>var a = "Customer";</script>'
        "<code>Customer</code><p>Listo: {{ x }} %(count)s <span lang='en'>Search</span></p>",
    )
    assert [_word(h) for h in hits(page, ENGLISH)] == ["Save", "None"]
    assert [_word(h) for h in hits(page, RAW)] == ["job:258", "{{", "%(count)"]
    ids = visible(
        "/w/",
        '<p title="book_job">Agendar el trabajo</p><p>falló job_cancel</p><code>job_book</code>'
        '<select><option value="book_job">book_job</option></select><p>armando@mail.com</p>'
        '<div id="id_tools"><div><label>job_book (suggest)</label></div></div>'
        "<p>es quote_create</p>",
    )
    assert [_word(h) for h in hits(ids, SNAKE, prose=True)] == ["job_cancel", "quote_create"]
    data = visible("/z/", '<div class="readonly">{"status": "scheduled"}</div>')
    assert hits(data, ENGLISH) == []  # a record's JSON, shown as stored
    zones = visible("/t/", "<select><option>America/Port of Spain</option></select>")
    assert hits(zones, ENGLISH) == []  # a time zone's name
    spanish = visible("/y/", '<p>Estado: Pendiente · lunes 26</p><p lang="es">Hoy</p>', "en")
    assert [_word(h) for h in hits(spanish, SPANISH)] == ["Estado", "Pendiente", "lunes"]


def _word(hit: str) -> str:
    return hit.split("«")[1].split("»")[0]
