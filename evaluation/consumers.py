"""The evaluation socket: managers and admins of one organisation hear its runs' progress.

It joins the organisation's group (evaluation/live.py) and takes no frames: runs are started
through the run form."""

from __future__ import annotations

import json
from typing import Any

from business.sockets import OrganisationGroupConsumer
from evaluation import live


class RunProgressConsumer(OrganisationGroupConsumer):
    permission = "view_metrics"

    def group_for(self, organisation_id: int) -> str:
        return live.group_name(organisation_id)

    async def run_progress(self, message: dict[str, Any]) -> None:
        frame: live.RunProgressFrame = {
            "type": "run_progress",
            "run": int(message["run"]),
            "done": int(message["done"]),
            "total": int(message["total"]),
            "status": str(message["status"]),
        }
        await self.send(text_data=json.dumps(frame))
