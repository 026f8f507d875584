"""Style adaptation (P4): a customer who writes briefly gets short lists, and loses nothing else."""

from __future__ import annotations

from copilot.orchestration.replies import briefer, in_customer_style

SLOTS = (
    "Hay lugar:\n1. martes 9:00\n2. martes 10:00\n3. martes 11:00\n4. miércoles 9:00\n"
    "5. jueves 9:00\n¿Cuál le sirve?"
)


def test_lists_keep_three_items_and_say_how_many_more() -> None:
    assert briefer(SLOTS, "es") == (
        "Hay lugar:\n1. martes 9:00\n2. martes 10:00\n3. martes 11:00\n(y 2 más)\n¿Cuál le sirve?"
    )
    assert briefer("- a\n- b\n- c\n- d", "en") == "- a\n- b\n- c\n(and 1 more)"
    assert briefer("Sin listas acá.\nNi acá.", "es") == "Sin listas acá.\nNi acá."


def test_the_profile_decides() -> None:
    brief = {"brevity": {"value": "brief", "sources": ["message:1"], "at": "2026-11-24"}}
    detailed = {"brevity": {"value": "detailed", "sources": ["message:1"], "at": "2026-11-24"}}
    assert "(y 2 más)" in in_customer_style(SLOTS, brief, "es")
    assert in_customer_style(SLOTS, detailed, "es") == SLOTS
    assert in_customer_style(SLOTS, {}, "es") == SLOTS
