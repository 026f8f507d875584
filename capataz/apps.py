from __future__ import annotations

from django.apps import AppConfig, apps


class CapatazConfig(AppConfig):
    """The project itself: settings, ASGI, Celery, URLs, the organisation's set-up and the demo."""

    name = "capataz"
    verbose_name = "Capataz"

    def ready(self) -> None:
        # The schedules module imports django-celery-beat's models: only once the apps are loaded.
        from django.db.models.signals import post_migrate

        from capataz import library_words
        from capataz.schedules import install

        library_words.adopt()

        # Django sends post_migrate only to apps with a models module, and this one has none:
        # the entries are installed when django-celery-beat's app (whose tables they live in)
        # gets it, once per `migrate`.
        post_migrate.connect(
            install,
            sender=apps.get_app_config("django_celery_beat"),
            dispatch_uid="capataz.schedules.install",
        )
