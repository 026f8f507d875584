"""`manage.py whatsapp_fake_send ORG-SLUG FROM-NUMBER "TEXT" [--url URL] [--media FILE]`: for the
demo, post a WhatsApp delivery to the local webhook as Meta would — signed with the
organisation's app secret, naming its phone-number id — and print the answer's status. With
`--media` the message is that photo, voice note or document (its type from the file's name; TEXT
its caption, "" for none), and the fake Graph API must serve the file's folder
(`whatsapp_fake_graph --media-dir`).

Point WHATSAPP_GRAPH_URL at `manage.py whatsapp_fake_graph` to see the replies go out. With
`--wait N` (default 15) it also prints, for up to N seconds, the replies stored for the sender:
the registration's questions, the copilot's answers, a document sent, a switch to human mode."""

from __future__ import annotations

import json
import mimetypes
import time
import uuid
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

import httpx
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from copilot.models import Conversation, Message
from testing.fake_graph import media_id_of
from whatsapp.models import WhatsAppAccount
from whatsapp.payload import sign


def delivery(phone_number_id: str, sender: str, text: str, media: Path | None = None) -> bytes:
    message: dict[str, Any] = {
        "from": sender, "id": f"wamid.demo-{uuid.uuid4().hex}", "type": "text",
        "timestamp": str(int(timezone.now().timestamp())), "text": {"body": text},
    }  # fmt: skip
    if media is not None:
        mime_type = mimetypes.guess_type(media.name)[0] or "application/octet-stream"
        kind = mime_type.split("/")[0] if mime_type.startswith(("image/", "audio/")) else "document"
        del message["text"]
        about: dict[str, Any] = {"id": media_id_of(media.name), "mime_type": mime_type}
        if kind == "audio":
            about["voice"] = True
        elif text:
            about["caption"] = text
        message.update({"type": kind, kind: about})
    value = {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": phone_number_id, "phone_number_id": phone_number_id},
        "contacts": [{"profile": {"name": f"+{sender}"}, "wa_id": sender}],
        "messages": [message],
    }
    change = {"field": "messages", "value": value}
    body = {"object": "whatsapp_business_account", "entry": [{"id": "demo", "changes": [change]}]}
    return json.dumps(body).encode()


class Command(BaseCommand):
    help = (
        "Envía al webhook local un mensaje de WhatsApp firmado como lo haría Meta (para la demo)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("organisation", help="the organisation's slug")
        parser.add_argument("sender", help="the customer's number (wa_id), e.g. 5491155550000")
        parser.add_argument("text")
        parser.add_argument("--url", default=f"{settings.SITE_URL}/whatsapp/webhook/")
        parser.add_argument("--media", type=Path, default=None, help="a photo, voice note or PDF")
        parser.add_argument("--wait", type=float, default=15.0,
                            help="seconds to wait for the replies (0: do not wait)")  # fmt: skip

    def handle(self, *args: Any, **options: Any) -> None:
        account = WhatsAppAccount.objects.filter(organisation__slug=options["organisation"]).first()
        if account is None or not account.phone_number_id or not account.app_secret:
            raise CommandError(
                f"{options['organisation']!r} has no WhatsApp account with a phone-number id "
                "and an app secret (set them in the admin)"
            )
        media = options["media"]
        if media is not None and not media.is_file():
            raise CommandError(f"{media} is not a file")
        before = _last_message(account.organisation_id, options["sender"])
        body = delivery(account.phone_number_id, options["sender"], options["text"], media)
        try:
            response = httpx.post(
                options["url"], content=body, timeout=10,
                headers={"Content-Type": "application/json",
                         "X-Hub-Signature-256": sign(account.app_secret, body)},
            )  # fmt: skip
        except httpx.HTTPError as exc:
            raise CommandError(f"could not reach {options['url']}: {exc}") from exc
        self.stdout.write(f"{response.status_code} {response.text[:200]}")
        if response.status_code != 200:
            raise CommandError("the webhook refused the delivery")
        self._replies(account.organisation_id, options["sender"], before, options["wait"])

    def _replies(self, organisation_id: int, sender: str, after: int, wait: float) -> None:
        """The replies stored after `after` for this sender, as they arrive (until one second
        of quiet after the first, or `wait` seconds)."""
        deadline, quiet_until = time.monotonic() + wait, None
        while time.monotonic() < deadline:
            replies = Message.objects.filter(
                organisation_id=organisation_id, conversation__contact=sender,
                conversation__channel=Conversation.Channel.WHATSAPP, pk__gt=after,
            ).exclude(role=Message.Role.USER).order_by("pk")  # fmt: skip
            for reply in replies:
                document = (reply.trace or {}).get("document")
                mark = " [PDF]" if document else ""
                self.stdout.write(f"← ({reply.get_role_display()}){mark} {reply.text}")
                after = reply.pk
                quiet_until = time.monotonic() + 1.0
            if quiet_until is not None and time.monotonic() > quiet_until:
                return
            time.sleep(0.3)


def _last_message(organisation_id: int, sender: str) -> int:
    return (
        Message.objects.filter(organisation_id=organisation_id, conversation__contact=sender)
        .order_by("-pk")
        .values_list("pk", flat=True)
        .first()
    ) or 0
