"""Browser tests (`-m browser`): Debian's Chromium driven by Playwright against a real daphne.

The server is daphne in a child process (daphne.testing.DaphneProcess, as channels'
ChannelsLiveServerTestCase runs it) serving the project's ASGI application — pages, static files
and the chat's websocket — over the test database, which is a file on every backend (SQLite's
test database is one: capataz/settings.py). The child is forked once per module and ended
after it; the tests write their rows in the test process (transactional: committed, so the child
reads them) and turns run in the child, on its own runner threads.

The router is scripted (tests/copilot/conftest.py: what a text means is written down) so each
test is quick and says exactly which intent runs; the handlers' tools are the real ones, through
the real gate. No browser is downloaded: the tests use /usr/bin/chromium and are skipped, saying
so, only when there is no Chromium on the machine.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connections
from django.test import Client

from agents.base import HANDLERS, Outcome, Runner, Step, load_handlers
from tests.copilot.conftest import TEST_HANDLERS, ScriptedRouter, task

CHROMIUM_PATHS = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
AXE = Path(__file__).parent / "vendor" / "axe.min.js"
SLOW_S = 2.5  # the slow turn: long enough to reload the page in the middle of it

# What the browser tests' messages mean (the child's router reads this).
SCRIPT: dict[str, Any] = {
    "agendale un service": [task("book_job", 0.9, service="service de aire")],
    "cancelalo": [task("cancel_job", 0.9)],
    "contame despacio": [task("check_availability", 0.9)],
}

# How long a page or the database may take to show what is awaited: generous, because CI shares
# two cores between the server process, Chromium and the suite (BROWSER_PATIENCE overrides it).
PATIENCE = float(os.environ.get("BROWSER_PATIENCE", "30"))


def chromium() -> str | None:
    for path in CHROMIUM_PATHS:
        if os.access(path, os.X_OK):
            return path
    return shutil.which("chromium")


def _slow(step: Step, runner: Runner) -> Outcome:
    time.sleep(SLOW_S)
    return Outcome(text="Tardé, pero acá está la respuesta lenta.")


def _child_setup(database: str, blocker: Any) -> None:
    """In the server's process, before it serves: the test database (open to every thread:
    pytest-django's block was inherited with the fork), the scripted router and the test
    handlers over the real tools."""
    from copilot.orchestration import nodes

    blocker.unblock()

    # Turns on the child's own runner threads, as a web process runs them on the embedded
    # default, whatever the backend: the suite makes Celery run tasks inline, which would answer
    # a turn inside the socket's own receive and hold its live events until the end.
    settings.COPILOT_TURN_RUNNER = "local"
    settings.DATABASES["default"]["NAME"] = database
    connections["default"].settings_dict["NAME"] = database
    router = ScriptedRouter(script=dict(SCRIPT))
    nodes.router_for = lambda organisation: router  # type: ignore[assignment]
    load_handlers()
    HANDLERS.update(TEST_HANDLERS)
    HANDLERS["check_availability"] = _slow


def _application() -> Any:
    from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

    from capataz.asgi import application

    return ASGIStaticFilesHandler(application)


@pytest.fixture(scope="session")
def browser_path() -> str:
    path = chromium()
    if path is None:
        pytest.skip("no Chromium binary (/usr/bin/chromium): apt-get install chromium")
    return path


@pytest.fixture(scope="module")
def asgi_server(browser_path: str, django_db_setup: None, django_db_blocker: Any) -> Iterator[str]:
    """daphne serving the project over the test database, for one module; its base URL."""
    from daphne.testing import DaphneProcess

    database = str(connections["default"].settings_dict["NAME"])
    process = DaphneProcess(
        "127.0.0.1", _application, setup=partial(_child_setup, database, django_db_blocker)
    )
    process.daemon = True
    process.start()
    deadline = time.monotonic() + 30
    while not process.ready.wait(timeout=0.5):
        if not process.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("daphne did not start for the browser tests")
    yield f"http://127.0.0.1:{process.port.value}"
    process.terminate()
    process.join(timeout=10)


@pytest.fixture(scope="module")
def browser(browser_path: str, asgi_server: str) -> Iterator[Any]:
    """Chromium for one module. Playwright's sync API keeps an event loop running in this
    thread while it is open, which Django's async-safety check takes for async code: the
    tests' own ORM calls are plain sync code, so the check is off for the module only — and
    only after the server's process has forked, which keeps it."""
    from playwright.sync_api import sync_playwright

    saved = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            launched = playwright.chromium.launch(
                executable_path=browser_path, args=["--no-sandbox", "--disable-dev-shm-usage"]
            )
            yield launched
            launched.close()
    finally:
        if saved is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = saved


@pytest.fixture
def open_page(
    browser: Any, asgi_server: str, transactional_db: None
) -> Iterator[Callable[..., Any]]:
    """A signed-in page: open_page(user, path, width=1280, locale="es-AR")."""
    contexts: list[Any] = []

    def opener(user: Any, path: str, *, width: int = 1280, locale: str = "es-AR") -> Any:
        client = Client()
        client.force_login(user)
        cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
        context = browser.new_context(
            viewport={"width": width, "height": 844 if width < 500 else 900}, locale=locale,
            extra_http_headers={"Accept-Language": locale},
        )  # fmt: skip
        context.add_cookies(
            [{"name": settings.SESSION_COOKIE_NAME, "value": cookie, "url": asgi_server}]
        )
        context.set_default_timeout(PATIENCE * 1000)
        contexts.append(context)
        page = context.new_page()
        page.goto(asgi_server + path)
        return page

    yield opener
    for context in contexts:
        context.close()
    # The server's runners may still be finishing a turn the page saw answered (its seal, the
    # lease's release); the database is flushed after this, and a TRUNCATE that meets their
    # row locks deadlocks on PostgreSQL. Wait until they are done, and say so if they never are.
    from copilot.models import Conversation, Turn

    settled = wait_for(
        lambda: (
            not Turn.objects.filter(status__in=(Turn.Status.QUEUED, Turn.Status.RUNNING)).exists()
            and not Conversation.objects.exclude(lease_owner="").exists()
        )
    )
    assert settled, "the server's runners were still working when the test ended"


def axe_serious(page: Any) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations on the page as it is now."""
    page.add_script_tag(path=str(AXE))
    results = page.evaluate("async () => await axe.run(document)")
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]][:5]}
        for v in results["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def wait_for(condition: Callable[[], bool], timeout: float | None = None) -> bool:
    """Poll a condition on the database (the server's process writes it)."""
    deadline = time.monotonic() + (PATIENCE if timeout is None else timeout)
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()
