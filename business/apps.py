from __future__ import annotations

from django.apps import AppConfig


class BusinessConfig(AppConfig):
    name = "business"
    default_auto_field = "django.db.models.BigAutoField"
