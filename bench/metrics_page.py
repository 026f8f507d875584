"""Time the per-agent metrics page (D2) over 100,000 agent runs, on a throw-away test database.

    .venv/bin/python bench/metrics_page.py [--runs 100000] [--loads 7]
    DATABASE_URL=postgres://... .venv/bin/python bench/metrics_page.py

Creates the test database (like pytest-django), seeds one organisation's registry and N AgentRun
rows spread over the last 30 days and the seven agents (yields, reroutes, clarifications, two
engines, latencies from a skewed distribution), a model call for every tenth run and an approval
for every fiftieth, then loads `/metrics/agents/?period=30d` (all N runs) and `?period=7d` as a
manager through Django's test client — the whole page: queries, template, chart JSON — and prints
one JSON object with the median and max of `--loads` loads (the first load is a warm-up and not
counted) and the number of queries each page made.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import statistics
import sys
import time
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "capataz.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext, setup_test_environment  # noqa: E402
from django.utils import timezone  # noqa: E402

from agents.services import agents_install_defaults  # noqa: E402
from approvals.models import PendingAction  # noqa: E402
from business.models import Membership, Organisation  # noqa: E402
from copilot.models import AgentRun  # noqa: E402
from llm.models import ModelCall  # noqa: E402

AGENTS = ["scheduling", "customer", "financial", "fleet", "escalation", "proactive", "general"]


def seed(organisation: Organisation, count: int) -> None:
    rng = random.Random(15)
    now = timezone.now()
    runs, calls, actions = [], [], []
    for n in range(count):
        agent = AGENTS[n % len(AGENTS)]
        at = now - datetime.timedelta(seconds=rng.uniform(0, 30 * 86400))
        yielded = rng.random() < 0.04
        runs.append(
            AgentRun(
                organisation=organisation,
                turn_id=f"bench-{n // 2}",
                agent=agent,
                intent="x",
                latency_ms=0.0 if yielded else rng.lognormvariate(5.5, 0.9),
                success=not yielded and rng.random() < 0.9,
                yielded=yielded,
                engine="llm" if n % 3 == 0 else "embedded",
                rerouted_from=AGENTS[(n + 1) % 7] if rng.random() < 0.02 else "",
                clarified=rng.random() < 0.05,
                created_at=at,
            )  # fmt: skip
        )
        if n % 10 == 0:
            calls.append(
                ModelCall(
                    organisation=organisation,
                    turn_id=f"bench-{n // 2}",
                    agent=agent,
                    purpose="agent",
                    model="gpt-4o-mini" if n % 20 else "gpt-4o",
                    tokens_in=400,
                    tokens_out=120,
                    cost=Decimal("0.000132"),
                    created_at=at,
                )  # fmt: skip
            )
        if n % 50 == 0:
            actions.append(
                PendingAction(
                    organisation=organisation,
                    turn_id=f"bench-{n // 2}",
                    agent=agent,
                    tool="job_cancel",
                    category="execute",
                    summary="bench",
                    status=rng.choice(["approved", "rejected", "expired", "executed"]),
                    created_at=at,
                )  # fmt: skip
            )
    AgentRun.objects.bulk_create(runs, batch_size=2000)
    ModelCall.objects.bulk_create(calls, batch_size=2000)
    PendingAction.objects.bulk_create(actions, batch_size=2000)


def time_page(client: Client, query: str, loads: int) -> dict[str, float | int]:
    client.get("/metrics/agents/" + query)  # warm-up: templates, translations
    wall = []
    queries = 0
    for _ in range(loads):
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            response = client.get("/metrics/agents/" + query)
            wall.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.status_code
        queries = len(captured.captured_queries)
    slowest = sorted(captured.captured_queries, key=lambda q: -float(q["time"]))[:4]
    return {
        "slowest_queries": [f"{q['time']}s {q['sql'][:160]}" for q in slowest],
        "median_ms": round(statistics.median(wall), 1),
        "max_ms": round(max(wall), 1),
        "queries": queries,
        "calls_shown": response.context["report"].totals.calls,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--loads", type=int, default=7)
    parser.add_argument("--profile", action="store_true", help="print where one load spends")
    args = parser.parse_args()
    setup_test_environment()
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        from django.contrib.auth import get_user_model

        organisation = Organisation.objects.create(name="Bench", slug="bench")
        agents_install_defaults(organisation=organisation)
        started = time.perf_counter()
        seed(organisation, args.runs)
        seeded_s = time.perf_counter() - started
        user = get_user_model().objects.create_user("bench-manager", password="bench-pw-1234")
        Membership.objects.create(organisation=organisation, user=user, role="manager")
        client = Client()
        client.force_login(user)
        if args.profile and connection.vendor == "sqlite":
            with CaptureQueriesContext(connection) as captured:
                client.get("/metrics/agents/?period=30d")
            with connection.cursor() as cursor:
                for q in captured.captured_queries:
                    if "copilot_agentrun" in q["sql"]:
                        cursor.execute("EXPLAIN QUERY PLAN " + q["sql"])
                        print(q["sql"][:90], cursor.fetchall(), file=sys.stderr)
        if args.profile:
            import cProfile
            import pstats

            client.get("/metrics/agents/?period=30d")
            profiler = cProfile.Profile()
            profiler.enable()
            client.get("/metrics/agents/?period=30d")
            profiler.disable()
            pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(30)
        results = {
            "period_30d": time_page(client, "?period=30d", args.loads),
            "period_7d": time_page(client, "?period=7d", args.loads),
        }
        vendor = connection.vendor
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
    print(
        json.dumps(
            {"runs": args.runs, "database": vendor, "seed_seconds": round(seeded_s, 1), **results}
        )
    )


if __name__ == "__main__":
    main()
