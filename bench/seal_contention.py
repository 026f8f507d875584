"""Two threads finishing turns of one organisation at once: what the seal's lock costs them.

Until issue 26.3 `seal_turn` locked the organisation's row (`SELECT … FOR UPDATE`) and appended
to the organisation's one chain, inside the transaction that ends the turn: the lock was held
until that transaction committed, so every turn of an organisation finished after the one
before. Now a seal goes to its conversation's chain with no lock (copilot/ledger.py).

This sets up a database (DATABASE_URL, PostgreSQL to see row locks: SQLite takes none), makes
one organisation with two conversations and `--turns` ended turns each, then for each way of
sealing — `organisation` (the old path: the organisation's row locked, the organisation's
chain head read, then the seal) and `conversation` (`seal_turn`) — runs two threads, one per
conversation, each sealing its turns one by one in a transaction that stays open `--hold` ms
after the seal (the rest of a turn's closing transaction: its events, its commit). It reports
the wall time of both threads and the turns sealed per second.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/NAME .venv/bin/python bench/seal_contention.py
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "capataz.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


def _turns(conversation: Any, count: int) -> list[Any]:
    """`count` ended turns of the conversation, each with its question and answer."""
    from django.utils import timezone

    from copilot.models import Message, Turn
    from copilot.services import message_add

    turns = []
    for number in range(count):
        asked = message_add(conversation=conversation, role=Message.Role.USER, text=f"q{number}")
        turn = Turn.objects.create(
            organisation_id=conversation.organisation_id, conversation=conversation, message=asked,
            status=Turn.Status.DONE, finished_at=timezone.now(),
        )  # fmt: skip
        turn.answer = message_add(
            conversation=conversation, role=Message.Role.ASSISTANT, text=f"a{number}"
        )
        Turn.objects.filter(pk=turn.pk).update(answer=turn.answer)
        turns.append(turn)
    return turns


def _old_seal(turn: Any) -> None:
    """The organisation-chain seal as it was: the organisation's row locked, its head read."""
    from django.db import transaction
    from django.utils import timezone

    from business.models import Organisation
    from copilot.ledger import canonical, digest_of, turn_content
    from copilot.models import TraceSeal

    sealed_at = timezone.now()
    text = canonical(turn_content(turn, sealed_at))
    with transaction.atomic():
        Organisation.objects.select_for_update().filter(pk=turn.organisation_id).first()
        last = TraceSeal.objects.filter(organisation_id=turn.organisation_id, chain=None)
        head = last.order_by("-seq").only("seq", "digest").first()
        previous, seq = (head.digest, head.seq + 1) if head else ("", 1)
        TraceSeal.objects.create(
            organisation_id=turn.organisation_id, seq=seq, turn_id=str(turn.pk), content=text,
            previous=previous, digest=digest_of(previous, text), sealed_at=sealed_at,
        )  # fmt: skip


def _run(seal: Callable[[Any], Any], batches: list[list[Any]], hold: float) -> float:
    from django.db import connection, transaction

    def finish(turns: list[Any]) -> None:
        for turn in turns:
            with transaction.atomic():
                seal(turn)
                time.sleep(hold)  # the rest of the turn's closing transaction
        connection.close()

    threads = [threading.Thread(target=finish, args=(turns,)) for turns in batches]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=100, help="per conversation")
    parser.add_argument("--hold", type=float, default=5.0, help="ms after the seal")
    args = parser.parse_args()
    _setup()
    from business.models import Organisation
    from copilot.ledger import seal_turn
    from copilot.services import conversation_create

    for name, seal in (("organisation", _old_seal), ("conversation", seal_turn)):
        slug = f"bench-{uuid.uuid4().hex[:8]}"
        org = Organisation.objects.create(name=slug, slug=slug)
        chats = [conversation_create(organisation=org, user=None) for _ in range(2)]
        batches = [_turns(chat, args.turns) for chat in chats]
        wall = _run(seal, batches, args.hold / 1000)
        sealed = 2 * args.turns
        print(f"{name:13} {sealed} turns, 2 threads: {wall:.2f} s, {sealed / wall:.0f} turns/s")


if __name__ == "__main__":
    main()
