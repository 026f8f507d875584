"""What is not an answer: the defects small models send instead of one (llm/answers.py)."""

from __future__ import annotations

import pytest

from llm.answers import problem


@pytest.mark.parametrize(
    ("text", "defect"),
    [
        ("", "empty"),
        ("   \n ", "empty"),
        ("<prior_context>el cliente</prior_context> Hecho.", "echoed prompt fence"),
        ("Respuesta: < user_message >hola", "echoed prompt fence"),
        ("&lt;question&gt;¿Cuál?&lt;/question&gt;", "escaped markup"),
        ("Claro<|im_end|>", "chat-template token"),
        ("functions.ticket_create: { &#34;reason&#34;:false }", "escaped markup"),
        ("functions.customer_history: { }", "tool call as text"),
        ("function.price_list: { }", "tool call as text"),
        ('job_book({"customer_id": 3})', "tool call as text"),
        ("<tool_call>job_book</tool_call>", "chat-template token"),
        ('{"ok": true, "data": {}}', "raw tool data"),
        ('A "held": true, so the task is completed.', "raw tool data"),
        ("Te agendo el jueves. Te agendo el jueves. Te agendo el jueves.", "repetition"),
        (" ".join(["el técnico va"] * 40), "repetition"),
    ],
)
def test_each_kind_of_non_answer_is_named(text: str, defect: str) -> None:
    assert problem(text) == defect


@pytest.mark.parametrize(
    "text",
    [
        "Atendemos de lunes a viernes de 8 a 18.",
        "Juan Pérez debe $ 12.500 (factura A-0001-00000012, vencida el 10/11).",
        "Sí, sí, claro. Lo vemos el jueves.",
        "Turnos libres:\n- jueves 10:00\n- jueves 11:00\n- viernes 9:00",
        "Use <b>bold</b> in the note? No: plain text is fine.",
        "Pérez & Hijos S.A. tiene 2 facturas impagas.",
        "Nota: el técnico llega a las 10 (avisale al portero).",
    ],
)
def test_ordinary_answers_pass(text: str) -> None:
    assert problem(text) == ""
