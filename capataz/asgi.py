"""The ASGI application daphne serves: HTTP through Django, the panel's socket through Channels."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "capataz.settings")
# Django must be set up before the consumers (and their models) are imported.
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402
from django.urls import path  # noqa: E402

from agents.proactive.consumers import SuggestionsConsumer  # noqa: E402
from approvals.consumers import ApprovalsConsumer  # noqa: E402
from capataz.origin import SameOriginValidator  # noqa: E402
from copilot import channels, eventlog, tasks  # noqa: E402
from copilot.routing import websocket_urlpatterns  # noqa: E402
from evaluation.consumers import RunProgressConsumer  # noqa: E402


async def http(scope: Any, receive: Any, send: Any) -> None:
    # A view may publish events (a webhook accepting a message): their live sends belong on this
    # process's loop, where the in-memory channel layer of the embedded default lives.
    eventlog.use_loop(asyncio.get_running_loop())
    await django_asgi_app(scope, receive, send)


application = ProtocolTypeRouter(
    {
        "http": http,
        "websocket": SameOriginValidator(
            AuthMiddlewareStack(
                URLRouter(
                    [
                        *websocket_urlpatterns,
                        *(p for c in channels.registered() for p in c.websocket_urlpatterns),
                        path("ws/approvals/", ApprovalsConsumer.as_asgi()),
                        path("ws/suggestions/", SuggestionsConsumer.as_asgi()),
                        path("ws/evaluation/", RunProgressConsumer.as_asgi()),
                    ]
                )
            )
        ),
    }
)


def start_up() -> None:
    """On the embedded default this process runs the turns, so it recovers, on a runner thread,
    what its previous run left when it died: queued turns run, turns cut short are interrupted.
    At start-up, not when a socket connects: no browser may ever come back for those messages.
    Leases the dead run still held are looked at again once they lapse (tasks._recover_now);
    from then on beat's `copilot.recover_turns` keeps recovering."""
    if settings.COPILOT_RECOVER_AT_START:
        tasks.recover_here_once()


start_up()
