"""CUIT (Argentine tax id): format, find in text, validate the mod-11 check digit."""

from __future__ import annotations

import re

# Persons 20/23/24/25/26/27, companies 30/33/34 (AFIP's assignment rules).
VALID_PREFIXES = frozenset({"20", "23", "24", "25", "26", "27", "30", "33", "34"})
_WEIGHTS = (5, 4, 3, 2, 7, 6, 5, 4, 3, 2)
# Two digits, eight digits, one digit, with optional dash/dot/space/slash separators; not glued
# to other digits so phone numbers and amounts are not mistaken for one.
CUIT_IN_TEXT = re.compile(r"(?<![\d.,])(\d{2})[-\s./]?(\d{8})[-\s./]?(\d)(?!\d|[.,]\d)")
# Same shape with a dotted DNI-like body: 20-12.345.678-9.
_DOTTED_CUIT = re.compile(r"(?<![\d.,])(\d{2})[-\s]?(\d{2}\.\d{3}\.\d{3})[-\s]?(\d)(?!\d|[.,]\d)")


def digits_of(text: str) -> str:
    return re.sub(r"\D", "", text)


def format_cuit(text: str) -> str | None:
    """ "20123456786" / "20-12345678-6" → "20-12345678-6"; None unless it has 11 digits."""
    digits = digits_of(text)
    if len(digits) != 11:
        return None
    return f"{digits[:2]}-{digits[2:10]}-{digits[10]}"


def check_digit(first_ten: str) -> int | None:
    """The mod-11 check digit for ten digits; None when the remainder makes it undefined (10)."""
    total = sum(int(d) * w for d, w in zip(first_ten, _WEIGHTS, strict=True))
    digit = 11 - total % 11
    if digit == 11:
        return 0
    return None if digit == 10 else digit


def cuit_problem(text: str) -> str | None:
    """Why `text` is not a valid CUIT, as a code: "format", "length", "prefix", "check_digit".

    None when it is valid. Separators (dashes, dots, spaces) are allowed anywhere.
    """
    if not re.fullmatch(r"[\d\s.\-/]+", text.strip() or "x"):
        return "format"
    digits = digits_of(text)
    if len(digits) != 11:
        return "length"
    if digits[:2] not in VALID_PREFIXES:
        return "prefix"
    if check_digit(digits[:10]) != int(digits[10]):
        return "check_digit"
    return None


def is_valid_cuit(text: str) -> bool:
    return cuit_problem(text) is None


def find_cuit(text: str) -> str | None:
    """The first CUIT-shaped number in free text, formatted NN-NNNNNNNN-N (valid or not)."""
    for pattern in (CUIT_IN_TEXT, _DOTTED_CUIT):
        match = pattern.search(text)
        if match:
            return format_cuit("".join(match.groups()))
    return None
