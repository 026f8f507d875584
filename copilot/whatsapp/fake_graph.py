"""A fake Graph API for tests and the demo: a real HTTP server on localhost that answers the
messages endpoint as told (200 with a message id, 500, 429 with Retry-After) and records every
request. Modelled on llm/scripted.py's `ScriptedServer`.

    with FakeGraph() as graph:
        graph.add(500); graph.add(429, retry_after=3)   # then 200s
        settings.WHATSAPP_GRAPH_URL = graph.base_url

Stdlib only."""

from __future__ import annotations

import json
import threading
import uuid
from dataclasses import dataclass
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
    body: dict[str, Any]


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
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = {}
                answer = fake._record(
                    Request(self.path, self.headers.get("Authorization", ""), body)
                )
                if answer.status == 200:
                    payload: dict[str, Any] = {
                        "messaging_product": "whatsapp",
                        "contacts": [{"input": body.get("to"), "wa_id": body.get("to")}],
                        "messages": [{"id": f"wamid.fake-{uuid.uuid4().hex}"}],
                    }
                else:
                    payload = {"error": {"message": f"fake {answer.status}", "code": answer.status}}
                data = json.dumps(payload).encode()
                self.send_response(answer.status)
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
