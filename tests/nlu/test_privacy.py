"""The privacy guard's detectors and vault (T4)."""

from __future__ import annotations

import pytest

from nlu.privacy import ADDRESS, CATEGORIES, Vault, find


@pytest.mark.parametrize(
    ("text", "category", "value"),
    [
        ("llamalo al 11 5555-1234", "phone", "11 5555-1234"),
        ("su cel es +54 9 11 4444-5678 ok", "phone", "+54 9 11 4444-5678"),
        ("tel (0351) 455-1234", "phone", "(0351) 455-1234"),
        ("mandale a juana.perez@gmail.com", "email", "juana.perez@gmail.com"),
        ("cuit 20-12345678-6", "cuit", "20-12345678-6"),
        ("su DNI 30123456 está", "dni", "30123456"),
        ("dni 30.123.456", "dni", "30.123.456"),
        ("pagó con la 4111 1111 1111 1111", "card", "4111 1111 1111 1111"),
    ],
)
def test_it_finds_each_kind(text: str, category: str, value: str) -> None:
    found = [(text[s:e], c) for s, e, c in find(text)]
    assert (value, category) in found


@pytest.mark.parametrize(
    "text",
    [
        "agendá el trabajo #362 para el 24/11 a las 10:30",
        "facturale $35.600 a Gómez",
        "son 2 equipos de 3000 frigorías",
        "el presupuesto P-000027",
        "pagó 15000 el 12/11/2026",
    ],
)
def test_it_leaves_records_and_amounts_alone(text: str) -> None:
    assert find(text) == []


def test_a_number_that_fails_luhn_is_not_a_card() -> None:
    assert "card" not in {c for _s, _e, c in find("4111 1111 1111 1112")}


def test_given_names_are_masked_as_whole_words_without_case_or_accents() -> None:
    vault = Vault(names=("Graciela Ibarra", "Ibarra", "Ana"))

    masked = vault.mask("GRACIELA IBARRA y la sra. ibarra; Anabel no, ana sí: ana@x.com")

    assert masked == "[NOMBRE_1] y la sra. [NOMBRE_2]; Anabel no, [NOMBRE_3] sí: [EMAIL_1]"
    assert vault.unmask("[NOMBRE_2]") == "ibarra"
    assert vault.receipt()["name"] == {"values": 3, "times": 3}
    assert Vault().mask("Graciela Ibarra") == "Graciela Ibarra"  # no names given, none masked


def test_a_value_keeps_its_placeholder_and_comes_back() -> None:
    vault = Vault()
    first = vault.mask("Juana: 11 5555-1234, juana@example.com")
    again = vault.mask("otra vez el 11-5555-1234 y el 11 4444 0000")
    assert first == "Juana: [TEL_1], [EMAIL_1]"
    assert again == "otra vez el [TEL_1] y el [TEL_2]"
    assert vault.unmask("Llamo al [TEL_1] y escribo a [EMAIL_1]; [TEL_9] no existe") == (
        "Llamo al 11 5555-1234 y escribo a juana@example.com; [TEL_9] no existe"
    )
    assert vault.receipt() == {
        "email": {"values": 1, "times": 1},
        "phone": {"values": 2, "times": 3},
    }


def test_addresses_only_when_configured() -> None:
    text = "el equipo está en Av. Cabildo 2150"
    assert Vault().mask(text) == text
    assert Vault(categories=CATEGORIES).mask(text) == "el equipo está en [DIR_1]"
    assert ADDRESS in CATEGORIES


def test_a_card_is_shown_by_its_last_four_digits_only() -> None:
    from nlu.privacy import redact_for_display

    text, counts = redact_for_display("pagó con la 4111 1111 1111 1111 ayer, tel 11 5555-1234")
    assert text == "pagó con la •••• 1111 ayer, tel 11 5555-1234"  # a phone is shown to members
    assert counts == {"card": 1}
    vault = Vault()
    assert vault.mask("la 4111-1111-1111-1111") == "la [TARJETA_1]"
    assert vault.unmask("cobrar con [TARJETA_1]") == "cobrar con •••• 1111"  # never whole again


def test_a_text_sent_again_is_neither_searched_nor_counted_again() -> None:
    vault = Vault()
    prompt = "Juana: 11 5555-1234"
    first = vault.mask(prompt)
    for _ in range(5):  # an agent's loop resends its history on every call
        assert vault.mask(prompt) == first
    assert vault.receipt() == {"phone": {"values": 1, "times": 1}}


def test_a_new_vault_masks_a_text_an_earlier_turn_masked_the_same_and_counts_it_again() -> None:
    """`find` is kept across turns (issue 26): each turn's vault still gives its own
    placeholders, its own receipt, and a caller's list to change."""
    prompt = "Juana: 11 5555-1234 y juana@example.com"
    first, second = Vault(names=("Juana",)), Vault(names=("Juana",))
    assert first.mask(prompt) == second.mask(prompt)
    assert (
        first.receipt()
        == second.receipt()
        == {
            "phone": {"values": 1, "times": 1},
            "email": {"values": 1, "times": 1},
            "name": {"values": 1, "times": 1},
        }
    )
    spans = find(prompt)
    spans.clear()  # the kept answer is not the caller's list
    assert find(prompt) != []
    assert find(prompt, names=("Juana",)) != find(prompt)  # the names are part of the key
