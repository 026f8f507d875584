"""The record pages: one flat view per page, reading through org-scoped selectors only.

Lists answer htmx requests with their `rows` partial (filters, search, pagination) and plain
requests with the whole page, so every link and form also works without JavaScript.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ObjectDoesNotExist
from django.core.paginator import Page, Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.cache import patch_vary_headers
from django.utils.translation import gettext, ngettext, pgettext_lazy
from django.views.decorators.http import require_POST
from django_htmx.middleware import HtmxDetails

from business import documents, profiles, selectors
from business.forms import PROFILE_LABELS, CustomerProfileForm, JobFilterForm
from business.models import Customer, Invoice, Membership, Organisation, Quote, Vehicle
from business.roles import can, permission_required

PAGE_SIZE = 25

# Tab labels are plurals ("Pagadas", "Abiertos"): the context keeps them apart from the
# singular status names that share their English words.
INVOICE_STATES = [
    ("", pgettext_lazy("invoices", "All")),
    ("owed", pgettext_lazy("invoices", "With a balance")),
    ("unpaid", pgettext_lazy("invoices", "Unpaid")),
    ("partial", pgettext_lazy("invoices", "Partially paid")),
    ("paid", pgettext_lazy("invoices", "Paid")),
]

TICKET_VIEWS = [
    ("", pgettext_lazy("tickets", "Open")),
    ("resolved", pgettext_lazy("tickets", "Resolved")),
    ("all", pgettext_lazy("tickets", "All")),
]


class OrgRequest(HttpRequest):
    """A request after the middleware: django-htmx details and the user's organisation."""

    htmx: HtmxDetails
    membership: Membership
    organisation: Organisation


def _page(request: HttpRequest, items: Any) -> Page[Any]:
    return Paginator(items, PAGE_SIZE).get_page(request.GET.get("page"))


def _render_rows(request: OrgRequest, template: str, context: dict[str, Any]) -> HttpResponse:
    """The page, or only its `rows` partial for htmx (a history restore needs the whole page)."""
    partial = bool(request.htmx) and not request.htmx.history_restore_request
    response = render(request, f"{template}#rows" if partial else template, context)
    patch_vary_headers(response, ["HX-Request"])
    return response


def _found[T](getter: Callable[[Any, object], T], request: HttpRequest, pk: int) -> T:
    # The selectors raise DoesNotExist for another organisation's id too: both are a 404.
    try:
        return getter(request.user, pk)
    except ObjectDoesNotExist as exc:
        raise Http404 from exc


class LoginView(auth_views.LoginView):
    template_name = "business/login.html"
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        # The demo accounts are a development convenience: never advertise them in production.
        return {**super().get_context_data(**kwargs), "show_demo_logins": settings.DEBUG}


def login_locked_out(
    request: HttpRequest,
    response: HttpResponse | None = None,
    credentials: dict[str, Any] | None = None,
) -> HttpResponse:
    """django-axes' answer to a locked-out username and IP (AXES_LOCKOUT_CALLABLE): the login
    page again, saying why and for how long, with 429. The form is not bound: validating it
    would try the password once more."""
    minutes = settings.LOGIN_LOCKOUT_MINUTES
    if minutes:
        message = ngettext(
            "Too many failed sign-in attempts for this account from this connection. Try again "
            "in %(minutes)s minute or ask an administrator to unlock it.",
            "Too many failed sign-in attempts for this account from this connection. Try again "
            "in %(minutes)s minutes or ask an administrator to unlock it.",
            minutes,
        ) % {"minutes": minutes}
    else:
        message = gettext(
            "Too many failed sign-in attempts for this account from this connection. Ask an "
            "administrator to unlock it."
        )
    username = (credentials or {}).get("username") or request.POST.get("username", "")
    context = {
        "form": AuthenticationForm(request, initial={"username": username}),
        "locked_out_message": message,
        "next": request.POST.get("next", ""),
        "show_demo_logins": settings.DEBUG,
    }
    return render(request, "business/login.html", context, status=429)


def logged_out(request: HttpRequest) -> HttpResponse:
    # Someone still signed in (a bookmark, the back button) belongs on the dashboard.
    if request.user.is_authenticated:
        return redirect("dashboard")
    return render(request, "business/logged_out.html")


@permission_required("view_records")
def dashboard(request: OrgRequest) -> HttpResponse:
    summary = selectors.dashboard_summary(request.organisation)
    return render(request, "business/dashboard.html", {"summary": summary})


@permission_required("view_records")
def jobs(request: OrgRequest) -> HttpResponse:
    org = request.organisation
    form = JobFilterForm(request.GET, organisation=org, today=selectors.org_today(org))
    filters = form.filters()
    found = selectors.filtered_jobs(
        org,
        first=filters.first,
        days=filters.days,
        technician=filters.technician,
        status=filters.status,
    )
    context = {"form": form, "filters": filters, "page": _page(request, found)}
    return _render_rows(request, "business/jobs.html", context)


@permission_required("view_records")
def job_detail(request: OrgRequest, pk: int) -> HttpResponse:
    job = _found(selectors.get_job_for_user, request, pk)
    invoices = selectors.invoices_with_amounts(job.organisation).filter(job=job)
    context = {
        "job": job,
        "events": selectors.job_history(job),
        "invoices": selectors.invoice_rows(invoices),
    }
    return render(request, "business/job_detail.html", context)


@permission_required("view_records")
def customers(request: OrgRequest) -> HttpResponse:
    query = request.GET.get("q", "").strip()[:100]
    found = selectors.search_customers(request.organisation, query)
    context = {"query": query, "page": _page(request, found)}
    return _render_rows(request, "business/customers.html", context)


@permission_required("view_records")
def customer_detail(request: OrgRequest, pk: int) -> HttpResponse:
    customer = _found(selectors.get_customer_for_user, request, pk)
    return _customer_page(request, customer, None)


def _customer_page(
    request: OrgRequest, customer: Customer, form: CustomerProfileForm | None, status: int = 200
) -> HttpResponse:
    learnt = profiles.customer_profile_fields(customer.organisation_id, customer.pk)
    if form is None and can(request.membership, "edit_profiles"):
        form = CustomerProfileForm(initial={name: item["value"] for name, item in learnt.items()})
    context = {
        "file": selectors.customer_file(customer),
        "today": selectors.org_today(customer.organisation),
        "profile": profiles.profile_rows(learnt, PROFILE_LABELS),
        "profile_form": form,
    }
    return render(request, "business/customer_detail.html", context, status=status)


@require_POST
@permission_required("edit_profiles")
def customer_profile(request: OrgRequest, pk: int) -> HttpResponse:
    """A manager corrects what the copilot learnt of the customer."""
    customer = _found(selectors.get_customer_for_user, request, pk)
    form = CustomerProfileForm(request.POST)
    if not form.is_valid():
        return _customer_page(request, customer, form, status=400)
    profiles.customer_profile_edit(
        organisation=request.organisation, customer=customer, values=form.cleaned_data,
        actor=request.user if request.user.is_authenticated else None,
    )  # fmt: skip
    return redirect("customer_detail", pk=customer.pk)


@require_POST
@permission_required("edit_profiles")
def customer_profile_clear(request: OrgRequest, pk: int) -> HttpResponse:
    customer = _found(selectors.get_customer_for_user, request, pk)
    profiles.customer_profile_clear(organisation=request.organisation, customer_id=customer.pk)
    return redirect("customer_detail", pk=customer.pk)


@permission_required("view_records")
def technicians(request: OrgRequest) -> HttpResponse:
    today = selectors.org_today(request.organisation)
    found = selectors.technicians_with_absences(request.organisation, today)
    return render(request, "business/technicians.html", {"technicians": found, "today": today})


@permission_required("view_records")
def vehicles(request: OrgRequest) -> HttpResponse:
    found = selectors.scoped(Vehicle, request.organisation).select_related("technician")
    return render(request, "business/vehicles.html", {"vehicles": found})


@permission_required("view_records")
def invoices(request: OrgRequest) -> HttpResponse:
    state = request.GET.get("state", "")
    state = state if state in dict(INVOICE_STATES) else ""
    rows = selectors.invoice_rows(selectors.invoices_with_amounts(request.organisation), state)
    context = {"state": state, "states": INVOICE_STATES, "page": _page(request, rows)}
    return _render_rows(request, "business/invoices.html", context)


@permission_required("view_records")
def invoice_detail(request: OrgRequest, pk: int) -> HttpResponse:
    invoice = _found(selectors.get_invoice_for_user, request, pk)
    context = {
        "invoice": invoice,
        "row": selectors.invoice_row(invoice),
        "totals": invoice.totals(),
        "payments": invoice.payment_items(),
    }
    return render(request, "business/invoice_detail.html", context)


@permission_required("view_records")
def quotes(request: OrgRequest) -> HttpResponse:
    found = selectors.quotes_with_lines(request.organisation)
    return _render_rows(request, "business/quotes.html", {"page": _page(request, found)})


@permission_required("view_records")
def quote_detail(request: OrgRequest, pk: int) -> HttpResponse:
    quote = _found(selectors.get_quote_for_user, request, pk)
    return render(request, "business/quote_detail.html", {"quote": quote, "totals": quote.totals()})


def _pdf_response(request: OrgRequest, document: Quote | Invoice) -> HttpResponse:
    lang = documents.document_language(request.GET.get("lang"), request.LANGUAGE_CODE)
    response = HttpResponse(
        documents.render_document_pdf(document, lang), content_type="application/pdf"
    )
    filename = documents.document_filename(document)
    response["Content-Disposition"] = f'inline; filename="{filename}"'
    return response


@permission_required("view_records")
def quote_pdf(request: OrgRequest, pk: int) -> HttpResponse:
    return _pdf_response(request, _found(selectors.get_quote_for_user, request, pk))


@permission_required("view_records")
def invoice_pdf(request: OrgRequest, pk: int) -> HttpResponse:
    return _pdf_response(request, _found(selectors.get_invoice_for_user, request, pk))


@permission_required("view_records")
def tickets(request: OrgRequest) -> HttpResponse:
    show = request.GET.get("show", "")
    show = show if show in dict(TICKET_VIEWS) else ""
    found = selectors.tickets_shown(request.organisation, show)
    context = {"show": show, "views": TICKET_VIEWS, "page": _page(request, found)}
    return _render_rows(request, "business/tickets.html", context)
