"""Retracting streamed text (orchestration/streaming.py): what reached the panel is marked by a
`retract` event in its place; a concurrent step's text still buffered is dropped unseen."""

from __future__ import annotations

from typing import Any

from copilot.orchestration.streaming import LiveSlot, TextStream


def stream() -> tuple[TextStream, list[dict[str, Any]]]:
    events: list[dict[str, Any]] = []
    return TextStream(lambda event: events.append(dict(event)), "turn-1"), events


def test_a_part_that_wrote_nothing_retracts_nothing() -> None:
    text_stream, events = stream()

    text_stream.part("general").retract("timeout")

    assert events == []


def test_a_retracted_part_is_marked_and_what_it_writes_next_is_a_new_paragraph() -> None:
    text_stream, events = stream()
    write = text_stream.part("general")
    write("Abrimos si")

    write.retract("dropped")
    write("Atendemos de 8 a 18.")

    assert events == [
        {"type": "text", "turn_id": "turn-1", "text": "Abrimos si", "agent": "general"},
        {"type": "retract", "turn_id": "turn-1", "agent": "general", "reason": "dropped"},
        {
            "type": "text",
            "turn_id": "turn-1",
            "text": "\n\nAtendemos de 8 a 18.",
            "agent": "general",
        },
    ]


def test_concurrent_steps_retract_what_was_shown_and_drop_what_was_buffered() -> None:
    text_stream, events = stream()
    slot = LiveSlot(text_stream, delay_s=0)
    live, buffered = slot.writer(0), slot.writer(1)
    live("Mañana hay ")
    buffered("Debe 10.")  # waits for the live step to end
    buffered.retract("timeout")
    slot.finish(1)
    live("lugar a las 9.")
    live.retract("dropped")
    slot.finish(0)

    slot.pump({0: "scheduling", 1: "financial"})

    assert [(e["type"], e.get("agent"), e.get("text", e.get("reason"))) for e in events] == [
        ("text", "scheduling", "Mañana hay "),
        ("text", "scheduling", "lugar a las 9."),
        ("retract", "scheduling", "dropped"),
    ]
    assert slot.order == [0]
