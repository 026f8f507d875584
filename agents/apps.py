from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = _("Agents")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The receivers import django-celery-beat's models: only once the apps are loaded.
        from django.db.models.signals import post_migrate, post_save

        from agents.proactive.services import schedules_install_all
        from agents.receivers import on_organisation_saved
        from business.models import Organisation

        post_save.connect(
            on_organisation_saved, sender=Organisation, dispatch_uid="agents.schedules.org"
        )
        post_migrate.connect(
            schedules_install_all, sender=self, dispatch_uid="agents.schedules.install"
        )
        self._forget_kept_agents_on_change()

    @staticmethod
    def _forget_kept_agents_on_change() -> None:
        """What agents/cache.py keeps is dropped when this process changes what it holds."""
        from django.db.models.signals import post_delete, post_save

        from agents import cache
        from agents.models import ABTest, Agent, AgentIntent, AgentVersion

        def of_organisation(sender: type, instance: Agent | ABTest, **kwargs: object) -> None:
            cache.forget(instance.organisation_id)

        def of_some_agent(sender: type, **kwargs: object) -> None:
            cache.forget()  # an intent or a version: rare enough to drop every organisation's

        for signal in (post_save, post_delete):
            for owned in (Agent, ABTest):
                signal.connect(of_organisation, sender=owned, weak=False)
            for part in (AgentIntent, AgentVersion):
                signal.connect(of_some_agent, sender=part, weak=False)
