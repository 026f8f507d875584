"""A fake Graph API for tests and the demo: a real HTTP server on localhost that answers the
messages endpoint and the media upload (multipart: answered with a media id) as told (200 with
a message id, 500, 429 with Retry-After) and records every request. Modelled on llm/scripted.py's
`ScriptedServer`.

    with FakeGraph() as graph:
        graph.add(500); graph.add(429, retry_after=3)   # then 200s
        settings.WHATSAPP_GRAPH_URL = graph.base_url

Stdlib only."""

from __future__ import annotations

import email.policy
import json
import threading
import uuid
from dataclasses import dataclass
from email.parser import BytesParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


@dataclass(frozen=True)
class Answer:
    status: int = 200
    retry_after: int | None = None


@dataclass(frozen=True)
class Request:
    path: str
    authorization: str
    body: dict[str, Any]  # JSON, or a media upload's form fields
    # A media upload's file: {"filename", "content_type", "content" (bytes)}.
    file: dict[str, Any] | None = None


def _multipart(content_type: str, raw: bytes) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The form fields and the file of a multipart/form-data body."""
    message = BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + raw
    )
    fields: dict[str, Any] = {}
    upload = None
    for part in message.iter_parts() if message.is_multipart() else ():
        name = part.get_param("name", header="content-disposition")
        raw_payload = part.get_payload(decode=True)
        payload = raw_payload if isinstance(raw_payload, bytes) else b""
        filename = part.get_filename()
        if filename:
            upload = {"name": name, "filename": filename,
                      "content_type": part.get_content_type(), "content": payload}  # fmt: skip
        elif name:
            fields[str(name)] = payload.decode("utf-8", "replace")
    return fields, upload


class FakeGraph:
    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._host = host
        self._port = port
        self._lock = threading.Lock()
        self._answers: list[Answer] = []
        self._requests: list[Request] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                content_type = self.headers.get("Content-Type", "")
                upload = None
                if content_type.startswith("multipart/form-data"):
                    body, upload = _multipart(content_type, raw)
                else:
                    try:
                        body = json.loads(raw or b"{}")
                    except ValueError:
                        body = {}
                answer = fake._record(
                    Request(self.path, self.headers.get("Authorization", ""), body, upload)
                )
                if answer.status == 200 and self.path.endswith("/media"):
                    payload: dict[str, Any] = (
                        {"id": f"media-fake-{uuid.uuid4().hex}"}
                        if upload is not None
                        else {"error": {"message": "no file", "code": 100}}
                    )
                elif answer.status == 200:
                    payload = {
                        "messaging_product": "whatsapp",
                        "contacts": [{"input": body.get("to"), "wa_id": body.get("to")}],
                        "messages": [{"id": f"wamid.fake-{uuid.uuid4().hex}"}],
                    }
                else:
                    payload = {"error": {"message": f"fake {answer.status}", "code": answer.status}}
                data = json.dumps(payload).encode()
                status = 400 if "error" in payload and answer.status == 200 else answer.status
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if answer.retry_after is not None:
                    self.send_header("Retry-After", str(answer.retry_after))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer((self._host, self._port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://{self._host}:{self._server.server_address[1]}"

    def add(self, status: int, *, retry_after: int | None = None, times: int = 1) -> Self:
        """Answer the next requests with `status` (after the ones added before); then 200."""
        with self._lock:
            self._answers += [Answer(status, retry_after)] * times
        return self

    @property
    def requests(self) -> list[Request]:
        with self._lock:
            return list(self._requests)

    def _record(self, request: Request) -> Answer:
        with self._lock:
            self._requests.append(request)
            return self._answers.pop(0) if self._answers else Answer()
