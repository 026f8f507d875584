"""Admin for the model seam: each organisation's provider settings (API key write-only), the
price table, and the model calls (read-only)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from business.admin import (
    OrgAdminAccess,
    OrganisationFilter,
    OrgScopedAdmin,
    TenantModelForm,
    can_administer,
)
from llm import pricing
from llm.models import ModelCall, ModelPrice, ProviderSettings


class ProviderSettingsForm(TenantModelForm):
    """The API key is write-only: the page never shows it; typing a value replaces the stored
    key, leaving the field blank keeps it, the checkbox removes it."""

    api_key = forms.CharField(
        label=_("API key"),
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text=_("Type a new key to replace the stored one; leave blank to keep it."),
    )
    clear_api_key = forms.BooleanField(label=_("Remove the stored key"), required=False)

    class Meta:
        model = ProviderSettings
        fields = (
            "organisation",
            "base_url",
            "default_model",
            "timeout_s",
            "max_retries",
            "retry_budget_s",
            "vision_model",
            "transcription_model",
        )

    def save(self, commit: bool = True) -> ProviderSettings:
        instance: ProviderSettings = super().save(commit=False)
        typed = self.cleaned_data.get("api_key") or ""
        if typed:
            instance.api_key = typed
        elif self.cleaned_data.get("clear_api_key"):
            instance.api_key = ""
        if commit:
            instance.save()
        return instance


def _key_status(obj: ProviderSettings | None) -> str:
    return str(_("key set") if obj is not None and obj.has_api_key else _("no key"))


class _OrganisationFilter(OrganisationFilter):
    """Only the organisations the user administers (these rows have no template)."""

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        choices = super().lookups(request, model_admin)
        return [choice for choice in choices if choice[0] != "template"]


@admin.register(ProviderSettings)
class ProviderSettingsAdmin(OrgAdminAccess, OrgScopedAdmin):
    """Organisation admins manage their own organisation's endpoint; no one reads a key back."""

    form = ProviderSettingsForm
    list_display = ("organisation", "base_url", "default_model", "key_status", "updated_at")
    list_filter = (_OrganisationFilter,)
    readonly_fields = ("key_status", "updated_at")
    fields = (
        "organisation",
        "base_url",
        "default_model",
        "key_status",
        "api_key",
        "clear_api_key",
        "timeout_s",
        "max_retries",
        "retry_budget_s",
        "vision_model",
        "transcription_model",
        "updated_at",
    )

    @admin.display(description=_("API key"))
    def key_status(self, obj: ProviderSettings | None) -> str:
        return _key_status(obj)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return (*self.readonly_fields, "organisation") if obj is not None else self.readonly_fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return can_administer(request)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_change_permission(request, obj)


@admin.register(ModelPrice)
class ModelPriceAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Vendor prices (shared by every organisation): USD per million tokens, longest prefix
    wins. Edits apply to calls from then on."""

    list_display = ("model_prefix", "input_per_million", "output_per_million", "updated_at")
    list_editable = ("input_per_million", "output_per_million")
    search_fields = ("model_prefix",)

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        pricing.forget()

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        super().delete_model(request, obj)
        pricing.forget()


@admin.register(ModelCall)
class ModelCallAdmin(OrgAdminAccess, OrgScopedAdmin):
    """Read-only: one row per model call (tokens, cost, timing, the fault when it failed)."""

    list_display = (
        "created_at",
        "organisation",
        "purpose",
        "agent",
        "model",
        "tokens_in",
        "tokens_out",
        "cost",
        "latency_ms",
        "first_token_ms",
        "ok",
        "error_kind",
        "retries",
    )
    list_filter = (_OrganisationFilter, "purpose", "ok", "error_kind", "model")
    search_fields = ("turn_id", "agent", "model")
    readonly_fields = [field.name for field in ModelCall._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_superuser)
