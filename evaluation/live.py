"""A run's progress, live: every evaluation page of the organisation hears it.

Group `evaluation.o<organisation id>` carries `{"type": "run.progress", "run", "done", "total",
"status"}`; the socket (evaluation/consumers.py) passes it on as a `RunProgressFrame`. On the
embedded default the channel layer lives in the web process and a run works in the Celery
worker's, so the run page also polls its progress (htmx, every 2 s): what a frame says is
always readable from the run's row.
"""

from __future__ import annotations

from typing import Literal, TypedDict

from common.sockets import send_to_group

GROUP_MESSAGE = "run.progress"


class RunProgressFrame(TypedDict):
    type: Literal["run_progress"]
    run: int
    done: int
    total: int
    status: str


def group_name(organisation_id: int) -> str:
    return f"evaluation.o{int(organisation_id)}"


def tell(organisation_id: int, run_id: int, done: int, total: int, status: str) -> bool:
    message = {
        "type": GROUP_MESSAGE, "run": run_id, "done": done, "total": total, "status": status,
    }  # fmt: skip
    return send_to_group(group_name(organisation_id), message)
