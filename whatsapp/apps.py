from __future__ import annotations

from django.apps import AppConfig


class WhatsAppConfig(AppConfig):
    """The WhatsApp channel, plugged into the turn through copilot/channels.py."""

    name = "whatsapp"
    verbose_name = "WhatsApp"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from copilot import channels
        from whatsapp import media, outbox  # noqa: F401 - their Celery jobs, for the worker
        from whatsapp.channel import WhatsApp

        channels.register(WhatsApp())
