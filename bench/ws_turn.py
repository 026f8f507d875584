"""Single-intent copilot turns over a real websocket on the embedded default.

Starts daphne on a free port with a fresh SQLite database in a temporary folder, loads the demo
organisation, logs in as the operator over HTTP, opens a conversation and sends messages through a
real websocket client. Prints JSON: time to the first event and to `completed` (ms, p50/p95).

    .venv/bin/python bench/ws_turn.py [--turns 30] [--json]
Targets (issue 3): first event ≤ 50 ms and completed ≤ 300 ms at the median.
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
            started = time.perf_counter()
            await socket_.send(json.dumps({"type": "message", "text": text}))
            first = None
            while True:
                event = json.loads(await socket_.recv())
                now = time.perf_counter()
                if first is None:
                    first = now
                if event["type"] == "completed":
                    break
            results.append(
                {"first_ms": (first - started) * 1000, "completed_ms": (now - started) * 1000}
            )
    return results


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
                "copilot.asgi:application",
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
        "first_event_ms": summary([r["first_ms"] for r in results]),
        "completed_ms": summary([r["completed_ms"] for r in results]),
    }
    print(json.dumps(report) if args.json else json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
