"""CUIT/CUIL (Argentine tax id): 11 digits, a known type prefix and a mod-11 check digit.

Pure Python on purpose: the embedded engine (no Django) and the services share it.
"""

from __future__ import annotations

import re

WEIGHTS = (5, 4, 3, 2, 7, 6, 5, 4, 3, 2)
# Persons (20, 23, 24, 27), companies (30, 33, 34) and the special cases AFIP issues.
PREFIXES = frozenset({"20", "23", "24", "25", "26", "27", "30", "33", "34"})


def cuit_digits(raw: str) -> str:
    return re.sub(r"[\s.\-/]", "", raw or "")


def check_digit(first_ten: str) -> int:
    """The mod-11 verifier; 10 means the base has no valid digit (AFIP switches the prefix)."""
    total = sum(int(d) * w for d, w in zip(first_ten, WEIGHTS, strict=True))
    remainder = 11 - total % 11
    return {11: 0}.get(remainder, remainder)


def cuit_problem(raw: str) -> str | None:
    """Why `raw` is not a valid CUIT, as a code (None when it is valid).

    Codes: "empty", "not_digits", "length", "prefix", "check_digit".
    """
    digits = cuit_digits(raw)
    if not digits:
        return "empty"
    if not digits.isdigit():
        return "not_digits"
    if len(digits) != 11:
        return "length"
    if digits[:2] not in PREFIXES:
        return "prefix"
    expected = check_digit(digits[:10])
    if expected == 10 or expected != int(digits[10]):
        return "check_digit"
    return None


def is_valid_cuit(raw: str) -> bool:
    return cuit_problem(raw) is None


def format_cuit(raw: str) -> str:
    """NN-NNNNNNNN-N for 11 digits; anything else is returned as given."""
    digits = cuit_digits(raw)
    if len(digits) != 11 or not digits.isdigit():
        return raw
    return f"{digits[:2]}-{digits[2:10]}-{digits[10]}"


def expected_check_digit(raw: str) -> int | None:
    digits = cuit_digits(raw)
    if len(digits) != 11 or not digits.isdigit():
        return None
    value = check_digit(digits[:10])
    return None if value == 10 else value
