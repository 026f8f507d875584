"""A small client of the Graph API: the messages endpoint
(`POST {base}/{version}/{number}/messages`) and media (`GET {base}/{version}/{media-id}` → a
URL, then `GET` that URL with the same token).

The base URL is `settings.WHATSAPP_GRAPH_URL`, so tests and the demo talk to a local fake server
(testing/fake_graph.py).

Media without SSRF (issue 23): a media id goes into the Graph URL only when it is Graph's format
(digits); the file is fetched only from `WHATSAPP_MEDIA_HOSTS` (https, or an exact origin an entry
names), each redirect hop checked the same way, and the account's token goes only to the Graph
API's own origin and to `WHATSAPP_MEDIA_TOKEN_HOSTS`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

import httpx
from django.conf import settings

from whatsapp.payload import GRAPH_ID

TEXT_LIMIT = 4096  # the Cloud API's limit for a text message's body


@dataclass(frozen=True)
class Sent:
    ok: bool
    provider_id: str = ""
    retryable: bool = False
    retry_after: float | None = None  # the server's Retry-After, in seconds
    error: str = ""  # the status, Meta's message and its `error_data.details`
    code: int = 0  # Meta's error code (131047: the 24-hour window is closed)


def text_body(to: str, text: str) -> dict[str, Any]:
    return {
        "messaging_product": "whatsapp", "recipient_type": "individual", "to": to,
        "type": "text", "text": {"body": text[:TEXT_LIMIT], "preview_url": False},
    }  # fmt: skip


def read_body(message_id: str, typing: bool) -> dict[str, Any]:
    """The customer's message marked read (two blue ticks), with the typing indicator (shown
    until the reply, 25 seconds at most) when one is coming."""
    body: dict[str, Any] = {"messaging_product": "whatsapp", "status": "read",
                            "message_id": message_id}  # fmt: skip
    if typing:
        body["typing_indicator"] = {"type": "text"}
    return body


def document_body(to: str, media_id: str, filename: str, caption: str) -> dict[str, Any]:
    """A document message of an uploaded medium (the id /media answered)."""
    document = {"id": media_id, "filename": filename, "caption": caption[:1024]}
    return {
        "messaging_product": "whatsapp", "recipient_type": "individual", "to": to,
        "type": "document", "document": {k: v for k, v in document.items() if v},
    }  # fmt: skip


def upload_media(
    *, phone_number_id: str, access_token: str, content: bytes, filename: str, mime_type: str
) -> Sent:
    """`POST {base}/{version}/{number}/media` (multipart): the medium's id in `provider_id`."""
    base = str(settings.WHATSAPP_GRAPH_URL).rstrip("/")
    url = f"{base}/{settings.WHATSAPP_GRAPH_VERSION}/{phone_number_id}/media"
    try:
        response = httpx.post(
            url, data={"messaging_product": "whatsapp", "type": mime_type},
            files={"file": (filename, content, mime_type)},
            timeout=settings.WHATSAPP_SEND_TIMEOUT,
            headers={"Authorization": f"Bearer {access_token}"},
        )  # fmt: skip
    except httpx.HTTPError as exc:
        return Sent(ok=False, retryable=True, error=f"{type(exc).__name__}: {exc}"[:500])
    if response.status_code == 200 and (media_id := str(_json(response).get("id") or "")):
        return Sent(ok=True, provider_id=media_id)
    retryable = response.status_code == 429 or response.status_code >= 500
    return Sent(
        ok=False, retryable=retryable, retry_after=_retry_after(response),
        error=f"media upload: HTTP {response.status_code}: {_error_text(response)}"[:500],
    )  # fmt: skip


def send(*, phone_number_id: str, access_token: str, body: dict[str, Any]) -> Sent:
    base = str(settings.WHATSAPP_GRAPH_URL).rstrip("/")
    url = f"{base}/{settings.WHATSAPP_GRAPH_VERSION}/{phone_number_id}/messages"
    try:
        response = httpx.post(
            url, json=body, timeout=settings.WHATSAPP_SEND_TIMEOUT,
            headers={"Authorization": f"Bearer {access_token}"},
        )  # fmt: skip
    except httpx.HTTPError as exc:  # refused, reset, timed out: worth another try
        return Sent(ok=False, retryable=True, error=f"{type(exc).__name__}: {exc}"[:500])
    if response.status_code == 200:
        messages = _json(response).get("messages") or [{}]
        return Sent(ok=True, provider_id=str(messages[0].get("id") or ""))
    retryable = response.status_code == 429 or response.status_code >= 500
    return Sent(
        ok=False, retryable=retryable, retry_after=_retry_after(response),
        error=f"HTTP {response.status_code}: {_error_text(response)}"[:500],
        code=_error_code(response),
    )  # fmt: skip


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _error_text(response: httpx.Response) -> str:
    """Meta's message and, when it gives them, the details that say what to do."""
    error = _json(response).get("error")
    if isinstance(error, dict):
        data = error.get("error_data")
        details = data.get("details") if isinstance(data, dict) else None
        message = str(error.get("message") or error)
        return f"{message}: {details}" if details else message
    return response.text[:200]


def _error_code(response: httpx.Response) -> int:
    error = _json(response).get("error")
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, int) and not isinstance(code, bool) else 0


def _retry_after(response: httpx.Response) -> float | None:
    raw = response.headers.get("Retry-After", "")
    try:
        return max(0.0, float(raw)) if raw else None
    except ValueError:
        return None


# --- media --------------------------------------------------------------------------------------


class MediaError(Exception):
    """A media file that could not be fetched. `code`: not_found (the Graph API does not know it,
    or not for this token), too_large (over the caller's limit), unreachable (connection, 5xx),
    refused (any other answer)."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail[:500]


@dataclass(frozen=True)
class MediaInfo:
    url: str
    mime_type: str
    file_size: int | None
    sha256: str = ""


Origin = tuple[str, str, int]  # scheme, host, port
MAX_REDIRECTS = 3


def origin_of(url: str) -> Origin | None:
    """(scheme, host, port) of an http(s) URL as httpx itself reads it (the parser that makes
    the request decides, so no two parsers can disagree); None for anything else, credentials
    included ("https://lookaside.fbsbx.com@evil.example/" is not Meta's host)."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError):
        return None
    scheme = parsed.scheme
    if scheme not in ("http", "https") or not parsed.host or parsed.userinfo:
        return None
    return scheme, parsed.host.lower(), parsed.port or (443 if scheme == "https" else 80)


def host_allowed(url: str, entries: Iterable[str]) -> bool:
    """Whether `url` is on one of `entries`: a host ("lookaside.fbsbx.com") or a suffix
    ("*.fbcdn.net") over https on its usual port, or an exact origin ("http://127.0.0.1:8765",
    the only way plain http is ever allowed: a local fake)."""
    origin = origin_of(url)
    if origin is None:
        return False
    scheme, host, port = origin
    for entry in entries:
        if "://" in entry:
            if origin_of(entry) == origin:
                return True
        elif scheme == "https" and port == 443:
            pattern = entry.lower()
            if host == pattern or (pattern.startswith("*.") and host.endswith(pattern[1:])):
                return True
    return False


def _token_for(url: str, access_token: str) -> dict[str, str]:
    """The Authorization header for `url`: only the Graph API's own origin and the hosts named
    in WHATSAPP_MEDIA_TOKEN_HOSTS ever see the account's token."""
    graph = origin_of(str(settings.WHATSAPP_GRAPH_URL))
    if origin_of(url) == graph or host_allowed(url, settings.WHATSAPP_MEDIA_TOKEN_HOSTS):
        return {"Authorization": f"Bearer {access_token}"}
    return {}


def media_info(*, media_id: str, access_token: str) -> MediaInfo:
    """What the Graph API says of a media id: the URL to fetch it from, its type and size."""
    if not GRAPH_ID.fullmatch(media_id):  # never into a URL: "../../internal/admin?x=1#"
        raise MediaError("refused", "not a Graph media id")
    base = str(settings.WHATSAPP_GRAPH_URL).rstrip("/")
    url = f"{base}/{settings.WHATSAPP_GRAPH_VERSION}/{media_id}"
    try:
        response = httpx.get(
            url, timeout=settings.WHATSAPP_SEND_TIMEOUT, follow_redirects=False,
            headers={"Authorization": f"Bearer {access_token}"},
        )  # fmt: skip
    except httpx.HTTPError as exc:
        raise MediaError("unreachable", f"{type(exc).__name__}: {exc}") from exc
    _raise_for(response)
    data = _json(response)
    link = data.get("url")
    if not isinstance(link, str) or not host_allowed(link, settings.WHATSAPP_MEDIA_HOSTS):
        raise MediaError("refused", "the Graph API gave no media URL on an allowed host")
    try:
        size = int(data["file_size"]) if data.get("file_size") is not None else None
    except (TypeError, ValueError):
        size = None
    return MediaInfo(
        url=link, mime_type=str(data.get("mime_type") or ""), file_size=size,
        sha256=str(data.get("sha256") or ""),
    )  # fmt: skip


def media_download(*, url: str, access_token: str, max_bytes: int) -> bytes:
    """The file's bytes, read as a stream and cut off (MediaError too_large) past `max_bytes`:
    a server that lies about the size never fills the memory. Redirects are followed by hand,
    each hop checked against the allowed hosts before any request reaches it."""
    for _hop in range(MAX_REDIRECTS + 1):
        if not host_allowed(url, settings.WHATSAPP_MEDIA_HOSTS):
            raise MediaError("refused", "media URL not on an allowed host")
        try:
            with httpx.stream(
                "GET", url, timeout=settings.WHATSAPP_SEND_TIMEOUT, follow_redirects=False,
                headers=_token_for(url, access_token),
            ) as response:  # fmt: skip
                if response.is_redirect:
                    url = urljoin(url, response.headers.get("Location", ""))
                    continue
                return _read_capped(response, max_bytes)
        except httpx.HTTPError as exc:
            raise MediaError("unreachable", f"{type(exc).__name__}: {exc}") from exc
    raise MediaError("refused", f"more than {MAX_REDIRECTS} redirects")


def _read_capped(response: httpx.Response, max_bytes: int) -> bytes:
    if response.status_code != 200:
        response.read()
        _raise_for(response)
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise MediaError("too_large", f"{declared} bytes")
    chunks, size = [], 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise MediaError("too_large", f"more than {max_bytes} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _raise_for(response: httpx.Response) -> None:
    if response.status_code == 200:
        return
    detail = f"HTTP {response.status_code}: {_error_text(response)}"
    if response.status_code in (400, 401, 403, 404):
        raise MediaError("not_found", detail)
    if response.status_code == 429 or response.status_code >= 500:
        raise MediaError("unreachable", detail)
    raise MediaError("refused", detail)
