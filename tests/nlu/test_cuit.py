from __future__ import annotations

import pytest

from nlu import cuit_problem, is_valid_cuit
from nlu.cuit import check_digit, find_cuit, format_cuit


@pytest.mark.parametrize("cuit", ["20-12345678-6", "20123456786", "30-71234567-1", "27 90830166 3"])
def test_it_accepts_cuits_with_the_right_check_digit(cuit: str) -> None:
    assert is_valid_cuit(cuit)
    assert cuit_problem(cuit) is None


@pytest.mark.parametrize(
    ("cuit", "problem"),
    [
        ("20-12345678-5", "check_digit"),
        ("27-90830166-6", "check_digit"),
        ("12-12345678-6", "prefix"),
        ("20-1234567-6", "length"),
        ("2012345678", "length"),
        ("20-ABC45678-6", "format"),
        ("", "format"),
    ],
)
def test_it_says_why_a_cuit_is_invalid(cuit: str, problem: str) -> None:
    assert cuit_problem(cuit) == problem
    assert not is_valid_cuit(cuit)


def test_the_check_digit_is_mod_11_with_the_afip_weights() -> None:
    assert check_digit("2012345678") == 6
    assert check_digit("3071234567") == 1


def test_it_finds_and_formats_a_cuit_in_text() -> None:
    assert find_cuit("el cuit es 30712345671, anotalo") == "30-71234567-1"
    assert find_cuit("CUIT 20-12345678-6, y agendale") == "20-12345678-6"
    assert format_cuit("20.12345678.6") == "20-12345678-6"


def test_it_does_not_take_phone_numbers_or_amounts_for_a_cuit() -> None:
    assert find_cuit("llamalo al 11 4567 8901") is None
    assert find_cuit("presupuesto por $640.000") is None
