"""The websocket Origin check (capataz/origin.py): the socket's own origin — scheme, host and
port — or a trusted one; never just a matching host name."""

from __future__ import annotations

from typing import Any

import pytest

from capataz.origin import origin_allowed


def _scope(origin: str | None, host: str | None = "127.0.0.1:8000", **extra: Any) -> Any:
    headers = []
    if host is not None:
        headers.append((b"host", host.encode()))
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    headers += [(name.encode(), value.encode()) for name, value in extra.pop("headers", [])]
    return {"type": "websocket", "headers": headers, **extra}


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        ("http://127.0.0.1:8000", True),
        ("HTTP://127.0.0.1:8000", True),
        ("http://127.0.0.1:9999", False),
        ("https://127.0.0.1", False),
        ("https://127.0.0.1:8000", False),
        ("http://127.0.0.1", False),
        ("http://localhost:8000", False),
        ("null", False),
        ("", False),
        (None, False),
    ],
)
def test_only_the_sockets_own_origin_is_accepted(origin: str | None, allowed: bool) -> None:
    assert origin_allowed(_scope(origin)) is allowed


def test_wss_means_https_and_the_default_port_may_be_left_out() -> None:
    assert origin_allowed(_scope("https://127.0.0.1", host="127.0.0.1", scheme="wss"))
    assert origin_allowed(_scope("https://127.0.0.1", host="127.0.0.1:443", scheme="wss"))
    assert not origin_allowed(_scope("http://127.0.0.1", host="127.0.0.1", scheme="wss"))


def test_a_host_outside_allowed_hosts_is_refused_even_with_its_own_origin() -> None:
    assert not origin_allowed(_scope("http://evil.example:8000", host="evil.example:8000"))
    assert not origin_allowed(_scope("http://127.0.0.1:8000", host=None))


def test_the_proxys_forwarded_scheme_counts_only_when_configured(settings: Any) -> None:
    behind_proxy = _scope(
        "https://127.0.0.1", host="127.0.0.1", headers=[("x-forwarded-proto", "https")]
    )
    assert not origin_allowed(behind_proxy)
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    assert origin_allowed(behind_proxy)
    assert not origin_allowed(_scope("http://127.0.0.1", host="127.0.0.1", headers=[
        ("x-forwarded-proto", "https")
    ]))  # fmt: skip


def test_trusted_origins_are_accepted_with_their_scheme_and_port(settings: Any) -> None:
    settings.CSRF_TRUSTED_ORIGINS = ["https://office.example.com", "https://*.example.org"]
    assert origin_allowed(_scope("https://office.example.com"))
    assert origin_allowed(_scope("https://a.example.org"))
    assert not origin_allowed(_scope("http://office.example.com"))
    assert not origin_allowed(_scope("https://office.example.com:8443"))
    assert not origin_allowed(_scope("https://example.org.evil.com"))
