from __future__ import annotations

from django.apps import AppConfig


class LlmConfig(AppConfig):
    """The one seam to a language model: provider settings, prices, model-call rows, the client."""

    name = "llm"
    verbose_name = "LLM"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from llm import provider
        from llm.models import ProviderSettings

        def dropped(sender: type, instance: ProviderSettings, **_kwargs: object) -> None:
            provider.forget(instance.organisation_id)

        post_save.connect(dropped, sender=ProviderSettings, weak=False)
        post_delete.connect(dropped, sender=ProviderSettings, weak=False)
