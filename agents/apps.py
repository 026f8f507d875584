from __future__ import annotations

from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "agents"
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
