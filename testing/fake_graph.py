"""A fake Graph API for tests and the demo: a real HTTP server on localhost that answers the
messages endpoint and the media upload (multipart: answered with a media id) as told (200 with
a message id, 500, 429 with Retry-After, 400 with Meta's error code and `error_data.details`)
and records every request. Modelled on testing/scripted.py's `ScriptedServer`.

    with FakeGraph() as graph:
        graph.add(500); graph.add(429, retry_after=3)   # then 200s
        graph.add(400, code=131047)                     # "more than 24 hours", with its details
        graph.add(500, when=lambda body: body.get("type") == "interactive")  # that call only
        graph.add(200, message_id="wamid.ours-1")       # the id a status callback will name

Marking a message read (`{"status": "read", ...}`) is answered `{"success": true}` and recorded
apart, in `receipts`, so `requests` is what reached the customer; `fail_receipts(500)` makes
the next ones fail.
        graph.add_media("media-1", b"...", "image/jpeg", token="token-1100")
        settings.WHATSAPP_GRAPH_URL = graph.base_url

Media as the Cloud API serves them: `GET /{version}/{media-id}` with the owner's bearer token
answers `{"url", "mime_type", "file_size", "sha256", "id"}`; `GET` of that URL with the same
token answers the bytes. Another token, or an unknown id, gets 404 (the Graph API's answer to a
media id that is not the caller's). Media requests are in `media_requests`. For the demo,
`FakeGraph(media_dir=...)` also serves each file of that folder, as media id `media_id_of(name)`
(Graph ids are digits). To test where downloads may go, `add_media(..., url=...)` makes the
metadata point elsewhere (another fake: a CDN, a host not allowed) and `redirect=...` makes the
download answer 302 to that URL.

Stdlib only."""

from __future__ import annotations

import email.policy
import hashlib
import json
import mimetypes
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from email.parser import BytesParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

# Meta's details of the errors tests inject (error_data.details).
DETAILS = {
    131047: "Message failed to send because more than 24 hours have passed since the customer "
    "last replied to this number.",
    131026: "Message undeliverable.",
}


@dataclass(frozen=True)
class Answer:
    status: int = 200
    retry_after: int | None = None
    code: int | None = None  # Meta's error code (the HTTP status when None)
    message_id: str | None = None  # a 200's message id (a fresh one when None)
    # Which request it answers: the first one whose JSON body it accepts (None: any).
    when: Callable[[dict[str, Any]], bool] | None = None


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


@dataclass(frozen=True)
class Media:
    data: bytes
    mime_type: str
    token: str  # the bearer token of the account it belongs to ("" = any)
    declared_size: int | None = None  # what the metadata says (a lie, to test the cap)
    url: str = ""  # where the metadata says the file is ("" = here)
    redirect: str = ""  # the download answers 302 to this


def _error(answer: Answer) -> dict[str, Any]:
    """Meta's error body: its message, code and, for a code it documents, `error_data.details`."""
    code = answer.code if answer.code is not None else answer.status
    error: dict[str, Any] = {"message": f"fake {code}", "type": "OAuthException", "code": code}
    if code in DETAILS:
        error["error_data"] = {"messaging_product": "whatsapp", "details": DETAILS[code]}
    return {"error": error}


def media_id_of(name: str) -> str:
    """The demo's media id of a file name: digits, like the Graph API's ids."""
    return str(int(hashlib.sha256(name.encode()).hexdigest()[:12], 16))


class FakeGraph:
    def __init__(
        self, host: str = "127.0.0.1", port: int = 0, media_dir: Path | None = None
    ) -> None:
        self._host = host
        self._media_dir = media_dir
        self._port = port
        self._lock = threading.Lock()
        self._answers: list[Answer] = []
        self._requests: list[Request] = []
        self._receipts: list[Request] = []
        self._receipt_failures: list[Answer] = []
        self._media: dict[str, Media] = {}
        self._media_requests: list[Request] = []
        self._media_failures: list[int] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                authorization = self.headers.get("Authorization", "")
                status, content_type, data = fake._media_answer(self.path, authorization)
                self.send_response(status)
                if status == 302:
                    self.send_header("Location", data.decode())
                    data = b""
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

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
                request = Request(self.path, self.headers.get("Authorization", ""), body, upload)
                if body.get("status") == "read":  # mark as read (and typing): not a message
                    answer = fake._receipt(request)
                else:
                    answer = fake._record(request)
                if answer.status == 200 and body.get("status") == "read":
                    payload: dict[str, Any] = {"success": True}
                elif answer.status == 200 and self.path.endswith("/media"):
                    payload = (
                        {"id": f"media-fake-{uuid.uuid4().hex}"}
                        if upload is not None
                        else {"error": {"message": "no file", "code": 100}}
                    )
                elif answer.status == 200:
                    payload = {
                        "messaging_product": "whatsapp",
                        "contacts": [{"input": body.get("to"), "wa_id": body.get("to")}],
                        "messages": [{"id": answer.message_id or f"wamid.fake-{uuid.uuid4().hex}"}],
                    }
                else:
                    payload = _error(answer)
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

    def add(
        self, status: int, *, retry_after: int | None = None, times: int = 1,
        code: int | None = None, message_id: str | None = None,
        when: Callable[[dict[str, Any]], bool] | None = None,
    ) -> Self:  # fmt: skip
        """Answer the next requests with `status` (after the ones added before); then 200.
        `code`: Meta's error code in the body (131047, ...), with its details; `message_id`: the
        id a 200 gives the message (for a status callback to name); `when`: only the requests
        whose body it accepts (a text, an interactive message, one recipient) — the others
        pass it by."""
        with self._lock:
            self._answers += [Answer(status, retry_after, code, message_id, when)] * times
        return self

    def fail_receipts(self, status: int, *, times: int = 1) -> Self:
        """Answer the next mark-as-read requests with `status`."""
        with self._lock:
            self._receipt_failures += [Answer(status)] * times
        return self

    @property
    def receipts(self) -> list[Request]:
        """The mark-as-read (and typing indicator) requests."""
        with self._lock:
            return list(self._receipts)

    def _receipt(self, request: Request) -> Answer:
        with self._lock:
            self._receipts.append(request)
            return self._receipt_failures.pop(0) if self._receipt_failures else Answer()

    def add_media(
        self, media_id: str, data: bytes, mime_type: str, *, token: str = "",
        declared_size: int | None = None, url: str = "", redirect: str = "",
    ) -> Self:  # fmt: skip
        """Serve `data` as media `media_id` to the bearer of `token` (any bearer when "")."""
        with self._lock:
            self._media[media_id] = Media(data, mime_type, token, declared_size, url, redirect)
        return self

    def _media_file(self, media_id: str) -> Media | None:
        """The file of `media_dir` whose `media_id_of` is `media_id` (only the folder's files)."""
        if self._media_dir is None or not media_id.isdigit():
            return None
        for path in self._media_dir.iterdir():
            if path.is_file() and media_id_of(path.name) == media_id:
                mime_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
                return Media(path.read_bytes(), mime_type, "")
        return None

    def fail_media(self, status: int, *, times: int = 1) -> Self:
        """Answer the next media requests (of known media) with `status`."""
        with self._lock:
            self._media_failures += [status] * times
        return self

    @property
    def media_requests(self) -> list[Request]:
        with self._lock:
            return list(self._media_requests)

    def _media_answer(self, path: str, authorization: str) -> tuple[int, str, bytes]:
        with self._lock:
            self._media_requests.append(Request(path, authorization, {}))
            parts = path.strip("/").split("/")
            download = len(parts) == 2 and parts[0] == "media-files"
            media_id = parts[1] if len(parts) == 2 else ""
            media = self._media.get(media_id) or self._media_file(media_id)
            failure = self._media_failures.pop(0) if self._media_failures and media else None
        allowed = media is not None and (
            not media.token or authorization == f"Bearer {media.token}"
        )
        if media is None or not allowed:
            body = {"error": {"message": "Unsupported get request", "code": 100}}
            return 404, "application/json", json.dumps(body).encode()
        if failure is not None:
            body = {"error": {"message": f"fake {failure}", "code": failure}}
            return failure, "application/json", json.dumps(body).encode()
        if download and media.redirect:
            return 302, "text/plain", media.redirect.encode()
        if download:
            return 200, media.mime_type, media.data
        info = {
            "messaging_product": "whatsapp", "id": media_id,
            "url": media.url or f"{self.base_url}/media-files/{media_id}",
            "mime_type": media.mime_type,
            "sha256": hashlib.sha256(media.data).hexdigest(),
            "file_size": len(media.data) if media.declared_size is None else media.declared_size,
        }  # fmt: skip
        return 200, "application/json", json.dumps(info).encode()

    @property
    def requests(self) -> list[Request]:
        with self._lock:
            return list(self._requests)

    def _record(self, request: Request) -> Answer:
        with self._lock:
            self._requests.append(request)
            for position, answer in enumerate(self._answers):
                if answer.when is None or answer.when(request.body):
                    return self._answers.pop(position)
            return Answer()
