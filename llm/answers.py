"""Whether a model's text is an answer at all (O4): what small or confused models send instead.

A step's final text is shown to the operator as the agent's answer. Some text is not one: the
prompt's own fences echoed back, tags the server HTML-escaped, chat-template tokens, a tool
result's raw JSON, the same sentence over and over, or nothing. `problem(text)` names the first
such defect ("" when the text may stand); the caller discards the text and falls back.

Stdlib only.
"""

from __future__ import annotations

import json
import re

from common.text import fold

# The tags our prompts fence untrusted text with (llm/fencing.py's callers), and the
# chat-template and tool-call markers of common open models.
FENCE_TAGS = ("user_message", "prior_context", "summary", "question")
_FENCE = re.compile(rf"<\s*/?\s*({'|'.join(FENCE_TAGS)})\s*>", re.IGNORECASE)
_ESCAPED_TAG = re.compile(r"&lt;\s*/?\s*[a-z_][\w-]*\s*(?:&gt;|>)", re.IGNORECASE)
_TEMPLATE_TOKEN = re.compile(
    r"<\|[a-z_]+\|>|</?tool_call>|\[/?(?:TOOL_CALLS|INST)\]|<start_of_turn>|<end_of_turn>",
    re.IGNORECASE,
)
_ENTITY = re.compile(r"&(?:#\d{2,5}|#x[0-9a-f]{2,4}|quot|amp|apos|lt|gt);", re.IGNORECASE)
# A tool call written out as text ("functions.ticket_create: {…}", "job_book({…})").
_CALL_AS_TEXT = re.compile(
    r"\bfunctions?\.\w+\s*[:(]|\b[a-z]+(?:_[a-z]+)+\s*(?::\s*|\(\s*)\{", re.IGNORECASE
)
# `"held": true` — a tool result's keys and values pasted into prose.
_JSON_FIELD = re.compile(r'"[a-z_]{2,30}"\s*:\s*(?:true|false|null|-?\d|"|\{|\[)', re.IGNORECASE)
_SENTENCE = re.compile(r"[^.!?\n]+")
REPEATS = 3  # the same sentence this many times is a loop, not emphasis
MIN_WORDS_FOR_RATIO = 60
MIN_DISTINCT_TRIGRAMS = 0.3


def problem(text: str) -> str:
    """Why `text` is not an answer ("" when it may be shown)."""
    stripped = text.strip()
    if not stripped:
        return "empty"
    if _FENCE.search(stripped):
        return "echoed prompt fence"
    if _ESCAPED_TAG.search(stripped):
        return "escaped markup"
    if len(_ENTITY.findall(stripped)) >= 2:
        return "escaped markup"
    if _TEMPLATE_TOKEN.search(stripped):
        return "chat-template token"
    if _CALL_AS_TEXT.search(stripped):
        return "tool call as text"
    if _raw_json(stripped) or _JSON_FIELD.search(stripped):
        return "raw tool data"
    if repeated(stripped):
        return "repetition"
    return ""


def _raw_json(text: str) -> bool:
    if text[0] not in "{[":
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _fold(text: str) -> str:
    """`fold` keeping only letters, digits and single spaces: a repeated sentence is the same
    words whatever its punctuation."""
    return " ".join("".join(c for c in fold(text) if c.isalnum() or c.isspace()).split())


def repeated(text: str) -> bool:
    """A sentence of three or more words said `REPEATS` times, or a long text that keeps
    cycling through the same few word triples."""
    counts: dict[str, int] = {}
    for match in _SENTENCE.finditer(text):
        sentence = _fold(match.group())
        if len(sentence.split()) >= 3:
            counts[sentence] = counts.get(sentence, 0) + 1
            if counts[sentence] >= REPEATS:
                return True
    words = _fold(text).split()
    if len(words) < MIN_WORDS_FOR_RATIO:
        return False
    trigrams = [tuple(words[i : i + 3]) for i in range(len(words) - 2)]
    return len(set(trigrams)) / len(trigrams) < MIN_DISTINCT_TRIGRAMS
