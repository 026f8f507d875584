"""Choices on WhatsApp (issue 27.2): a reply that lists options goes out as reply buttons or a
list, and the customer's tap comes back as that option.

The copilot offers choices as lines of a question ("¿Cuál de estos turnos te queda bien?\n- jueves
10:00\n- viernes 15:00"); the panel shows them as text and the NLU reads the operator's answer
against them (nlu/answers.py). On WhatsApp the same reply becomes an interactive message within
the Cloud API's limits — up to 3 reply buttons of at most 20 characters, else a list of up to 10
rows (a 24-character title and a 72-character description each) — and the tap's id names the
option, so the turn reads the option's whole line, exactly as if the customer had typed it. Text
replies to the same question keep working, and a reply that does not fit stays plain text.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from common.wording import say
from copilot.models import Conversation, Message
from nlu.answers import option_lines, without_options

BUTTONS, BUTTON_TITLE = 3, 20
ROWS, ROW_TITLE, ROW_DESCRIPTION = 10, 24, 72
BODY_LIMIT = 1024
ID_PREFIX = "opt:"


def interactive_body(
    to: str, text: str, language: str, *, yes_no: bool = False
) -> dict[str, Any] | None:
    """The Graph API body of `text` as reply buttons or a list; None when it offers no choices
    or they do not fit (it then goes as text). `yes_no`: the question waiting for an answer is a
    yes-or-no one (copilot/orchestration/clarify.py), offered as "Sí" and "No" buttons."""
    options = option_lines(text)
    if yes_no and not options and "?" in text and len(text) <= BODY_LIMIT:
        yes, no = (
            say(language, pgettext_lazy("answer", "Yes")),
            say(language, pgettext_lazy("answer", "No")),
        )
        return _message(to, "button", text, _buttons([("yes", yes), ("no", no)]))
    if not 2 <= len(options) <= ROWS or len(set(options)) != len(options):
        return None
    body = without_options(text)
    # Only a question offers choices: a list of facts ("your visits: - …") stays text.
    if "?" not in body or len(body) > BODY_LIMIT:
        return None
    if len(options) <= BUTTONS and all(len(option) <= BUTTON_TITLE for option in options):
        numbered = [(f"{ID_PREFIX}{n}", option) for n, option in enumerate(options, 1)]
        return _message(to, "button", body, _buttons(numbered))
    rows = [_row(n, option) for n, option in enumerate(options, 1)]
    if any(row is None for row in rows):
        return None
    label = say(language, _("See options"))[:BUTTON_TITLE]
    return _message(to, "list", body, {"button": label, "sections": [{"rows": rows}]})


def _buttons(choices: list[tuple[str, str]]) -> dict[str, Any]:
    return {"buttons": [{"type": "reply", "reply": {"id": id_, "title": title}}
                        for id_, title in choices]}  # fmt: skip


def _message(to: str, kind: str, body: str, action: dict[str, Any]) -> dict[str, Any]:
    return {
        "messaging_product": "whatsapp", "recipient_type": "individual", "to": to,
        "type": "interactive",
        "interactive": {"type": kind, "body": {"text": body}, "action": action},
    }  # fmt: skip


def _row(number: int, option: str) -> dict[str, str] | None:
    """A list row: the option's first words as its title, the rest as its description."""
    if len(option) <= ROW_TITLE:
        return {"id": f"{ID_PREFIX}{number}", "title": option}
    cut = option.rfind(" ", 0, ROW_TITLE + 1)
    cut = cut if cut > 0 else ROW_TITLE
    title, rest = option[:cut].rstrip(" ,;:—-"), option[cut:].strip(" ,;:—-")
    if len(rest) > ROW_DESCRIPTION or not title:
        return None
    return {"id": f"{ID_PREFIX}{number}", "title": title, "description": rest}


def chosen(conversation: Conversation, choice_id: str, title: str) -> str:
    """What a tapped button or list row says: the whole line of the option it names in our
    latest reply, or the title the customer saw when that reply is gone or lists no such line."""
    if not choice_id.startswith(ID_PREFIX) or not choice_id[len(ID_PREFIX) :].isdigit():
        return title
    number = int(choice_id[len(ID_PREFIX) :])
    latest = (
        Message.objects.filter(conversation=conversation, role=Message.Role.ASSISTANT)
        .order_by("-pk")
        .values_list("text", flat=True)
        .first()
    )
    options = option_lines(latest or "")
    return options[number - 1] if 1 <= number <= len(options) else title
