"""The branded error pages (templates/403.html, 404.html, 500.html), in es-AR and English; 500
renders with no request context at all, as Django's server_error renders it."""

from __future__ import annotations

import pytest
from django.template import loader
from django.test import Client, RequestFactory
from django.urls import reverse
from django.utils import translation
from django.views.defaults import server_error

from tests.conftest import Cast

pytestmark = pytest.mark.django_db

ES = {"HTTP_ACCEPT_LANGUAGE": "es-ar"}
EN = {"HTTP_ACCEPT_LANGUAGE": "en"}


@pytest.mark.parametrize(
    ("headers", "expected"),
    [(ES, "No encontramos esta página"), (EN, "We could not find this page")],
)
def test_a_missing_page_is_the_branded_404(
    client: Client, headers: dict[str, str], expected: str
) -> None:
    response = client.get("/no-such-page/", **headers)  # pytest-django runs with DEBUG=False
    page = response.content.decode()
    assert response.status_code == 404
    assert 'data-testid="error-page"' in page and "capataz.css" in page
    assert expected in page


@pytest.mark.parametrize(
    ("headers", "expected"),
    [(ES, "No tenés permiso para hacer esto"), (EN, "You are not allowed to do this")],
)
def test_a_forbidden_page_is_the_branded_403(
    client: Client, cast: Cast, headers: dict[str, str], expected: str
) -> None:
    client.force_login(cast.operator)  # the approvals queue is for managers
    response = client.get(reverse("approvals"), **headers)
    page = response.content.decode()
    assert response.status_code == 403
    assert 'data-testid="error-page"' in page
    assert expected in page


@pytest.mark.parametrize(
    ("language", "expected"),
    [("es-ar", "Probá de nuevo en unos minutos"), ("en", "Try again in a few minutes")],
)
def test_the_500_page_renders_without_a_request_context(language: str, expected: str) -> None:
    with translation.override(language):
        bare = loader.get_template("500.html").render()
        response = server_error(RequestFactory().get("/"))
    assert expected in bare
    assert 'data-testid="error-page"' in bare
    assert response.status_code == 500 and expected in response.content.decode()
