"""Photos, voice notes and documents on WhatsApp (issue 14.5, E4): fetched through a fake Graph
API on a real socket, checked, stored per organisation, read by a scripted OpenAI-compatible
server (a vision chat call, the /audio/transcriptions endpoint) through the real `openai` SDK;
the embedded engine, limits, model faults, redelivery and tenancy."""

from __future__ import annotations

import base64
import datetime
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.contrib.auth.models import Permission
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from agents.models import Agent, ToolCall
from approvals.models import PendingAction
from business.models import Equipment, JobEvent, Organisation
from capataz.settings import env_hosts
from copilot import runner
from copilot.models import Conversation, ConversationEvent, Message, Turn
from copilot.services import conversation_create
from llm.client import IMAGE_TOKENS, ModelFailure, estimate_tokens
from llm.media import parse_reading
from llm.models import ModelCall
from testing.fake_graph import FakeGraph
from testing.scripted import ScriptedServer, for_transcription, has_image, status, text, transcript
from tests import factories
from tests.conftest import Cast
from whatsapp import graph as graph_client
from whatsapp import media as whatsapp_media
from whatsapp.media import media_process
from whatsapp.models import IncomingMedia, OutgoingMessage, WhatsAppRejection
from whatsapp.payload import sign

pytestmark = [
    pytest.mark.usefixtures("photo_tools"),
    pytest.mark.django_db(transaction=True),  # the runner closes and reopens its connection
]

URL = "/whatsapp/webhook/"
NUMBER, SECRET = "1100220033", "app-secret-clima"
OTHER_NUMBER, OTHER_SECRET = "9900880077", "app-secret-frio"
CUSTOMER = "5491155550000"  # the customer's WhatsApp id; stored as +541155550000
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x11" * 2000
OGG = b"OggS\x00\x02" + b"\x22" * 3000
READING = {"kind": "Split", "brand": "Surrey", "model": "619PHCD", "capacity": "3000 frigorías",
           "symptom": "gotea agua por la unidad interior"}  # fmt: skip
READING_TOOL = {k: v for k, v in READING.items() if k != "symptom"}  # equipment_record's arguments


@pytest.fixture(autouse=True)
def media_root(settings: Any, tmp_path: Path) -> Path:
    settings.MEDIA_ROOT = tmp_path
    return tmp_path


@pytest.fixture
def graph(settings: Any) -> Iterator[FakeGraph]:
    with FakeGraph() as fake:
        settings.WHATSAPP_GRAPH_URL = fake.base_url
        settings.WHATSAPP_MEDIA_HOSTS = [fake.base_url]  # the fake serves the files itself
        settings.WHATSAPP_MEDIA_TOKEN_HOSTS = []
        yield fake


@pytest.fixture
def cdn(settings: Any, graph: FakeGraph) -> Iterator[FakeGraph]:
    """Another origin that serves files: Meta's CDN, allowed for downloads, never given the
    token."""
    with FakeGraph() as fake:
        settings.WHATSAPP_MEDIA_HOSTS = [graph.base_url, fake.base_url]
        yield fake


@pytest.fixture
def model(settings: Any) -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        settings.OPENAI_API_KEY = "test-key"
        settings.OPENAI_BASE_URL = server.base_url
        settings.OPENAI_MODEL = "scripted-model"
        settings.OPENAI_VISION_MODEL = "scripted-vision"
        settings.OPENAI_TRANSCRIPTION_MODEL = "scripted-whisper"
        settings.OPENAI_TIMEOUT = 2.0
        settings.OPENAI_MAX_RETRIES = 0
        yield server


def _engine(org: Organisation, engine: str) -> None:
    org.engine = engine
    org.save(update_fields=["engine"])


@pytest.fixture
def accounts(cast: Cast) -> None:
    from whatsapp.models import WhatsAppAccount

    for org, number, secret in ((cast.org, NUMBER, SECRET),
                                (cast.other_org, OTHER_NUMBER, OTHER_SECRET)):  # fmt: skip
        account = WhatsAppAccount(organisation=org)
        account.phone_number_id = number
        account.app_secret = secret
        account.verify_token = f"verify-{number}"
        account.access_token = f"token-{number}"
        account.save()


def _delivery(message: dict[str, Any], number: str = NUMBER) -> bytes:
    value = {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "5491100000000", "phone_number_id": number},
        "contacts": [{"profile": {"name": "Marta"}, "wa_id": CUSTOMER}],
        "messages": [message],
    }
    change = {"field": "messages", "value": value}
    body = {"object": "whatsapp_business_account", "entry": [{"id": "waba", "changes": [change]}]}
    return json.dumps(body).encode()


def _media(kind: str, message_id: str, media_id: str, mime: str, **extra: Any) -> dict[str, Any]:
    return {"from": CUSTOMER, "id": message_id, "timestamp": str(int(timezone.now().timestamp())),
            "type": kind, kind: {"id": media_id, "mime_type": mime, **extra}}  # fmt: skip


def _post(body: bytes, secret: str = SECRET, capture: Any = None) -> int:
    with capture(execute=True):
        response = Client().post(
            URL, data=body, content_type="application/json",
            HTTP_X_HUB_SIGNATURE_256=sign(secret, body),
        )  # fmt: skip
    return int(response.status_code)


def _sent(graph: FakeGraph) -> list[str]:
    return [r.body["text"]["body"] for r in graph.requests]


# --- photos -------------------------------------------------------------------------------------


def test_a_photo_is_read_and_attached_to_the_customers_equipment_and_the_job(
    cast: Cast, accounts: None, graph: FakeGraph, model: ScriptedServer, media_root: Path,
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    _engine(cast.org, "hybrid")
    customer = factories.make_customer(cast.org, "Marta Gómez", phone="+541155550000")
    split = factories.make_equipment(cast.org, customer, kind="Split", brand="surrey")
    factories.make_equipment(cast.org, customer, kind="Caldera", brand="Peisa")
    job = factories.make_job(cast.org, customer)
    conversation_create(
        organisation=cast.org, user=None, channel="whatsapp", contact=CUSTOMER,
        title="WhatsApp Marta",
    )  # fmt: skip
    Conversation.objects.filter(contact=CUSTOMER).update(state={"job_id": job.pk})
    graph.add_media("770001", JPEG, "image/jpeg", token=f"token-{NUMBER}")
    model.add(text(json.dumps(READING)), when=has_image())

    image = _media("image", "wamid.img1", "770001", "image/jpeg")
    assert _post(_delivery(image), capture=django_capture_on_commit_callbacks) == 200

    media = IncomingMedia.objects.get(organisation=cast.org)
    assert media.status == "read" and media.extraction == READING
    assert media.customer == customer and media.job == job
    # The customer's Surrey split, its model filled in: matched, not a new row.
    assert media.equipment == split
    split.refresh_from_db()
    assert split.model == "619PHCD" and Equipment.objects.filter(customer=customer).count() == 2
    note = JobEvent.objects.get(job=job, kind="note")
    assert note.data == {"whatsapp_media": media.pk} and "Surrey" in note.note
    # Both written by their agents' tools through Runner.call: a row per call, under the media's
    # own run id, and the tool events in the conversation's log closed by the answer.
    run = f"media-{media.pk}"
    calls = ToolCall.objects.filter(organisation=cast.org, turn_id=run)
    assert [(c.agent, c.tool, c.ok) for c in calls] == [
        ("customer", "equipment_record", True), ("scheduling", "job_note_add", True)]  # fmt: skip
    assert calls[0].arguments == {"customer_id": customer.pk, **READING_TOOL}
    events = [e.payload for e in ConversationEvent.objects.filter(conversation=media.conversation)]
    assert [e["type"] for e in events] == ["tool_start", "tool_result", "tool_end"] * 2 + [
        "completed"]  # fmt: skip
    assert {e["turn_id"] for e in events} == {run}
    assert events[-1]["message_id"] == Message.objects.filter(role="assistant").get().pk
    # Stored under the organisation, byte for byte.
    assert media.file.name.startswith(f"whatsapp/org-{cast.org.pk}/")
    assert (media_root / media.file.name).read_bytes() == JPEG
    assert media.mime_type == "image/jpeg" and media.size == len(JPEG)
    # The vision call carried the photo as a data URL, to the vision model.
    [request] = [r for r in model.requests if has_image()(r)]
    assert request["model"] == "scripted-vision"
    part = request["messages"][1]["content"][1]
    assert part["image_url"]["url"] == "data:image/jpeg;base64," + base64.b64encode(JPEG).decode()
    assert ModelCall.objects.get(organisation=cast.org, purpose="vision").ok
    # The customer reads what was read, through the Graph API.
    [reply] = _sent(graph)
    assert "Surrey" in reply and "619PHCD" in reply and "3000 frigorías" in reply
    assert f"#{job.pk}" in reply
    # The Graph API was asked with the account's own token: metadata, then the file.
    assert [r.authorization for r in graph.media_requests] == [f"Bearer token-{NUMBER}"] * 2
    assert not Turn.objects.exists()


def test_a_photos_writes_pass_the_agents_approval_rules_and_tool_whitelist(
    cast: Cast, accounts: None, graph: FakeGraph, model: ScriptedServer,
    photo_tools: dict[str, Agent], django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    """A manager must approve the customer agent's equipment writes here, and the scheduling
    agent was given no job notes: the photo is read and answered, and nothing is written."""
    _engine(cast.org, "hybrid")
    Agent.objects.filter(pk=photo_tools["customer"].pk).update(
        requires_approval_for=["equipment_record"]
    )
    Agent.objects.filter(pk=photo_tools["scheduling"].pk).update(tools=["jobs_find"])
    customer = factories.make_customer(cast.org, "Marta Gómez", phone="+541155550000")
    job = factories.make_job(cast.org, customer)
    conversation_create(
        organisation=cast.org, user=None, channel="whatsapp", contact=CUSTOMER,
        title="WhatsApp Marta",
    )  # fmt: skip
    Conversation.objects.filter(contact=CUSTOMER).update(state={"job_id": job.pk})
    graph.add_media("770009", JPEG, "image/jpeg", token=f"token-{NUMBER}")
    model.add(text(json.dumps(READING)), when=has_image())

    image = _media("image", "wamid.img9", "770009", "image/jpeg")
    assert _post(_delivery(image), capture=django_capture_on_commit_callbacks) == 200

    media = IncomingMedia.objects.get(organisation=cast.org)
    assert media.status == "read" and media.equipment is None and media.job is None
    assert not Equipment.objects.exists() and not JobEvent.objects.filter(kind="note").exists()
    held = PendingAction.objects.get(organisation=cast.org)
    assert (held.tool, held.turn_id, held.status) == ("equipment_record", f"media-{media.pk}",
                                                      "pending")  # fmt: skip
    call = ToolCall.objects.get(organisation=cast.org)
    assert (call.tool, call.approval_id) == ("equipment_record", held.pk)
    [reply] = _sent(graph)
    assert "Surrey" in reply and "Lo anoté" not in reply and f"#{job.pk}" not in reply
    assert not ToolCall.objects.exclude(organisation=cast.org).exists()


def test_an_unknown_senders_photo_is_read_but_no_equipment_is_invented(
    cast: Cast, accounts: None, graph: FakeGraph, model: ScriptedServer, dispatched: list[Any],
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    _engine(cast.org, "llm")
    graph.add_media("770002", JPEG, "image/jpeg", token=f"token-{NUMBER}")
    model.add(text("```json\n" + json.dumps({**READING, "capacity": None}) + "\n```"),
              when=has_image())  # fmt: skip
    caption = "se me rompió el aire, ¿pueden venir el jueves?"
    assert _post(_delivery(_media("image", "wamid.img2", "770002", "image/jpeg",
                                  caption=caption)),
                 capture=django_capture_on_commit_callbacks) == 200  # fmt: skip
    media = IncomingMedia.objects.get()
    assert media.status == "read" and media.extraction["capacity"] == ""
    assert media.customer is None and media.equipment is None and not Equipment.objects.exists()
    assert "Surrey" in _sent(graph)[0]
    # The caption is the message, and a turn will answer it after the reading.
    assert media.message is not None and media.message.text == caption
    assert Turn.objects.get().message == media.message and len(dispatched) == 1


# --- voice notes --------------------------------------------------------------------------------


def test_a_voice_note_is_transcribed_and_answered_as_text(
    cast: Cast, accounts: None, graph: FakeGraph, model: ScriptedServer, dispatched: list[Any],
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    _engine(cast.org, "hybrid")
    graph.add_media("770003", OGG, "audio/ogg; codecs=opus", token=f"token-{NUMBER}")
    model.add(transcript("hola, buen día"), when=for_transcription())
    voice = _media("audio", "wamid.voice", "770003", "audio/ogg; codecs=opus", voice=True)
    assert _post(_delivery(voice), capture=django_capture_on_commit_callbacks) == 200

    media = IncomingMedia.objects.get()
    assert media.status == "read" and media.transcript == "hola, buen día"
    asked = Message.objects.get(role="user")
    assert asked.text == "hola, buen día" and asked.client_id == "wamid.voice"
    assert asked.trace["whatsapp_media"]["voice_note"] is True and media.message == asked
    [request] = [r for r in model.requests if for_transcription()(r)]
    assert request["model"] == "scripted-whisper"
    assert request["file"]["size"] == len(OGG) and request["file"]["content_type"] == "audio/ogg"
    assert ModelCall.objects.get(purpose="transcription").ok

    # A turn like any text: answered, and the answer goes out on WhatsApp.
    conversation = asked.conversation
    assert dispatched == [(cast.org.pk, conversation.pk)]
    with django_capture_on_commit_callbacks(execute=True):
        runner.drain(cast.org.pk, conversation.pk)
    turn = Turn.objects.get(message=asked)
    assert turn.status == Turn.Status.DONE and turn.answer is not None
    assert _sent(graph) == [turn.answer.text]

    # The panel shows the transcript, marked as a voice note, with the audio to play.
    manager = Client()
    manager.force_login(cast.manager)
    page = manager.get(f"/chat/{conversation.pk}/").content.decode()
    assert "hola, buen día" in page and "data-voice-note" in page
    assert f'src="/whatsapp/media/{media.pk}/"' in page


# --- the embedded engine ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "mime", "data", "caption", "expected"),
    [
        ("image", "image/jpeg", JPEG, "", "no puedo leer fotos"),
        ("image", "image/jpeg", JPEG, "my air conditioner is leaking water again",
         "cannot read photos"),
        ("audio", "audio/ogg", OGG, "", "no puedo escuchar audios"),
        ("document", "application/pdf", b"%PDF-1.7\n" + b"0" * 100, "", "documento"),
    ],
)  # fmt: skip
def test_on_the_embedded_engine_media_are_kept_and_the_sender_is_asked_for_text(
    cast: Cast, accounts: None, graph: FakeGraph, media_root: Path, dispatched: list[Any],
    django_capture_on_commit_callbacks: Any, kind: str, mime: str, data: bytes, caption: str,
    expected: str,
) -> None:  # fmt: skip
    graph.add_media("770004", data, mime, token=f"token-{NUMBER}")
    extra = {"caption": caption} if caption else {}
    assert _post(_delivery(_media(kind, "wamid.m4", "770004", mime, **extra)),
                 capture=django_capture_on_commit_callbacks) == 200  # fmt: skip
    media = IncomingMedia.objects.get()
    assert media.status == "stored" and media.kind == kind
    assert (media_root / media.file.name).read_bytes() == data
    asked = Message.objects.get(role="user")
    assert asked.client_id == "wamid.m4" and media.message == asked
    assert caption in asked.text and asked.trace["whatsapp_media"]["kept"] is True
    [reply] = _sent(graph)
    assert expected in reply
    if caption:  # what they wrote with it is a message like any text: a turn answers it
        assert asked.text == caption and Turn.objects.get().message == asked
        assert dispatched == [(cast.org.pk, asked.conversation_id)]
    else:
        assert not Turn.objects.exists() and dispatched == []
    assert not ModelCall.objects.exists()


# --- limits -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("declared_mime", "data", "declared_size", "limit", "reason", "said"),
    [
        # The metadata says it is too large: not even downloaded.
        ("image/jpeg", JPEG, 6 * 1024 * 1024, 5 * 1024 * 1024, "over", "5 MB"),
        # The metadata lies: the download is cut off at the limit.
        ("image/jpeg", JPEG, 100, 1024, "over", "1 KB"),
        ("image/gif", b"GIF89a" + b"1" * 100, None, 5 * 1024 * 1024, "not accepted", "image/gif"),
        # The bytes are not what the Graph API said they are.
        ("image/jpeg", b"<html><script>alert(1)</script></html>", None, 5 * 1024 * 1024,
         "not image/jpeg", "JPEG, PNG, WEBP"),
    ],
)  # fmt: skip
def test_a_photo_too_large_or_of_the_wrong_type_is_refused_with_a_clear_answer(
    cast: Cast, accounts: None, graph: FakeGraph, model: ScriptedServer, settings: Any,
    media_root: Path, django_capture_on_commit_callbacks: Any, declared_mime: str, data: bytes,
    declared_size: int | None, limit: int, reason: str, said: str,
) -> None:  # fmt: skip
    _engine(cast.org, "hybrid")
    settings.WHATSAPP_IMAGE_MAX_BYTES = limit
    graph.add_media("770005", data, declared_mime, token=f"token-{NUMBER}",
                    declared_size=declared_size)  # fmt: skip
    assert _post(_delivery(_media("image", "wamid.big", "770005", declared_mime)),
                 capture=django_capture_on_commit_callbacks) == 200  # fmt: skip
    media = IncomingMedia.objects.get()
    assert media.status == "refused" and reason in media.error
    assert not media.file and not any(media_root.rglob("*.*"))  # nothing of it kept
    # The message itself is not lost: it is in the conversation, answered with why.
    asked = Message.objects.get(role="user", client_id="wamid.big")
    assert asked.trace["whatsapp_media"]["status"] == "refused"
    [reply] = _sent(graph)
    assert "No pude recibir tu foto" in reply and said in reply
    assert model.requests == []  # never sent to a model


def test_a_voice_note_over_its_limit_is_refused(
    cast: Cast, accounts: None, graph: FakeGraph, settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    settings.WHATSAPP_AUDIO_MAX_BYTES = 1024
    graph.add_media("770006", OGG, "audio/ogg", token=f"token-{NUMBER}")
    _post(_delivery(_media("audio", "wamid.long", "770006", "audio/ogg")),
          capture=django_capture_on_commit_callbacks)  # fmt: skip
    assert IncomingMedia.objects.get().status == "refused"
    assert "No pude recibir tu audio: pesa más de 1 KB" in _sent(graph)[0]


def test_a_transient_graph_fault_is_tried_again(
    cast: Cast, accounts: None, graph: FakeGraph, django_capture_on_commit_callbacks: Any
) -> None:
    graph.add_media("770007", JPEG, "image/jpeg", token=f"token-{NUMBER}")
    graph.fail_media(503).fail_media(429)
    _post(_delivery(_media("image", "wamid.later", "770007", "image/jpeg")),
          capture=django_capture_on_commit_callbacks)  # fmt: skip
    media = IncomingMedia.objects.get()
    assert media.status == "stored" and media.attempts == 2
    assert len(graph.media_requests) == 4  # two refused, then the metadata and the file
    assert len(_sent(graph)) == 1


def test_a_file_the_graph_api_cannot_give_is_answered_and_kept_as_a_message(
    cast: Cast, accounts: None, graph: FakeGraph, settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    settings.WHATSAPP_MAX_ATTEMPTS = 3
    graph.add_media("770007", JPEG, "image/jpeg", token=f"token-{NUMBER}")
    graph.fail_media(500, times=10)
    _post(_delivery(_media("image", "wamid.gone", "770007", "image/jpeg")),
          capture=django_capture_on_commit_callbacks)  # fmt: skip
    media = IncomingMedia.objects.get()
    assert media.status == "failed" and "500" in media.error and media.attempts == 2
    assert len(graph.media_requests) == 3
    assert Message.objects.filter(role="user", client_id="wamid.gone").exists()
    assert "No pude descargar tu foto" in _sent(graph)[0]


# --- model faults -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "mime", "data", "reply", "answer"),
    [
        ("image", "image/jpeg", JPEG, status(500), "no pude leerla"),
        ("image", "image/jpeg", JPEG, text("I think it's a nice split!"), "no pude leerla"),
        ("image", "image/jpeg", JPEG, text(json.dumps({"brand": "x" * 500})), "no pude leerla"),
        ("image", "image/jpeg", JPEG, text(json.dumps({"brand": None, "model": "?"})),
         "no pude leerla"),
        ("audio", "audio/ogg", OGG, status(503), "no pude entenderlo"),
        ("audio", "audio/ogg", OGG, transcript("   "), "no pude entenderlo"),
    ],
)  # fmt: skip
def test_a_model_fault_keeps_the_file_and_asks_for_text(
    cast: Cast, accounts: None, graph: FakeGraph, model: ScriptedServer, media_root: Path,
    dispatched: list[Any], django_capture_on_commit_callbacks: Any, kind: str, mime: str,
    data: bytes, reply: Any, answer: str,
) -> None:  # fmt: skip
    _engine(cast.org, "llm")
    graph.add_media("770008", data, mime, token=f"token-{NUMBER}")
    model.add(reply)
    _post(_delivery(_media(kind, "wamid.fault", "770008", mime)),
          capture=django_capture_on_commit_callbacks)  # fmt: skip
    media = IncomingMedia.objects.get()
    assert media.status == "stored" and media.error.startswith("model ")
    assert (media_root / media.file.name).read_bytes() == data  # kept
    assert Message.objects.filter(role="user", client_id="wamid.fault").exists()
    assert answer in _sent(graph)[0]
    assert not Turn.objects.exists() and dispatched == []
    assert ModelCall.objects.count() == 1  # the call, recorded (a judged answer is its own fault)


@pytest.mark.parametrize(
    "answer",
    ['["Surrey"]', '{"brand": 12.5, "model": ["a"]}', "{not json", ""],
)
def test_a_reading_that_is_not_one_small_json_object_is_refused(answer: str) -> None:
    with pytest.raises(ModelFailure) as caught:
        parse_reading(answer)
    assert caught.value.kind == "not_an_answer"


# --- redelivery ---------------------------------------------------------------------------------


def test_a_redelivered_photo_is_fetched_read_and_answered_once(
    cast: Cast, accounts: None, graph: FakeGraph, model: ScriptedServer,
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    _engine(cast.org, "hybrid")
    graph.add_media("770009", JPEG, "image/jpeg", token=f"token-{NUMBER}")
    model.add(text(json.dumps(READING)), when=has_image(), times=None)
    body = _delivery(_media("image", "wamid.twice", "770009", "image/jpeg"))
    assert _post(body, capture=django_capture_on_commit_callbacks) == 200
    assert _post(body, capture=django_capture_on_commit_callbacks) == 200
    assert IncomingMedia.objects.count() == 1
    assert Message.objects.filter(role="user").count() == 1
    assert OutgoingMessage.objects.count() == 1 and len(graph.requests) == 1
    assert len(graph.media_requests) == 2 and len(model.requests) == 1
    # A job handed the same row again (the sweep, a retried task) finds it taken.
    assert media_process(IncomingMedia.objects.get().pk) == "taken"


# --- tenancy ------------------------------------------------------------------------------------


def test_media_are_served_only_to_who_may_read_the_conversation(
    cast: Cast, accounts: None, graph: FakeGraph, django_capture_on_commit_callbacks: Any
) -> None:
    graph.add_media("7700010", JPEG, "image/jpeg", token=f"token-{NUMBER}")
    _post(_delivery(_media("image", "wamid.t1", "7700010", "image/jpeg")),
          capture=django_capture_on_commit_callbacks)  # fmt: skip
    media = IncomingMedia.objects.get(organisation=cast.org)
    url = f"/whatsapp/media/{media.pk}/"
    manager = Client()
    manager.force_login(cast.manager)
    response = manager.get(url)
    assert response.status_code == 200 and response.content == JPEG
    assert response["Content-Type"] == "image/jpeg"
    assert response["X-Content-Type-Options"] == "nosniff"
    # Another organisation's admin, staff with every permission: the same 404 as for nothing.
    cast.outsider.is_staff = True
    cast.outsider.save()
    cast.outsider.user_permissions.set(Permission.objects.all())
    outsider = Client()
    outsider.force_login(cast.outsider)
    assert outsider.get(url).status_code == 404
    assert outsider.get("/whatsapp/media/999999/").status_code == 404
    # Operators answer the organisation's WhatsApp conversations (human mode): they see it too.
    operator = Client()
    operator.force_login(cast.operator)
    assert operator.get(url).status_code == 200
    assert Client().get(url).status_code == 302  # signed out: to the login


def test_another_organisations_media_id_is_not_fetched_with_this_organisations_token(
    cast: Cast, accounts: None, graph: FakeGraph, django_capture_on_commit_callbacks: Any
) -> None:
    # Media of the first organisation's number, named in a delivery to the second's.
    graph.add_media("7700011", JPEG, "image/jpeg", token=f"token-{NUMBER}")
    body = _delivery(_media("image", "wamid.t2", "7700011", "image/jpeg"), number=OTHER_NUMBER)
    assert _post(body, secret=OTHER_SECRET, capture=django_capture_on_commit_callbacks) == 200
    media = IncomingMedia.objects.get()
    assert media.organisation == cast.other_org
    assert media.status == "failed" and not media.file and "404" in media.error
    assert [r.authorization for r in graph.media_requests] == [f"Bearer token-{OTHER_NUMBER}"]
    assert not IncomingMedia.objects.filter(organisation=cast.org).exists()


# --- the demo -----------------------------------------------------------------------------------


def test_the_demo_sends_a_photo_the_fake_graph_api_serves_from_a_folder(
    cast: Cast, accounts: None, settings: Any, tmp_path: Path, dispatched: list[Any],
    live_server: Any,
) -> None:  # fmt: skip
    folder = tmp_path / "demo-media"
    folder.mkdir()
    (folder / "placa.jpg").write_bytes(JPEG)
    with FakeGraph(media_dir=folder) as fake:
        settings.WHATSAPP_GRAPH_URL = fake.base_url
        settings.WHATSAPP_MEDIA_HOSTS = [fake.base_url]
        out = io.StringIO()
        call_command(
            "whatsapp_fake_send", "clima-sur", CUSTOMER, "", media=folder / "placa.jpg",
            url=f"{live_server.url}{URL}", stdout=out,
        )  # fmt: skip
        assert out.getvalue().startswith("200")
        media = IncomingMedia.objects.get(organisation=cast.org)
        assert media.kind == "image" and media.status == "stored"
        assert media.file.read() == JPEG
        assert "no puedo leer fotos" in fake.requests[0].body["text"]["body"]
        # Nothing outside the folder is served.
        assert httpx.get(f"{fake.base_url}/v21.0/..%2Fsecret").status_code == 404


def test_the_admin_lists_the_organisations_media_only(
    cast: Cast, accounts: None, graph: FakeGraph, django_user_model: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    graph.add_media("7700012", JPEG, "image/jpeg", token=f"token-{NUMBER}")
    _post(_delivery(_media("image", "wamid.adm", "7700012", "image/jpeg")),
          capture=django_capture_on_commit_callbacks)  # fmt: skip
    media = IncomingMedia.objects.get()
    root = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    admin = Client()
    admin.force_login(root)
    assert "wamid.adm" in admin.get("/admin/whatsapp/incomingmedia/").content.decode()
    page = admin.get(f"/admin/whatsapp/incomingmedia/{media.pk}/change/").content.decode()
    assert f'href="/whatsapp/media/{media.pk}/"' in page
    cast.outsider.is_staff = True
    cast.outsider.save()
    cast.outsider.user_permissions.set(Permission.objects.all())
    outsider = Client()
    outsider.force_login(cast.outsider)
    listing = outsider.get("/admin/whatsapp/incomingmedia/")
    assert listing.status_code == 200 and "wamid.adm" not in listing.content.decode()
    change = outsider.get(f"/admin/whatsapp/incomingmedia/{media.pk}/change/")
    assert change.status_code in (302, 404)  # Django's "does not exist": not shown


# --- retries and the sweep ------------------------------------------------------------------------


def test_a_rate_limited_transcription_is_retried(
    cast: Cast, accounts: None, graph: FakeGraph, model: ScriptedServer, settings: Any,
    dispatched: list[Any], django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    _engine(cast.org, "llm")
    settings.OPENAI_MAX_RETRIES = 1
    graph.add_media("7700013", OGG, "audio/ogg", token=f"token-{NUMBER}")
    model.add(status(429, retry_after=0), when=for_transcription())
    model.add(transcript("necesito un service"), when=for_transcription())
    _post(_delivery(_media("audio", "wamid.retry", "7700013", "audio/ogg")),
          capture=django_capture_on_commit_callbacks)  # fmt: skip
    assert IncomingMedia.objects.get().transcript == "necesito un service"
    call = ModelCall.objects.get(purpose="transcription")
    assert call.ok and call.retries == 1 and len(model.requests) == 2


def test_the_sweep_hands_out_rows_no_job_took(
    cast: Cast, accounts: None, graph: FakeGraph, monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    graph.add_media("7700014", JPEG, "image/jpeg", token=f"token-{NUMBER}")
    real = whatsapp_media.process_media.apply_async
    monkeypatch.setattr(whatsapp_media.process_media, "apply_async", _broker_down)
    _post(_delivery(_media("image", "wamid.swept", "7700014", "image/jpeg")),
          capture=django_capture_on_commit_callbacks)  # fmt: skip
    media = IncomingMedia.objects.get()
    assert media.status == "pending" and not Message.objects.exists()  # stored, waiting
    monkeypatch.setattr(whatsapp_media.process_media, "apply_async", real)
    assert whatsapp_media.media_sweep() == 0  # too recent: its own job may still come
    IncomingMedia.objects.filter(pk=media.pk).update(
        created_at=timezone.now() - datetime.timedelta(minutes=2)
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert whatsapp_media.media_sweep() == 1
    media.refresh_from_db()
    assert media.status == "stored" and Message.objects.filter(role="user").count() == 1


def _broker_down(*args: Any, **kwargs: Any) -> None:
    raise ConnectionError("the broker is down")


def test_an_image_counts_as_an_image_not_as_its_base64_in_the_token_estimate() -> None:
    url = "data:image/jpeg;base64," + "A" * 4_000_000
    content = [{"type": "text", "text": "hola"}, {"type": "image_url", "image_url": {"url": url}}]
    estimate = estimate_tokens([{"role": "user", "content": content}], None)
    assert IMAGE_TOKENS < estimate < IMAGE_TOKENS + 100


# --- media without SSRF (issue 23) --------------------------------------------------------------


def _image_row(cast: Cast, media_id: str) -> IncomingMedia:
    """A row as the webhook would have stored it before its media ids were checked."""
    conversation = conversation_create(
        organisation=cast.org, user=None, channel="whatsapp", contact=CUSTOMER, title="WhatsApp"
    )
    return IncomingMedia.objects.create(
        organisation=cast.org, conversation=conversation, wa_message_id="wamid.ssrf",
        media_id=media_id, kind="image", sender=CUSTOMER, mime_type="image/jpeg",
    )  # fmt: skip


@pytest.mark.parametrize(
    "media_id", ["../../../../internal/admin?x=1#", "1234/../5", "12 34", "١٢٣", "1" * 33, ""]
)
def test_a_media_id_that_is_not_graphs_format_is_never_requested(
    cast: Cast, accounts: None, graph: FakeGraph, media_id: str
) -> None:
    row = _image_row(cast, media_id)
    assert media_process(row.pk) == IncomingMedia.Status.FAILED
    row.refresh_from_db()
    assert "not a Graph media id" in row.error and not row.file
    assert graph.media_requests == []


def test_the_webhook_rejects_a_path_traversal_media_id_before_any_request(
    cast: Cast, accounts: None, graph: FakeGraph, dispatched: list[Any],
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    image = _media("image", "wamid.ssrf", "../../../../internal/admin?x=1#", "image/jpeg")
    assert _post(_delivery(image), capture=django_capture_on_commit_callbacks) == 200
    assert not IncomingMedia.objects.exists()
    rejection = WhatsAppRejection.objects.get()
    assert (rejection.field, rejection.reason) == ("media_id", "format")
    assert graph.media_requests == []


def _cdn_url(server: FakeGraph, media_id: str, scheme: str = "") -> str:
    url = f"{server.base_url}/media-files/{media_id}"
    return url.replace("http://", f"{scheme}://") if scheme else url


@pytest.mark.parametrize("where", ["not allowed", "http on an allowed host", "credentials"])
def test_a_graph_answer_pointing_outside_the_allowed_hosts_is_refused_unrequested(
    cast: Cast, accounts: None, graph: FakeGraph, settings: Any, where: str
) -> None:
    with FakeGraph() as elsewhere:
        url = _cdn_url(elsewhere, "770099")
        if where == "http on an allowed host":  # a host entry means https only
            settings.WHATSAPP_MEDIA_HOSTS = [graph.base_url, "127.0.0.1"]
        elif where == "credentials":
            settings.WHATSAPP_MEDIA_HOSTS = [graph.base_url, elsewhere.base_url]
            url = url.replace("http://", "http://lookaside.fbsbx.com@")
        elsewhere.add_media("770099", JPEG, "image/jpeg")
        graph.add_media("770099", JPEG, "image/jpeg", token=f"token-{NUMBER}", url=url)
        row = _image_row(cast, "770099")
        assert media_process(row.pk) == IncomingMedia.Status.FAILED
        row.refresh_from_db()
        assert "allowed host" in row.error and not row.file
        assert elsewhere.media_requests == []
    assert [r.path for r in graph.media_requests] == ["/v21.0/770099"]


def test_a_redirect_to_another_host_is_refused_before_it_is_followed(
    cast: Cast, accounts: None, graph: FakeGraph
) -> None:
    with FakeGraph() as elsewhere:
        elsewhere.add_media("770098", JPEG, "image/jpeg")
        graph.add_media("770098", JPEG, "image/jpeg", token=f"token-{NUMBER}",
                        redirect=_cdn_url(elsewhere, "770098"))  # fmt: skip
        row = _image_row(cast, "770098")
        assert media_process(row.pk) == IncomingMedia.Status.FAILED
        row.refresh_from_db()
        assert "allowed host" in row.error and not row.file
        assert elsewhere.media_requests == []
    assert [r.path for r in graph.media_requests] == [
        "/v21.0/770098", "/media-files/770098"
    ]  # fmt: skip


def test_a_redirect_to_an_allowed_cdn_is_followed_without_the_token(
    cast: Cast, accounts: None, graph: FakeGraph, cdn: FakeGraph
) -> None:
    cdn.add_media("770097", JPEG, "image/jpeg")
    graph.add_media("770097", JPEG, "image/jpeg", token=f"token-{NUMBER}",
                    redirect=_cdn_url(cdn, "770097"))  # fmt: skip
    row = _image_row(cast, "770097")
    assert media_process(row.pk) == IncomingMedia.Status.STORED
    row.refresh_from_db()
    assert row.file.read() == JPEG
    [fetched] = cdn.media_requests
    assert fetched.path == "/media-files/770097" and fetched.authorization == ""


def test_the_token_goes_to_the_graph_api_and_never_to_the_cdn(
    cast: Cast, accounts: None, graph: FakeGraph, cdn: FakeGraph,
    django_capture_on_commit_callbacks: Any, dispatched: list[Any],
) -> None:  # fmt: skip
    cdn.add_media("770096", JPEG, "image/jpeg")  # any bearer (and none) gets it
    graph.add_media("770096", JPEG, "image/jpeg", token=f"token-{NUMBER}",
                    url=_cdn_url(cdn, "770096"))  # fmt: skip
    image = _media("image", "wamid.cdn", "770096", "image/jpeg")
    assert _post(_delivery(image), capture=django_capture_on_commit_callbacks) == 200
    media = IncomingMedia.objects.get()
    assert media.status == IncomingMedia.Status.STORED and media.file.read() == JPEG
    assert [(r.path, r.authorization) for r in graph.media_requests] == [
        ("/v21.0/770096", f"Bearer token-{NUMBER}")
    ]
    assert [(r.path, r.authorization) for r in cdn.media_requests] == [("/media-files/770096", "")]


def test_a_cdn_named_in_the_token_list_gets_the_token(
    cast: Cast, accounts: None, graph: FakeGraph, cdn: FakeGraph, settings: Any
) -> None:
    settings.WHATSAPP_MEDIA_TOKEN_HOSTS = [cdn.base_url]
    cdn.add_media("770095", JPEG, "image/jpeg", token=f"token-{NUMBER}")
    graph.add_media("770095", JPEG, "image/jpeg", token=f"token-{NUMBER}",
                    url=_cdn_url(cdn, "770095"))  # fmt: skip
    row = _image_row(cast, "770095")
    assert media_process(row.pk) == IncomingMedia.Status.STORED
    assert [r.authorization for r in cdn.media_requests] == [f"Bearer token-{NUMBER}"]


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://lookaside.fbsbx.com/whatsapp_business/attachments/?mid=1", True),
        ("https://mmg.whatsapp.net/v/t62/x.jpg", True),
        ("https://scontent.xx.fbcdn.net/v/x.jpg", True),
        ("http://lookaside.fbsbx.com/x", False),  # plain http
        ("https://lookaside.fbsbx.com:8443/x", False),  # another port
        ("https://fbcdn.net/x", False),  # the suffix is *.fbcdn.net
        ("https://evilfbcdn.net/x", False),
        ("https://lookaside.fbsbx.com.evil.example/x", False),
        ("https://lookaside.fbsbx.com@evil.example/x", False),
        ("https://evil.example\\@lookaside.fbsbx.com/x", False),
        ("file:///etc/passwd", False),
        ("gopher://lookaside.fbsbx.com/x", False),
        ("https://169.254.169.254/latest/meta-data/", False),
    ],
)
def test_only_metas_cdn_is_allowed_by_default(url: str, allowed: bool) -> None:
    from django.conf import settings as live

    assert graph_client.host_allowed(url, live.WHATSAPP_MEDIA_HOSTS) is allowed
    assert graph_client.host_allowed(url, live.WHATSAPP_MEDIA_TOKEN_HOSTS) is (
        allowed and "lookaside" in url
    )


@pytest.mark.parametrize("value", ["*", "lookaside.fbsbx.com/path", "https://", "evil..com"])
def test_a_media_host_setting_that_is_not_a_host_stops_start_up(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("WHATSAPP_MEDIA_HOSTS", value)
    with pytest.raises(ImproperlyConfigured, match="WHATSAPP_MEDIA_HOSTS"):
        env_hosts("WHATSAPP_MEDIA_HOSTS", [])
