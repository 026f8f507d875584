"""Reading a manager's decision in the chat: only an order that starts with the verb is one."""

from __future__ import annotations

import pytest

from nlu.decisions import read_decision, stated_reason, summary_matches


@pytest.mark.parametrize(
    ("text", "approve", "number", "words", "reason"),
    [
        ("aprobá la #12", True, 12, (), ""),
        ("Aprobala", True, None, (), ""),
        ("dale, aprobá la 7", True, 7, (), ""),
        ("aprobar la solicitud 44", True, 44, (), ""),
        ("rechazá la cancelación de Bianchi porque el cliente llamó", False, None,
         ("cancelacion", "bianchi"), "el cliente llamó"),
        ("no la apruebes #3", False, 3, (), ""),
        ("approve #12", True, 12, (), ""),
        ("reject the Bianchi cancellation: customer called", False, None,
         ("bianchi", "cancellation"), "customer called"),
        ("Deny request 9 because it is a duplicate", False, 9, (), "it is a duplicate"),
    ],
)  # fmt: skip
def test_orders_are_read_with_their_action_and_reason(
    text: str, approve: bool, number: int | None, words: tuple[str, ...], reason: str
) -> None:
    order = read_decision(text)
    assert order is not None
    assert (order.approve, order.approval_id, order.words, order.reason) == (
        approve, number, words, reason,
    )  # fmt: skip


@pytest.mark.parametrize(
    "text",
    [
        "¿quién aprobó la #12?",
        "¿hay algo para aprobar?",
        "agendá a Bianchi el lunes",
        "the manager approved it yesterday",
        "",
        "\x00aprobá",
    ],
)
def test_questions_and_requests_are_not_decisions(text: str) -> None:
    assert read_decision(text) is None


def test_a_summary_matches_by_the_start_of_each_word() -> None:
    summary = "Cancelar el trabajo #221 de Claudia Bianchi (Aire, lun 10:00)"
    assert summary_matches(("cancelacion", "bianchi"), summary)
    assert not summary_matches(("factura", "bianchi"), summary)
    assert not summary_matches((), summary)


def test_a_stated_reason_is_kept_and_a_request_without_one_gives_none() -> None:
    assert stated_reason("cancelá el de Bianchi porque se muda") == "se muda"
    assert stated_reason("Cancel Bianchi's job because she moved.") == "she moved"
    assert stated_reason("cancelá el trabajo #239\nel #239") == ""
