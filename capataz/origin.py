"""The websockets' Origin check: scheme, host and port, not just the host.

Channels' AllowedHostsOriginValidator compares only the Origin's host with ALLOWED_HOSTS, so
`http://127.0.0.1:9999` or `https://127.0.0.1` could open a socket of a server on
`http://127.0.0.1:8000`. Here an Origin is accepted only when it is the socket's own origin — ws
→ http, wss → https (or https when the proxy says so through SECURE_PROXY_SSL_HEADER), host and
port from the Host header, which must itself be in ALLOWED_HOSTS — or one of
CSRF_TRUSTED_ORIGINS. A socket with no Origin is refused, as before.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host

DEFAULT_PORTS = {"http": 80, "https": 443}

Origin = tuple[str, str, int]


def parse_origin(value: str) -> Origin | None:
    """(scheme, host, port) with the scheme's default port filled in; None if it is not one."""
    try:
        parts = urlsplit(value.strip().lower())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/"):
        return None
    return parts.scheme, parts.hostname, port or DEFAULT_PORTS[parts.scheme]


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers") or []:
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def _scheme(scope: dict[str, Any]) -> str:
    proxy_header = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy_header:
        meta_name, secure_value = proxy_header
        # HTTP_X_FORWARDED_PROTO → x-forwarded-proto, as Django maps the request's META.
        name = meta_name.removeprefix("HTTP_").replace("_", "-").lower().encode("latin-1")
        forwarded = _header(scope, name)
        if forwarded is not None:
            return "https" if forwarded.split(",")[0].strip() == secure_value else "http"
    return "https" if scope.get("scheme") == "wss" else "http"


def own_origin(scope: dict[str, Any]) -> Origin | None:
    """The origin a page served by this host would send; None when the Host is missing or not
    in ALLOWED_HOSTS."""
    host = _header(scope, b"host")
    if not host:
        return None
    domain, _port = split_domain_port(host.lower())
    if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
        return None
    return parse_origin(f"{_scheme(scope)}://{host}")


def origin_allowed(scope: dict[str, Any]) -> bool:
    raw = _header(scope, b"origin")
    origin = parse_origin(raw) if raw else None
    if origin is None:
        return False
    if origin == own_origin(scope):
        return True
    return any(_matches(origin, trusted) for trusted in settings.CSRF_TRUSTED_ORIGINS)


def _matches(origin: Origin, trusted: str) -> bool:
    """`trusted` as Django's CSRF check reads it: an exact origin, or `*.domain` for subdomains."""
    expected = parse_origin(trusted)
    if expected is None:
        return False
    scheme, host, port = expected
    if host.startswith("*."):
        return (
            origin[0] == scheme and origin[2] == port and origin[1].endswith(host.removeprefix("*"))
        )
    return origin == expected


class SameOriginValidator:
    """ASGI middleware for websockets: refuses the handshake unless `origin_allowed`."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] == "websocket" and not origin_allowed(scope):
            denier = WebsocketDenier()
            return await denier(scope, receive, send)
        return await self.application(scope, receive, send)
