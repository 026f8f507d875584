"""What a customer's photo changes, written by the agents that own those records (issue 25.4).

A photo's reading (whatsapp/media.py) names the sender's equipment and, when the conversation is
about one of the sender's jobs, becomes a note on it. Neither is written here: the customer
agent's `equipment_record` and the scheduling agent's `job_note_add` run through `Runner.call`,
like a turn's tools, so each call passes the agent's tool whitelist and approval rules, leaves
its ToolCall row and emits its tool events. The media job is no turn: its calls and events carry
the media's own id (`media-<pk>`) as their turn id, and `close` ends that run in the
conversation's log with a `completed` event for the answer sent to the customer (the panel draws
the steps under it). A disabled agent, a tool an administrator took away, a call held for a
manager or refused: nothing is written, and the answer says only what was read.
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from agents.base import Chain, Runner, Step
from agents.context import TurnContext
from agents.events import CompletedEvent, Event
from agents.models import Agent
from agents.registry import ToolResult
from agents.selectors import agents_for_org
from copilot import eventlog
from copilot.models import Message
from nlu import Entities
from whatsapp.models import IncomingMedia

# The agent that owns each record a photo may change, and the tool it changes it with.
OWNERS = {"equipment_record": "customer", "job_note_add": "scheduling"}


def run_id(media: IncomingMedia) -> str:
    """The turn id the media job's calls and events carry."""
    return f"media-{media.pk}"


class PhotoSteps:
    """The media job's tool calls for one photo, each through its owning agent's `Runner`."""

    def __init__(self, media: IncomingMedia, language: str) -> None:
        self.media = media
        self.ctx = TurnContext(
            organisation=media.organisation, user=None, conversation_id=media.conversation_id,
            now=timezone.now(), turn_id=run_id(media), text=media.caption, emit=self._publish,
        )  # fmt: skip
        self.chain = Chain(language)
        self.agents: dict[str, Agent] = {
            agent.name: agent
            for agent in agents_for_org(media.organisation).filter(name__in=OWNERS.values())
        }
        self.called = False

    def call(self, tool: str, **arguments: Any) -> ToolResult | None:
        """The tool's result; None when its owning agent is not enabled here."""
        agent = self.agents.get(OWNERS[tool])
        if agent is None:
            return None
        step = Step(index=0, intent="", agent=agent.name, confidence=1.0,
                    text=self.media.caption, entities=Entities())  # fmt: skip
        self.called = True
        return Runner(self.ctx, self.chain, agent, step).call(tool, **arguments)

    def close(self, answer: Message) -> None:
        """The run's `completed` event, with the answer to the sender (when a tool ran)."""
        if self.called:
            self._publish(CompletedEvent(type="completed", turn_id=self.ctx.turn_id,
                                         message_id=answer.pk, text=answer.text))  # fmt: skip

    def _publish(self, event: Event) -> None:
        eventlog.publish(self.media.organisation_id, self.media.conversation_id, event)
