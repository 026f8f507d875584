"""Stored error codes as people read them (agents/errors.py, issue 28.1)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.template import Context, Template
from django.utils import translation

from agents import errors
from agents.customer_scope import NOT_FOR_CUSTOMERS

ROOT = Path(__file__).resolve().parents[2]
# An error code written as a literal where a tool, an agent or the turn stores it.
_LITERAL = re.compile(r"""\berror=(f?)"([^"]+)\"""")
_WHERE = ("agents", "business", "copilot")


def _literals() -> set[tuple[bool, str]]:
    found = set()
    for package in _WHERE:
        for path in (ROOT / package).rglob("*.py"):
            for formatted, code in _LITERAL.findall(path.read_text(encoding="utf-8")):
                found.add((bool(formatted), code))
    return found


def _example(code: str) -> str:
    """An f-string code with its placeholders filled the way the running code fills them."""
    fills = {
        "job.id": "12", "job.status": "cancelled", "step.agent": "sales",
        "action.agent": "sales", "step.intent": "invoice_create", "tool_name": "jobs_find",
        "missing[0]": "phone", "check.problem": "dígito verificador", "kind": "timeout",
        "pk": "3", "NOT_FOR_CUSTOMERS": NOT_FOR_CUSTOMERS,
    }  # fmt: skip
    return re.sub(r"\{([^}]+)\}", lambda m: fills.get(m[1], "?"), code)


def test_every_error_code_a_tool_or_the_turn_stores_has_words() -> None:
    """A new code without words would reach the trace and the admin as English."""
    technical = {"{type(exc).__name__}: {exc}", "; ", "{sent.error} ({fallback})"}
    literals = {(f, code) for f, code in _literals() if code not in technical}
    assert len(literals) >= 40
    unsaid = [c for f, c in literals if errors.in_words(_example(c) if f else c) is None]
    assert unsaid == []


@pytest.mark.parametrize(
    ("code", "spanish"),
    [
        ("missing customer", "Faltaba saber qué cliente."),
        ("job 12 is cancelled", "El trabajo #12 está cancelado."),
        ("day full; no free slots", "El día está completo. No hay turnos libres."),
        (f"invoice_create {NOT_FOR_CUSTOMERS}", "Un cliente no puede pedir esto por WhatsApp:"),
    ],
)
def test_codes_are_said_in_the_readers_language(code: str, spanish: str) -> None:
    with translation.override("es-ar"):
        said = errors.in_words(code)
    assert said is not None and said.startswith(spanish), said
    assert "customers" not in said and "missing" not in said
    with translation.override("en"):
        assert errors.in_words(code) != said


def test_a_refused_tool_is_named_by_its_label() -> None:
    with translation.override("es-ar"):
        said = errors.in_words(f"invoice_create {NOT_FOR_CUSTOMERS}") or ""
    assert "invoice_create" not in said and "factura" in said.lower()


def test_an_unknown_code_is_shown_as_code_with_nothing_lost() -> None:
    assert errors.in_words("RuntimeError: boom") is None
    assert errors.in_words("day full; RuntimeError: boom") is None
    template = Template("{% load registry_tags %}{{ code|error_words }}")
    with translation.override("es-ar"):
        known = template.render(Context({"code": "day full"}))
        unknown = template.render(Context({"code": "RuntimeError: <boom>"}))
    assert known == "El día está completo."
    assert unknown == "<code>RuntimeError: &lt;boom&gt;</code>"
