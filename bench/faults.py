"""Fault runs: a web process killed with messages queued, and Redis going away under load.

    .venv/bin/python bench/faults.py daphne-kill --setup embedded [--burst 100] [--sessions 50]
        [--no-reconnect]
    .venv/bin/python bench/faults.py worker-kill [--database NAME] [--redis-db N]
    .venv/bin/python bench/faults.py daphne-kill --setup redis [--daphnes 2] [--concurrency 8]
    .venv/bin/python bench/faults.py redis-restart [--sessions 200] [--seconds 60]
        [--interval 10] [--down-at 15] [--down-for 15] [--redis-port 6390]
    common: [--json] [--drain 120] [--logs DIR]

The servers and the websocket client are bench/load.py's (`Cluster`, `Session`): every server is
started here and stopped at the end, also on Ctrl-C and on errors. With `--supervise` (the
default) a server process that exits by itself is started again within half a second, as
systemd's Restart=always or a container's restart policy would (`restarted_by_supervisor` says
which); `--no-supervise` shows what happens without one. A session whose socket closes
reconnects with `?after=<last seq it saw>` and sends again, with the same client_id, the frames
not acknowledged yet (stored once).

daphne-kill
    One message per session as a warm-up, then a burst of `--burst` messages spread over the
    sessions, sent without waiting (faster than they are answered). Once every one is
    acknowledged (`accepted`: stored, its turn queued), every daphne gets SIGKILL at once; after
    `--down-for` seconds they start again on the same ports and the sessions reconnect.
    - embedded: the turns ran on daphne's threads, so the kill cuts the running ones short and
      leaves the rest queued; the first socket on the new process recovers them (queued turns
      run, turns cut short are interrupted — said, not re-run).
    - redis: the turns run in the Celery worker; killing daphne only drops sockets.
    With `--no-reconnect` no socket comes back after the kill (nobody has the panel open): the
    restarted daphne must answer on its own (it recovers at start-up), and "answered" is read
    from the database (a finished turn with an answer row), polled until none is left unfinished.
    Reported: how many were answered before the kill, queued at the kill, the seconds from the
    kill and from the restart until all were answered, how each ended (done / interrupted), and
    the loss check: every acknowledged message stored, and answered (`completed` seen by its
    socket, and in the database a finished Turn with an answer row). Exit status 1 on a loss.

worker-kill
    The redis set-up with `celery beat`: as daphne-kill, but the Celery worker (which runs the
    turns there) gets SIGKILL and is started again after `--down-for` s; the turn it was running
    is interrupted and the queued ones are handed over by beat's `recover_turns` (every 10 s)
    once the dead worker's lease lapses. `--no-reconnect` is meaningless here (daphne stays up).

redis-restart
    The redis set-up on a redis-server of its own (`--redis-port`, 6390: never the machine's
    6379), with `celery beat` (recover_turns every 10 s). Load as bench/load.py (`--sessions`
    sending every `--interval` s for `--seconds`); at `--down-at` s the redis-server is stopped
    (SIGTERM; it keeps nothing: no RDB, no AOF, so queued Celery messages and group memberships
    are gone when it is back), `--down-for` s later started again.
    Reported: sockets closed, reconnects, `deferred` events, error events, messages sent while
    Redis was down and whether they were acknowledged (stored), and that every acknowledged
    message was answered after Redis came back (seconds from its return to the last answer).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from load import (  # noqa: E402
    MAX_SESSIONS,
    MESSAGES,
    Book,
    Cluster,
    Msg,
    Run,
    cluster_for,
    connected,
    cpu_now,
    cpu_since,
    database_check,
    drive,
    phase_report,
    spread,
    stop_on_sigterm,
    var_dir,
    wait_answered,
    wait_for_redis,
)


def outcome(book: Book, phase: str) -> dict[str, Any]:
    msgs = [m for m in book.messages if m.phase == phase]
    return {
        "sent": len(msgs),
        "acked": sum(1 for m in msgs if m.acked_at is not None),
        "answered": sum(1 for m in msgs if m.completed_at is not None),
        "interrupted": sum(1 for m in msgs if m.error == "interrupted"),
        "failed": sum(1 for m in msgs if m.error == "turn_failed"),
    }


def loss(check: dict[str, Any], seen: dict[str, Any]) -> dict[str, Any]:
    """0 everywhere when nothing acknowledged was lost."""
    return {
        "acked_not_stored": check["acked_not_stored"],
        "stored_unanswered": check["stored_unanswered"],
        "finished_without_answer": check["finished_without_answer"],
        "acked_without_completed": seen["acked"] - seen["answered"],
        "sent_not_acked": seen["sent"] - seen["acked"],
    }


@contextlib.asynccontextmanager
async def supervised(cluster: Cluster, on: bool, restarts: Counter[str]) -> AsyncIterator[None]:
    """With `on`, a process that exits by itself is started again (as systemd's Restart=always
    would): what the durable turns promise assumes the worker comes back."""

    async def watch() -> None:
        while True:
            await asyncio.sleep(0.5)
            for name in await asyncio.to_thread(cluster.revive):
                restarts[name] += 1

    task = asyncio.create_task(watch()) if on else None
    try:
        yield
    finally:
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def common(run: Run, cluster: Cluster, check: dict[str, Any]) -> dict[str, Any]:
    return {
        "setup": cluster.setup,
        "tree": cluster.tree,
        "daphnes": len(cluster.ports),
        "sessions": len(run.sessions),
        "socket_closes": dict(run.book.closes),
        "reconnects": run.book.reconnects,
        "connect_failures": run.book.connect_failures,
        "error_events": dict(run.book.errors),
        "deferred_events": run.book.deferred,
        "database": check,
        "server_log_errors": cluster.log_errors(),
    }


# --- daphne killed with messages queued ----------------------------------------------------------


async def daphne_kill(args: argparse.Namespace, cluster: Cluster) -> dict[str, Any]:
    kind = "worker" if args.fault == "worker-kill" else "daphne"
    restarts: Counter[str] = Counter()
    async with (
        connected(cluster, args.sessions) as run,
        supervised(cluster, args.supervise, restarts),
    ):
        book, sessions = run.book, run.sessions
        for i in range(args.burst):
            await sessions[i % len(sessions)].send(MESSAGES[i % len(MESSAGES)], "burst")
        burst = [m for m in book.messages if m.phase == "burst"]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(m.acked_at is None for m in burst):
            await asyncio.sleep(0.01)
        acks = [m.acked_at for m in burst if m.acked_at is not None]
        # Only when every one was acknowledged: otherwise the kill did not find them all stored.
        acked_in = max(acks) - min(m.sent_at for m in burst) if len(acks) == len(burst) else None
        before = outcome(book, "burst")
        if not args.reconnect:
            for session in sessions:
                session.stopping = True  # the tabs are closed: no socket comes back
        for name, proc in cluster.procs.items():
            if proc.kind == kind:
                cluster.stop_proc(name, kill=True)
        killed_at, killed_epoch = time.monotonic(), time.time()
        await asyncio.sleep(args.down_for)
        if kind == "daphne":
            await asyncio.to_thread(cluster.restart_daphnes)
        else:
            cluster.start_proc("worker")
        up_at, up_epoch = time.monotonic(), time.time()
        if args.reconnect:
            await wait_answered(book, "burst", args.drain)
        else:
            await asyncio.to_thread(_wait_finished, cluster, book, run.conversations, args.drain)
        last = _last_answer(burst)
        seen = outcome(book, "burst")
        latency = [(m.completed_at - m.sent_at) * 1000 for m in burst if m.completed_at]
        await asyncio.sleep(0.5)
    check = await asyncio.to_thread(database_check, cluster, book, run.conversations)
    return {
        "fault": args.fault,
        "burst": args.burst,
        "acked_within_s": round(acked_in, 2) if acked_in is not None else None,
        "acked_before_kill": before["acked"],
        "answered_before_kill": before["answered"],
        "queued_at_kill": before["acked"] - before["answered"],
        "restart_s": round(up_at - killed_at, 2),
        # None unless every message of the burst got its `completed`.
        "all_answered_s_after_kill": _since(last, killed_at),
        "all_answered_s_after_restart": _since(last, up_at),
        # When the last turn finished in the database (the worker may finish before any socket
        # is back to see it).
        "last_turn_finished_s_after_kill": _since(check["last_finished_epoch"], killed_epoch),
        "last_turn_finished_s_after_restart": _since(check["last_finished_epoch"], up_epoch),
        "reconnect": args.reconnect,
        "burst_outcome": seen,
        "completed_ms": spread(latency),
        "loss": loss(check, seen),
        "supervised": args.supervise,
        "restarted_by_supervisor": dict(restarts),
        **common(run, cluster, check),
    }


def _wait_finished(cluster: Cluster, book: Book, conversations: list[int], timeout: float) -> None:
    """Until every stored message's turn is finished in the database (no socket to tell us)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if database_check(cluster, book, conversations)["stored_unanswered"] == 0:
            return
        time.sleep(1.0)


def _since(epoch: float | None, mark: float) -> float | None:
    return None if epoch is None else round(epoch - mark, 2)


def _last_answer(msgs: list[Msg]) -> float | None:
    """When the last of `msgs` got its `completed`; None while any of them has none."""
    if not msgs or any(m.completed_at is None for m in msgs):
        return None
    return max(m.completed_at for m in msgs if m.completed_at is not None)


# --- Redis stopped and started under load --------------------------------------------------------


async def redis_restart(args: argparse.Namespace, cluster: Cluster) -> dict[str, Any]:
    restarts: Counter[str] = Counter()
    async with (
        connected(cluster, args.sessions) as run,
        supervised(cluster, args.supervise, restarts),
    ):
        book = run.book
        marks: dict[str, float] = {}

        async def outage() -> None:
            await asyncio.sleep(args.down_at)
            marks["down"] = time.monotonic()
            await asyncio.to_thread(cluster.stop_proc, "redis")
            await asyncio.sleep(args.down_for)
            cluster.start_proc("redis")
            await asyncio.to_thread(wait_for_redis, cluster.redis_port)
            marks["up"], marks["up_epoch"] = time.monotonic(), time.time()

        before = cpu_now(cluster)
        fault = asyncio.create_task(outage())
        window = await drive(
            run.sessions, phase="load", seconds=args.seconds, interval=args.interval, seed=7
        )
        await fault
        await wait_answered(book, "load", args.drain)
        await asyncio.sleep(0.5)
        load = phase_report(
            book, "load", window, args.interval, len(run.sessions), cpu_since(before, cluster)
        )
    check = await asyncio.to_thread(database_check, cluster, book, run.conversations)
    msgs = [m for m in book.messages if m.phase == "load"]
    down, up = marks["down"], marks["up"]
    during = [m for m in msgs if down <= m.sent_at < up]
    last = _last_answer(msgs)
    seen = outcome(book, "load")
    return {
        "fault": "redis-restart",
        "down_s": round(up - down, 1),
        # time.monotonic() of the outage, to place `database.undelivered_sample` (sent_mono).
        "down_mono": round(down, 2),
        "up_mono": round(up, 2),
        "sent_while_down": len(during),
        "acked_while_down": sum(1 for m in during if m.acked_at is not None),
        "answered_of_those": sum(1 for m in during if m.completed_at is not None),
        "completed_ms_of_those": spread(
            [(m.completed_at - m.sent_at) * 1000 for m in during if m.completed_at]
        ),
        "all_answered_s_after_redis_back": _since(last, up),
        "last_turn_finished_s_after_redis_back": _since(
            check["last_finished_epoch"], marks["up_epoch"]
        ),
        "outcome": seen,
        "load": load,
        "loss": loss(check, seen),
        "supervised": args.supervise,
        "restarted_by_supervisor": dict(restarts),
        **common(run, cluster, check),
    }


# --- the command ---------------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("fault", choices=["daphne-kill", "worker-kill", "redis-restart"])
    p.add_argument("--setup", choices=["embedded", "redis"], default="embedded")
    p.add_argument("--sessions", type=int, default=None, help="50 for daphne-kill, else 200")
    p.add_argument("--burst", type=int, default=100)
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--interval", type=float, default=10.0)
    p.add_argument("--down-at", type=float, default=15.0)
    p.add_argument("--down-for", type=float, default=None, help="1 s for daphne, 15 s for redis")
    p.add_argument("--drain", type=float, default=120.0)
    p.add_argument("--daphnes", type=int, default=2)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--runners", type=int, default=4)
    p.add_argument("--database", default="capataz_faults")
    p.add_argument("--redis-db", type=int, default=13)
    p.add_argument("--redis-port", type=int, default=6390)
    p.add_argument(
        "--supervise",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="start again a server process that exits by itself (default: on)",
    )
    p.add_argument(
        "--reconnect",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="daphne-kill: the sockets come back after the restart (default: on); with "
        "--no-reconnect nobody reconnects and answers are read from the database",
    )
    p.add_argument("--logs", type=Path, default=None, help="keep the servers' logs here")
    p.add_argument("--json", action="store_true")
    return p


def main() -> None:
    args = parser().parse_args()
    restart = args.fault == "redis-restart"
    args.sessions = args.sessions or (200 if restart else 50)
    args.down_for = args.down_for if args.down_for is not None else (15.0 if restart else 1.0)
    if not 0 < args.sessions <= MAX_SESSIONS or not 0 < args.burst <= 10 * MAX_SESSIONS:
        raise SystemExit("--sessions or --burst out of range")
    if restart and args.redis_port == 6379:
        raise SystemExit("the outage needs a redis-server of its own, not the machine's 6379")
    stop_on_sigterm()
    overrides: dict[str, Any] = {"beat": restart or args.fault == "worker-kill"}
    if restart or args.fault == "worker-kill":
        args.setup = "redis"
    if not restart:
        overrides["redis_port"] = None  # the machine's Redis, its own db number
    with var_dir(args.logs) as folder, cluster_for(args, folder, **overrides) as cluster:
        run = redis_restart if restart else daphne_kill
        report = asyncio.run(run(args, cluster))
    print(json.dumps(report, ensure_ascii=False, indent=None if args.json else 2))
    lost = report["loss"]
    keys = ["acked_not_stored", "stored_unanswered", "finished_without_answer"]
    if args.reconnect:  # without sockets, nobody is there to see the `completed`
        keys.append("acked_without_completed")
    if any(lost[key] for key in keys):
        print("LOSS: " + json.dumps(lost), file=sys.stderr)
        raise SystemExit(1)


if __name__ == "__main__":
    main()
