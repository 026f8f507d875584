"""The tool registry: every whitelisted action a sub-agent may take, with its category (A1).

A tool is a plain function in `agents/<name>/tools.py`, decorated with `@tool(...)`:

    @tool(category=Category.SAFE, description="...", param_docs={"day": "..."})
    def slots_find(ctx: TurnContext, *, day: datetime.date | None = None) -> ToolResult: ...

Its name is the function's name and its JSON schema comes from the keyword-only parameters' type
hints, so the schema the model sees and the validation `Tool.run` applies can never drift apart.
A tool is defined once (in the module of the agent that owns it) and may be enabled for several
agents through the registry rows in the database.

Every tool is scoped by `ctx.organisation`; ids that arrive as arguments are looked up inside it,
so a foreign id reads exactly like a missing one.
"""

from __future__ import annotations

import datetime
import importlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import Any
from zoneinfo import ZoneInfo

from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.db import transaction
from django.db.models import Model
from django.utils.functional import Promise
from django.utils.translation import gettext, pgettext_lazy

from agents.context import TurnContext
from agents.results import Result
from agents.tool_arguments import BadArgument, Param, build_schema, coerce, params_of
from business.selectors import scoped
from common.text import fold

# The agents a fresh install ships, mapped to their packages; each package's `tools` module holds
# the tools that agent owns.
AGENT_MODULES: dict[str, str] = {
    "scheduling": "agents.scheduling",
    "customer": "agents.customer",
    "financial": "agents.financial",
    "fleet": "agents.fleet",
    "escalation": "agents.escalation",
    "proactive": "agents.proactive",
    "general": "agents.general",
}


# Tools an agent uses by default although another agent owns them (defined once, enabled twice).
# The shipped defaults file (agents/data/default_agents.json) is what installs; this is the
# registry's own view, for code and tests that need an agent's tools without the database.
SHARED_TOOLS: dict[str, tuple[str, ...]] = {
    "general": ("price_list",),
    # A booking that gives only an address finds the customer who lives there.
    "scheduling": ("customers_find",),
}


class Category(StrEnum):
    SAFE = "safe"  # reads only: runs at once
    SUGGEST = "suggest"  # a small, reversible write the operator asked for: runs at once
    EXECUTE = "execute"  # a consequential write: waits for a manager's approval
    BULK = "bulk"  # many rows at once: waits for approval; dry run first

    @property
    def needs_approval(self) -> bool:
        return self in (Category.EXECUTE, Category.BULK)

    @property
    def label(self) -> str:
        """The category as the reader names it (the value stays the code's and the model's)."""
        return str(CATEGORY_LABELS[self])


# Display names only: a badge on the tools pages, in the reader's language.
CATEGORY_LABELS: dict[Category, Promise] = {
    Category.SAFE: pgettext_lazy("tool category", "safe"),
    Category.SUGGEST: pgettext_lazy("tool category", "suggest"),
    Category.EXECUTE: pgettext_lazy("tool category", "execute"),
    Category.BULK: pgettext_lazy("tool category", "bulk"),
}


class ToolError(Exception):
    """A domain failure a tool reports as data (`ok=False`) instead of crashing the turn.

    `data` travels with it (e.g. the candidates when a name is ambiguous).
    """

    def __init__(self, message: str, **data: Any) -> None:
        super().__init__(message)
        self.data = data


@dataclass
class ToolResult:
    ok: bool
    data: dict[str, Any]  # the JSON form (a typed result's `as_json()`)
    summary: str
    error: str = ""
    value: Result | None = None  # a migrated tool's typed result (agents/results.py)

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "data": self.data, "summary": self.summary, "error": self.error}


@dataclass(frozen=True)
class Preview:
    """A call that waits for a decision, described before it runs: what it will do in plain
    words (Spanish, English), links to its records, and the records it relies on as they are
    now — compared again before it runs, so a changed world is never acted on."""

    summary_es: str
    summary_en: str
    relies_on: dict[str, Any] = field(default_factory=dict)
    links: list[dict[str, Any]] = field(default_factory=list)


def success(summary: str, **data: Any) -> ToolResult:
    return ToolResult(ok=True, data=data, summary=summary)


def done(summary: str, value: Result) -> ToolResult:
    """A migrated tool's result: the typed value and its JSON form."""
    return ToolResult(ok=True, data=value.as_json(), summary=summary, value=value)


def failure(error: str, **data: Any) -> ToolResult:
    return ToolResult(ok=False, data=data, summary=error, error=error)


def get_scoped[M: Model](model: type[M], ctx: TurnContext, pk: object, label: str = "") -> M:
    """The row with `pk` in the context's organisation, or a ToolError "… not found"."""
    try:
        return scoped(model, ctx.organisation).get(pk=pk)
    except (ObjectDoesNotExist, ValueError, TypeError) as exc:
        raise ToolError(f"{label or model._meta.model_name} {pk} not found") from exc


def _validation_codes(exc: ValidationError) -> dict[str, str]:
    """The first error code per field ("__all__" without a field), so callers can react to
    e.g. "no_technician_free" without parsing translated text."""
    if hasattr(exc, "error_dict"):
        return {name: errors[0].code or "invalid" for name, errors in exc.error_dict.items()}
    return {"__all__": exc.error_list[0].code or "invalid"}


def _validation_message(exc: ValidationError) -> str:
    if hasattr(exc, "error_dict"):
        return "; ".join(
            f"{name}: {' '.join(str(m) for m in errors[0].messages)}"
            for name, errors in exc.error_dict.items()
        )
    return " ".join(str(m) for m in exc.messages)


# --- Tools -----------------------------------------------------------------------------------

ToolFunc = Callable[..., ToolResult]
PreviewFunc = Callable[..., Preview]


# A sentence ends at a full stop before a capital ("e.g. all" does not end one).
_SENTENCE_END = re.compile(r"(?<=\.)\s+(?=[A-ZÁÉÍÓÚÑ])")


@dataclass(frozen=True)
class Tool:
    name: str
    category: Category
    description: str
    func: ToolFunc = field(repr=False, compare=False)
    parameters: dict[str, Any] = field(compare=False)
    agent: str = ""  # the agent whose module defines it

    @property
    def label(self) -> str:
        """The description in the reader's language, for people; `description` stays the
        English text the model reads (each module marks it with `gettext_noop`)."""
        return gettext(self.description)

    @property
    def headline(self) -> str:
        """The label's first sentence ("Cancelar un trabajo abierto (necesita …)."): how a
        screen names the tool in a line."""
        return _SENTENCE_END.split(self.label, maxsplit=1)[0]

    def openai_schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def validate(self, ctx: TurnContext, arguments: Any) -> dict[str, Any]:
        """Arguments coerced to the function's types; raises ToolError with every problem."""
        if arguments is None:
            arguments = {}
        if isinstance(arguments, str):
            # A model's tool call carries its arguments as JSON text.
            try:
                arguments = json.loads(arguments or "{}")
            except json.JSONDecodeError:
                raise ToolError("arguments are not valid JSON") from None
        if not isinstance(arguments, dict):
            raise ToolError("arguments must be a JSON object")
        problems: list[str] = []
        unknown = sorted(set(arguments) - {p.name for p in self._params})
        problems.extend(f"unknown argument '{name}'" for name in unknown)
        kwargs: dict[str, Any] = {}
        for p in self._params:
            value = arguments.get(p.name)
            # An empty string is "not given", except for an optional text (it clears a field).
            if value is None or (value == "" and (p.required or p.hint is not str)):
                if p.required:
                    problems.append(f"missing required argument '{p.name}'")
                elif p.nullable:
                    kwargs[p.name] = None
                continue
            try:
                kwargs[p.name] = coerce(p.hint, value, ctx.tz)
            except BadArgument as exc:
                problems.append(f"argument '{p.name}' {exc}")
        if problems:
            raise ToolError("; ".join(problems))
        return kwargs

    def run(self, ctx: TurnContext, arguments: dict[str, Any] | str | None) -> ToolResult:
        """Validate, call and turn expected failures into `ok=False` results.

        Unexpected exceptions (bugs) propagate: the caller records them with their traceback.
        Writes run in one transaction so a failure halfway leaves nothing behind.
        """
        try:
            kwargs = self.validate(ctx, arguments)
            if self.category is Category.SAFE:
                return self.func(ctx, **kwargs)
            with transaction.atomic():
                return self.func(ctx, **kwargs)
        except ToolError as exc:
            return failure(str(exc), **exc.data)
        except ValidationError as exc:
            return failure(_validation_message(exc), codes=_validation_codes(exc))
        except ObjectDoesNotExist as exc:
            # Django names the class "<Model>.DoesNotExist"; say which kind of row was missing.
            return failure(f"{type(exc).__qualname__.split('.')[0].lower()} not found")

    def is_dry_run(self, arguments: dict[str, Any] | None) -> bool:
        """Whether these arguments only preview: the tool has `dry_run` and it ends up true
        (an omitted `dry_run` takes the parameter's default)."""
        param = next((p for p in self._params if p.name == "dry_run"), None)
        if param is None:
            return False
        value = (arguments or {}).get("dry_run")
        if value is None:
            return bool(param.default)
        try:
            return bool(coerce(bool, value, ZoneInfo("UTC")))
        except BadArgument:
            return False

    def as_executed(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The arguments that do the work: a tool that previews by default runs for real."""
        if any(p.name == "dry_run" for p in self._params):
            return {**arguments, "dry_run": False}
        return arguments

    def describe(self, ctx: TurnContext, arguments: dict[str, Any]) -> Preview:
        """The call as a manager reads it (the tool's own preview, or its name and arguments).
        Raises ToolError when the call could not run at all (a record that is not there)."""
        kwargs = self.validate(ctx, arguments)
        preview = _PREVIEWS.get(self.name)
        if preview is not None:
            try:
                return preview(ctx, **kwargs)
            except ValidationError as exc:
                raise ToolError(_validation_message(exc), codes=_validation_codes(exc)) from exc
            except ObjectDoesNotExist as exc:
                raise ToolError(
                    f"{type(exc).__qualname__.split('.')[0].lower()} not found"
                ) from exc
        # No preview of its own: the tool's description and what it was given, in words.
        shown = "; ".join(
            f"{key.replace('_', ' ')}: {value}"
            for key, value in kwargs.items()
            if key != "dry_run" and value not in (None, "", [], {})
        )
        given = f" ({shown})" if shown else ""
        what = self.description.rstrip(".")
        return Preview(summary_es=f"{what}{given}", summary_en=f"{what}{given}")

    @cached_property
    def _params(self) -> list[Param]:
        return params_of(self.func)


_REGISTRY: dict[str, Tool] = {}
_PREVIEWS: dict[str, PreviewFunc] = {}
_TARGETS: dict[str, tuple[str, ...]] = {}
# What a write acts on, by default: its ids, the names it goes by, its dates and times — not its
# free text (notes, reasons, descriptions), which a model words differently each time.
_TARGET_NAMES = frozenset(
    {"customer", "technician", "name", "plate", "start", "end", "date", "start_date", "end_date",
     "time", "number", "cuit"}
)  # fmt: skip


def write_key(tool: Tool, arguments: dict[str, Any]) -> str | None:
    """The idempotency key of a write call within a turn (None for reads and dry runs): the
    tool and its normalised target."""
    if tool.category is Category.SAFE or tool.is_dry_run(arguments):
        return None
    names = _TARGETS.get(tool.name)
    chosen = {
        key: _normalised(value)
        for key, value in arguments.items()
        if value not in (None, "")
        and (key in names if names is not None else key.endswith("_id") or key in _TARGET_NAMES)
    }
    return f"{tool.name}:" + "|".join(f"{key}={chosen[key]}" for key in sorted(chosen))


def _normalised(value: Any) -> str:
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    text = " ".join(str(value).split())
    return fold(text) if isinstance(value, str) else text


_LOADED = False


def _agent_of(module: str) -> str:
    for agent, package in AGENT_MODULES.items():
        if module == package or module.startswith(package + "."):
            return agent
    return ""


def build_tool(
    func: ToolFunc,
    *,
    category: Category,
    description: str,
    param_docs: dict[str, str] | None = None,
) -> Tool:
    """A Tool for `func` without registering it (the decorator registers)."""
    docs = param_docs or {}
    params = params_of(func)
    missing = [p.name for p in params if p.name not in docs]
    extra = sorted(set(docs) - {p.name for p in params})
    if missing or extra:
        raise TypeError(f"{func.__name__}: param_docs missing {missing}, unknown {extra}")
    return Tool(
        name=func.__name__,
        category=Category(category),
        description=description,
        func=func,
        parameters=build_schema(params, docs),
        agent=_agent_of(func.__module__),
    )


def tool(
    *,
    category: Category,
    description: str,
    param_docs: dict[str, str] | None = None,
    target: tuple[str, ...] | None = None,
) -> Callable[[ToolFunc], ToolFunc]:
    """Register the decorated function as a tool named after it.

    Every keyword-only parameter needs a short doc in `param_docs` (the model reads them).
    `target`: the arguments that name what a write acts on (a repeat with the same target in one
    turn does not run again); by default its ids, names and dates (`write_key`).
    """

    def decorator(func: ToolFunc) -> ToolFunc:
        if target is not None:
            _TARGETS[func.__name__] = target
        built = build_tool(func, category=category, description=description, param_docs=param_docs)
        existing = _REGISTRY.get(built.name)
        # Re-importing the same module is harmless; two different functions with one name is not.
        if existing is not None and _qualified(existing.func) != _qualified(func):
            raise ValueError(f"tool {built.name!r} is already defined in {existing.agent}")
        _REGISTRY[built.name] = built
        return func

    return decorator


def previews(tool_func: ToolFunc) -> Callable[[PreviewFunc], PreviewFunc]:
    """Register how a tool's held call is described (same keyword arguments as the tool)."""

    def decorator(func: PreviewFunc) -> PreviewFunc:
        _PREVIEWS[tool_func.__name__] = func
        return func

    return decorator


def _qualified(func: ToolFunc) -> str:
    return f"{func.__module__}.{func.__qualname__}"


def load_tools() -> None:
    """Import every agent's tools module once so all tools are registered."""
    global _LOADED
    if _LOADED:
        return
    for package in AGENT_MODULES.values():
        importlib.import_module(f"{package}.tools")
    _LOADED = True


def all_tools() -> list[Tool]:
    load_tools()
    # Registration order: agent by agent (load order), then as defined in each module.
    return list(_REGISTRY.values())


def get_tool(name: str) -> Tool:
    load_tools()
    return _REGISTRY[name]


def tools_for_agent(agent: str) -> list[Tool]:
    """The tools a shipped agent owns (defined in its module) plus the shared ones it uses."""
    load_tools()
    owned = [t for t in _REGISTRY.values() if t.agent == agent]
    return owned + [_REGISTRY[name] for name in SHARED_TOOLS.get(agent, ())]


def default_tool_names(agent: str) -> list[str]:
    return [t.name for t in tools_for_agent(agent)]
