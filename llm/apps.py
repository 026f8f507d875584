from __future__ import annotations

from django.apps import AppConfig


class LlmConfig(AppConfig):
    """The one seam to a language model: provider settings, prices, model-call rows, the client."""

    name = "llm"
    verbose_name = "LLM"
    default_auto_field = "django.db.models.BigAutoField"
