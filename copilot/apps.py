from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CopilotConfig(AppConfig):
    """The chat and the turn: conversations, messages, turns, their event log, agent runs."""

    name = "copilot"
    verbose_name = _("Copilot")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Models (and what imports them) may only be imported once the apps are loaded.
        from django.db.models.signals import post_delete, post_save

        from agents.models import Agent, AgentIntent
        from approvals.signals import action_changed
        from business.models import Customer, Technician
        from copilot.receivers import on_action_changed
        from copilot.router_cache import names_changed, registry_changed

        def agent_changed(sender: type, instance: Agent, **kwargs: object) -> None:
            # The router and the orchestrator's tools of this process follow the registry at once.
            registry_changed(instance.organisation_id)

        def intent_changed(sender: type, instance: AgentIntent, **kwargs: object) -> None:
            agent = Agent.objects.filter(pk=instance.agent_id).values("organisation_id").first()
            registry_changed(agent["organisation_id"] if agent else None)

        def record_changed(sender: type, instance: Customer | Technician, **kwargs: object) -> None:
            # The names the NLU snaps to (router_cache.vocabulary_for) follow at once here.
            names_changed(instance.organisation_id)

        for signal in (post_save, post_delete):
            signal.connect(agent_changed, sender=Agent, weak=False)
            signal.connect(intent_changed, sender=AgentIntent, weak=False)
            signal.connect(record_changed, sender=Customer, weak=False)
            signal.connect(record_changed, sender=Technician, weak=False)
        # A decision on a held action resumes the turn that asked for it (copilot/receivers.py).
        action_changed.connect(on_action_changed, dispatch_uid="copilot.on_action_changed")
