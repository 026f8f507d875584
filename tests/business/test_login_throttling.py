"""Login throttling (django-axes): failures counted per username and IP together; a locked pair
gets the login page saying so (429), other users and other addresses sign in as usual, and an
admin unlocks it from the admin."""

from __future__ import annotations

from typing import Any

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from tests.conftest import Cast

pytestmark = pytest.mark.django_db

PASSWORD = "capataz-test-pw"  # tests/factories.make_user
EN = {"HTTP_ACCEPT_LANGUAGE": "en"}


def _login(client: Client, username: str, password: str, ip: str = "10.0.0.1", **extra: Any) -> Any:
    return client.post(
        reverse("login"), {"username": username, "password": password}, REMOTE_ADDR=ip, **extra
    )


def _fail(client: Client, username: str, times: int, ip: str = "10.0.0.1") -> None:
    for _ in range(times):
        assert _login(client, username, "wrong-password", ip).status_code in (200, 429)


def test_thirty_wrong_passwords_then_the_right_one_is_refused(cast: Cast) -> None:
    client = Client()
    _fail(client, "operadora", 30)

    response = _login(client, "operadora", PASSWORD, **EN)

    assert response.status_code == 429
    page = response.content.decode()
    assert 'data-testid="locked-out"' in page
    assert "Too many failed sign-in attempts" in page and "15 minutes" in page
    assert "_auth_user_id" not in client.session


def test_the_lockout_message_is_translated(cast: Cast) -> None:
    client = Client()
    _fail(client, "operadora", 5)

    response = _login(client, "operadora", PASSWORD, HTTP_ACCEPT_LANGUAGE="es-ar")

    assert response.status_code == 429
    assert "Probá de nuevo en 15 minutos" in response.content.decode()


def test_the_limit_is_reached_on_the_fifth_failure_not_before(cast: Cast) -> None:
    client = Client()
    _fail(client, "operadora", 4)
    assert _login(client, "operadora", PASSWORD).status_code == 302


def test_another_user_and_another_address_are_not_affected(cast: Cast) -> None:
    _fail(Client(), "operadora", 30, ip="10.0.0.1")

    same_ip_other_user = _login(Client(), "gerente", PASSWORD, ip="10.0.0.1")
    same_user_other_ip = _login(Client(), "operadora", PASSWORD, ip="10.0.0.2")

    assert same_ip_other_user.status_code == 302
    assert same_user_other_ip.status_code == 302
    assert _login(Client(), "operadora", PASSWORD, ip="10.0.0.1").status_code == 429


def test_an_admin_unlocks_a_locked_user_from_the_admin(cast: Cast) -> None:
    _fail(Client(), "operadora", 30)
    locked = AccessAttempt.objects.get(username="operadora", ip_address="10.0.0.1")
    superuser = get_user_model().objects.create_superuser("root", password="root-pw")
    admin = Client()
    admin.force_login(superuser)

    listed = admin.get(reverse("admin:axes_accessattempt_changelist"))
    unlocked = admin.post(
        reverse("admin:axes_accessattempt_changelist"),
        {"action": "delete_selected", "_selected_action": [locked.pk], "post": "yes"},
    )

    assert listed.status_code == 200 and "operadora" in listed.content.decode()
    assert unlocked.status_code == 302
    assert not AccessAttempt.objects.filter(username="operadora").exists()
    assert _login(Client(), "operadora", PASSWORD).status_code == 302
