"""From the model's first text token to the first `text` event in the browser, on the llm engine.

    .venv/bin/python bench/llm_first_token.py [--turns 30] [--delay-ms 50] [--json]

A scripted OpenAI-compatible server (`testing.scripted.ScriptedServer`) runs in this process;
daphne runs as a subprocess (like bench/ws_turn.py) on a fresh SQLite database with the demo
organisation on `engine="llm"`, its provider taken from OPENAI_BASE_URL / OPENAI_API_KEY in
daphne's environment, pointing at the scripted server. A real websocket client (this process)
logs in as the operator and sends "¿qué turnos libres hay mañana a la mañana?" each turn:
the orchestrator model streams a preamble then calls `ask_scheduling`; the scheduling agent
calls `slots_find` on the demo, then streams its answer.

Every chunk the server sends waits `--delay-ms` first, so a token's moment is not confounded
with the start of its request. The server records `time.monotonic()` just before writing a
request's first content chunk; the client records `time.monotonic()` when a `text` event
arrives: same process, same clock. Two latencies per turn:

- preamble: the orchestrator's first text token → the turn's first `text` event (what the
  operator sees first);
- agent: the scheduling agent's first text token → the first `text` event of that agent.

Prints JSON with p50/p95 ms of each (the headline `first_token_ms_p50` is the preamble's).
Target (issue 4): p50 ≤ 15 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import websockets

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _llm_bench import (  # noqa: E402
    PREAMBLE,
    SCENARIOS,
    SCHEDULING_REPLY,
    after_tool,
    bench_env,
    dump,
    prepare_demo,
    script,
    summary,
)
from ws_turn import free_port, login, wait_for  # noqa: E402

from testing.scripted import ScriptedServer, for_tool  # noqa: E402

SCENARIO = SCENARIOS["single"]
ORCHESTRATOR = for_tool("ask_scheduling")
AGENT_TEXT = after_tool("slots_find")


async def run_turns(
    url: str, cookies: str, origin: str, server: ScriptedServer, turns: int
) -> list[dict[str, float]]:
    """Send `turns` messages; per turn, the two latencies in ms."""
    results = []
    headers = {"Cookie": cookies, "Origin": origin}
    async with websockets.connect(url, additional_headers=headers) as socket_:
        for _ in range(turns):
            seen = len(server.requests)
            await socket_.send(json.dumps({"type": "message", "text": SCENARIO.text}))
            first_text: float | None = None
            first_agent: float | None = None
            texts: list[str] = []
            while True:
                event = json.loads(await socket_.recv())
                now = time.monotonic()
                if event["type"] == "text":
                    texts.append(event["text"])
                    first_text = first_text if first_text is not None else now
                    if event.get("agent") == "scheduling" and first_agent is None:
                        first_agent = now
                elif event["type"] == "error":
                    raise SystemExit(f"the turn failed: {event}")
                elif event["type"] == "completed":
                    break
            results.append(_latencies(server, seen, first_text, first_agent, "".join(texts)))
    return results


def _latencies(
    server: ScriptedServer,
    seen: int,
    first_text: float | None,
    first_agent: float | None,
    shown: str,
) -> dict[str, float]:
    requests = server.requests[seen:]
    moments = server.first_token_at[seen:]
    orchestrator = [m for r, m in zip(requests, moments, strict=True) if ORCHESTRATOR(r)]
    agent = [m for r, m in zip(requests, moments, strict=True) if AGENT_TEXT(r)]
    if not (orchestrator and agent and orchestrator[0] and agent[0]):
        raise SystemExit(f"the turn did not go through the model as scripted: {requests!r:.600}")
    if first_text is None or first_agent is None or not shown.startswith(PREAMBLE[:8]):
        raise SystemExit(f"no preamble or agent text reached the browser: {shown!r}")
    if SCHEDULING_REPLY not in shown:
        raise SystemExit(f"the agent's answer did not stream: {shown!r}")
    return {
        "preamble_ms": (first_text - orchestrator[0]) * 1000,
        "agent_ms": (first_agent - agent[0]) * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--delay-ms", type=float, default=50.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    port = free_port()
    with ScriptedServer() as server, tempfile.TemporaryDirectory() as var:
        script(server, SCENARIO, delay=args.delay_ms / 1000)
        env = bench_env(var, server)
        prepare_demo(env, engine="llm")
        daphne = subprocess.Popen(
            [str(Path(sys.executable).parent / "daphne"), "-b", "127.0.0.1", "-p", str(port),
             "capataz.asgi:application"],
            cwd=Path(__file__).resolve().parent.parent, env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            base = f"http://127.0.0.1:{port}"
            wait_for(base + "/login/")
            client, conversation_id = login(base)
            cookies = "; ".join(f"{k}={v}" for k, v in client.cookies.items())
            url = f"ws://127.0.0.1:{port}/ws/chat/{conversation_id}/"
            # Warm-up: the router's training, LangGraph's import and the graph's compilation.
            asyncio.run(run_turns(url, cookies, base, server, args.warmup))
            results = asyncio.run(run_turns(url, cookies, base, server, args.turns))
        finally:
            daphne.terminate()
            daphne.wait(timeout=10)
    preamble = [r["preamble_ms"] for r in results]
    agent = [r["agent_ms"] for r in results]
    report: dict[str, Any] = {
        "first_token_ms_p50": summary(preamble)["p50"],
        "first_token_ms_p95": summary(preamble)["p95"],
        "preamble_ms": summary(preamble),
        "agent_ms": summary(agent),
        "turns": len(results),
        "chunk_delay_ms": args.delay_ms,
    }
    dump(report, args.json)


if __name__ == "__main__":
    main()
