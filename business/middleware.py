from __future__ import annotations

from collections.abc import Callable
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.translation import gettext as _

from business.hygiene import text_problem
from business.models import Organisation
from business.scheduling import org_tz
from business.selectors import membership_for_user


class OrganisationMiddleware:
    """Attach the user's current membership (and so organisation) to the request, and show its
    times in the organisation's timezone (issue 28.1: templates, forms and the admin convert to
    the active zone; the server's is the default for anyone without one).

    A user in several organisations picks one with `?org=<slug>`-style switching stored in the
    session; otherwise the first membership is used.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        membership = None
        if request.user.is_authenticated:
            membership = membership_for_user(request.user, request.session.get("org_slug"))
        request.membership = membership  # type: ignore[attr-defined]
        request.organisation = membership.organisation if membership else None  # type: ignore[attr-defined]
        zone = _zone(request.organisation) if membership else None  # type: ignore[attr-defined]
        with timezone.override(zone):
            return self.get_response(request)


def _zone(organisation: Organisation) -> ZoneInfo | None:
    """The organisation's zone (`org_tz`); an unknown name leaves the server's (never an error
    page)."""
    try:
        return org_tz(organisation)
    except (ZoneInfoNotFoundError, ValueError):
        return None


class QueryHygieneMiddleware:
    """A query parameter the database cannot take (a NUL, which PostgreSQL refuses in any text,
    or a lone surrogate) is dropped before a view or the admin reads it, and the page says so:
    a search or a filter never fails deep inside a query."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        bad = [
            key
            for key, values in request.GET.lists()
            if text_problem(key) or any(text_problem(value) for value in values)
        ]
        if bad:
            kept = request.GET.copy()
            for key in bad:
                del kept[key]
            kept._mutable = False
            request.GET = kept  # type: ignore[assignment]  # immutable again, as Django's
            message = _("A search or filter had characters that cannot be searched for: ignored.")
            messages.warning(request, message, fail_silently=True)
        return self.get_response(request)
