"""Admin for the chat and its runtime trace (the per-agent execution rows)."""

from __future__ import annotations

from django.contrib import admin

from business.admin import OrgScopedAdmin
from copilot.models import AgentRun, Conversation, Message


class MessageInline(admin.TabularInline):  # type: ignore[type-arg]
    model = Message
    extra = 0
    fields = ("role", "agent", "text", "created_at")
    readonly_fields = fields
    can_delete = False


@admin.register(Conversation)
class ConversationAdmin(OrgScopedAdmin):
    list_display = ("id", "title", "organisation", "user", "channel", "updated_at")
    # The working memory (O9) as the next turn will load it: shown, never edited by hand.
    readonly_fields = ("summary", "state")
    inlines = (MessageInline,)


@admin.register(AgentRun)
class AgentRunAdmin(OrgScopedAdmin):
    list_display = (
        "created_at",
        "agent",
        "intent",
        "confidence",
        "success",
        "yielded",
        "latency_ms",
        "error",
    )
    list_filter = ("organisation", "agent", "success", "yielded")
    readonly_fields = [field.name for field in AgentRun._meta.fields]
