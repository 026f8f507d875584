"""The registry: schemas a model can read; bad arguments give clear errors, never a crash."""

from __future__ import annotations

import datetime
import re
from decimal import Decimal
from typing import Any, Literal

import pytest
from django.core.exceptions import ValidationError

from agents.context import TurnContext
from agents.defaults import load_default_agents
from agents.registry import (
    AGENT_MODULES,
    Category,
    ToolError,
    ToolResult,
    all_tools,
    build_tool,
    default_tool_names,
    get_tool,
    success,
    tool,
    tools_for_agent,
)
from business.models import Customer
from tests.tools.conftest import BA, NOW

EXPECTED = {
    "scheduling": {
        "slots_find": "safe",
        "jobs_find": "safe",
        "job_book": "suggest",
        "job_reschedule": "suggest",
        "job_cancel": "execute",
        "technicians_free": "safe",
        "job_note_add": "suggest",
    },
    "customer": {
        "customers_find": "safe",
        "customer_history": "safe",
        "customer_create": "suggest",
        "customer_update": "suggest",
        "cuit_check": "safe",
        "equipment_record": "suggest",
    },
    "financial": {
        "quote_create": "suggest",
        "invoice_create": "execute",
        "payment_status": "safe",
        "price_list": "safe",
        "quote_find": "safe",
    },
    "fleet": {
        "vehicles_available": "safe",
        "vehicle_assign": "suggest",
        "technician_absence_record": "execute",
        "technician_jobs_affected": "safe",
        "jobs_redistribute": "bulk",
        "jobs_bulk_reschedule": "bulk",
        "technicians_nearest": "safe",
        "technician_dispatch": "execute",
    },
    "escalation": {"ticket_create": "suggest", "ticket_find": "safe"},
    "proactive": {
        "maintenance_due_list": "safe",
        "follow_up_list": "safe",
        "seasonal_targets": "safe",
        "follow_up_record": "suggest",
    },
    "general": {"org_info": "safe"},
}

JSON_TYPES = {"string", "integer", "number", "boolean", "array", "object"}


def test_every_agent_module_defines_exactly_its_tools() -> None:
    found: dict[str, dict[str, str]] = {}
    for t in all_tools():
        found.setdefault(t.agent, {})[t.name] = str(t.category)
    assert found == EXPECTED
    assert list(AGENT_MODULES) == list(EXPECTED)


def test_price_list_is_defined_once_and_enabled_for_financial_and_general() -> None:
    assert get_tool("price_list").agent == "financial"
    enabled = {agent["name"]: agent["tools"] for agent in load_default_agents()}
    assert "price_list" in enabled["financial"]
    assert "price_list" in enabled["general"]


@pytest.mark.parametrize("name", [n for tools in EXPECTED.values() for n in tools])
def test_schema_is_a_valid_openai_function_definition(name: str) -> None:
    schema = get_tool(name).openai_schema()
    assert schema["type"] == "function"
    function = schema["function"]
    assert function["name"] == name
    assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", name)
    assert function["description"].strip()
    params = function["parameters"]
    assert params["type"] == "object"
    assert isinstance(params["properties"], dict)
    assert set(params["required"]) <= set(params["properties"])
    assert params["additionalProperties"] is False
    for prop in params["properties"].values():
        assert prop["type"] in JSON_TYPES
        assert prop["description"].strip()
        if prop["type"] == "array":
            assert prop["items"]["type"] in JSON_TYPES
        for value in prop.get("enum", []):
            assert isinstance(value, str | int)


def _sample(
    ctx: TurnContext,
    *,
    text: str,
    count: int = 1,
    ratio: float | None = None,
    flag: bool = False,
    price: Decimal | None = None,
    day: datetime.date | None = None,
    moment: datetime.datetime | None = None,
    clock: datetime.time | None = None,
    mode: Literal["a", "b"] = "a",
    tags: list[str] | None = None,
) -> ToolResult:
    return success("sample", **{k: v for k, v in locals().items() if k != "ctx"})


SAMPLE_DOCS = {
    "text": "t",
    "count": "c",
    "ratio": "r",
    "flag": "f",
    "price": "p",
    "day": "d",
    "moment": "m",
    "clock": "k",
    "mode": "o",
    "tags": "g",
}
SAMPLE = build_tool(_sample, category=Category.SAFE, description="x", param_docs=SAMPLE_DOCS)


def test_schema_follows_the_type_hints() -> None:
    props = SAMPLE.parameters["properties"]
    assert SAMPLE.parameters["required"] == ["text"]
    assert props["text"]["type"] == "string"
    assert props["count"] == {"type": "integer", "description": "c", "default": 1}
    assert props["ratio"]["type"] == "number"
    assert props["flag"]["type"] == "boolean"
    assert props["price"]["type"] == "string"
    assert props["day"]["format"] == "date"
    assert props["moment"]["format"] == "date-time"
    assert props["mode"]["enum"] == ["a", "b"]
    assert props["tags"] == {"type": "array", "items": {"type": "string"}, "description": "g"}


def test_arguments_are_coerced_to_the_declared_types(ctx: TurnContext) -> None:
    result = SAMPLE.run(
        ctx,
        {
            "text": " hola ",
            "count": "3",
            "ratio": 2,
            "flag": "true",
            "price": 1500.5,
            "day": "2026-11-24",
            "moment": "2026-11-24T10:00",
            "clock": "9:30",
            "mode": "B",
            "tags": "solo",
        },
    )
    assert result.ok, result.error
    data = result.data
    assert data["text"] == "hola"
    assert data["count"] == 3
    assert data["ratio"] == 2.0
    assert data["flag"] is True
    assert data["price"] == Decimal("1500.5")
    assert data["day"] == datetime.date(2026, 11, 24)
    # A wall-clock time without offset is the organisation's local time.
    assert data["moment"] == datetime.datetime(2026, 11, 24, 10, 0, tzinfo=BA)
    assert data["clock"] == datetime.time(9, 30)
    assert data["mode"] == "b"
    assert data["tags"] == ["solo"]


def test_python_values_pass_to_the_tool_as_they_are(ctx: TurnContext) -> None:
    # A sub-agent calls with Python values: nothing is turned into text and parsed back.
    day, price = datetime.date(2026, 11, 24), Decimal("1500.50")
    moment = datetime.datetime(2026, 11, 24, 10, 0, tzinfo=datetime.UTC)
    result = SAMPLE.run(
        ctx,
        {"text": "x", "day": day, "moment": moment, "price": price,
         "clock": datetime.time(9, 30), "count": 3, "flag": False},
    )  # fmt: skip
    assert result.ok, result.error
    data = result.data
    assert data["day"] is day and data["price"] is price
    assert data["moment"] == moment and data["moment"].tzinfo is datetime.UTC  # not re-zoned
    assert data["clock"] == datetime.time(9, 30) and data["count"] == 3 and data["flag"] is False
    # A naive datetime is the organisation's wall clock, as its ISO text would be.
    naive = SAMPLE.run(ctx, {"text": "x", "moment": datetime.datetime(2026, 11, 24, 10, 0)})
    assert naive.data["moment"] == datetime.datetime(2026, 11, 24, 10, 0, tzinfo=BA)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "missing required argument 'text'"),
        ({"text": ""}, "missing required argument 'text'"),
        ({"text": "x", "colour": "red"}, "unknown argument 'colour'"),
        ({"text": "x", "count": "tres"}, "argument 'count' must be an integer"),
        ({"text": "x", "count": True}, "argument 'count' must be an integer"),
        ({"text": "x", "flag": "maybe"}, "argument 'flag' must be true or false"),
        ({"text": "x", "price": "mil"}, "argument 'price' must be a decimal number"),
        ({"text": "x", "day": "mañana"}, "argument 'day' must be an ISO date"),
        ({"text": "x", "moment": "10hs"}, "argument 'moment' must be an ISO date-time"),
        ({"text": "x", "clock": "25:00"}, "argument 'clock' must be a time"),
        ({"text": "x", "mode": "c"}, "argument 'mode' must be one of a, b"),
        ({"text": "x", "tags": {"a": 1}}, "argument 'tags' must be a list"),
        ({"text": ["x"]}, "argument 'text' must be a string"),
    ],
)
def test_bad_arguments_give_a_clear_error_not_an_exception(
    ctx: TurnContext, arguments: dict[str, Any], message: str
) -> None:
    result = SAMPLE.run(ctx, arguments)
    assert result.ok is False
    assert message in result.error


def test_every_problem_is_reported_at_once(ctx: TurnContext) -> None:
    result = SAMPLE.run(ctx, {"count": "x", "other": 1})
    assert "unknown argument 'other'" in result.error
    assert "missing required argument 'text'" in result.error
    assert "argument 'count' must be an integer" in result.error


def test_arguments_must_be_an_object(ctx: TurnContext) -> None:
    result = SAMPLE.run(ctx, ["text"])  # type: ignore[arg-type]
    assert result.ok is False
    assert result.error == "arguments must be a JSON object"


def test_arguments_may_come_as_json_text(ctx: TurnContext) -> None:
    assert SAMPLE.run(ctx, '{"text": "hola", "count": 2}').data["count"] == 2
    broken = SAMPLE.run(ctx, '{"text": ')
    assert broken.ok is False
    assert broken.error == "arguments are not valid JSON"


def test_null_leaves_an_optional_argument_at_its_default(ctx: TurnContext) -> None:
    result = SAMPLE.run(ctx, {"text": "x", "count": None, "day": None})
    assert result.ok
    assert result.data["count"] == 1
    assert result.data["day"] is None


def _raises(ctx: TurnContext, *, kind: str) -> ToolResult:
    if kind == "validation":
        raise ValidationError({"phone": ["Enter a valid phone."]})
    if kind == "missing":
        Customer.objects.get(pk=-1)
    raise ToolError("slot taken", alternatives=[1, 2])


RAISES = build_tool(_raises, category=Category.SUGGEST, description="x", param_docs={"kind": "k"})


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("kind", "error"),
    [
        ("validation", "phone: Enter a valid phone."),
        ("missing", "customer not found"),
        ("tool", "slot taken"),
    ],
)
def test_expected_failures_become_results(ctx: TurnContext, kind: str, error: str) -> None:
    result = RAISES.run(ctx, {"kind": kind})
    assert result.ok is False
    assert result.error == error


@pytest.mark.django_db
def test_a_tool_error_carries_its_data(ctx: TurnContext) -> None:
    assert RAISES.run(ctx, {"kind": "tool"}).data == {"alternatives": [1, 2]}


def test_unknown_tool_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        get_tool("launch_rockets")


def test_a_second_tool_with_a_taken_name_is_refused() -> None:
    def cuit_check(ctx: TurnContext) -> ToolResult:
        return success("")

    with pytest.raises(ValueError, match="already defined"):
        tool(category=Category.SAFE, description="x")(cuit_check)


def test_every_parameter_needs_a_doc() -> None:
    def undocumented(ctx: TurnContext, *, x: int) -> ToolResult:
        return success("")

    with pytest.raises(TypeError, match="param_docs missing"):
        build_tool(undocumented, category=Category.SAFE, description="x")


def test_bulk_tools_preview_unless_told_otherwise() -> None:
    bulk = get_tool("jobs_redistribute")
    assert bulk.is_dry_run({}) is True
    assert bulk.is_dry_run({"dry_run": "false"}) is False
    assert get_tool("job_cancel").is_dry_run({}) is False


def test_approval_follows_the_category() -> None:
    assert [c for c in Category if c.needs_approval] == [Category.EXECUTE, Category.BULK]


@pytest.mark.django_db
def test_context_days_are_the_organisations(ctx: TurnContext) -> None:
    utc = datetime.datetime(2026, 11, 23, 2, 30, tzinfo=datetime.UTC)
    late = TurnContext(ctx.organisation, None, None, utc)
    assert late.today == datetime.date(2026, 11, 22)  # still Sunday night in Buenos Aires
    assert ctx.today == NOW.date()
    with pytest.raises(ValueError, match="aware"):
        TurnContext(ctx.organisation, None, None, datetime.datetime(2026, 11, 23, 9, 0))


def test_tools_for_agent_lists_owned_then_shared() -> None:
    assert {t.name for t in tools_for_agent("financial")} == set(EXPECTED["financial"])
    assert default_tool_names("general") == ["org_info", "price_list"]
