"""The cast every test can use: one organisation with an operator, a manager and an admin, and an
outsider who belongs to another organisation and must see nothing of the first."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from channels.layers import channel_layers

from business.models import Organisation
from tests import factories
from tests.clock import clock  # noqa: F401  (the reference clock, for any test that asks)


def pytest_configure(config: pytest.Config) -> None:
    from django.conf import settings

    # Importing capataz.asgi (the app the tests talk to) starts a recovery of stalled turns when
    # it is on; at collection time that would be a thread with no database to use.
    # tests/copilot/test_recovery_at_start.py turns it on for its own tests.
    settings.COPILOT_RECOVER_AT_START = False


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


@pytest.fixture
def agents(cast: Cast) -> dict[str, Any]:
    """The organisation's copies of the shipped agents, by name (tests/handlers pins its own)."""
    from agents.models import Agent
    from agents.services import agents_install_defaults

    agents_install_defaults(organisation=cast.org)
    return {agent.name: agent for agent in Agent.objects.filter(organisation=cast.org)}


@pytest.fixture(autouse=True)
def _no_model_summary(settings: Any) -> None:
    # The model's gist after a turn is one more request to a scripted server, which would take
    # a reply queued for the test's next turn; tests/copilot/test_summaries.py turns it on.
    settings.COPILOT_MODEL_SUMMARY = False


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


@pytest.fixture(autouse=True, scope="session")
def _celery_tasks_run_inline() -> Iterator[None]:
    # With REDIS_URL set (the PostgreSQL + Redis run) turns go to Celery: in tests its tasks run
    # inline, in the process that sends them (one test starts a real worker instead).
    from capataz.celery import app

    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = False


@pytest.fixture(autouse=True)
def _registry_only_routers(settings: Any) -> None:
    # Routers trained on the generated corpus take seconds and the suite builds hundreds of
    # routers; tests/copilot/test_router_corpus.py turns it on for its own tests.
    settings.NLU_CORPUS = False


@pytest.fixture(autouse=True)
def _agents_read_afresh(settings: Any) -> None:
    # Tests change agents with `update` (no signal): every turn reads them (agents/cache.py);
    # tests/copilot/test_turn_cost.py and tests/agents/test_cache.py keep them.
    settings.AGENTS_CACHE_SECONDS = 0
    settings.PROVIDER_CACHE_SECONDS = 0  # the same for the provider row (llm/provider.py)


@pytest.fixture(autouse=True)
def _no_golden_copy_per_organisation(settings: Any) -> None:
    # 426 case rows for each organisation a transactional test creates (two per cast);
    # tests/evaluation/test_datasets.py turns it on, the evaluation pages install it when opened.
    settings.EVALUATION_GOLDEN_ON_CREATE = False


@pytest.fixture(autouse=True)
def _no_event_tail(settings: Any) -> None:
    # The embedded default's log tail polls the database from the event loop; a test that needs
    # it turns it on.
    settings.COPILOT_EVENT_TAIL = False


@pytest.fixture(autouse=True)
def _fresh_channel_layer() -> Iterator[None]:
    # Each test gets its own channel layer instance. The Redis layer remembers the event loop
    # of a receive in flight; a socket a failed test left open would make every later test's
    # receive fail with "two event loops" (each async test has its own loop).
    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


@pytest.fixture(autouse=True)
def _local_runners_finish_within_the_test() -> Iterator[None]:
    # Turns a test handed to this process's runner threads end before its database goes away.
    from copilot import tasks

    yield
    tasks.stop_local()


@pytest.fixture(scope="session")
def django_db_setup(
    request: pytest.FixtureRequest,
    django_test_environment: None,
    django_db_blocker: Any,
    django_db_modify_db_settings: None,
) -> Iterator[None]:
    """pytest-django's set-up over a copy of a migrated template (tests/database_template.py).

    The default database is set up even when no collected test asks for `db`: the demo e2e
    modules hold database access themselves (one demo per module), so one of them run alone
    would otherwise load the demo into — and afterwards flush — the configured database.
    """
    from django.core.management.commands import flush
    from django.db import connections
    from django.test.utils import setup_databases, teardown_databases
    from pytest_django.fixtures import _get_databases_for_setup

    from tests.database_template import (
        copy_test_database,
        keep_migrated_rows,
        put_back_migrated_rows,
    )

    aliases, serialized = _get_databases_for_setup(request.session.items)
    with django_db_blocker.unblock():
        copy_test_database()
        created = setup_databases(
            verbosity=0, interactive=False, aliases=dict.fromkeys(aliases | {"default"}, False),
            serialized_aliases=serialized, keepdb=True,
        )  # fmt: skip
        keep_migrated_rows()
    # A flush (a transactional test's end, the demo harness) puts the migrated rows back
    # instead of sending post_migrate to remake them; `migrate` still sends it.
    emit_post_migrate = flush.emit_post_migrate_signal

    def put_back(verbosity: int, interactive: bool, db: str, **kwargs: Any) -> None:
        if not put_back_migrated_rows(db):
            emit_post_migrate(verbosity, interactive, db, **kwargs)

    flush.emit_post_migrate_signal = put_back  # type: ignore[assignment]
    yield
    flush.emit_post_migrate_signal = emit_post_migrate
    with django_db_blocker.unblock():
        connections.close_all()
        teardown_databases(created, verbosity=0)


@pytest.fixture(autouse=True, scope="session")
def _no_lingering_connections(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    # Sockets, runners and async tests query from worker threads, whose connections outlive the
    # tests; PostgreSQL refuses to drop a database others are connected to. End them first.
    yield
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )


@pytest.fixture
def dispatched(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """Conversations handed to a runner are recorded, not run: the test runs the turns itself
    (in its own thread: the test database is one connection)."""
    from copilot import tasks

    calls: list[tuple[int, int]] = []

    def dispatch(organisation_id: int, conversation_id: int) -> bool:
        calls.append((organisation_id, conversation_id))
        return True

    monkeypatch.setattr(tasks, "dispatch", dispatch)
    return calls


@pytest.fixture
def superuser(db: None) -> Any:
    """A superuser of no organisation (the Django admin's own)."""
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_superuser("jefa", password="capataz-test-pw")


@pytest.fixture
def staff_admin(cast: Cast) -> Any:
    """The organisation's admin, let into the Django admin."""
    cast.admin.is_staff = True
    cast.admin.save()
    return cast.admin


@pytest.fixture
def scripted_server() -> Iterator[Any]:
    """A scripted OpenAI-compatible server (testing/scripted.py) for one test."""
    from testing.scripted import ScriptedServer

    with ScriptedServer() as running:
        yield running


@pytest.fixture
def server(scripted_server: Any) -> Any:
    """The scripted server by its short name. Packages whose tests point the settings at it
    (tests/llm, tests/evaluation/test_engines.py) override this and ask for it by the same name."""
    return scripted_server


@pytest.fixture(autouse=True)
def _fresh_vocabulary() -> Iterator[None]:
    # Names the NLU snaps to are kept per organisation id for a few seconds; a rolled-back test
    # may hand its organisation's id to the next test, which must not see the last one's names.
    from copilot import router_cache

    router_cache.names_changed(None)
    yield
    router_cache.names_changed(None)
