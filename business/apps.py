from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class BusinessConfig(AppConfig):
    name = "business"
    verbose_name = _("Records")
    default_auto_field = "django.db.models.BigAutoField"
