"""Which endpoint an organisation uses (its own key first, then the environment, else none and
the embedded engine), the key encrypted at rest, and never another organisation's settings."""

from __future__ import annotations

from typing import Any

import pytest
from cryptography.fernet import Fernet
from django.db import connection

from common import secrets
from llm.models import ProviderSettings
from llm.provider import effective_engine, provider_for, provider_overridden
from tests.conftest import Cast

pytestmark = pytest.mark.django_db

ORG_KEY = "sk-org-0123456789abcdef"
ENV_KEY = "sk-env-fedcba9876543210"


@pytest.fixture
def environment(settings: Any) -> Any:
    settings.OPENAI_API_KEY = ENV_KEY
    settings.OPENAI_BASE_URL = "http://env.example:8000/v1"
    settings.OPENAI_MODEL = "gpt-4o-mini"
    settings.OPENAI_TIMEOUT = 20.0
    settings.OPENAI_MAX_RETRIES = 2
    settings.OPENAI_RETRY_BUDGET = 10.0
    return settings


@pytest.fixture
def no_environment(settings: Any) -> Any:
    settings.OPENAI_API_KEY = ""
    settings.OPENAI_BASE_URL = ""
    return settings


def _own(cast: Cast, key: str = ORG_KEY, **fields: Any) -> ProviderSettings:
    row = ProviderSettings(organisation=cast.org, **fields)
    row.api_key = key
    row.save()
    return row


def test_the_environment_is_used_when_the_organisation_has_no_settings(
    cast: Cast, environment: Any
) -> None:
    provider = provider_for(cast.org)

    assert provider is not None and provider.source == "environment"
    assert provider.api_key == ENV_KEY and provider.base_url == "http://env.example:8000/v1"
    assert (provider.default_model, provider.timeout_s) == ("gpt-4o-mini", 20.0)
    assert (provider.max_retries, provider.retry_budget_s) == (2, 10.0)
    assert ENV_KEY not in repr(provider)


def test_organisation_settings_with_a_key_win_over_the_environment(
    cast: Cast, environment: Any
) -> None:
    _own(cast, base_url="http://vllm.clima-sur.local:8000/v1/", default_model="qwen2.5-7b")

    provider = provider_for(cast.org)

    assert provider is not None and provider.source == "organisation"
    assert provider.api_key == ORG_KEY
    assert provider.base_url == "http://vllm.clima-sur.local:8000/v1"
    assert provider.default_model == "qwen2.5-7b"
    assert provider.timeout_s == 20.0  # blank: the server's default


def test_settings_without_a_key_never_send_the_environment_key_to_their_url(
    cast: Cast, environment: Any
) -> None:
    _own(cast, key="", base_url="http://attacker.example/v1", default_model="gpt-4.1", timeout_s=5)

    provider = provider_for(cast.org)

    assert provider is not None and provider.source == "environment"
    assert provider.base_url == "http://env.example:8000/v1" and provider.api_key == ENV_KEY
    assert (provider.default_model, provider.timeout_s) == ("gpt-4.1", 5.0)


def test_no_key_anywhere_means_no_provider_and_the_embedded_engine(
    cast: Cast, no_environment: Any
) -> None:
    cast.org.engine = "llm"
    cast.org.save()
    _own(cast, key="", base_url="http://vllm.local/v1")

    assert provider_for(cast.org) is None
    assert effective_engine(cast.org) == "embedded"


def test_overrides_send_a_key_given_with_a_url_there_and_never_the_configured_one(
    cast: Cast, environment: Any
) -> None:
    given = provider_overridden(cast.org, base_url="http://localhost:11434/v1/", api_key="local")
    assert given is not None and given.source == "command line"
    assert (given.base_url, given.api_key) == ("http://localhost:11434/v1", "local")

    with pytest.raises(ValueError, match="API key of your own"):
        provider_overridden(cast.org, base_url="http://attacker.example/v1")
    same = provider_overridden(cast.org, base_url="http://env.example:8000/v1", model="gpt-4.1")
    assert same is not None and (same.api_key, same.default_model) == (ENV_KEY, "gpt-4.1")


@pytest.mark.parametrize("engine", ["llm", "hybrid"])
def test_effective_engine_is_the_organisations_when_a_provider_exists(
    cast: Cast, no_environment: Any, engine: str
) -> None:
    cast.org.engine = engine
    cast.org.save()
    _own(cast)

    assert effective_engine(cast.org) == engine


def test_an_embedded_organisation_stays_embedded_with_a_key(cast: Cast, environment: Any) -> None:
    assert cast.org.engine == "embedded"
    assert effective_engine(cast.org) == "embedded"


def test_another_organisations_settings_are_never_used(
    cast: Cast, no_environment: Any, settings: Any
) -> None:
    foreign = ProviderSettings(organisation=cast.other_org, base_url="http://frio-norte/v1")
    foreign.api_key = "sk-frio-norte"
    foreign.save()

    assert provider_for(cast.org) is None
    settings.OPENAI_API_KEY = ENV_KEY
    provider = provider_for(cast.org)
    assert provider is not None and provider.api_key == ENV_KEY
    assert provider_for(cast.other_org).api_key == "sk-frio-norte"  # type: ignore[union-attr]


def test_the_api_key_is_encrypted_at_rest(cast: Cast) -> None:
    row = _own(cast)

    with connection.cursor() as cursor:
        table = ProviderSettings._meta.db_table
        cursor.execute(f"SELECT * FROM {table} WHERE id = %s", [row.pk])
        stored = " ".join(str(value) for value in cursor.fetchone())
    assert ORG_KEY not in stored and "0123456789abcdef" not in stored
    assert row.api_key_encrypted and row.api_key_encrypted in stored
    assert ProviderSettings.objects.get(pk=row.pk).api_key == ORG_KEY


def test_setting_field_encryption_key_keeps_old_keys_readable(cast: Cast, settings: Any) -> None:
    settings.FIELD_ENCRYPTION_KEY = ""
    row = _own(cast)
    settings.FIELD_ENCRYPTION_KEY = Fernet.generate_key().decode()

    assert ProviderSettings.objects.get(pk=row.pk).api_key == ORG_KEY
    token = secrets.encrypt("sk-new")
    assert secrets.decrypt(token) == "sk-new"
    settings.FIELD_ENCRYPTION_KEY = ""  # a token made with the configured key needs that key
    assert secrets.decrypt(token) == ""


def test_a_key_that_can_no_longer_be_decrypted_leaves_the_organisation_without_one(
    cast: Cast, no_environment: Any, settings: Any
) -> None:
    _own(cast)
    settings.SECRET_KEY = "another-secret-key-entirely-" * 2

    assert provider_for(cast.org) is None


@pytest.fixture
def kept(settings: Any) -> Any:
    from llm import provider

    settings.PROVIDER_CACHE_SECONDS = 60
    provider.forget()
    yield settings
    provider.forget()


def test_the_provider_row_is_kept_between_turns_and_dropped_when_saved_or_deleted(
    cast: Cast, no_environment: Any, kept: Any, django_assert_num_queries: Any
) -> None:
    """Issue 26.5: a turn reads no provider row an earlier turn read; a save or a delete in
    this process is seen at once, an organisation never gets another's row."""
    row = _own(cast, default_model="modelo-a")
    assert provider_for(cast.org).default_model == "modelo-a"  # type: ignore[union-attr]
    with django_assert_num_queries(0):
        assert provider_for(cast.org).default_model == "modelo-a"  # type: ignore[union-attr]

    row.default_model = "modelo-b"
    row.save()
    assert provider_for(cast.org).default_model == "modelo-b"  # type: ignore[union-attr]
    assert provider_for(cast.other_org) is None  # the outsider has no row and no environment

    row.delete()
    assert provider_for(cast.org) is None
    with django_assert_num_queries(0):  # "no row" is kept too
        assert provider_for(cast.org) is None


def test_an_organisation_with_the_cache_off_reads_its_row_every_time(
    cast: Cast, no_environment: Any, settings: Any, django_assert_num_queries: Any
) -> None:
    settings.PROVIDER_CACHE_SECONDS = 0
    _own(cast)
    provider_for(cast.org)
    with django_assert_num_queries(1):
        provider_for(cast.org)
