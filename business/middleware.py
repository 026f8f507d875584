from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from business.selectors import membership_for_user


class OrganisationMiddleware:
    """Attach the user's current membership (and so organisation) to the request.

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
        return self.get_response(request)
