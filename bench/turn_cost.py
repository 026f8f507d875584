"""What one turn costs inside the process: CPU, SQL statements, transactions, reconnects.

Sets up a fresh database (SQLite in a temporary folder by default; DATABASE_URL to use another),
migrates it and loads the demo organisation, then, in this one process, stores messages as the
panel does (`accept_message`) and runs them as a worker does (`runner.drain`) — the turn path of
production minus the socket. It reports, per kind of message, the median CPU time of `drain`
(thread CPU, so the warm-up and any other thread are not counted), and the statements,
transactions (commits, plus writes run in autocommit) and connections opened per turn.

    .venv/bin/python bench/turn_cost.py [--rounds 10] [--json] [--compiled]

`--compiled` runs the turns' straight path through the compiled LangGraph graph
(`graph.run_compiled`) instead of `graph.run_graph`: what LangGraph's machinery costs a turn.

Issue 26's targets: a read-only turn ≤ 12 ms CPU, ≤ 30 statements, ≤ 3 transactions; a
booking ≤ 15 ms. tests/copilot/test_turn_cost.py keeps the statement and transaction counts.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# Sixteen read-only messages of the demo office (es and en), and one booking; the job it books is
# deleted after each round (outside the count), so every round books the same free slot: left in
# place, the fourth round's booking is refused (three technicians do air conditioning) and the
# refusal's alternatives would be measured as a booking.
READS = [
    "¿Qué trabajos tiene Lucas mañana?",
    "¿Quién nos debe plata?",
    "mostrame los datos de Graciela Ibarra",
    "¿Qué vehículos están disponibles?",
    "Which jobs are open?",
    "Who has overdue invoices?",
    "¿Cuánto facturamos este mes?",
    "¿Qué técnicos trabajan el jueves?",
    "¿Qué presupuestos están pendientes?",
    "Show me Graciela Ibarra's jobs",
    "¿Cuándo le toca el service a la camioneta?",
    "¿Qué trabajos hay para hoy?",
    "¿Quién está de guardia?",
    "Which technicians are free tomorrow?",
    "¿Tiene facturas impagas Graciela Ibarra?",
    "¿Cuántos trabajos cerramos esta semana?",
]
BOOKING = "Agendá una revisión de aire para Graciela Ibarra el jueves a las 10"


class Counter:
    """Statements and transactions on the default connection while `active`."""

    def __init__(self) -> None:
        self.statements = 0
        self.writes_in_autocommit = 0
        self.commits = 0
        self.connects = 0
        self.active = False

    def __call__(self, execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        from django.db import connection

        if self.active:
            self.statements += 1
            verb = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else ""
            if connection.get_autocommit() and verb in {"INSERT", "UPDATE", "DELETE"}:
                self.writes_in_autocommit += 1
        return execute(sql, params, many, context)

    @property
    def transactions(self) -> int:
        return self.commits + self.writes_in_autocommit


def _setup(workdir: Path) -> None:
    os.environ.setdefault("CAPATAZ_VAR_DIR", str(workdir))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "capataz.settings")
    os.environ.setdefault("OPENAI_API_KEY", "")
    import logging

    import django

    django.setup()
    logging.disable(logging.WARNING)
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    call_command("load_demo", verbosity=0)


def _instrument(counter: Counter) -> None:
    """Count commits and new connections on every connection this process opens."""
    from django.db.backends.base.base import BaseDatabaseWrapper
    from django.db.backends.signals import connection_created

    commit = BaseDatabaseWrapper.commit

    def counted_commit(self: BaseDatabaseWrapper) -> None:
        if counter.active:
            counter.commits += 1
        commit(self)

    BaseDatabaseWrapper.commit = counted_commit  # type: ignore[method-assign]

    def created(sender: Any, connection: Any, **kwargs: Any) -> None:
        if counter.active:
            counter.connects += 1
        if counter not in connection.execute_wrappers:
            connection.execute_wrappers.append(counter)

    connection_created.connect(created, weak=False)


def _turn(conversation: Any, user_id: int, text: str, counter: Counter) -> dict[str, float]:
    from copilot import runner
    from copilot.intake import accept_message

    accept_message(conversation=conversation, user_id=user_id, text=text)
    before = (counter.statements, counter.transactions, counter.connects)
    counter.active = True
    cpu = time.thread_time()
    drained = runner.drain(conversation.organisation_id, conversation.pk)
    cpu = time.thread_time() - cpu
    counter.active = False
    assert drained.results, f"no turn ran for {text!r}"
    return {
        "cpu_ms": cpu * 1000,
        "statements": counter.statements - before[0],
        "transactions": counter.transactions - before[1],
        "connects": counter.connects - before[2],
    }


def run(rounds: int, compiled: bool = False, by_message_wanted: bool = False) -> dict[str, Any]:
    from django.contrib.auth import get_user_model
    from django.db import connection

    from business.models import Job, Organisation
    from copilot import kinds, tasks
    from copilot.models import Conversation
    from copilot.orchestration import graph
    from copilot.turn import warm_up

    tasks.dispatch = lambda organisation_id, conversation_id: True  # the bench runs turns itself
    if compiled:
        kinds.run_graph = graph.run_compiled  # type: ignore[assignment]
    counter = Counter()
    _instrument(counter)
    connection.ensure_connection()
    if counter not in connection.execute_wrappers:
        connection.execute_wrappers.append(counter)
    organisation = Organisation.objects.order_by("pk").first()
    assert organisation is not None
    operator = get_user_model().objects.get(username="operadora")
    warm_up(organisation.pk)
    samples: dict[str, list[dict[str, float]]] = defaultdict(list)
    by_message: dict[str, list[float]] = defaultdict(list)
    for round_number in range(rounds + 1):
        conversation = Conversation.objects.create(
            organisation=organisation, user=operator, title=f"bench {round_number}"
        )
        for text in READS:
            sample = _turn(conversation, operator.pk, text, counter)
            if round_number:  # the first round warms caches and the router
                samples["read"].append(sample)
                by_message[text].append(sample["cpu_ms"])
        conversation = Conversation.objects.create(
            organisation=organisation, user=operator, title=f"bench booking {round_number}"
        )
        last_job = Job.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
        sample = _turn(conversation, operator.pk, BOOKING, counter)
        booked = Job.objects.filter(pk__gt=last_job)
        assert booked.count() == 1, f"round {round_number}: the booking booked nothing"
        booked.delete()
        if round_number:
            samples["booking"].append(sample)
    result: dict[str, Any] = {
        kind: {
            "turns": len(rows),
            **{key: round(statistics.median(row[key] for row in rows), 2) for key in rows[0]},
            "cpu_ms_p90": round(sorted(row["cpu_ms"] for row in rows)[int(len(rows) * 0.9)], 2),
        }
        for kind, rows in samples.items()
    }
    if by_message_wanted:
        result["by_message"] = {
            text: round(statistics.median(cpu), 2) for text, cpu in by_message.items()
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--compiled", action="store_true", help="through LangGraph's invoke")
    parser.add_argument(
        "--by-message", action="store_true", help="also each read-only message's CPU median"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="capataz-turn-cost-") as folder:
        _setup(Path(folder))
        result = run(args.rounds, compiled=args.compiled, by_message_wanted=args.by_message)
    if args.json:
        print(json.dumps(result))
        return
    for text, cpu in result.pop("by_message", {}).items():
        print(f"{cpu:7.1f} ms  {text}")
    for kind, row in result.items():
        print(
            f"{kind:8} turns={row['turns']:4} cpu median {row['cpu_ms']:6.1f} ms "
            f"(p90 {row['cpu_ms_p90']:.1f})  statements {row['statements']:.0f}  "
            f"transactions {row['transactions']:.0f}  connects {row['connects']:.0f}"
        )


if __name__ == "__main__":
    main()
