"""The sub-agent template (O6) shared by every agent in `agents/<name>/`.

A sub-agent step receives the intent the router chose, the segment of the message it came from and
its entities. Its handler resolves the work with data: it loads what it needs through tools
(`Runner.call`), which enforces the agent's tool whitelist, its `max_plan_steps` and the approval
gate, writes one `ToolCall` row per call and emits the tool events of the protocol. It returns an
`Outcome`: the text for the operator, whether it succeeded, and the context mutations later steps
of the same turn build on.

Replies are written in the language of the message (not the UI's): handlers mark English
sentences with `gettext_lazy` and render them with `Runner.say` (common/wording.py), the es-AR
words coming from the catalogue.
"""

from __future__ import annotations

import datetime
import importlib
import json
import time
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any
from zoneinfo import ZoneInfo

from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.utils.functional import Promise

from agents import customer_scope
from agents.context import TurnContext
from agents.events import ApprovalRequestedEvent, ToolEndEvent, ToolResultEvent, ToolStartEvent
from agents.models import Agent, ToolCall
from agents.registry import (
    AGENT_MODULES,
    Category,
    Tool,
    ToolError,
    ToolResult,
    failure,
    get_tool,
    write_key,
)
from agents.step_lines import records_of, tool_line
from approvals.gate import Filing, Held, ProposedCall, hold, needs_approval
from common.wording import say
from nlu import Entities


@dataclass
class Mutation:
    """A structured result of one step that later steps may use (a created customer, a job…)."""

    kind: str
    id: int
    label: str
    data: dict[str, Any] = field(default_factory=dict)


# Keys of the conversation's working state that the sub-agents read and the chain keeps current:
# the customer and the job under discussion ("cancelalo", "pasalo al viernes" mean these).
CUSTOMER_ID = "customer_id"
CUSTOMER_LABEL = "customer_label"
JOB_ID = "job_id"
JOB_LABEL = "job_label"


def apply_mutations(state: dict[str, Any], mutations: Iterable[Mutation]) -> dict[str, Any]:
    """The state with the latest customer / job of these mutations as the ones under discussion."""
    updated = dict(state)
    for mutation in mutations:
        if mutation.kind == "customer":
            if updated.get(CUSTOMER_ID) != mutation.id:
                # Another customer: the job under discussion was theirs, not this one's.
                updated.pop(JOB_ID, None)
                updated.pop(JOB_LABEL, None)
            updated[CUSTOMER_ID] = mutation.id
            updated[CUSTOMER_LABEL] = mutation.label
        elif mutation.kind == "job":
            updated[JOB_ID] = mutation.id
            updated[JOB_LABEL] = mutation.label
            customer_id = mutation.data.get("customer_id")
            if isinstance(customer_id, int):
                updated[CUSTOMER_ID] = customer_id
                customer = mutation.data.get("customer")
                if isinstance(customer, str) and customer:
                    updated[CUSTOMER_LABEL] = customer
    return updated


@dataclass
class Chain:
    """What the steps of one turn share and build on, in order: the reply language, the
    conversation's working state (the customer and job under discussion) and the mutations of
    the steps that already ran. The turn's `delegate` node owns it; a concurrent step works on
    its own copy and its mutations are merged back when it ends."""

    language: str
    state: dict[str, Any] = field(default_factory=dict)
    mutations: list[Mutation] = field(default_factory=list)

    def copy(self) -> Chain:
        return Chain(self.language, dict(self.state), list(self.mutations))

    def absorb(self, mutations: list[Mutation]) -> None:
        """A finished step's mutations: context for the next steps, and the new subject."""
        self.mutations.extend(mutations)
        self.state = apply_mutations(self.state, mutations)


@dataclass
class Step:
    index: int
    intent: str
    agent: str
    confidence: float
    text: str
    entities: Entities
    candidates: list[tuple[str, float]] = field(default_factory=list)
    # "embedded": the intent's handler runs; "llm": the agent's model runs its tool loop on `text`
    # (the query the orchestrator model passed, after the verbatim rules).
    engine: str = "embedded"
    # What the orchestrator model said of earlier turns when the user switched topic (llm only).
    prior_context: str = ""
    # A clarification reply: the step resumes a pending intent (copilot/orchestration/clarify.py).
    resumed: bool = False
    # A reroute: the agent that yielded this step before (its misroute, in the metrics).
    rerouted_from: str = ""


@dataclass
class Clarification:
    """The step could not go on without the operator: what it asks and which detail is missing.

    The conversation keeps it as the pending intent; the reply resumes that intent (O8).
    """

    question: str
    slot: str


@dataclass
class Outcome:
    text: str
    success: bool = True
    mutations: list[Mutation] = field(default_factory=list)
    pending_approvals: list[int] = field(default_factory=list)
    yielded: bool = False
    error: str = ""
    clarify: Clarification | None = None


class PlanLimitReached(Exception):
    """The agent tried to run more tools than its `max_plan_steps` allows."""


class Runner:
    """Runs one sub-agent step's tools on behalf of its agent configuration."""

    def __init__(self, ctx: TurnContext, chain: Chain, agent: Agent, step: Step) -> None:
        self.ctx = ctx
        self.chain = chain
        self.agent = agent
        self.step = step
        self.tools_invoked: list[str] = []
        self.results: list[tuple[str, ToolResult]] = []  # every call's result, in order
        self.held: list[int] = []  # approvals filed by this step's calls
        self.plan_steps = 0
        # Set after the conversation's clarification limit (O8): make the best choice, do not ask.
        self.best_effort = False
        # Model tokens this step used (llm engine; the embedded engine uses none).
        self.tokens_in = 0
        self.tokens_out = 0

    @property
    def language(self) -> str:
        return self.chain.language

    @property
    def state(self) -> dict[str, Any]:
        """The conversation's working state as this step sees it."""
        return self.chain.state

    @property
    def tz(self) -> ZoneInfo:
        return self.ctx.tz

    @property
    def local_now(self) -> datetime.datetime:
        """The turn's moment on the organisation's clock."""
        return self.ctx.local_now

    @property
    def today(self) -> datetime.date:
        return self.ctx.today

    def say(self, message: str | Promise, /, **values: object) -> str:
        """`message` (a `gettext_lazy` English msgid) in the turn's language, filled with
        `values` (common.wording.say)."""
        return say(self.chain.language, message, **values)

    def earlier(self, kind: str) -> Mutation | None:
        """The latest mutation of `kind` produced by an earlier step of this turn."""
        for mutation in reversed(self.chain.mutations):
            if mutation.kind == kind:
                return mutation
        return None

    def call(self, tool_name: str, **arguments: Any) -> ToolResult:
        """Run a tool through the whitelist, the plan budget and the approval gate."""
        if tool_name not in (self.agent.tools or []):
            return ToolResult(ok=False, data={}, summary="", error=f"tool {tool_name} not enabled")
        try:  # a customer's turn: their own records only
            arguments = customer_scope.pin(self.ctx, tool_name, arguments)
        except customer_scope.Refused as exc:
            return ToolResult(ok=False, data={}, summary=str(exc), error=str(exc))
        if self.plan_steps >= self.agent.max_plan_steps:
            raise PlanLimitReached(tool_name)
        self.plan_steps += 1
        tool = get_tool(tool_name)
        ctx, name = self.ctx, self.agent.name
        self._announce_start(tool_name, arguments)
        started = time.perf_counter()
        key = write_key(tool, arguments)
        # A read commits nothing of its own: its row waits for the step's commit point.
        reads = tool.category is Category.SAFE and key is None
        with ctx.writes.lock if key is not None else nullcontext():
            earlier = ctx.writes.first(key) if key is not None else None
            # A write's changes and its row commit together.
            with nullcontext() if reads else transaction.atomic():
                if isinstance(earlier, ToolResult):  # this turn already did it: not again
                    result, held = _repeat(earlier), None
                else:
                    result, held = self._run(tool, arguments)
                latency = round((time.perf_counter() - started) * 1000, 2)
                self._record(tool, arguments, result, held, latency, kept=reads and held is None)
            if key is not None and earlier is None and result.ok:
                ctx.writes.remember(key, result)
        self.tools_invoked.append(tool_name)
        self.results.append((tool_name, result))
        if held is not None:
            self.held.append(held.approval_id)
            ctx.calls.held += 1
            ctx.emit(
                ApprovalRequestedEvent(
                    type="approval_requested", turn_id=ctx.turn_id,
                    approval_id=held.approval_id, agent=name, tool=tool_name,
                    summary=held.summary_en if self.language == "en" else held.summary_es,
                )
            )  # fmt: skip
        self._announce_end(tool_name, result, latency)
        return result

    def _announce_start(self, tool_name: str, arguments: dict[str, Any]) -> None:
        ctx = self.ctx
        ctx.emit(
            ToolStartEvent(
                type="tool_start", turn_id=ctx.turn_id, agent=self.agent.name, tool=tool_name,
                arguments=_jsonable(arguments),
            )
        )  # fmt: skip

    def _announce_end(self, tool_name: str, result: ToolResult, latency_ms: float) -> None:
        ctx, name = self.ctx, self.agent.name
        ctx.emit(
            ToolResultEvent(
                type="tool_result", turn_id=ctx.turn_id, agent=name, tool=tool_name,
                ok=result.ok, summary=result.summary or result.error,
                line=tool_line(tool_name, result, self.language),
                records=records_of(tool_name, result),
            )
        )  # fmt: skip
        ctx.emit(
            ToolEndEvent(
                type="tool_end", turn_id=ctx.turn_id, agent=name, tool=tool_name,
                latency_ms=latency_ms,
            )
        )  # fmt: skip

    def _run(self, tool: Tool, arguments: dict[str, Any]) -> tuple[ToolResult, Held | None]:
        """The tool's result, or the stand-in for a call the gate held (and its approval)."""
        ctx, agent = self.ctx, self.agent
        user = ctx.acting_user
        call = ProposedCall(
            organisation_id=ctx.organisation.pk, conversation_id=ctx.conversation_id,
            turn_id=ctx.turn_id, requested_by_id=user.pk if user is not None else None,
            agent=agent.name, intent=self.step.intent, tool=tool.name,
            category=str(tool.category), arguments=tool.as_executed(_stored(arguments)),
            approval_rules=tuple(agent.requires_approval_for or ()),
            dry_run=tool.is_dry_run(arguments), now=ctx.now,
        )  # fmt: skip
        if not needs_approval(call):
            return customer_scope.screen(ctx, tool.run(ctx, arguments)), None
        try:
            preview = tool.describe(ctx, call.arguments)
        except ToolError as exc:  # it could not run at all: no manager needs to see it
            return failure(str(exc), **exc.data), None
        held = hold(
            call,
            Filing(
                summary_es=preview.summary_es, summary_en=preview.summary_en,
                links=preview.links, snapshot=preview.relies_on,
                expiry_hours=agent.approval_expiry_hours, decider_role=agent.approval_decider,
            ),
        )  # fmt: skip
        result = ToolResult(
            ok=True,
            data={"held": True, "pending_approval_id": held.approval_id},
            summary=f"held for approval #{held.approval_id}",
        )
        return result, held

    def call_approved(
        self,
        tool_name: str,
        arguments: dict[str, Any],
        *,
        approval_id: int,
        relied_on: dict[str, Any],
    ) -> tuple[ToolResult, list[str]]:
        """Run a call a manager approved, exactly as it was filed — unless the records it relied
        on are no longer as they were: then it does not run, and the changed parts are named."""
        tool = get_tool(tool_name)
        ctx = self.ctx
        self._announce_start(tool_name, arguments)
        started = time.perf_counter()
        with transaction.atomic():
            changed = self._changed(tool, arguments, relied_on)
            if changed:
                result = failure("the records changed since it was asked for", changed=changed)
            else:
                result = customer_scope.screen(ctx, tool.run(ctx, arguments))
            latency = round((time.perf_counter() - started) * 1000, 2)
            self._record(tool, arguments, result, None, latency, approval_id=approval_id)
        self.tools_invoked.append(tool_name)
        self._announce_end(tool_name, result, latency)
        return result, changed

    def _changed(
        self, tool: Tool, arguments: dict[str, Any], relied_on: dict[str, Any]
    ) -> list[str]:
        """The parts of the records a held call relied on that changed since it was filed."""
        try:
            now = tool.describe(self.ctx, arguments).relies_on
        except ToolError as exc:
            return [f"gone: {exc}"]
        before, after = _flat(_as_json(relied_on)), _flat(_as_json(now))
        return sorted(
            key for key in before.keys() | after.keys() if before.get(key) != after.get(key)
        )

    def _record(
        self,
        tool: Tool,
        arguments: dict[str, Any],
        result: ToolResult,
        held: Held | None,
        latency_ms: float,
        *,
        approval_id: int | None = None,
        kept: bool = False,
    ) -> None:
        """The call's row: stored now, or `kept` for the step's commit point (a plain read)."""
        row = ToolCall(
            organisation=self.ctx.organisation, conversation_id=self.ctx.conversation_id,
            turn_id=self.ctx.turn_id, agent=self.agent.name, intent=self.step.intent,
            tool=tool.name, category=str(tool.category), arguments=_stored(arguments),
            ok=result.ok, summary=result.summary[:2000], error=result.error[:2000],
            approval_id=held.approval_id if held is not None else approval_id,
            approved=approval_id is not None, latency_ms=latency_ms,
        )  # fmt: skip
        self.ctx.calls.record(row, kept=kept)

    @property
    def wrote(self) -> bool:
        """Whether a call of this step may have changed records (anything but a read)."""
        return any(get_tool(name).category is not Category.SAFE for name in self.tools_invoked)


def _repeat(first: ToolResult) -> ToolResult:
    """A write this turn already made, answered with its first result (and said so)."""
    return ToolResult(
        ok=first.ok, data={**first.data, "repeated": True},
        summary=f"already done earlier in this turn, not repeated: {first.summary}",
        error=first.error, value=first.value,
    )  # fmt: skip


def _jsonable(arguments: dict[str, Any]) -> dict[str, object]:
    """The arguments as the trace shows them: numbers as they are, dates and times in ISO form
    (as a model would have sent them), anything else as text."""
    return {
        key: value
        if isinstance(value, int | float | bool | None)
        else value.isoformat()
        if isinstance(value, datetime.date | datetime.time)
        else str(value)
        for key, value in arguments.items()
    }


def _as_json(value: Any) -> Any:
    """The value as it reads back from a JSON column (tuples as lists, dates as text)."""
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder))


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    """{"job.start": …} for nested dicts, so a change is named by where it is."""
    if not isinstance(value, dict):
        return {prefix or "value": value}
    flat: dict[str, Any] = {}
    for key, item in value.items():
        flat.update(_flat(item, f"{prefix}.{key}" if prefix else str(key)))
    return flat


def _stored(arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments as JSON data (dates and decimals as text), the way rows keep them."""
    stored: dict[str, Any] = json.loads(json.dumps(arguments, cls=DjangoJSONEncoder))
    return stored


Handler = Callable[[Step, Runner], Outcome]
HANDLERS: dict[str, Handler] = {}


def load_handlers() -> None:
    """Import every agent package's `agent` module so its @handles handlers are registered."""
    for package in AGENT_MODULES.values():
        name = f"{package}.agent"
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:  # a missing module *inside* the agent is a real error
                raise


def handles(*intents: str) -> Callable[[Handler], Handler]:
    """Register a handler for one or more intents (each intent has exactly one handler)."""

    def decorator(func: Handler) -> Handler:
        for intent in intents:
            if intent in HANDLERS:
                raise RuntimeError(f"intent {intent} already has a handler")
            HANDLERS[intent] = func
        return func

    return decorator
