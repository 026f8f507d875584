"""What a turn costs the database (issue 26.8): the statements and transactions of a read-only
turn and of a booking, counted on the runner's path (`runner.drain`), must not grow unnoticed.

The ceilings are today's counts: lower them as the turn gets cheaper (bench/turn_cost.py
measures the same counts and the CPU time on the demo office). A new statement on the hot path
should be a decision, not an accident."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from django.db import connection

from agents.services import agents_install_defaults
from business.models import Job
from copilot import runner
from copilot.intake import accept_message
from copilot.models import Conversation
from tests import factories
from tests.conftest import Cast
from tests.copilot.conftest import ScriptedRouter, task

pytestmark = [
    pytest.mark.django_db(transaction=True),  # real commits: they are what is counted
    pytest.mark.usefixtures("defaults"),
]


@pytest.fixture
def defaults(cast: Cast, settings: Any) -> None:
    """The organisation's seven default agents with their real tools and handlers, kept between
    turns as in production (agents/cache.py)."""
    settings.AGENTS_CACHE_SECONDS = 60
    agents_install_defaults(organisation=cast.org)


READ_ONLY = {"statements": 32, "transactions": 3, "connects": 0}
BOOKING = {"statements": 40, "transactions": 5, "connects": 0}


@dataclass
class Count:
    statements: int = 0
    writes_in_autocommit: int = 0
    commits: int = 0
    connects: int = 0

    @property
    def transactions(self) -> int:
        return self.commits + self.writes_in_autocommit

    def as_dict(self) -> dict[str, int]:
        return {
            "statements": self.statements,
            "transactions": self.transactions,
            "connects": self.connects,
        }


def test_a_read_only_turn_stays_within_its_statements_and_transactions(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    factories.make_customer(cast.org, "Juan Pérez")
    router.script["buscá a Juan"] = [task("search_customer", 0.9, customer="Juan")]
    router.script["buscá a Juan otra vez"] = [task("search_customer", 0.9, customer="Juan")]
    accept_message(conversation=conversation, user_id=cast.operator.pk, text="buscá a Juan")
    runner.drain(cast.org.pk, conversation.pk)  # the first turn warms the caches

    count = Count()
    with _counting(count):
        accept_message(
            conversation=conversation, user_id=cast.operator.pk, text="buscá a Juan otra vez"
        )
        _reset(count)
        [result] = runner.drain(cast.org.pk, conversation.pk).results

    assert "Juan Pérez" in result.text, result.text
    _within(count, READ_ONLY)


def test_a_booking_stays_within_its_statements_and_transactions(
    cast: Cast, conversation: Conversation, router: ScriptedRouter, technician: Any
) -> None:
    factories.make_customer(cast.org, "Juan Pérez")
    router.script["buscá a Juan"] = [task("search_customer", 0.9, customer="Juan")]
    router.script["agendale un service a Juan el lunes a las 10"] = [
        task("book_job", 0.9, customer="Juan", date=factories.next_monday(), time="10:00",
             service="service"),
    ]  # fmt: skip
    accept_message(conversation=conversation, user_id=cast.operator.pk, text="buscá a Juan")
    runner.drain(cast.org.pk, conversation.pk)

    count = Count()
    with _counting(count):
        accept_message(
            conversation=conversation,
            user_id=cast.operator.pk,
            text="agendale un service a Juan el lunes a las 10",
        )
        _reset(count)
        [result] = runner.drain(cast.org.pk, conversation.pk).results

    assert Job.objects.filter(organisation=cast.org, customer__name="Juan Pérez").count() == 1, (
        result.text
    )
    assert result.text
    _within(count, BOOKING)


def _within(count: Count, ceiling: dict[str, int]) -> None:
    spent = count.as_dict()
    over = {k: (spent[k], ceiling[k]) for k in ceiling if spent[k] > ceiling[k]}
    assert not over, f"the turn grew (spent, ceiling): {over}; all counts: {spent}"


def _reset(count: Count) -> None:
    count.statements = count.writes_in_autocommit = count.commits = count.connects = 0


class _counting:
    """Count statements, commits and new connections on this thread's connection."""

    def __init__(self, count: Count) -> None:
        self.count = count
        self.patch = pytest.MonkeyPatch()

    def __enter__(self) -> Count:
        count = self.count
        commit, connect = connection.commit, connection.connect

        def counted_commit() -> None:
            count.commits += 1
            commit()

        def counted_connect(*args: Any, **kwargs: Any) -> None:
            count.connects += 1
            connect(*args, **kwargs)

        def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
            count.statements += 1
            verb = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else ""
            if connection.get_autocommit() and verb in {"INSERT", "UPDATE", "DELETE"}:
                count.writes_in_autocommit += 1
            return execute(sql, params, many, context)

        self.patch.setattr(connection, "commit", counted_commit)
        self.patch.setattr(connection, "connect", counted_connect)
        self.wrapping = connection.execute_wrapper(wrapper)
        self.wrapping.__enter__()
        return count

    def __exit__(self, *exc: object) -> None:
        self.wrapping.__exit__(*exc)
        self.patch.undo()


def test_names_are_kept_between_turns_and_dropped_when_a_customer_changes(
    cast: Cast, django_assert_num_queries: Any
) -> None:
    from copilot.router_cache import vocabulary_for

    factories.make_customer(cast.org, "Juan Pérez")
    assert "Juan Pérez" in vocabulary_for(cast.org).customers
    with django_assert_num_queries(0):
        vocabulary_for(cast.org)
    marta = factories.make_customer(cast.org, "Marta Díaz")  # saved here: dropped at once
    assert "Marta Díaz" in vocabulary_for(cast.org).customers
    marta.delete()
    assert "Marta Díaz" not in vocabulary_for(cast.org).customers
    assert vocabulary_for(cast.other_org).customers == ()  # kept per organisation
