"""Load: many panel websockets, each its own conversation, each sending a message every few seconds.

    .venv/bin/python bench/load.py --setup embedded [--sessions 200] [--seconds 60] [--interval 10]
    .venv/bin/python bench/load.py --setup redis [--daphnes 2] [--concurrency 8]
        [--workers 1] [--pool threads|prefork]
    .venv/bin/python bench/load.py --setup redis --rate-search [--intervals 10,5,3,2,1.5,1]
        [--target-ms 1000] [--refine 2]
    common: [--json] [--seed 7] [--drain 90] [--logs DIR]

The script starts every server of the chosen set-up itself and stops them at the end, on Ctrl-C
and on errors (children run in their own session, so a Ctrl-C reaches only this script, which
stops them in order). All traffic goes to 127.0.0.1.

- `embedded`: the default without Redis. A fresh SQLite database in a temporary
  CAPATAZ_VAR_DIR, one daphne; the turns run on daphne's own worker threads
  (COPILOT_LOCAL_RUNNERS).
- `redis`: a fresh PostgreSQL database (`--database`, dropped and created; dropped again at the
  end), REDIS_URL on a dedicated db number (`--redis-db`, flushed before and after) of the
  machine's Redis or of a redis-server this script starts (`--redis-port`), `--daphnes` daphne
  processes on consecutive free ports that only hold sockets, the Celery workers that run the
  turns, and, with `--beat`, one `celery beat` (the 10 s `recover_turns`). Workers:
  `--pool threads` (default) starts `--workers` processes of
  `celery -A capataz worker -Q turns,celery --pool=threads --concurrency=N`; `--pool prefork`
  starts one `celery … worker --pool=prefork --concurrency=<workers> -O fair
  --prefetch-multiplier=1`, whose main process forks `--workers` children, one turn at a time
  each (the production shape). CPU is summed over each process and its children.

Then: migrate, load the demo, log in as the operator over HTTP (GET /login/, POST with the CSRF
token), create `--sessions` conversations (one `manage.py shell -c`), open one websocket per
conversation (round robin over the daphne ports; the session cookie and an Origin the
ALLOWED_HOSTS accept) and warm each server process up with one turn. Each session then sends,
for `--seconds`, one message every `--interval` seconds (±25 % jitter, a random first offset),
taken from MESSAGES: read-only questions the embedded engine answers (hours, prices, payment
status, availability, a customer's file, a CUIT), so a long run does not book every slot.

Per message (client_id → `accepted` → its turn_id → `thinking` … `completed`):
- ack: send → `accepted` (the message is stored; the socket's first event for it);
- thinking: send → `thinking` (its turn started); completed: send → `completed`.
A session whose socket closes reconnects with `?after=<last seq seen>` (what the panel does) and
sends again the frames not acknowledged yet, with the same client_id (stored once).

Reported per phase: offered rate, turns/s completed within the sending window, ack / thinking /
completed p50/p95/p99 (ms), error events by code, `deferred` events, socket closes, and the
messages sent / acknowledged / answered (`completed` seen) after up to `--drain` seconds; the
CPU seconds each kind of process (daphne, worker, beat, this client) spent per completed turn.
At the end the database is read: user rows of those conversations (stored), the Turn rows by
status and the assistant rows (answered), so `lost` = sent but not stored, and `unanswered` =
stored but without a finished turn.

`--rate-search` runs one phase per interval of `--intervals` (same sessions and servers, the
queue drained between phases), stops at the first whose p95 completed exceeds `--target-ms` or
that leaves messages unanswered, then bisects `--refine` times between the last pass and the
first failure. It reports the highest offered rate (messages/s) that passed.

bench/faults.py reuses the servers and the client here for the fault runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import random
import re
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import websockets
from websockets.asyncio.client import ClientConnection

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
BIN = Path(sys.executable).parent
HOST = "127.0.0.1"
PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
MAX_SESSIONS = 2000

# Read-only operator questions the embedded engine answers (tests/copilot/test_intents_e2e.py
# and evaluation/datasets/golden.jsonl phrasings, the demo's customers).
MESSAGES = [
    "¿cuál es el horario de atención?",
    "¿Hasta qué hora atienden los sábados?",
    "What time do you open on Saturdays?",
    "¿Cuánto sale una destapación de cañería?",
    "cuánto sale más o menos una carga de gas?",
    "How much do you charge for a split installation?",
    "¿Cuánto nos debe Gimnasio Fuerza Sur?",
    "cuanto nos debe la Panadería La Espiga??",
    "what's our outstanding balance with Supermercado Los Hermanos?",
    "¿qué técnicos están libres mañana a la mañana?",
    "¿quién tiene lugar el viernes a la tarde?",
    "Who's free Friday morning?",
    "Pasame la ficha de Claudia Álvarez",
    "Can you pull up Supermercado Los Hermanos' details?",
    "qué clientes tienen el service de caldera vencido?",
    "validame el cuit 20-12345678-6",
]


# --- the servers ------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def tree_state() -> dict[str, Any]:
    """Which code the servers run: the commit and a digest of the uncommitted product changes
    (bench/ left out), so two runs can be told apart when the tree changes between them."""

    def git(*args: str) -> bytes:
        done = subprocess.run(
            ["git", "--no-optional-locks", *args], cwd=ROOT, capture_output=True, timeout=30
        )
        return done.stdout

    outside = ":(exclude)bench"
    digest = hashlib.sha1(git("diff", "HEAD", "--", ".", outside))
    untracked = git("ls-files", "--others", "--exclude-standard", "-z", "--", ".", outside)
    names = sorted(name for name in untracked.decode().split("\0") if name)
    for name in names:
        digest.update(name.encode())
        with contextlib.suppress(OSError):
            digest.update((ROOT / name).read_bytes())
    changed = git("diff", "HEAD", "--name-only", "--", ".", outside).decode().split()
    return {
        "head": git("rev-parse", "--short=12", "HEAD").decode().strip(),
        "uncommitted_product_files": len(changed) + len(names),
        "product_digest": digest.hexdigest()[:12],
        "at": time.strftime("%H:%M:%S"),
    }


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system, every thread) of a process and its children still alive."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(stat.parent.name) == pid or int(fields[1]) == pid:
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


@dataclass
class Proc:
    name: str  # daphne-0, worker, beat, redis
    kind: str  # daphne, worker, beat, redis
    args: list[str]
    log: Path
    popen: subprocess.Popen[bytes] | None = None
    cpu_before: float = 0.0  # CPU of earlier incarnations (a restarted daphne)


POOLS = ("threads", "prefork")


def worker_commands(workers: int, pool: str, concurrency: int) -> list[tuple[str, list[str]]]:
    """The Celery worker processes of the redis set-up, as (name, argv).

    `threads`: `workers` processes, each with `concurrency` turn threads. `prefork`: one Celery
    main process that forks `workers` child processes (`--concurrency=workers`), one turn at a
    time each, as `celery worker --pool=prefork` runs in production. The first is named
    `worker` (bench/faults.py stops and starts it by that name)."""
    if pool not in POOLS or workers < 1 or concurrency < 1:
        raise ValueError(f"pool {pool!r}, workers {workers}, concurrency {concurrency}")
    base = [str(BIN / "celery"), "-A", "capataz", "worker", "-Q", "turns,celery",
            "--loglevel=WARNING", "--without-mingle", "--without-gossip"]  # fmt: skip
    tag = f"load-{os.getpid()}"
    if pool == "prefork":
        # Each child takes one task at a time and holds no other in reserve, so a turn never
        # waits behind another in a busy child while a sibling is idle.
        args = [*base, "--pool=prefork", f"--concurrency={workers}", "-O", "fair",
                "--prefetch-multiplier=1", "-n", f"{tag}@%h"]  # fmt: skip
        return [("worker", args)]
    commands = []
    for index in range(workers):
        name = "worker" if index == 0 else f"worker-{index}"
        args = [*base, "--pool=threads", f"--concurrency={concurrency}",
                "-n", f"{tag}-{index}@%h"]  # fmt: skip
        commands.append((name, args))
    return commands


class Cluster:
    """The servers of one set-up, started and stopped by this script."""

    def __init__(
        self,
        setup: str,
        *,
        var_dir: Path,
        daphnes: int = 1,
        concurrency: int = 8,
        workers: int = 1,
        pool: str = "threads",
        beat: bool = False,
        redis_port: int | None = None,
        redis_db: int = 12,
        database: str = "capataz_load",
        runners: int = 4,
        extra_env: dict[str, str] | None = None,
    ) -> None:
        if setup not in {"embedded", "redis"}:
            raise ValueError(setup)
        if pool not in POOLS or workers < 1:
            raise ValueError(f"pool {pool!r}, workers {workers}")
        self.setup = setup
        self.var_dir = var_dir
        self.database = database
        self.own_redis = redis_port is not None
        self.redis_port = redis_port or 6379
        self.redis_db = redis_db
        self.procs: dict[str, Proc] = {}
        self.ports = [free_port() for _ in range(daphnes if setup == "redis" else 1)]
        self.env = self._env(runners, extra_env or {})
        # `revive` (a supervisor's thread) and `stop_proc` must not interleave: a process being
        # stopped on purpose has exited before `stop_proc` forgets it, and `revive` would start
        # it again in that gap (an untracked server holding the port, never stopped).
        self._lock = threading.RLock()
        self.tree: dict[str, Any] = {}
        logs = var_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        for index, port in enumerate(self.ports):
            args = [str(BIN / "daphne"), "-b", HOST, "-p", str(port), "capataz.asgi:application"]
            self._add(f"daphne-{index}", "daphne", args)
        if setup == "redis":
            for name, args in worker_commands(workers, pool, concurrency):
                self._add(name, "worker", args)
            if beat:
                scheduler = "django_celery_beat.schedulers:DatabaseScheduler"
                args = [str(BIN / "celery"), "-A", "capataz", "beat", "--scheduler", scheduler,
                        "--loglevel=WARNING"]  # fmt: skip
                self._add("beat", "beat", args)
            if self.own_redis:
                args = ["redis-server", "--port", str(self.redis_port), "--bind", HOST,
                        "--save", "", "--appendonly", "no", "--dir", str(var_dir)]  # fmt: skip
                self._add("redis", "redis", args)

    def _add(self, name: str, kind: str, args: list[str]) -> None:
        self.procs[name] = Proc(name, kind, args, self.var_dir / "logs" / f"{name}.log")

    @property
    def redis_url(self) -> str:
        return f"redis://{HOST}:{self.redis_port}/{self.redis_db}"

    def _env(self, runners: int, extra: dict[str, str]) -> dict[str, str]:
        skip = ("LANGSMITH_", "LANGCHAIN_", "OPENAI_", "DATABASE_URL", "REDIS_URL", "COPILOT_")
        env = {key: value for key, value in os.environ.items() if not key.startswith(skip)}
        env.update(
            CAPATAZ_VAR_DIR=str(self.var_dir),
            DEBUG="false",  # no query log: timings as in production
            SECRET_KEY=secrets.token_urlsafe(50),  # DEBUG=false refuses a weak key
            # Plain HTTP on loopback: no redirect to HTTPS, cookies sent without TLS.
            SECURE_SSL_REDIRECT="false",
            SESSION_COOKIE_SECURE="false",
            CSRF_COOKIE_SECURE="false",
            SECURE_HSTS_SECONDS="0",
            ALLOWED_HOSTS=f"{HOST},localhost",
            LOG_LEVEL="WARNING",
            DJANGO_SETTINGS_MODULE="capataz.settings",
            COPILOT_LOCAL_RUNNERS=str(runners),
            PYTHONUNBUFFERED="1",
        )
        if self.setup == "embedded":
            env["DATABASE_URL"] = f"sqlite:///{self.var_dir / 'capataz.sqlite3'}"
        else:
            env["DATABASE_URL"] = f"postgres://postgres@{HOST}:5432/{self.database}"
            env["REDIS_URL"] = self.redis_url
        env.update(extra)
        return env

    # --- life cycle ---------------------------------------------------------------------------

    def start(self) -> None:
        self.tree = tree_state()
        if self.setup == "redis":
            if self.own_redis:
                self.start_proc("redis")
                wait_for_redis(self.redis_port)
            self.flush_redis()
            recreate_database(self.database)
        for args in (["migrate", "--noinput", "-v0"], ["load_demo"]):
            self.manage(*args)
        for name in self.procs:
            if self.procs[name].kind != "redis":
                self.start_proc(name)
        for port in self.ports:
            wait_for_http(f"http://{HOST}:{port}/login/")

    def stop(self) -> None:
        """Every process this cluster started, newest kind first; then its database."""
        order = {"daphne": 0, "beat": 1, "worker": 2, "redis": 3}
        for proc in sorted(self.procs.values(), key=lambda p: order[p.kind]):
            self.stop_proc(proc.name)
        if self.setup == "redis":
            with contextlib.suppress(Exception):
                if not self.own_redis:
                    self.flush_redis()
            with contextlib.suppress(Exception):
                drop_database(self.database)

    def start_proc(self, name: str) -> None:
        with self._lock:
            proc = self.procs[name]
            if proc.popen is not None and proc.popen.poll() is None:
                return
            log = proc.log.open("ab")
            proc.popen = subprocess.Popen(
                proc.args, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
            log.close()

    def stop_proc(self, name: str, *, kill: bool = False, timeout: float = 15.0) -> None:
        with self._lock:
            proc = self.procs[name]
            popen = proc.popen
            if popen is None:
                return
            if popen.poll() is None:
                proc.cpu_before += process_cpu(popen.pid)
                popen.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
                try:
                    popen.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    popen.kill()
                    popen.wait(timeout=10)
            proc.popen = None

    def revive(self) -> list[str]:
        """Start again every process that exited by itself (a supervisor's Restart=always);
        one stopped on purpose (`stop_proc`) stays stopped. Returns the names restarted."""
        with self._lock:
            dead = [
                name
                for name, proc in self.procs.items()
                if proc.popen is not None and proc.popen.poll() is not None
            ]
            for name in dead:
                self.procs[name].popen = None
                self.start_proc(name)
            return dead

    def restart_daphnes(self) -> None:
        for name, proc in self.procs.items():
            if proc.kind == "daphne":
                self.start_proc(name)
        for port in self.ports:
            wait_for_http(f"http://{HOST}:{port}/login/")

    def cpu(self) -> dict[str, float]:
        """CPU seconds so far per kind of process (restarted processes included)."""
        totals: dict[str, float] = {}
        for proc in self.procs.values():
            popen = proc.popen
            live = process_cpu(popen.pid) if popen is not None and popen.poll() is None else 0.0
            totals[proc.kind] = totals.get(proc.kind, 0.0) + proc.cpu_before + live
        return totals

    def log_errors(self) -> dict[str, list[str]]:
        """Lines that look like errors in each process's log (first few of each)."""
        found: dict[str, list[str]] = {}
        pattern = re.compile(r"Traceback|ERROR|CRITICAL|Exception")
        for proc in self.procs.values():
            if not proc.log.exists():
                continue
            lines = [
                line.strip()[:200]
                for line in proc.log.read_text(errors="replace").splitlines()
                if pattern.search(line)
            ]
            if lines:
                found[proc.name] = [f"{len(lines)} lines", *lines[:4]]
        return found

    # --- helpers ------------------------------------------------------------------------------

    def manage(self, *args: str, stdin: str | None = None) -> str:
        done = subprocess.run(
            [PY, "manage.py", *args], cwd=ROOT, env=self.env, input=stdin, capture_output=True,
            text=True, timeout=600,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {args[0]} failed:\n{done.stderr[-3000:]}")
        return done.stdout

    def shell(self, code: str, payload: Any = None) -> Any:
        """Run `code` in `manage.py shell`; it prints `RESULT <json>`; returns that JSON."""
        out = self.manage("shell", "-c", code, stdin=json.dumps(payload))
        for line in out.splitlines():
            if line.startswith("RESULT "):
                return json.loads(line[len("RESULT ") :])
        raise RuntimeError(f"no result from the shell:\n{out[-2000:]}")

    def flush_redis(self) -> None:
        import redis

        client = redis.Redis(host=HOST, port=self.redis_port, db=self.redis_db)
        try:
            client.flushdb()
        finally:
            client.close()

    def __enter__(self) -> Cluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def wait_for_http(url: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=2.0).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"server at {url} did not start in {timeout:.0f} s")


def wait_for_redis(port: int, timeout: float = 15.0) -> None:
    import redis

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        client = redis.Redis(host=HOST, port=port, socket_connect_timeout=0.5)
        try:
            if client.ping():
                return
        except redis.RedisError:
            time.sleep(0.1)
        finally:
            client.close()
    raise RuntimeError(f"redis on port {port} did not start")


def recreate_database(name: str) -> None:
    import psycopg

    if not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
        raise ValueError(f"not a plain database name: {name!r}")
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def drop_database(name: str) -> None:
    import psycopg

    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# --- the demo side: login, conversations, what the database holds ---------------------------------

CREATE_CONVERSATIONS = """
import json, sys
from django.contrib.auth import get_user_model
from business.models import Organisation
from copilot.services import conversation_create
n = json.load(sys.stdin)
org = Organisation.objects.get(slug="demo")
user = get_user_model().objects.get(username="operadora")
ids = [conversation_create(organisation=org, user=user).pk for _ in range(n)]
print("RESULT " + json.dumps(ids))
"""

CHECK = """
import json, sys
from collections import Counter
from django.db.models import Max
from copilot.models import ConversationEvent, Message, Turn
asked = json.load(sys.stdin)
ids = asked["conversations"]
users = Message.objects.filter(conversation_id__in=ids, role="user")
stored = set(users.exclude(client_id="").values_list("client_id", flat=True))
turns = Turn.objects.filter(conversation_id__in=ids)
unfinished = turns.filter(status__in=["queued", "running"])
finished = turns.exclude(status__in=["queued", "running"])
no_answer = finished.filter(answer=None)
last = turns.aggregate(last=Max("finished_at"))["last"]
print("RESULT " + json.dumps({
    "user_rows": users.count(),
    "assistant_rows": Message.objects.filter(conversation_id__in=ids, role="assistant").count(),
    "stored_client_ids": sorted(stored & set(asked["client_ids"])),
    "turns": dict(Counter(turns.values_list("status", flat=True))),
    "turns_answered": turns.exclude(answer=None).count(),
    "unfinished_client_ids": sorted(unfinished.values_list("message__client_id", flat=True)),
    "no_answer_client_ids": sorted(no_answer.values_list("message__client_id", flat=True)),
    "completed_logged": sorted(
        ConversationEvent.objects.filter(conversation_id__in=ids, type="completed")
        .values_list("turn_id", flat=True)
    ),
    "finished_turn_ids": sorted(
        str(pk) for pk in finished.values_list("pk", flat=True)
    ),
    "finished_client_ids": sorted(finished.values_list("message__client_id", flat=True)),
    "last_finished_epoch": last.timestamp() if last else None,
}))
"""


def login(base: str) -> str:
    """The operator's session, as a Cookie header."""
    with httpx.Client(base_url=base, follow_redirects=True, timeout=20) as client:
        page = client.get("/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        if token is None:
            raise RuntimeError("no CSRF token on the login page")
        form = {"username": "operadora", "password": "capataz", "csrfmiddlewaretoken": token[1]}
        client.post("/login/", data=form, headers={"Referer": base + "/login/"})
        if "sessionid" not in client.cookies:
            raise RuntimeError("login failed: no session cookie")
        return "; ".join(f"{name}={value}" for name, value in client.cookies.items())


def create_conversations(cluster: Cluster, count: int) -> list[int]:
    if not 0 < count <= MAX_SESSIONS:
        raise ValueError(f"between 1 and {MAX_SESSIONS} sessions")
    return [int(pk) for pk in cluster.shell(CREATE_CONVERSATIONS, count)]


def database_check(cluster: Cluster, book: Book, conversations: list[int]) -> dict[str, Any]:
    """What the database holds for the messages this client sent."""
    sent = [msg.client_id for msg in book.messages]
    found = cluster.shell(CHECK, {"conversations": conversations, "client_ids": sent})
    stored = set(found.pop("stored_client_ids"))
    acked = {msg.client_id for msg in book.messages if msg.acked_at is not None}
    unfinished = set(found.pop("unfinished_client_ids"))
    no_answer = set(found.pop("no_answer_client_ids"))
    finished = set(found.pop("finished_client_ids"))
    logged = set(found.pop("completed_logged"))
    finished_turns = set(found.pop("finished_turn_ids"))
    seen_completed = {msg.client_id for msg in book.messages if msg.completed_at is not None}
    return {
        **found,
        "sent": len(sent),
        "stored": len(stored),
        "lost": len(set(sent) - stored),  # sent, never stored (the client gave up on it)
        "acked_not_stored": len(acked - stored),  # must be 0
        "stored_unanswered": len(unfinished & stored),  # must be 0 after the drain
        "finished_without_answer": len(no_answer & stored),  # a finished turn, no reply row: 0
        # Finished in the database, but its socket never got the `completed` (a live event lost
        # and never filled from the log): 0 when every answer reached the client.
        "finished_not_delivered": len((finished & stored) - seen_completed),
        # Finished turns whose `completed` is not even in the event log (never published).
        "finished_without_completed_event": len(finished_turns - logged),
        "undelivered_sample": [
            {
                "client_id": msg.client_id,
                "phase": msg.phase,
                "turn_id": msg.turn_id,
                "sent_mono": round(msg.sent_at, 2),
                "thinking_seen": msg.thinking_at is not None,
                "completed_in_log": msg.turn_id in logged,
            }
            for msg in book.messages
            if msg.completed_at is None and msg.client_id in finished
        ][:10],
    }


# --- the client ---------------------------------------------------------------------------------


@dataclass
class Msg:
    client_id: str
    session: int
    text: str
    phase: str
    sent_at: float
    acked_at: float | None = None
    thinking_at: float | None = None
    completed_at: float | None = None
    turn_id: str = ""
    error: str = ""  # the turn's error code (turn_failed, interrupted)
    answer: str = ""  # the `completed` text


@dataclass
class Book:
    """Everything the sessions saw, shared by them (one event loop: no locks)."""

    messages: list[Msg] = field(default_factory=list)
    by_client: dict[str, Msg] = field(default_factory=dict)
    by_turn: dict[str, Msg] = field(default_factory=dict)
    errors: Counter[str] = field(default_factory=Counter)
    deferred: int = 0
    closes: Counter[str] = field(default_factory=Counter)  # close code → count
    connect_failures: int = 0
    reconnects: int = 0

    def answered(self, phase: str | None = None) -> bool:
        return all(m.completed_at is not None for m in self.messages if phase in (None, m.phase))


class Session:
    """One panel tab: a websocket on one conversation that reconnects after `?after=<seq>`."""

    def __init__(
        self, index: int, conversation_id: int, ports: list[int], cookie: str, book: Book
    ) -> None:
        self.index = index
        self.conversation_id = conversation_id
        self.ports = ports
        self.port = ports[index % len(ports)]
        self.headers = {"Cookie": cookie, "Origin": f"http://{HOST}:{self.port}"}
        self.book = book
        self.ws: ClientConnection | None = None
        self.last_seq: int | None = None
        self.unacked: dict[str, Msg] = {}
        self.counter = 0
        self.stopping = False
        self.connected = asyncio.Event()
        self.reader: asyncio.Task[None] | None = None

    def url(self) -> str:
        after = "" if self.last_seq is None else f"?after={self.last_seq}"
        return f"ws://{HOST}:{self.port}/ws/chat/{self.conversation_id}/{after}"

    async def open(self, timeout: float = 30.0) -> None:
        """Connect (retrying until `timeout`), then keep reading in the background."""
        await self._connect(time.monotonic() + timeout)
        self.reader = asyncio.create_task(self._read_forever())

    async def _connect(self, deadline: float) -> None:
        delay = 0.2
        while True:
            try:
                self.ws = await websockets.connect(
                    self.url(), additional_headers=self.headers, open_timeout=10,
                    max_size=2**22, ping_interval=None,
                )  # fmt: skip
                self.connected.set()
                return
            except (OSError, websockets.WebSocketException, TimeoutError):
                self.book.connect_failures += 1
                if self.stopping or time.monotonic() + delay > deadline:
                    raise
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)

    async def _read_forever(self, give_up_after: float = 300.0) -> None:
        while not self.stopping:
            assert self.ws is not None
            try:
                async for raw in self.ws:
                    self.handle(json.loads(raw), time.monotonic())
            except websockets.ConnectionClosed:
                pass
            if self.stopping:
                return
            code = self.ws.close_code
            self.book.closes[str(code)] += 1
            self.connected.clear()
            self.ws = None
            await asyncio.sleep(random.uniform(0.1, 0.5))  # do not all come back at once
            try:
                await self._connect(time.monotonic() + give_up_after)
            except Exception:
                return
            self.book.reconnects += 1
            for msg in list(self.unacked.values()):  # stored once: same client_id
                await self._send(msg)

    def handle(self, event: dict[str, Any], now: float) -> None:
        seq = event.get("seq")
        if isinstance(seq, int):
            self.last_seq = max(self.last_seq or 0, seq)
        kind, turn_id = event.get("type"), str(event.get("turn_id", ""))
        if kind == "accepted":
            msg = self.book.by_client.get(event.get("client_id", ""))
            if msg is None:
                return
            self.unacked.pop(msg.client_id, None)
            msg.acked_at = msg.acked_at or now
            msg.turn_id = turn_id
            self.book.by_turn[turn_id] = msg
            return
        msg = self.book.by_turn.get(turn_id)
        if kind == "deferred":
            self.book.deferred += 1
        elif kind == "error":
            self.book.errors[str(event.get("code"))] += 1
            if msg is not None:
                msg.error = str(event.get("code"))
        elif msg is None:
            return
        elif kind == "thinking":
            msg.thinking_at = msg.thinking_at or now
        elif kind == "completed":
            msg.completed_at = msg.completed_at or now
            msg.answer = str(event.get("text", ""))

    async def send(self, text: str, phase: str) -> Msg:
        self.counter += 1
        msg = Msg(f"s{self.index}-{self.counter}", self.index, text, phase, time.monotonic())
        self.book.messages.append(msg)
        self.book.by_client[msg.client_id] = msg
        self.unacked[msg.client_id] = msg
        await self._send(msg)
        return msg

    async def _send(self, msg: Msg) -> None:
        frame = json.dumps({"type": "message", "text": msg.text, "client_id": msg.client_id})
        if self.ws is None:
            return  # sent again once the socket is back
        with contextlib.suppress(websockets.ConnectionClosed):
            await self.ws.send(frame)

    async def close(self) -> None:
        self.stopping = True
        if self.ws is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.ws.close(), 5)
        if self.reader is not None:
            self.reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.reader


async def open_sessions(
    conversations: list[int], ports: list[int], cookie: str, book: Book, parallel: int = 20
) -> list[Session]:
    """One session per conversation, `parallel` handshakes at a time."""
    gate = asyncio.Semaphore(parallel)
    sessions = [Session(i, pk, ports, cookie, book) for i, pk in enumerate(conversations)]

    async def one(session: Session) -> None:
        async with gate:
            await session.open()

    await asyncio.gather(*(one(s) for s in sessions))
    return sessions


async def close_sessions(sessions: list[Session]) -> None:
    await asyncio.gather(*(s.close() for s in sessions))


async def wait_answered(book: Book, phase: str | None, timeout: float) -> float:
    """Seconds until every message (of `phase`) has its `completed`, at most `timeout`."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if book.answered(phase):
            break
        await asyncio.sleep(0.1)
    return time.monotonic() - started


async def warm_up(sessions: list[Session], book: Book, timeout: float = 120.0) -> None:
    """One turn per daphne port, one after the other: each process trains its router and
    compiles its graph before anything is measured (the worker on the first one)."""
    seen: set[int] = set()
    for session in sessions:
        if session.port in seen:
            continue
        seen.add(session.port)
        await session.send(MESSAGES[0], "warmup")
        if not await _answered_within(book, "warmup", timeout):
            raise RuntimeError(f"warm-up turn on port {session.port} not answered in {timeout} s")


async def _answered_within(book: Book, phase: str, timeout: float) -> bool:
    await wait_answered(book, phase, timeout)
    return book.answered(phase)


async def drive(
    sessions: list[Session], *, phase: str, seconds: float, interval: float, seed: int
) -> tuple[float, float]:
    """Every session sends one message every `interval` s (±25 %) for `seconds`.
    Returns the window (start, end) in time.monotonic()."""
    rng = random.Random(seed)
    start = time.monotonic()
    until = start + seconds
    most = int(seconds / (interval * 0.75)) + 2  # a bound on the loop, whatever the clock does

    async def sender(session: Session, offset: float, texts: Iterator[str]) -> None:
        await asyncio.sleep(offset)
        for _ in range(most):
            if time.monotonic() >= until:
                return
            await session.send(next(texts), phase)
            await asyncio.sleep(interval * rng.uniform(0.75, 1.25))

    def texts(first: int) -> Iterator[str]:
        position = first
        while True:
            yield MESSAGES[position % len(MESSAGES)]
            position += 1

    await asyncio.gather(*(sender(s, rng.uniform(0, interval), texts(s.index)) for s in sessions))
    return start, min(time.monotonic(), until)


# --- numbers ------------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def spread(values: list[float]) -> dict[str, float | int]:
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "p50": round(statistics.median(values), 1),
        "p95": round(percentile(values, 0.95), 1),
        "p99": round(percentile(values, 0.99), 1),
        "max": round(max(values), 1),
    }


def phase_report(
    book: Book,
    phase: str,
    window: tuple[float, float],
    interval: float,
    sessions: int,
    cpu: dict[str, float],
) -> dict[str, Any]:
    msgs = [m for m in book.messages if m.phase == phase]
    start, end = window
    done = [m for m in msgs if m.completed_at is not None]
    in_window = [m for m in done if m.completed_at is not None and m.completed_at <= end]

    def ms(attr: str) -> list[float]:
        return [(getattr(m, attr) - m.sent_at) * 1000 for m in msgs if getattr(m, attr)]

    return {
        "phase": phase,
        "interval_s": interval,
        "sessions": sessions,
        "seconds": round(end - start, 1),
        "offered_per_s": round(sessions / interval, 2),
        "sent_per_s": round(len(msgs) / (end - start), 2),
        "turns_per_s": round(len(in_window) / (end - start), 2),
        "sent": len(msgs),
        "acked": sum(1 for m in msgs if m.acked_at is not None),
        "answered": len(done),
        "turn_errors": dict(Counter(m.error for m in msgs if m.error)),
        "ack_ms": spread(ms("acked_at")),
        "thinking_ms": spread(ms("thinking_at")),
        "completed_ms": spread(ms("completed_at")),
        "cpu_s_per_turn": {k: round(v / max(1, len(done)), 4) for k, v in cpu.items()},
    }


def cpu_now(cluster: Cluster) -> dict[str, float]:
    return {**cluster.cpu(), "client": time.process_time()}


def cpu_since(before: dict[str, float], cluster: Cluster) -> dict[str, float]:
    after = cpu_now(cluster)
    return {kind: round(after[kind] - before.get(kind, 0.0), 2) for kind in after}


def table(phases: list[dict[str, Any]]) -> str:
    head = (
        f"{'phase':<10} {'every':>6} {'offer/s':>7} {'turns/s':>7} {'sent':>5} {'ack':>5} "
        f"{'done':>5}  {'ack ms p50/p95/p99':>20}  {'completed ms p50/p95/p99':>26}  errors"
    )
    rows = [head, "-" * len(head)]
    for p in phases:
        ack, done = p["ack_ms"], p["completed_ms"]
        rows.append(
            f"{p['phase']:<10} {p['interval_s']:>5}s {p['offered_per_s']:>7} "
            f"{p['turns_per_s']:>7} {p['sent']:>5} {p['acked']:>5} {p['answered']:>5}  "
            f"{_three(ack):>20}  {_three(done):>26}  {p['turn_errors'] or '-'}"
        )
    return "\n".join(rows)


def _three(s: dict[str, Any]) -> str:
    if not s.get("n"):
        return "-"
    return f"{s['p50']:.0f}/{s['p95']:.0f}/{s['p99']:.0f}"


# --- the run ------------------------------------------------------------------------------------


@dataclass
class Run:
    cluster: Cluster
    sessions: list[Session]
    book: Book
    conversations: list[int]


@contextlib.asynccontextmanager
async def connected(cluster: Cluster, count: int) -> Any:
    """Conversations, a login and one open socket each, warmed up; closed at the end."""
    conversations = await asyncio.to_thread(create_conversations, cluster, count)
    cookie = await asyncio.to_thread(login, f"http://{HOST}:{cluster.ports[0]}")
    book = Book()
    sessions = await open_sessions(conversations, cluster.ports, cookie, book)
    try:
        await warm_up(sessions, book)
        yield Run(cluster, sessions, book, conversations)
    finally:
        await close_sessions(sessions)


async def measure_phase(
    run: Run, *, phase: str, seconds: float, interval: float, drain: float, seed: int
) -> dict[str, Any]:
    # An earlier phase's backlog would be measured as this phase's latency: wait for it first
    # (the earlier phase's own drain may have given up), and say if some of it is still there.
    await wait_answered(run.book, None, drain)
    backlog = sum(1 for m in run.book.messages if m.completed_at is None)
    before = cpu_now(run.cluster)
    window = await drive(run.sessions, phase=phase, seconds=seconds, interval=interval, seed=seed)
    drained = await wait_answered(run.book, phase, drain)
    report = phase_report(
        run.book, phase, window, interval, len(run.sessions), cpu_since(before, run.cluster)
    )
    report["drain_s"] = round(drained, 1)
    report["backlog_at_start"] = backlog
    return report


def passes(report: dict[str, Any], target_ms: float) -> bool:
    p95 = report["completed_ms"].get("p95", float("inf"))
    return report["answered"] == report["sent"] and p95 <= target_ms


async def rate_search(run: Run, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Phases from the slowest interval down; bisect between the last pass and first failure."""
    phases: list[dict[str, Any]] = []
    best: float | None = None
    worst: float | None = None
    for number, interval in enumerate(args.intervals):
        report = await measure_phase(
            run, phase=f"i{interval:g}", seconds=args.seconds, interval=interval,
            drain=args.drain, seed=args.seed + number,
        )  # fmt: skip
        report["pass"] = passes(report, args.target_ms)
        phases.append(report)
        _progress(report)
        if not report["pass"]:
            worst = interval
            break
        best = interval
    for step in range(args.refine if best is not None and worst is not None else 0):
        assert best is not None and worst is not None
        interval = round((best + worst) / 2, 3)
        report = await measure_phase(
            run, phase=f"i{interval:g}", seconds=args.seconds, interval=interval,
            drain=args.drain, seed=args.seed + 100 + step,
        )  # fmt: skip
        report["pass"] = passes(report, args.target_ms)
        phases.append(report)
        _progress(report)
        best, worst = (interval, worst) if report["pass"] else (best, interval)
    return phases


def _progress(report: dict[str, Any]) -> None:
    done = report["completed_ms"]
    print(
        f"  {report['phase']}: {report['offered_per_s']}/s offered, {report['turns_per_s']} "
        f"turns/s, completed p95 {done.get('p95')} ms, {report['answered']}/{report['sent']} "
        f"answered, {'pass' if report.get('pass', True) else 'FAIL'}",
        file=sys.stderr,
    )


async def run_load(args: argparse.Namespace, cluster: Cluster) -> dict[str, Any]:
    async with connected(cluster, args.sessions) as run:
        if args.rate_search:
            phases = await rate_search(run, args)
        else:
            phases = [
                await measure_phase(
                    run,
                    phase="load",
                    seconds=args.seconds,
                    interval=args.interval,
                    drain=args.drain,
                    seed=args.seed,
                )
            ]
        book = run.book
        await asyncio.sleep(0.5)  # the last events of the drain
    check = await asyncio.to_thread(database_check, cluster, book, run.conversations)
    passed = [p["sent"] / p["seconds"] for p in phases if p.get("pass")]
    passed_rates = [p["offered_per_s"] for p in phases if p.get("pass")]
    return {
        "setup": cluster.setup,
        "tree": cluster.tree,
        "daphnes": len(cluster.ports),
        "sessions": args.sessions,
        "phases": phases,
        "best_rate_per_s": max(passed_rates) if args.rate_search and passed_rates else None,
        "best_sent_per_s": round(max(passed), 2) if args.rate_search and passed else None,
        "target_ms": args.target_ms,
        "socket_closes": dict(book.closes),
        "reconnects": book.reconnects,
        "connect_failures": book.connect_failures,
        "error_events": dict(book.errors),
        "deferred_events": book.deferred,
        "database": check,
        "server_log_errors": cluster.log_errors(),
        "answers": answer_samples(book),
    }


def answer_samples(book: Book, width: int = 90) -> dict[str, str]:
    """The first answer to each message text (to see the engine really answered)."""
    samples: dict[str, str] = {}
    for msg in book.messages:
        if msg.answer and msg.text not in samples:
            samples[msg.text] = " ".join(msg.answer.split())[:width]
    return samples


def print_report(report: dict[str, Any], as_json: bool, show_answers: bool = False) -> None:
    if as_json:
        print(json.dumps(report, ensure_ascii=False))
        return
    print(f"\nset-up {report['setup']}, {report['daphnes']} daphne, {report['sessions']} sessions")
    print(f"code: {report['tree']}")
    print(table(report["phases"]))
    if report.get("best_rate_per_s") is not None:
        print(
            f"highest offered rate with p95 completed <= {report['target_ms']:.0f} ms: "
            f"{report['best_rate_per_s']}/s (sent {report['best_sent_per_s']}/s)"
        )
    db = report["database"]
    print(
        f"database: sent {db['sent']}, stored {db['stored']}, lost {db['lost']}, "
        f"acked-not-stored {db['acked_not_stored']}, stored-unanswered "
        f"{db['stored_unanswered']}, finished-without-answer {db['finished_without_answer']}, "
        f"finished-not-delivered {db['finished_not_delivered']} (completed never logged "
        f"{db['finished_without_completed_event']}), "
        f"turns {db['turns']}, assistant rows {db['assistant_rows']}"
    )
    print(
        f"sockets closed {report['socket_closes'] or 0}, reconnects {report['reconnects']}, "
        f"error events {report['error_events'] or 0}, deferred {report['deferred_events']}"
    )
    for phase in report["phases"]:
        print(f"cpu s/turn {phase['phase']}: {phase['cpu_s_per_turn']}")
    if show_answers:
        for text, answer in report["answers"].items():
            print(f"  {text!r} -> {answer!r}")
    if report["server_log_errors"]:
        print("server logs:", json.dumps(report["server_log_errors"], ensure_ascii=False, indent=1))


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--setup", choices=["embedded", "redis"], default="embedded")
    p.add_argument("--sessions", type=int, default=200)
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--interval", type=float, default=10.0)
    p.add_argument("--drain", type=float, default=90.0, help="seconds to wait for answers")
    p.add_argument("--daphnes", type=int, default=2, help="redis set-up only")
    p.add_argument("--concurrency", type=int, default=8, help="threads per threaded worker")
    p.add_argument("--workers", type=int, default=1, help="redis: Celery worker processes")
    p.add_argument(
        "--pool",
        choices=POOLS,
        default="threads",
        help="redis: `threads` (N processes × --concurrency threads) or `prefork` (N children)",
    )
    p.add_argument("--runners", type=int, default=4, help="embedded: daphne's runner threads")
    p.add_argument("--beat", action="store_true", help="redis set-up: run celery beat too")
    p.add_argument("--database", default="capataz_load")
    p.add_argument("--redis-db", type=int, default=12)
    p.add_argument("--redis-port", type=int, default=None, help="start our own redis-server")
    p.add_argument("--rate-search", action="store_true")
    p.add_argument("--intervals", type=_floats, default=[10.0, 5.0, 3.0, 2.0, 1.5, 1.0])
    p.add_argument("--target-ms", type=float, default=1000.0)
    p.add_argument("--refine", type=int, default=2)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--logs", type=Path, default=None, help="keep the servers' logs here")
    p.add_argument("--answers", action="store_true", help="print the first answer to each text")
    p.add_argument("--json", action="store_true")
    return p


def _floats(raw: str) -> list[float]:
    values = [float(part) for part in raw.split(",") if part.strip()]
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError("a comma-separated list of positive seconds")
    return sorted(values, reverse=True)


def stop_on_sigterm() -> None:
    """SIGTERM stops like Ctrl-C: the `finally` blocks stop every server."""

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)


@contextlib.contextmanager
def var_dir(keep_logs: Path | None) -> Iterator[Path]:
    """A temporary CAPATAZ_VAR_DIR; the servers' logs are copied to `keep_logs` at the end."""
    with tempfile.TemporaryDirectory(prefix="capataz-load-") as folder:
        try:
            yield Path(folder)
        finally:
            if keep_logs is not None:
                keep_logs.mkdir(parents=True, exist_ok=True)
                for log in (Path(folder) / "logs").glob("*.log"):
                    (keep_logs / log.name).write_bytes(log.read_bytes())


def cluster_for(args: argparse.Namespace, folder: Path, **overrides: Any) -> Cluster:
    options: dict[str, Any] = {
        "var_dir": folder,
        "daphnes": args.daphnes,
        "concurrency": args.concurrency,
        "workers": getattr(args, "workers", 1),
        "pool": getattr(args, "pool", "threads"),
        "beat": getattr(args, "beat", False),
        "redis_port": args.redis_port,
        "redis_db": args.redis_db,
        "database": args.database,
        "runners": args.runners,
    }
    options.update(overrides)
    return Cluster(args.setup, **options)


def main() -> None:
    args = parser().parse_args()
    if not 0 < args.sessions <= MAX_SESSIONS:
        raise SystemExit(f"--sessions must be between 1 and {MAX_SESSIONS}")
    stop_on_sigterm()
    with var_dir(args.logs) as folder, cluster_for(args, folder) as cluster:
        report = asyncio.run(run_load(args, cluster))
    print_report(report, args.json, args.answers)


if __name__ == "__main__":
    main()
