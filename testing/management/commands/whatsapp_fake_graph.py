"""`manage.py whatsapp_fake_graph [--port 8765] [--media-dir DIR]`: for the demo, a fake Graph API
in the foreground that answers every send with 200 and prints what would have reached the
customer; with `--media-dir` it serves that folder's files as media (`whatsapp_fake_send --media
DIR/plate.jpg` names the file by the same digits). Run the server with
WHATSAPP_GRAPH_URL=http://127.0.0.1:8765 WHATSAPP_MEDIA_HOSTS=http://127.0.0.1:8765 (the fake
serves the files itself, over plain http: allowed only as that exact origin)."""

from __future__ import annotations

import time
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand

from testing.fake_graph import FakeGraph


class Command(BaseCommand):
    help = "Una API de Graph falsa que imprime lo que se le enviaría al cliente (para la demo)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--port", type=int, default=8765)
        parser.add_argument("--media-dir", type=Path, default=None)

    def handle(self, *args: Any, **options: Any) -> None:
        with FakeGraph(port=options["port"], media_dir=options["media_dir"]) as graph:
            url = graph.base_url
            self.stdout.write(
                f"fake Graph API at {url}: run the server with WHATSAPP_GRAPH_URL={url}"
                f" WHATSAPP_MEDIA_HOSTS={url} (Ctrl-C to stop)"
            )
            seen = 0
            try:
                while True:
                    time.sleep(0.3)
                    for request in graph.requests[seen:]:
                        body = request.body
                        if request.file is not None:  # a PDF uploaded to /media
                            name, size = request.file["filename"], len(request.file["content"])
                            self.stdout.write(f"↑ media {name} ({size} bytes)")
                            continue
                        self.stdout.write(f"→ {body.get('to')}: {shown(body)}")
                    seen = len(graph.requests)
            except KeyboardInterrupt:
                return


def shown(body: dict[str, Any]) -> str:
    """What the customer would see of a sent message: its text, a template, a PDF, or the
    question of reply buttons or a list with its options."""
    if body.get("type") == "interactive":
        interactive = body.get("interactive") or {}
        action = interactive.get("action") or {}
        titles = [b.get("reply", {}).get("title", "") for b in action.get("buttons") or []]
        for section in action.get("sections") or []:
            titles += [" ".join(filter(None, (row.get("title"), row.get("description"))))
                       for row in section.get("rows") or []]  # fmt: skip
        question = (interactive.get("body") or {}).get("text", "")
        return f"{question} " + " ".join(f"[{title}]" for title in titles)
    document = body.get("document") or {}
    if document:
        return f"[PDF {document.get('filename')}] {document.get('caption', '')}"
    return str((body.get("text") or {}).get("body") or body.get("template") or "")
