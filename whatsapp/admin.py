"""Admin for the WhatsApp channel: the organisation's account (secrets write-only), its message
templates (status from Meta's webhooks; the variables an admin says), its alerts (mark seen), the
outbox (send again), received media, and refused webhook messages."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from business.admin import OrgAdminAccess, OrgScopedAdmin, TenantModelForm
from whatsapp.models import (
    IncomingMedia,
    OutgoingMessage,
    WhatsAppAccount,
    WhatsAppAlert,
    WhatsAppRejection,
    WhatsAppTemplate,
)
from whatsapp.outbox import outgoing_resend

_SECRETS = {
    "phone_number_id": _("Phone-number id"),
    "app_secret": _("App secret"),
    "verify_token": _("Webhook verify token"),
    "access_token": _("Access token"),
    "business_account_id": _("WhatsApp Business Account id"),
}


def _secret_field(label: Any) -> forms.CharField:
    return forms.CharField(
        label=label, required=False, strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text=_("Type a new value to replace the stored one; leave blank to keep it."),
    )  # fmt: skip


class WhatsAppAccountForm(TenantModelForm):
    """Every identifier and secret is write-only: typed to replace, never shown back."""

    phone_number_id = _secret_field(_SECRETS["phone_number_id"])
    app_secret = _secret_field(_SECRETS["app_secret"])
    verify_token = _secret_field(_SECRETS["verify_token"])
    access_token = _secret_field(_SECRETS["access_token"])
    business_account_id = _secret_field(_SECRETS["business_account_id"])

    class Meta:
        model = WhatsAppAccount
        fields = ("organisation", "active", "template_name", "template_language", "welcome")

    def clean_phone_number_id(self) -> str:
        """A number is one account's: one in use elsewhere is refused here, not by the database
        (a 500) — and without saying whose it is."""
        typed: str = self.cleaned_data.get("phone_number_id") or ""
        if typed:
            probe = WhatsAppAccount()
            probe.phone_number_id = typed
            taken = WhatsAppAccount.objects.filter(phone_number_digest=probe.phone_number_digest)
            if taken.exclude(pk=self.instance.pk).exists():
                raise forms.ValidationError(
                    _("This phone-number id is already connected to another account."),
                    code="taken",
                )
        return typed

    def save(self, commit: bool = True) -> WhatsAppAccount:
        instance: WhatsAppAccount = super().save(commit=False)
        for name in _SECRETS:
            typed = self.cleaned_data.get(name) or ""
            if typed:
                setattr(instance, name, typed)
        if commit:
            instance.save()
        return instance


def _set(value: str) -> str:
    return str(_("set") if value else _("not set"))


@admin.register(WhatsAppAccount)
class WhatsAppAccountAdmin(OrgAdminAccess, OrgScopedAdmin):
    form = WhatsAppAccountForm
    list_display = ("organisation", "active", "number_status", "secret_status", "template_name")
    readonly_fields = (
        "number_status", "secret_status", "token_status", "access_status", "business_status",
    )  # fmt: skip

    @admin.display(description=_("Phone-number id"))
    def number_status(self, obj: WhatsAppAccount) -> str:
        return _set(obj.phone_number_id_encrypted)

    @admin.display(description=_("App secret"))
    def secret_status(self, obj: WhatsAppAccount) -> str:
        return _set(obj.app_secret_encrypted)

    @admin.display(description=_("Webhook verify token"))
    def token_status(self, obj: WhatsAppAccount) -> str:
        return _set(obj.verify_token_encrypted)

    @admin.display(description=_("Access token"))
    def access_status(self, obj: WhatsAppAccount) -> str:
        return _set(obj.access_token_encrypted)

    @admin.display(description=_("WhatsApp Business Account id"))
    def business_status(self, obj: WhatsAppAccount) -> str:
        return _set(obj.business_account_id_encrypted)


@admin.register(WhatsAppTemplate)
class WhatsAppTemplateAdmin(OrgScopedAdmin):
    """The organisation's templates: name, language, category and variables as registered with
    Meta; the status, quality and reason follow Meta's webhooks (read-only here)."""

    list_display = ("name", "language", "organisation", "category", "status", "quality",
                    "variables", "updated_at")  # fmt: skip
    list_filter = ("organisation", "status", "category", "language")
    search_fields = ("name",)
    readonly_fields = ("status", "quality", "reason", "template_id", "updated_at")
    fields = ("organisation", "name", "language", "category", "variables", "named",
              *readonly_fields)  # fmt: skip


@admin.register(WhatsAppAlert)
class WhatsAppAlertAdmin(OrgScopedAdmin):
    """What Meta said about the account or a template that needs the admins: a restriction, a
    ban, a template paused. Read-only; marked seen once dealt with."""

    list_display = ("received_at", "organisation", "kind", "event", "subject", "detail", "seen_at")
    list_filter = ("organisation", "kind", "event")
    readonly_fields = ("organisation", "kind", "event", "subject", "detail", "received_at",
                       "seen_at")  # fmt: skip
    fields = readonly_fields
    actions = ("mark_seen",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description=_("Mark as seen"))
    def mark_seen(self, request: HttpRequest, queryset: QuerySet[WhatsAppAlert]) -> None:
        queryset.filter(seen_at__isnull=True).update(seen_at=timezone.now())


@admin.register(OutgoingMessage)
class OutgoingMessageAdmin(OrgScopedAdmin):
    """The outbox as operators see it: what was sent, what is waiting, what failed and why."""

    list_display = (
        "id", "organisation", "conversation", "to", "status", "template", "attempts",
        "next_attempt_at", "last_error", "updated_at",
    )  # fmt: skip
    list_filter = ("organisation", "status")
    search_fields = ("to", "provider_message_id", "text")
    actions = ("send_again",)
    readonly_fields = (
        "organisation", "conversation", "message", "to", "text", "template", "status",
        "attempts", "next_attempt_at", "last_error", "provider_message_id", "created_at",
        "updated_at",
    )  # fmt: skip

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description=_("Send the failed ones again"))
    def send_again(self, request: HttpRequest, queryset: QuerySet[OutgoingMessage]) -> None:
        queued = 0
        for organisation_id in set(queryset.values_list("organisation_id", flat=True)):
            ids = list(
                queryset.filter(organisation_id=organisation_id).values_list("pk", flat=True)
            )
            queued += outgoing_resend(organisation_id=organisation_id, ids=ids)
        self.message_user(
            request, gettext("%(count)d failed messages queued again.") % {"count": queued}
        )


@admin.register(IncomingMedia)
class IncomingMediaAdmin(OrgScopedAdmin):
    """Photos, voice notes and documents customers sent: what became of each (read, kept, refused
    and why), what a photo showed and where it was noted. Read-only; the file opens through the
    tenancy-checked view."""

    list_display = (
        "id", "organisation", "conversation", "kind", "status", "mime_type", "size", "customer",
        "equipment", "job", "created_at",
    )  # fmt: skip
    list_filter = ("organisation", "kind", "status")
    search_fields = ("wa_message_id", "sender", "transcript", "caption")
    readonly_fields = (
        "organisation", "conversation", "message", "wa_message_id", "media_id", "kind", "sender",
        "caption", "open_file", "mime_type", "size", "sha256", "status", "error", "extraction",
        "transcript", "customer", "equipment", "job", "meta", "created_at", "updated_at",
    )  # fmt: skip
    fields = readonly_fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description=_("file"))
    def open_file(self, obj: IncomingMedia) -> str:
        if not obj.file:
            return "—"
        url = reverse("whatsapp:media", args=[obj.pk])
        return format_html('<a href="{}" target="_blank" rel="noopener">{}</a>', url, _("open"))


@admin.register(WhatsAppRejection)
class WhatsAppRejectionAdmin(OrgScopedAdmin):
    """Messages of signed webhook deliveries that were not stored: which field, why, and the
    value (escaped). Read-only: a record of what arrived."""

    list_display = ("received_at", "organisation", "message_id", "field", "reason", "excerpt")
    list_filter = ("organisation", "reason", "field")
    search_fields = ("message_id", "field")
    readonly_fields = ("organisation", "received_at", "message_id", "field", "reason", "excerpt")
    fields = readonly_fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
