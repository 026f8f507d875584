"""Admin for tenancy and records: superusers see everything; other staff their organisations.

`OrgScopedAdmin` is the one tenancy chokepoint of every admin page of tenant data (the other apps'
admins subclass it): the rows, the choices of every related field (autocomplete included), the
list filters and the search are the user's organisations'; a new row's organisation comes from
the user, never from the form, and no row moves to another organisation. The models' `clean()`
refuses a record pointing at another organisation's rows, whoever fills the form.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django import forms
from django.contrib import admin
from django.contrib.admin.utils import get_fields_from_path
from django.contrib.admin.widgets import AutocompleteSelect, AutocompleteSelectMultiple
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import connection
from django.db.models import Model, QuerySet
from django.http import HttpRequest
from django.template.loader import render_to_string
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext_lazy as _

from business import models as m
from business.hygiene import value_problem
from business.models import Membership, Organisation, Role, has_organisation

# --- access: whose rows a staff user may see and pick --------------------------------------------


def admin_organisation_ids(request: HttpRequest) -> set[int] | None:
    """The organisations the user administers; None means all of them (a superuser)."""
    user = request.user
    if user.is_superuser:
        return None
    if not (user.is_active and user.is_staff):
        return set()
    memberships = Membership.objects.filter(user=user, role=Role.ADMIN)
    return set(memberships.values_list("organisation_id", flat=True))


def registry_name(kind: str, code: str, organisation_id: int | None = None) -> SafeString:
    """An agent's, intent's, tool's or tool category's code, or a stored error, as people name
    it, in the reader's language, the code as the title (agents/templatetags/registry_tags.py,
    through a template: the registry is a floor above the records)."""
    context = {"kind": kind, "code": code, "organisation_id": organisation_id}
    return mark_safe(render_to_string("admin/_registry_name.html", context).strip())  # noqa: S308


class RegistryCodesAdmin:
    """Rows that keep the registry's codes (an agent run, a held action): each shown as people
    name it, read-only; `shown_fields` puts them in place of the model's code fields."""

    CODES: ClassVar[dict[str, str]] = {
        "agent": "agent_shown", "intent": "intent_shown", "tool": "tool_shown",
        "category": "category_shown", "error": "error_shown",
    }  # fmt: skip

    def shown_fields(self, model: type[Model]) -> list[str]:
        return [self.CODES.get(field.name, field.name) for field in model._meta.fields]

    @admin.display(description=_("agent"), ordering="agent")
    def agent_shown(self, row: Any) -> SafeString:
        return registry_name("agent", row.agent, row.organisation_id)

    @admin.display(description=_("intent"), ordering="intent")
    def intent_shown(self, row: Any) -> SafeString:
        return registry_name("intent", row.intent)

    @admin.display(description=_("tool"), ordering="tool")
    def tool_shown(self, row: Any) -> SafeString:
        return registry_name("tool", row.tool)

    @admin.display(description=_("category"), ordering="category")
    def category_shown(self, row: Any) -> SafeString:
        return registry_name("category", row.category)

    @admin.display(description=_("error"), ordering="error")
    def error_shown(self, row: Any) -> SafeString:
        return registry_name("error", row.error)


def can_administer(request: HttpRequest, organisation_id: int | None = None) -> bool:
    """Whether the user administers that organisation (any of theirs when None; templates,
    which belong to no organisation, only superusers)."""
    ids = admin_organisation_ids(request)
    if ids is None:
        return True
    # Templates (organisation None) belong to nobody but the superusers.
    return bool(ids) if organisation_id is None else organisation_id in ids


def organisation_for_new(request: HttpRequest) -> Organisation | None:
    """Where a staff user's new rows go: the organisation they are working in (the app's
    switcher) when they administer it, else the first one they do. None for a superuser, who
    picks one in the form."""
    ids = admin_organisation_ids(request)
    if not ids:
        return None
    current = getattr(request, "organisation", None)
    return Organisation.objects.get(pk=current.pk if current and current.pk in ids else min(ids))


def scope_choices(queryset: QuerySet[Any], ids: set[int] | None) -> QuerySet[Any]:
    """The rows of `queryset` a user of the organisations `ids` may see or pick (all for None):
    those organisations, their members, their tenant rows (or their rows' children)."""
    if ids is None:
        return queryset
    model = queryset.model
    if model is Organisation:
        return queryset.filter(pk__in=ids)
    if model is get_user_model():
        members = Membership.objects.filter(organisation_id__in=ids).values("user_id")
        return queryset.filter(pk__in=members)
    if has_organisation(model):
        return queryset.filter(organisation_id__in=ids)
    for field in model._meta.concrete_fields:
        related = field.related_model
        if related is not None and has_organisation(related):
            return queryset.filter(**{f"{field.name}__organisation_id__in": ids})
    return queryset  # rows every organisation shares (model prices)


def is_key(field: Any, value: Any) -> bool:
    """Whether `value` can be looked up as `field` (a key column, or a relation's target): "abc",
    a NUL or a number past the column's range cannot, and asking the database raises (a 500)."""
    target = getattr(field, "target_field", field)
    try:
        python = target.to_python(value)
    except ValidationError:
        return False
    if isinstance(python, int):
        low, high = connection.ops.integer_field_range(target.get_internal_type())
        return (low is None or python >= low) and (high is None or python <= high)
    return True


def _key_field(field: forms.ModelChoiceField) -> Any:  # type: ignore[type-arg]
    opts = field.queryset.model._meta  # type: ignore[union-attr]
    return opts.get_field(field.to_field_name) if field.to_field_name else opts.pk


class KeyChoiceField(forms.ModelChoiceField):  # type: ignore[type-arg]
    """A related row picked by key; a value that is no key is "not one of the choices"."""

    def to_python(self, value: Any) -> Any:
        if value not in self.empty_values and not is_key(_key_field(self), value):
            raise ValidationError(self.error_messages["invalid_choice"], code="invalid_choice")
        return super().to_python(value)


class KeysChoiceField(forms.ModelMultipleChoiceField):  # type: ignore[type-arg]
    def _check_values(self, value: Any) -> QuerySet[Any]:
        for pk in value if isinstance(value, list | tuple) else []:
            if not is_key(_key_field(self), pk):
                raise ValidationError(
                    self.error_messages["invalid_pk_value"], code="invalid_pk_value",
                    params={"pk": pk},
                )  # fmt: skip
        return super()._check_values(value)  # type: ignore[misc]


class KeyAutocompleteSelect(AutocompleteSelect):
    """The autocomplete shows the typed value back by querying it: values that are no key are
    left out (the field's own error says why), so a bad value re-renders instead of a 500."""

    def optgroups(self, name: str, value: Any, attr: Any = None) -> Any:
        return super().optgroups(name, [v for v in value if is_key(self.field, v)], attr)


class KeysAutocompleteSelect(AutocompleteSelectMultiple):
    def optgroups(self, name: str, value: Any, attr: Any = None) -> Any:
        return super().optgroups(name, [v for v in value if is_key(self.field, v)], attr)


class ScopedChoices:
    """Every foreign-key and many-to-many choice scoped to the user's organisations (an admin's
    forms and its inlines; autocomplete and raw-id fields validate against the same queryset),
    and a value that is no key at all refused as a form error."""

    admin_site: admin.AdminSite  # the ModelAdmin's, which this is mixed into

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        kwargs.setdefault("form_class", KeyChoiceField)
        if "widget" not in kwargs and db_field.name in self.get_autocomplete_fields(request):  # type: ignore[attr-defined]
            kwargs["widget"] = KeyAutocompleteSelect(
                db_field,
                self.admin_site,
                using=kwargs.get("using"),
            )
        formfield = super().formfield_for_foreignkey(db_field, request, **kwargs)  # type: ignore[misc]
        return _scoped_formfield(formfield, request)

    def formfield_for_manytomany(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        kwargs.setdefault("form_class", KeysChoiceField)
        if "widget" not in kwargs and db_field.name in self.get_autocomplete_fields(request):  # type: ignore[attr-defined]
            kwargs["widget"] = KeysAutocompleteSelect(
                db_field,
                self.admin_site,
                using=kwargs.get("using"),
            )
        formfield = super().formfield_for_manytomany(db_field, request, **kwargs)  # type: ignore[misc]
        return _scoped_formfield(formfield, request)


def _scoped_formfield(formfield: Any, request: HttpRequest) -> Any:
    if isinstance(formfield, forms.ModelChoiceField) and formfield.queryset is not None:
        formfield.queryset = scope_choices(formfield.queryset, admin_organisation_ids(request))
    return formfield


class OrgAdminAccess:
    """Permissions by organisation membership instead of Django's per-model permissions."""

    def organisation_id_of(self, obj: Any) -> int | None:
        """The organisation a row belongs to (a row that hangs off another one overrides this)."""
        return getattr(obj, "organisation_id", None)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return can_administer(request)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is None:
            return can_administer(request)
        ids = admin_organisation_ids(request)
        return ids is None or self.organisation_id_of(obj) in ids

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_view_permission(request, obj)


# --- list filters ------------------------------------------------------------------------------


class OrganisationFilter(admin.SimpleListFilter):
    """Lists only the organisations the user administers (the stock filter would list all)."""

    title = _("organisation")
    parameter_name = "organisation"
    lookup = "organisation_id"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        ids = admin_organisation_ids(request)
        organisations = scope_choices(Organisation.objects.order_by("name"), ids)
        choices = [(str(org.pk), org.name) for org in organisations]
        if ids is None:
            choices.append(("template", str(_("— default template —"))))
        return choices

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if value == "template":
            return queryset.filter(**{f"{self.lookup}__isnull": True})
        if value and value.isdigit():
            return queryset.filter(**{self.lookup: int(value)})
        return queryset


class ScopedAllValuesFilter(admin.AllValuesFieldListFilter):
    """The values found in the rows the user sees (the stock filter, across a relation, reads
    every row of the related model, other organisations' too)."""

    def __init__(self, field: Any, request: HttpRequest, params: Any, model: Any,
                 model_admin: Any, field_path: str) -> None:  # fmt: skip
        super().__init__(field, request, params, model, model_admin, field_path)
        rows = model_admin.get_queryset(request).distinct().order_by(field_path)
        self.lookup_choices = rows.values_list(field_path, flat=True)


def _scoped_list_filter(model: type[Model], item: Any) -> Any:
    """A list filter named by a field path, made to offer only the rows the user can see."""
    if not isinstance(item, str):
        return item  # a filter class already says what it lists
    field = get_fields_from_path(model, item)[-1]
    if field.is_relation:
        return (item, admin.RelatedOnlyFieldListFilter)
    return (item, ScopedAllValuesFilter) if "__" in item else item


# --- the chokepoint ----------------------------------------------------------------------------


class TenantModelForm(forms.ModelForm):  # type: ignore[type-arg]
    """An admin form of tenant data. `preset_organisation` (set by the admin for staff who are
    not superusers) is the new row's organisation, fixed before any validation so the model's
    checks — same-organisation relations, uniqueness per organisation — see it."""

    preset_organisation: ClassVar[Organisation | None] = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("instance") is None and self.preset_organisation is not None:
            kwargs["instance"] = self._meta.model(organisation=self.preset_organisation)
        super().__init__(*args, **kwargs)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        for name, value in list(cleaned.items()):
            if value_problem(value) is not None:
                message = _("This has a character that cannot be stored (a NUL or a broken one).")
                self.add_error(name, ValidationError(message, code="unstorable"))
        return cleaned

    def add_error(self, field: str | None, error: Any) -> None:
        # A model's clean() may name a field this form does not show (read-only here): its
        # message goes on top of the form instead of raising ValueError.
        if field is None and hasattr(error, "error_dict"):
            mapped: dict[str, list[ValidationError]] = {}
            for name, errors in error.error_dict.items():
                key = name if name in self.fields else NON_FIELD_ERRORS
                mapped.setdefault(key, []).extend(errors)
            error = ValidationError(mapped)  # type: ignore[arg-type]
        super().add_error(field, error)


class OrgScopedAdmin(ScopedChoices, admin.ModelAdmin):  # type: ignore[type-arg]
    """Rows of the organisations the staff user administers (all for a superuser)."""

    form = TenantModelForm
    list_filter: ClassVar[Any] = ("organisation",)
    organisation_lookup = "organisation"  # from a row to its organisation

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset = super().get_queryset(request)
        ids = admin_organisation_ids(request)
        return (
            queryset if ids is None else queryset.filter(**{f"{self.organisation_lookup}__in": ids})
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return super().has_add_permission(request) and can_administer(request)

    def get_list_filter(self, request: HttpRequest) -> Any:
        filters = super().get_list_filter(request)
        if admin_organisation_ids(request) is None:
            return filters
        return [_scoped_list_filter(self.model, item) for item in filters]

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False,
                 **kwargs: Any) -> Any:  # fmt: skip
        form = super().get_form(request, obj, change=change, **kwargs)
        preset = organisation_for_new(request) if obj is None else None
        if preset is not None and issubclass(form, TenantModelForm):
            form.preset_organisation = preset  # a fresh class per call: nothing shared
        field = form.base_fields.get("organisation")
        if field is not None and (obj is not None or preset is not None):
            field.disabled = True  # set from the user on add; never moved on change
        return form

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        preset = getattr(form, "preset_organisation", None)
        if not change and preset is not None:
            obj.organisation = preset  # whatever the request carried
        super().save_model(request, obj, form, change)


class MemberUserAdmin(ScopedChoices, UserAdmin):  # type: ignore[type-arg]
    """Staff who are not superusers see the members of their organisations only; a user they
    add becomes an operator of theirs; staff status, superuser status and permissions stay the
    superusers' to give."""

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return scope_choices(super().get_queryset(request), admin_organisation_ids(request))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return super().has_add_permission(request) and can_administer(request)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = super().get_readonly_fields(request, obj)
        if request.user.is_superuser:
            return fields
        return (*fields, "is_staff", "is_superuser", "groups", "user_permissions")

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        organisation = organisation_for_new(request)
        if not change and organisation is not None:
            Membership.objects.create(user=obj, organisation=organisation, role=Role.OPERATOR)


admin.site.unregister(get_user_model())
admin.site.register(get_user_model(), MemberUserAdmin)


# model, list_display, search_fields (plain fields or across a relation: an FK itself cannot be
# searched), list_filter, autocomplete_fields
_RECORDS: tuple[tuple[type[Model], tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...] = (
    (m.Customer, ("name", "kind", "cuit", "phone", "email"),
     ("name", "cuit", "phone", "email"), ("kind",)),
    (m.Technician, ("name", "zone", "skills", "active"), ("name", "zone", "phone"), ("active",)),
    (m.Vehicle, ("plate", "kind", "fuel", "technician", "active"),
     ("plate", "description", "technician__name"), ("technician", "active")),
    (m.Job, ("id", "service", "customer", "technician", "status", "scheduled_start"),
     ("service", "customer__name", "technician__name"), ("status", "technician")),
    (m.Equipment, ("kind", "brand", "customer", "last_service_on", "service_interval_months"),
     ("kind", "brand", "model", "customer__name"), ("skill",)),
    (m.Quote, ("number", "customer", "status", "created_at"),
     ("number", "customer__name"), ("status",)),
    (m.Invoice, ("number", "letter", "customer", "status", "issued_on"),
     ("number", "customer__name"), ("status", "letter")),
    (m.Payment, ("invoice", "amount", "method", "received_on"),
     ("invoice__number", "invoice__customer__name", "reference"), ("method",)),
    (m.EscalationTicket, ("id", "reason", "priority", "status", "customer", "created_at"),
     ("summary", "customer__name"), ("status", "priority", "reason")),
    (m.PriceItem, ("code", "name", "unit_price", "iva_rate"), ("code", "name", "keywords"),
     ("category",)),
    (m.Absence, ("technician", "start_date", "end_date", "reason"),
     ("technician__name", "reason"), ("technician",)),
    (m.CustomerProfile, ("customer", "extracted_at", "updated_at"), ("customer__name",), ()),
)  # fmt: skip


for model, shown, searched, filtered in _RECORDS:
    names = {field.name for field in model._meta.concrete_fields}
    admin.site.register(
        model,
        type(
            f"{model.__name__}Admin",
            (OrgScopedAdmin,),
            {
                "list_display": shown,
                "search_fields": searched,
                "list_filter": ("organisation", *filtered),
                # Thousands of customers: picked by typing, through the scoped customer admin.
                "autocomplete_fields": ("customer",) if "customer" in names else (),
            },
        ),
    )
