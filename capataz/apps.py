from __future__ import annotations

from django.apps import AppConfig


class CapatazConfig(AppConfig):
    """The project itself: settings, ASGI, Celery, URLs, the organisation's set-up and the demo."""

    name = "capataz"
    verbose_name = "Capataz"

    def ready(self) -> None:
        # The schedules module imports django-celery-beat's models: only once the apps are loaded.
        from django.db.models.signals import post_migrate

        from capataz.schedules import install

        post_migrate.connect(install, sender=self, dispatch_uid="capataz.schedules.install")
