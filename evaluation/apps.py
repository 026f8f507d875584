from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class EvaluationConfig(AppConfig):
    name = "evaluation"
    verbose_name = _("Evaluation")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_save

        from business.models import Organisation
        from evaluation.receivers import on_organisation_saved

        post_save.connect(
            on_organisation_saved, sender=Organisation, dispatch_uid="evaluation.golden.org"
        )

        from evaluation.agent_metrics import register_misroute_source
        from evaluation.feedback import feedback_misroutes

        register_misroute_source(feedback_misroutes)
