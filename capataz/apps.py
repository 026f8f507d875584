from __future__ import annotations

from django.apps import AppConfig


class CapatazConfig(AppConfig):
    """The project itself: settings, ASGI, Celery, URLs, the organisation's set-up and the demo."""

    name = "capataz"
    verbose_name = "Capataz"
