"""The organisation's own admin page: tenancy, members, the engine — and its set-up.

It sits in the configuration package because creating an organisation installs its agent
registry and the page shows the engine its turns really run on (the model seam): both are
floors below this one, and the records app at the bottom must not reach up to them.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db.models import Model, QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _
from django_celery_beat.admin import PeriodicTaskInline
from django_celery_beat.models import PeriodicTask

from agents.proactive.services import schedules_retime
from agents.services import agents_install_defaults
from business.admin import ScopedChoices, admin_organisation_ids, scope_choices
from business.models import Customer, Membership, Organisation
from capataz.forgetting import customer_forget
from capataz.library_words import permission_label
from llm.provider import effective_engine

# The admin names the product, not the framework ("Administración de Capataz").
admin.site.site_header = _("Capataz administration")
admin.site.site_title = _("Capataz administration")
admin.site.index_title = _("Your organisation's records and settings")


class MembershipInline(ScopedChoices, admin.TabularInline):  # type: ignore[type-arg]
    model = Membership
    extra = 0
    autocomplete_fields = ("user",)


@admin.register(Organisation)
class OrganisationAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("name", "slug", "timezone", "language", "engine", "engine_in_use")
    prepopulated_fields = {"slug": ("name",)}
    inlines = (MembershipInline,)
    readonly_fields = ("engine_in_use",)

    @admin.display(description=_("engine in use"))
    def engine_in_use(self, obj: Organisation) -> str:
        """The engine turns really run: llm and hybrid need an API key (the organisation's
        provider settings or the server's OPENAI_API_KEY); without one it is embedded."""
        if obj.pk is None:
            return "-"
        used = effective_engine(obj)
        label = str(Organisation.Engine(used).label)
        if used != obj.engine:
            return str(_("%(engine)s (no API key is set)") % {"engine": label})
        return label

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return scope_choices(super().get_queryset(request), admin_organisation_ids(request))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.is_superuser)  # an organisation is not its staff's to create

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_superuser)

    def save_model(self, request: HttpRequest, obj: Model, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if not change:
            # A new organisation gets its own copy of the default agent registry.
            agents_install_defaults(organisation=obj)  # type: ignore[arg-type]
        elif "timezone" in form.changed_data:
            # Its proactive schedules run on its clock: they move with it.
            schedules_retime(organisation=obj)  # type: ignore[arg-type]


# --- what belongs to no organisation: the platform's own, for superusers only ---------------


def _superusers_only(model_admin: type[admin.ModelAdmin]) -> type[admin.ModelAdmin]:  # type: ignore[type-arg]
    """Schedules, sign-in attempts and permission groups are the whole installation's: an
    organisation's admin (staff, with model permissions) neither sees nor edits them."""

    class SuperusersOnly(model_admin):  # type: ignore[misc,valid-type]
        def has_module_permission(self, request: HttpRequest) -> bool:
            return bool(request.user.is_active and request.user.is_superuser)

        def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
            return self.has_module_permission(request)

        def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
            return self.has_module_permission(request)

        def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
            return self.has_module_permission(request)

        def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
            return self.has_module_permission(request)

    SuperusersOnly.__name__ = model_admin.__name__
    return SuperusersOnly


class _TaskFilter(admin.AllValuesFieldListFilter):
    """The beat entries by task, titled in the reader's language (django-celery-beat names the
    field "Task Name" without marking it for translation; capataz/library_words.py)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.title = _("task")


class _EntriesOfASchedule(PeriodicTaskInline):
    """The beat entries under a schedule, the task's column titled in the reader's language."""

    fields = readonly_fields = ("name", "task_path", "args", "kwargs")

    @admin.display(description=_("task"))
    def task_path(self, entry: PeriodicTask) -> str:
        return entry.task


def _in_our_words(model_admin: type[admin.ModelAdmin]) -> type[admin.ModelAdmin]:  # type: ignore[type-arg]
    inlines = [_EntriesOfASchedule if i is PeriodicTaskInline else i for i in model_admin.inlines]
    filters = [("task", _TaskFilter) if f == "task" else f for f in model_admin.list_filter]
    words = {"inlines": inlines, "list_filter": filters}
    return type(model_admin.__name__, (model_admin,), words)


class _PermissionsInWords:
    """A group's or a user's permissions listed in the reader's words (capataz/library_words.py)."""

    def formfield_for_manytomany(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        field = super().formfield_for_manytomany(db_field, request, **kwargs)  # type: ignore[misc]
        if field is not None and db_field.related_model is Permission:
            field.label_from_instance = permission_label
        return field


for _with_permissions in (Group, get_user_model()):
    _words = type(admin.site._registry[_with_permissions])
    admin.site.unregister(_with_permissions)
    admin.site.register(_with_permissions, type(_words.__name__, (_PermissionsInWords, _words), {}))

for _model, _model_admin in list(admin.site._registry.items()):
    if (
        _model._meta.app_label in ("django_celery_beat", "axes", "auth")
        and _model is not get_user_model()
    ):
        admin.site.unregister(_model)
        admin.site.register(_model, _superusers_only(_in_our_words(type(_model_admin))))


# --- forgetting a customer: it reaches every floor, so its action is added up here ----------


@admin.action(description=_("Forget the selected customers (personal data everywhere)"))
def forget_customers(
    modeladmin: admin.ModelAdmin,  # type: ignore[type-arg]
    request: HttpRequest,
    queryset: QuerySet[Customer],
) -> None:
    """The right to be forgotten (the queryset is already scoped to the admin's organisations)."""
    actor = request.user if request.user.is_authenticated else None
    for customer in queryset.select_related("organisation"):
        customer_forget(organisation=customer.organisation, customer=customer, actor=actor)


_customer_admin = type(admin.site.get_model_admin(Customer))
admin.site.unregister(Customer)
admin.site.register(
    Customer, type(_customer_admin.__name__, (_customer_admin,), {"actions": (forget_customers,)})
)
