from __future__ import annotations

from django.apps import AppConfig


class CopilotConfig(AppConfig):
    """The orchestrator and the chat (conversations, messages, agent runs)."""

    name = "copilot"
    default_auto_field = "django.db.models.BigAutoField"
