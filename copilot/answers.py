"""How an answer reads in the panel: its text as safe HTML, its "what I did" block, its record
chips and its urgency — one shape, built from the turn's stored events, rendered by one
template (templates/copilot/_answer.html) for the page and for the live view alike.

- **Text**: the reply is Markdown (lists, bold, tables). markdown-it-py renders it with raw HTML
  off, and nh3 (the Ammonia sanitiser) keeps only the tags and attributes below, with http(s)
  and mailto links only — a model's `<script>`, `onerror=` or `javascript:` never reaches a page.
- **Documents**: a quote's or invoice's PDF line ("PDF: /quotes/27/pdf/", written by the
  financial agent and read by WhatsApp's `for_customer` too) becomes a link to that PDF, named
  in the reader's language from the turn's records. Only that exact same-site shape, on a line of
  its own, is linked — the link is built here, never taken from the text.
- **Steps**: each agent the turn ran, with its tool calls (the translated `line` the call's event
  carries, its outcome and duration) and the approvals it asked for. `steps_for_turn` reads them
  from the conversation's event log when the reply is stored, and the reply's trace keeps them:
  the page shows what the live view showed, after the log's retention too.
- **Chips**: the records the calls' structured results named (`tool_result.records`), each once,
  linked to its page. Never parsed from the answer's text.
- **Urgency**: a step of an intent the registry says opens every chain (`first`: the emergency)
  makes the answer an alert; any other escalation a warning. The ticket it opened is its first
  chip. The events carry no registry: `steps_for_turn` asks it, once, when a step ran.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Collection, Iterable
from typing import Any, TypedDict

import nh3
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext
from markdown_it import MarkdownIt

from agents.events import RecordRef
from agents.selectors import chain_openers
from copilot.models import ConversationEvent

STEP_EVENTS = (
    "agent_start",
    "agent_end",
    "tool_start",
    "tool_result",
    "tool_end",
    "approval_requested",
)
ESCALATION_AGENT = "escalation"

ALLOWED_TAGS = {
    "p", "br", "strong", "em", "b", "i", "code", "pre", "blockquote", "ul", "ol", "li",
    "table", "thead", "tbody", "tr", "th", "td", "a", "h3", "h4", "h5", "h6", "hr", "del",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "th": {"style"}, "td": {"style"}, "ol": {"start"}}
URL_SCHEMES = {"http", "https", "mailto"}

# Raw HTML off: a model's markup shows as text; nh3 is the second line, not the only one.
_markdown = MarkdownIt("commonmark", {"html": False, "breaks": True, "linkify": False}).enable(
    ["table", "strikethrough"]
)


def render_markdown(text: str) -> SafeString:
    """The answer's text as sanitised HTML (headings demoted: an answer is not a page)."""
    html = _markdown.render(text or "")
    for level in (1, 2):
        html = html.replace(f"<h{level}>", "<h3>").replace(f"</h{level}>", "</h3>")
    clean = nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
        filter_style_properties={"text-align"},
    )
    return mark_safe(clean)  # noqa: S308 - nh3 output: only the allow-listed tags and attributes


# The line agents/financial/agent.py `_pdf` writes under a quote or an invoice.
_PDF_LINE = re.compile(
    r"^PDF: /(quotes|invoices)/(\d{1,12})/pdf/(?:\?lang=(es|en))?[ \t]*$", re.MULTILINE
)
_PDF_VIEWS = {"quotes": ("quote", "quote_pdf"), "invoices": ("invoice", "invoice_pdf")}


def render_answer(text: str, records: Iterable[RecordRef | dict[str, Any]] = ()) -> SafeString:
    """The answer's Markdown as sanitised HTML, each PDF line a link to its document. The line
    is held out of the Markdown behind a token no text can guess, and its link is put back
    after nh3: the href comes from `reverse`, the label from the records, escaped."""
    named = {(r["kind"], r["id"]): r["label"] for r in records if _is_ref(r)}
    nonce, links = secrets.token_hex(8), dict[str, str]()

    def hold(match: re.Match[str]) -> str:
        token = f"capatazpdf{nonce}x{len(links)}"
        links[token] = _document_link(match, named)
        return token

    html = str(render_markdown(_PDF_LINE.sub(hold, text or "")))
    for token, link in links.items():
        html = html.replace(token, link)
    return mark_safe(html)  # noqa: S308 - nh3 output plus links built by format_html


def _document_link(match: re.Match[str], named: dict[tuple[str, int], str]) -> str:
    kind, view = _PDF_VIEWS[match.group(1)]
    pk = int(match.group(2))
    href = reverse(view, args=[pk]) + (f"?lang={match.group(3)}" if match.group(3) else "")
    number = named.get((kind, pk)) or f"#{pk}"
    if kind == "quote":
        label = gettext("Quote %(number)s (PDF)") % {"number": number}
    else:
        label = gettext("Invoice %(number)s (PDF)") % {"number": number}
    return format_html(
        '<a class="chip chip-document" href="{}" target="_blank" rel="noopener" '
        'data-document="{}:{}">{}</a>',
        href, kind, pk, label,
    )  # fmt: skip


class ToolStep(TypedDict):
    tool: str
    line: str
    ok: bool | None  # None: still running (or the turn was cut off)
    ms: float | None
    records: list[RecordRef]


class AgentStep(TypedDict):
    agent: str
    label: str
    intent: str
    status: str  # running, ok, bad, ask (asked the operator), muted (yielded)
    ms: float | None
    tools: list[ToolStep]
    approvals: list[dict[str, Any]]


class Steps(TypedDict):
    agents: list[AgentStep]
    records: list[RecordRef]
    urgency: str  # "", "escalation" or "emergency"


def _agent_step(event: dict[str, Any]) -> AgentStep:
    return {
        "agent": str(event.get("agent", "")),
        "label": str(event.get("label") or event.get("agent", "")),
        "intent": str(event.get("intent", "")),
        "status": "running",
        "ms": None,
        "tools": [],
        "approvals": [],
    }


def _status(event: dict[str, Any]) -> str:
    if event.get("clarifying"):
        return "ask"
    if event.get("yielded"):
        return "muted"
    return "ok" if event.get("success") else "bad"


def _owner(agents: list[AgentStep], event: dict[str, Any]) -> AgentStep:
    """The step of the event's agent (the latest one running it); a call made outside any step
    (a decision turn running an approved action) gets a step of its own."""
    name = str(event.get("agent", ""))
    for step in reversed(agents):
        if step["agent"] == name:
            return step
    step = _agent_step({"agent": name})
    agents.append(step)
    return step


def _last_tool(step: AgentStep, tool: str) -> ToolStep | None:
    return next((t for t in reversed(step["tools"]) if t["tool"] == tool), None)


def build_steps(events: list[dict[str, Any]], first: Collection[str] = ()) -> Steps:
    """The "what I did" of one turn from its events, in order (the same code for a stored
    trace and a test's events); `first`: the registry's intents that open a chain."""
    agents: list[AgentStep] = []
    for event in events:
        kind = event.get("type")
        if kind == "agent_start":
            agents.append(_agent_step(event))
            if "success" in event:  # folded with its end (copilot/turnlog.py)
                _ended(agents[-1], event)
        elif kind == "agent_end":
            _ended(_owner(agents, event), event)
        elif kind == "tool_start":
            _owner(agents, event)["tools"].append(_tool_step(event))
        elif kind in ("tool_result", "tool_end"):
            _tool_outcome(_owner(agents, event), event)
        elif kind == "approval_requested":
            _owner(agents, event)["approvals"].append(
                {"id": event.get("approval_id"), "summary": str(event.get("summary", ""))}
            )
    return {"agents": agents, "records": _records(agents), "urgency": _urgency(agents, first)}


def _ended(step: AgentStep, event: dict[str, Any]) -> None:
    step["status"], step["ms"] = _status(event), event.get("latency_ms")


def _tool_step(event: dict[str, Any]) -> ToolStep:
    return {"tool": str(event.get("tool", "")), "line": "", "ok": None, "ms": None, "records": []}


def _tool_outcome(step: AgentStep, event: dict[str, Any]) -> None:
    """A call's result and duration, on its start's row; a folded `tool_result` (no start
    before it) is a row of its own."""
    tool = str(event.get("tool", ""))
    found = _last_tool(step, tool)
    if event["type"] == "tool_result" and (found is None or found["ok"] is not None):
        found = _tool_step(event)
        step["tools"].append(found)
    if found is None:
        return
    if "latency_ms" in event:
        found["ms"] = event.get("latency_ms")
    if event["type"] == "tool_result":
        found["ok"] = bool(event.get("ok"))
        found["line"] = str(event.get("line") or "")
        found["records"] = [r for r in event.get("records") or [] if _is_ref(r)]


def _is_ref(value: object) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("id"), int)
        and value.get("kind") in CHIP_URLS
        and isinstance(value.get("label"), str)
    )


def _records(agents: list[AgentStep]) -> list[RecordRef]:
    """Every record the calls named, each once; a ticket and an approval first (they are what
    the operator acts on next)."""
    seen: dict[tuple[str, int], RecordRef] = {}
    for step in agents:
        for approval in step["approvals"]:
            if isinstance(approval["id"], int):
                ref: RecordRef = {
                    "kind": "approval",
                    "id": approval["id"],
                    "label": f"#{approval['id']}",
                }
                seen.setdefault(("approval", approval["id"]), ref)
        for tool in step["tools"]:
            for ref in tool["records"]:
                seen.setdefault((ref["kind"], ref["id"]), ref)
    order = {"ticket": 0, "approval": 1}
    return sorted(seen.values(), key=lambda r: order.get(r["kind"], 2))


def _urgency(agents: list[AgentStep], first: Collection[str]) -> str:
    if any(s["intent"] in first for s in agents):
        return "emergency"
    return "escalation" if any(s["agent"] == ESCALATION_AGENT for s in agents) else ""


def steps_for_turn(
    conversation_id: int, turn_id: str, first: Collection[str] | None = None
) -> Steps:
    """The turn's steps from the conversation's event log (what the live view was sent).
    `first`: the registry's chain openers when the caller holds them (a turn's reading), else
    read from the registry."""
    rows = list(
        ConversationEvent.objects.filter(
            conversation_id=conversation_id, turn_id=turn_id, type__in=STEP_EVENTS
        )
        .order_by("seq")
        .values("payload", "organisation_id")
    )
    organisation_id = rows[0]["organisation_id"] if rows else 0
    return steps_of([row["payload"] for row in rows], organisation_id, first)


def steps_of(
    events: Iterable[dict[str, Any]], organisation_id: int, first: Collection[str] | None = None
) -> Steps:
    """The steps of a turn's events as a turn holds them (copilot/turnlog.py `events`)."""
    steps = [event for event in events if event.get("type") in STEP_EVENTS]
    if first is None:
        first = chain_openers(organisation_id) if steps else frozenset()
    return build_steps(steps, first)


# --- chips ---------------------------------------------------------------------------------

CHIP_URLS = {
    "job": "job_detail",
    "customer": "customer_detail",
    "quote": "quote_detail",
    "invoice": "invoice_detail",
    "approval": "approval_detail",
    "ticket": "tickets",
}


def chip_url(ref: RecordRef | dict[str, Any]) -> str:
    name = CHIP_URLS.get(ref.get("kind", ""))
    if name is None:
        return ""
    try:
        if name == "tickets":  # no page of its own: the list, scrolled to it
            return f"{reverse(name)}#ticket-{int(ref['id'])}"
        return reverse(name, args=[int(ref["id"])])
    except (NoReverseMatch, TypeError, ValueError):
        return ""
