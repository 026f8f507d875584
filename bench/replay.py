"""Replay conversations through the product's real entry points and print what each message did.

    .venv/bin/python bench/replay.py [bench/conversations/understanding.json] [--json]

Starts daphne on a free port with a fresh SQLite database (the embedded default) in a temporary
folder, loads the demo organisation, and plays each conversation of the file:
- `"channel": "panel"`: logs in as `user` (default the operator) over HTTP, opens a conversation
  and sends every message through the chat's websocket, one at a time, waiting for its turn's
  `completed` event;
- `"channel": "whatsapp"`: posts every message to `/whatsapp/webhook/` as Meta would (signed with
  the account's app secret) from `sender` — a number, or `"customer"` for the phone of the demo's
  customer named in `customer` — and waits until its turn has finished.

For each message it prints the answer(s) stored and every tool the turn called (read or write, held
for approval or not): what the issue's "re-try every quoted message" asks for. Nothing is mocked:
the router, the orchestrator and the tools are the product's, on the demo's records.

A conversation file is a JSON list of `{"title", "channel", "user"?, "sender"?, "customer"?,
"messages": [...]}`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import websockets

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.ws_turn import PY, ROOT, free_port, prepare, wait_for  # noqa: E402

FINAL = ("completed", "error")
DEFAULT = ROOT / "bench" / "conversations" / "understanding.json"


def django_setup(env: dict[str, str]) -> None:
    os.environ.update(env)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "capataz.settings")
    import django

    django.setup()


def account() -> Any:
    """The demo organisation's WhatsApp account, given a phone-number id and an app secret."""
    from business.models import Organisation
    from whatsapp.models import WhatsAppAccount

    organisation = Organisation.objects.order_by("pk").first()
    row, _ = WhatsAppAccount.objects.get_or_create(organisation=organisation)
    if not row.phone_number_id or not row.app_secret:
        row.phone_number_id = row.phone_number_id or "100200300"
        row.app_secret = secrets.token_hex(16)
        row.save()
    return row


def login(base: str, user: str) -> tuple[httpx.Client, int]:
    import re

    client = httpx.Client(base_url=base, follow_redirects=True, timeout=30)
    page = client.get("/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token, "no CSRF token on the login page"
    client.post("/login/", data={"username": user, "password": "capataz",
                                 "csrfmiddlewaretoken": token.group(1)})  # fmt: skip
    response = client.post("/chat/new/", headers={"X-CSRFToken": client.cookies["csrftoken"]})
    match = re.search(r"/chat/(\d+)/", str(response.url))
    assert match, f"{user} could not open a conversation: {response.url}"
    return client, int(match.group(1))


async def panel_turn(socket_: Any, text: str, timeout: float = 90) -> str:
    """Send one message; return its turn id once the turn completed (or failed)."""
    client_id = f"replay-{time.monotonic_ns()}"
    await socket_.send(json.dumps({"type": "message", "text": text, "client_id": client_id}))
    turn_id = None
    while True:
        event = json.loads(await asyncio.wait_for(socket_.recv(), timeout))
        if event.get("type") == "accepted" and event.get("client_id") == client_id:
            turn_id = event["turn_id"]
        elif turn_id and event.get("turn_id") == turn_id and event["type"] in FINAL:
            return str(turn_id)


def what_it_did(conversation_id: int, after: int) -> dict[str, Any]:
    """The answers stored after message `after` and the tools their turns called."""
    from agents.models import ToolCall
    from copilot.models import Message

    rows = Message.objects.filter(conversation_id=conversation_id, pk__gt=after).order_by("pk")
    answers = [m.text for m in rows if m.role != Message.Role.USER]
    turns = [str(t) for t in rows.exclude(turn=None).values_list("turn__id", flat=True)]
    calls = ToolCall.objects.filter(conversation_id=conversation_id, turn_id__in=turns)
    tools = [
        {"tool": c.tool, "intent": c.intent, "category": c.category, "ok": c.ok,
         "held": c.approval_id if c.approval_id and not c.approved else None}
        for c in calls
    ]  # fmt: skip
    return {"answers": answers, "tools": tools}


def last_pk(conversation_id: int) -> int:
    from copilot.models import Message

    row = Message.objects.filter(conversation_id=conversation_id).order_by("-pk").first()
    return row.pk if row else 0


async def play_panel(base: str, port: int, talk: dict[str, Any]) -> list[dict[str, Any]]:
    client, conversation_id = login(base, talk.get("user", "operadora"))
    cookies = "; ".join(f"{k}={v}" for k, v in client.cookies.items())
    url = f"ws://127.0.0.1:{port}/ws/chat/{conversation_id}/"
    out = []
    headers = {"Cookie": cookies, "Origin": base}
    async with websockets.connect(url, additional_headers=headers) as ws:
        for text in talk["messages"]:
            before = await asyncio.to_thread(last_pk, conversation_id)
            await panel_turn(ws, text)
            did = await asyncio.to_thread(what_it_did, conversation_id, before)
            out.append({"message": text, **did})
    return out


def sender_of(talk: dict[str, Any]) -> str:
    if talk.get("sender") != "customer":
        return str(talk.get("sender") or "5491100000000")
    from business.models import Customer

    customer = Customer.objects.filter(name=talk["customer"]).exclude(phone="").first()
    assert customer, f"no demo customer {talk['customer']!r} with a phone"
    return "".join(ch for ch in customer.phone if ch.isdigit())


def play_whatsapp(base: str, talk: dict[str, Any]) -> list[dict[str, Any]]:
    from copilot.management.commands.whatsapp_fake_send import delivery

    from copilot.models import Conversation, Message, Turn
    from whatsapp.payload import sign

    row, sender, out = account(), sender_of(talk), []
    for text in talk["messages"]:
        conversation = Conversation.objects.filter(contact=sender).first()
        before = last_pk(conversation.pk) if conversation else 0
        body = delivery(row.phone_number_id, sender, text)
        response = httpx.post(
            f"{base}/whatsapp/webhook/", content=body, timeout=30,
            headers={"Content-Type": "application/json",
                     "X-Hub-Signature-256": sign(row.app_secret, body)},
        )  # fmt: skip
        assert response.status_code == 200, response.text
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            conversation = Conversation.objects.filter(contact=sender).first()
            pending = conversation and Turn.objects.filter(
                message__conversation=conversation, message__pk__gt=before,
                status__in=[Turn.Status.QUEUED, Turn.Status.RUNNING],
            ).exists()  # fmt: skip
            answered = (
                conversation
                and Message.objects.filter(conversation=conversation, pk__gt=before)
                .exclude(role=Message.Role.USER)
                .exists()
            )
            if answered and not pending:
                break
            time.sleep(0.3)
        out.append({"message": text, **what_it_did(conversation.pk, before)})
    return out


def show(title: str, steps: list[dict[str, Any]]) -> None:
    print(f"\n## {title}")
    for step in steps:
        print(f"> {step['message']}")
        for call in step["tools"]:
            held = f", held for approval #{call['held']}" if call["held"] else ""
            state = "ok" if call["ok"] else "failed"
            print(f"    tool {call['tool']} ({call['category']}, {state}{held})")
        for answer in step["answers"]:
            print("    ← " + answer.replace("\n", " ")[:300])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("file", type=Path, nargs="?", default=DEFAULT)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    talks = json.loads(args.file.read_text(encoding="utf-8"))
    port = free_port()
    with tempfile.TemporaryDirectory() as var:
        env = {**os.environ, "CAPATAZ_VAR_DIR": var, "DATABASE_URL": "", "REDIS_URL": "",
               "OPENAI_API_KEY": "", "DEBUG": "true", "LOG_LEVEL": "WARNING"}  # fmt: skip
        prepare(env)
        django_setup(env)
        account()
        daphne = str(Path(PY).parent / "daphne")
        server = subprocess.Popen(
            [daphne, "-b", "127.0.0.1", "-p", str(port), "capataz.asgi:application"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        results = []
        try:
            base = f"http://127.0.0.1:{port}"
            wait_for(base + "/login/")
            for talk in talks:
                if talk["channel"] == "panel":
                    steps = asyncio.run(play_panel(base, port, talk))
                else:
                    steps = play_whatsapp(base, talk)
                results.append({"title": talk["title"], "steps": steps})
                if not args.json:
                    show(talk["title"], steps)
        finally:
            server.terminate()
            server.wait(timeout=10)
    if args.json:
        print(json.dumps(results, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
