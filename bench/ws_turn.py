"""Single-intent copilot turns over a real websocket on the embedded default.

Starts daphne on a free port with a fresh SQLite database in a temporary folder, loads the demo
organisation, logs in as the operator over HTTP, opens a conversation and sends messages through a
real websocket client, one at a time. Prints JSON (ms, p50/p95) from sending the frame to:
- `first_event_ms`: its `accepted` (the message is stored; the socket's first event for it),
- `thinking_ms`: its turn's first event (`thinking`: a runner took the turn),
- `completed_ms`: its turn's `completed`.

    .venv/bin/python bench/ws_turn.py [--turns 30] [--json]
Targets (issue 3): first event ≤ 50 ms and completed ≤ 300 ms at the median.
bench/load.py runs many sockets at once, on the embedded default or with PostgreSQL and Redis.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import websockets

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable

MESSAGES = [
    "¿qué técnicos están libres mañana a la mañana?",
    "buscame el cliente Panadería La Espiga",
    "¿cuál es el horario de atención?",
    "validame el cuit 20-12345678-6",
    "what equipment is due for maintenance?",
    "cuánto debe el Consorcio Av. Cabildo 2150",
    "hola",
    "which jobs were completed recently and need a follow-up?",
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def prepare(env: dict[str, str]) -> None:
    for args in (["migrate", "--noinput", "-v0"], ["load_demo"]):
        subprocess.run(
            [PY, "manage.py", *args], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL
        )


def wait_for(url: str, timeout: float = 30.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            httpx.get(url, timeout=1.0)
            return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise RuntimeError(f"server at {url} did not start")


def login(base: str) -> tuple[httpx.Client, int]:
    client = httpx.Client(base_url=base, follow_redirects=True, timeout=10)
    page = client.get("/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token, "no CSRF token on the login page"
    client.post(
        "/login/",
        data={
            "username": "operadora",
            "password": "capataz",
            "csrfmiddlewaretoken": token.group(1),
        },
    )
    response = client.post("/chat/new/", headers={"X-CSRFToken": client.cookies["csrftoken"]})
    match = re.search(r"/chat/(\d+)/", str(response.url))
    assert match, f"no conversation created: {response.url}"
    return client, int(match.group(1))


async def run_turns(base_ws: str, cookies: str, origin: str, turns: int) -> list[dict[str, float]]:
    results = []
    headers = {"Cookie": cookies, "Origin": origin}
    async with websockets.connect(base_ws, additional_headers=headers) as socket_:
        for i in range(turns):
            text = MESSAGES[i % len(MESSAGES)]
            client_id = f"bench-{i}-{time.monotonic_ns()}"
            started = time.perf_counter()
            await socket_.send(
                json.dumps({"type": "message", "text": text, "client_id": client_id})
            )
            marks = await _turn_marks(socket_, client_id)
            results.append({f"{name}_ms": (at - started) * 1000 for name, at in marks.items()})
    return results


async def _turn_marks(socket_: Any, client_id: str, timeout: float = 60) -> dict[str, float]:
    """When this frame's `accepted`, and its turn's `thinking` and `completed`, arrived."""
    marks: dict[str, float] = {}
    turn_id = None
    while "completed" not in marks:
        event = json.loads(await asyncio.wait_for(socket_.recv(), timeout))
        now = time.perf_counter()
        if event["type"] == "accepted" and event.get("client_id") == client_id:
            turn_id, marks["accepted"] = event["turn_id"], now
        elif turn_id is not None and event.get("turn_id") == turn_id:
            if event["type"] == "error":
                raise SystemExit(f"the turn failed: {event}")
            marks.setdefault(event["type"], now)
    return {name: marks[name] for name in ("accepted", "thinking", "completed")}


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return {"p50": round(statistics.median(ordered), 2), "p95": round(p95, 2)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    port = free_port()
    with tempfile.TemporaryDirectory() as var:
        env = {
            **os.environ,
            "CAPATAZ_VAR_DIR": var,
            "DATABASE_URL": "",
            "REDIS_URL": "",
            "DEBUG": "true",
            "LOG_LEVEL": "WARNING",
        }
        prepare(env)
        server = subprocess.Popen(
            [
                str(Path(PY).parent / "daphne"),
                "-b",
                "127.0.0.1",
                "-p",
                str(port),
                "capataz.asgi:application",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            wait_for(base + "/login/")
            client, conversation_id = login(base)
            cookies = "; ".join(f"{k}={v}" for k, v in client.cookies.items())
            ws_url = f"ws://127.0.0.1:{port}/ws/chat/{conversation_id}/"
            # One warm-up turn trains the organisation's router (cached afterwards).
            asyncio.run(run_turns(ws_url, cookies, base, 1))
            results = asyncio.run(run_turns(ws_url, cookies, base, args.turns))
        finally:
            server.terminate()
            server.wait(timeout=10)
    report = {
        "turns": len(results),
        "first_event_ms": summary([r["accepted_ms"] for r in results]),
        "thinking_ms": summary([r["thinking_ms"] for r in results]),
        "completed_ms": summary([r["completed_ms"] for r in results]),
    }
    print(json.dumps(report) if args.json else json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
