"""The cast every test can use: one organisation with an operator, a manager and an admin, and an
outsider who belongs to another organisation and must see nothing of the first."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from business.models import Organisation
from tests import factories


@dataclass
class Cast:
    org: Organisation
    operator: Any
    manager: Any
    admin: Any
    other_org: Organisation
    outsider: Any


@pytest.fixture
def cast(db: None) -> Cast:
    org = factories.make_org("Clima Sur", slug="clima-sur")
    other = factories.make_org("Frío Norte", slug="frio-norte")
    return Cast(
        org=org,
        operator=factories.make_user(org, "operator", "operadora"),
        manager=factories.make_user(org, "manager", "gerente"),
        admin=factories.make_user(org, "admin", "admin"),
        other_org=other,
        outsider=factories.make_user(other, "admin", "intruso"),
    )


@pytest.fixture
def org(cast: Cast) -> Organisation:
    return cast.org


@pytest.fixture(autouse=True)
def _fast_password_hasher(settings: Any) -> None:
    # The cast creates several users per test; the real hasher would dominate the suite's time.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _default_language() -> Iterator[None]:
    # A test that switches the UI language (the client's LocaleMiddleware does) must not leak it
    # into the next test: every test starts and ends in the default language.
    from django.conf import settings as django_settings
    from django.utils import translation

    translation.activate(django_settings.LANGUAGE_CODE)
    yield
    translation.activate(django_settings.LANGUAGE_CODE)
