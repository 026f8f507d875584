"""CUIT/CUIL: prefixes, the mod-11 check digit and the NN-NNNNNNNN-N format."""

from __future__ import annotations

import pytest

from business.cuit import (
    check_digit,
    cuit_digits,
    cuit_problem,
    expected_check_digit,
    format_cuit,
    is_valid_cuit,
)


@pytest.mark.parametrize(
    "raw",
    [
        "20-12345678-6",
        "20123456786",
        "30-71234567-1",
        "27 34567890 0",
        "30.50000000.3",
        "23999999999",
    ],
)
def test_valid_cuits(raw: str) -> None:
    assert is_valid_cuit(raw)
    assert cuit_problem(raw) is None


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("20-1234567A-6", "not_digits"),
        ("20-1234567-6", "length"),
        ("201234567861", "length"),
        ("99-12345678-6", "prefix"),
        ("20-12345678-7", "check_digit"),
        ("30-71234567-2", "check_digit"),
    ],
)
def test_invalid_cuits_say_why(raw: str, problem: str) -> None:
    assert not is_valid_cuit(raw)
    assert cuit_problem(raw) == problem


def test_check_digit_is_mod_11_with_eleven_as_zero() -> None:
    assert check_digit("2012345678") == 6
    assert check_digit("2734567890") == 0
    # A base whose remainder gives 10 has no valid digit: AFIP changes the prefix instead.
    base = next(f"20{n:08d}" for n in range(10**6) if check_digit(f"20{n:08d}") == 10)
    assert expected_check_digit(base + "0") is None
    assert all(cuit_problem(base + str(d)) == "check_digit" for d in range(10))


def test_formatting_and_digits() -> None:
    assert format_cuit("20123456786") == "20-12345678-6"
    assert format_cuit(" 20.12345678/6 ") == "20-12345678-6"
    assert format_cuit("123") == "123"
    assert cuit_digits("20-12345678-6") == "20123456786"
    assert expected_check_digit("20-12345678-0") == 6
    assert expected_check_digit("abc") is None
