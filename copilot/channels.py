"""Where a conversation's messages come from and go to: the panel, or a channel app plugged in.

The turn imports no channel. It asks the conversation's channel (`channel_of`) at the few points
where a channel may add to it — before the graph runs, what the reader may see of the reply, what
happens once a reply is stored — and the panel's answers to those questions are the defaults of
`Channel`. A channel app (whatsapp/) subclasses `Channel` and registers an instance from its
`AppConfig.ready`; it also brings its own URLs and socket routes, mounted by the configuration
(capataz/urls.py, capataz/asgi.py) from this registry. Adding a channel touches its own app and
the settings' INSTALLED_APPS.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from copilot.models import Conversation, Message, Turn
    from copilot.orchestration.state import TurnRun, TurnState

Emit = Callable[[Any], None]


class Channel:
    """The panel: an organisation's member reads every reply in the browser."""

    name = "panel"
    # Mounted at /<name>/ (a dotted urlconf with its own app_name), and socket routes.
    urls: str | None = None
    websocket_urlpatterns: list[Any] = []
    # "aprobá la #12" typed in the chat decides a held action (a manager at the panel); a
    # channel whose writers are not members never reads messages as decisions.
    takes_decisions = True

    def person_answers(self, conversation: Conversation) -> bool:
        """A person took the conversation over: the copilot leaves the turn unanswered."""
        return False

    def before_graph(self, turn: Turn, emit: Emit) -> Any:
        """What the channel does before the graph reads the message: None to go on, or the
        turn's result when the channel answered it itself (a registration step)."""
        return None

    def customer_of(self, conversation: Conversation) -> int | None:
        """The customer whose own records the turn is pinned to (the writer is that customer)."""
        return None

    def reply_for_reader(self, run: TurnRun, state: TurnState, asked: Message) -> Any:
        """Rewrite `state`'s reply for whoever reads it; what it returns goes to `reply_stored`."""
        return None

    def reply_stored(self, conversation: Conversation, answer: Message, extra: Any) -> Message:
        """After the turn's reply is stored, in its transaction (documents sent after it);
        returns the message that closes the turn."""
        return answer

    def message_stored(self, conversation: Conversation, message: Message) -> None:
        """Any assistant message stored in the conversation (in the storing transaction)."""


PANEL = Channel()
_CHANNELS: dict[str, Channel] = {}


def register(channel: Channel) -> None:
    _CHANNELS[channel.name] = channel


def channel_of(conversation: Conversation) -> Channel:
    return _CHANNELS.get(conversation.channel, PANEL)


def registered() -> list[Channel]:
    return list(_CHANNELS.values())
