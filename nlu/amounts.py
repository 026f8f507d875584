"""Money amounts in es-AR/en text → Decimal.

Argentine writing mixes formats: "$640.000 más IVA", "$ 12.500,50", "15 lucas" (luca = 1.000),
"1,5 palos" (palo = 1.000.000), "210k", "50 mil". A bare number is an amount only when it is
formatted like one (thousands separators) or when the message talks about money.
"""

from __future__ import annotations

import decimal
import re

from common.text import fold_keep_length

_NUMBER = r"\d{1,3}(?:[.,]\d{3})+(?:[.,]\d{1,2})?|\d+(?:[.,]\d{1,2})?"
_MULTIPLIERS: dict[str, int] = {
    "k": 1_000, "mil": 1_000, "luca": 1_000, "lucas": 1_000, "lks": 1_000, "grand": 1_000,
    "palo": 1_000_000, "palos": 1_000_000, "millon": 1_000_000, "millones": 1_000_000,
    "million": 1_000_000, "millions": 1_000_000, "mill": 1_000_000,
}  # fmt: skip
_MULT = "|".join(sorted(_MULTIPLIERS, key=len, reverse=True))
_CURRENCY_BEFORE = r"(?:\$|ars|usd|u\$s|us\$|u\$d)"
_CURRENCY_AFTER = r"(?:pesos|dolares|dollars|ars|usd|mangos)"
_WITH_MULTIPLIER = re.compile(
    rf"(?<![\w.,])(?:{_CURRENCY_BEFORE}\s*)?({_NUMBER}|un|una|uno|one|a)\s*({_MULT})\b"
    r"(\s+y\s+medio|\s+and\s+a\s+half)?"
)
# Phone numbers ("cel 11 4567 8901", "555-0134", "4781-2233") are never amounts.
_PHONE = re.compile(r"(?<![\w$])(?:\+?\d{1,4}[\s-])?\d{2,4}[\s-]\d{4}(?:[\s-]\d{4})?(?!\w)")
_WITH_CURRENCY = re.compile(
    rf"{_CURRENCY_BEFORE}\s*({_NUMBER})(?![\d])|(?<![\w.,/])({_NUMBER})\s*{_CURRENCY_AFTER}\b"
)
_THOUSANDS = re.compile(r"(?<![\w.,/$-])(\d{1,3}(?:\.\d{3})+(?:,\d{1,2})?)(?![\d.,/-])")
_UNITS = (
    r"frigorias|frigorias/h|btu|kcal|w|kw|watts?|m2|m3|m|mts?|metros?|cm|mm|km|kg|kilos?|litros?|"
    r"lts?|l|pulgadas?|hs|h|horas?|min|minutos?|dias?|anos?|personas|equipos?|unidades|u|"
    r"years?|days?|hours?|people|units?|sq|ft|feet|meters?"
)
_BARE = re.compile(rf"(?<![\w.,/:$-])(\d{{3,9}}(?:,\d{{1,2}})?)(?![\d.,/:-])(?!\s*(?:{_UNITS})\b)")
_MONEY_CUE = re.compile(
    r"\b(?:presupuest\w*|cotiz\w*|factur\w*|cobr\w*|pag\w*|monto|importe|total|sale|cuesta|"
    r"precio|debe|deuda|saldo|seña|sena|quote|invoice|bill\w*|charge|price|cost\w*|owes?|paid|"
    r"pay\w*|amount|iva|vat)\b"
)


# Numbers said in words, as a dictated voice note writes them ("noventa y cinco mil", "ciento
# ochenta lucas", "dos mil quinientos pesos"): 1 to 999, then what scales them.
_SPELLED_VALUES: dict[str, int] = {
    "un": 1, "uno": 1, "una": 1, "dos": 2, "tres": 3, "cuatro": 4, "cinco": 5, "seis": 6,
    "siete": 7, "ocho": 8, "nueve": 9, "diez": 10, "once": 11, "doce": 12, "trece": 13,
    "catorce": 14, "quince": 15, "dieciseis": 16, "diecisiete": 17, "dieciocho": 18,
    "diecinueve": 19, "veinte": 20, "veintiun": 21, "veintiuno": 21, "veintiuna": 21,
    "veintidos": 22, "veintitres": 23, "veinticuatro": 24, "veinticinco": 25, "veintiseis": 26,
    "veintisiete": 27, "veintiocho": 28, "veintinueve": 29, "treinta": 30, "cuarenta": 40,
    "cincuenta": 50, "sesenta": 60, "setenta": 70, "ochenta": 80, "noventa": 90, "cien": 100,
    "ciento": 100, "doscientos": 200, "doscientas": 200, "trescientos": 300, "trescientas": 300,
    "cuatrocientos": 400, "cuatrocientas": 400, "quinientos": 500, "quinientas": 500,
    "seiscientos": 600, "seiscientas": 600, "setecientos": 700, "setecientas": 700,
    "ochocientos": 800, "ochocientas": 800, "novecientos": 900, "novecientas": 900,
}  # fmt: skip
SPELLED_NUMBER_WORDS = frozenset(_SPELLED_VALUES)  # also non-content words to the segmenter
_SPELLED_WORD = "|".join(sorted(_SPELLED_VALUES, key=len, reverse=True))
_SPELLED_GROUP = rf"(?:{_SPELLED_WORD})(?:\s+(?:y\s+)?(?:{_SPELLED_WORD}))*"
_SPELLED = re.compile(
    rf"(?<![\w.,])({_SPELLED_GROUP})\s+(mil|lucas?|palos?|millon|millones)\b"
    rf"(?:\s+({_SPELLED_GROUP})\b)?|(?<![\w.,])({_SPELLED_GROUP})\s+(?:pesos|mangos)\b"
)


def spelled_number(words: str) -> int | None:
    """ "noventa y cinco" → 95, "ciento ochenta" → 180 (1 to 999; None when the words do not
    make one number: "dos tres")."""
    total, last = 0, 1000
    for word in words.split():
        if word == "y":
            continue
        value = _SPELLED_VALUES[word]
        # Hundreds, then tens, then units, each smaller than the one before.
        if value >= last or (value < 10 and last < 10) or (10 <= value < 100 and last < 100):
            return None
        total, last = total + value, value
    return total or None


def _spelled(match: re.Match[str]) -> decimal.Decimal | None:
    if match[4]:
        value = spelled_number(match[4])
        return decimal.Decimal(value) if value else None
    value = spelled_number(match[1])
    if value is None:
        return None
    amount = value * _MULTIPLIERS[match[2]]
    if match[3]:  # "dos mil quinientos"
        rest = spelled_number(match[3])
        amount += rest if rest and match[2] == "mil" else 0
    return decimal.Decimal(amount)


def parse_number(text: str) -> decimal.Decimal | None:
    """ "640.000" → 640000, "12.500,50" → 12500.50, "1,5" → 1.5, "12,500.50" → 12500.50."""
    text = text.strip()
    if "," in text and "." in text:
        decimal_sep = "," if text.rfind(",") > text.rfind(".") else "."
        thousands = "." if decimal_sep == "," else ","
        text = text.replace(thousands, "").replace(decimal_sep, ".")
    elif "," in text or "." in text:
        sep = "," if "," in text else "."
        groups = text.split(sep)
        # Every group after the first has three digits → thousands ("640.000", "15,000").
        if len(groups) > 1 and all(len(g) == 3 for g in groups[1:]):
            text = "".join(groups)
        else:
            text = text.replace(",", ".")
    try:
        return decimal.Decimal(text)
    except decimal.InvalidOperation:
        return None


def _scaled(number: str, multiplier: str, half: str | None = None) -> decimal.Decimal | None:
    """ "15 lucas" → 15000, "un palo y medio" → 1500000."""
    value = (
        decimal.Decimal(1) if number in ("un", "una", "uno", "one", "a") else parse_number(number)
    )
    if value is None:
        return None
    return (value + (decimal.Decimal("0.5") if half else 0)) * _MULTIPLIERS[multiplier]


def _after_a_name(text: str, start: int) -> bool:
    """ "Thames 820", "Corrientes 1234": a number after a capitalised word is a street number."""
    before = re.search(r"([^\W\d_][\w.]*)\s+$", text[:start])
    return bool(before and before[1][:1].isupper())


def find_amount(text: str) -> decimal.Decimal | None:
    """The first amount in text (dates, times and CUITs should already be blanked out)."""
    text = _PHONE.sub(lambda m: " " * len(m[0]), text)
    folded = fold_keep_length(text)
    candidates: list[tuple[int, decimal.Decimal | None]] = []
    for m in _WITH_MULTIPLIER.finditer(folded):
        if m[1] == "a" and m[2] not in ("grand", "million"):
            continue  # "a m..." is not "one"
        candidates.append((m.start(), _scaled(m[1], m[2], m[3])))
    for m in _WITH_CURRENCY.finditer(folded):
        candidates.append((m.start(), parse_number(m[1] or m[2])))
    for m in _THOUSANDS.finditer(folded):
        candidates.append((m.start(), parse_number(m[1])))
    for m in _SPELLED.finditer(folded):
        candidates.append((m.start(), _spelled(m)))
    if not candidates and _MONEY_CUE.search(folded):
        for m in _BARE.finditer(folded):
            if not _after_a_name(text, m.start()):
                candidates.append((m.start(), parse_number(m[1])))
    values = [(start, value) for start, value in sorted(candidates, key=lambda c: c[0]) if value]
    return _normalised(values[0][1]) if values else None


def _normalised(value: decimal.Decimal) -> decimal.Decimal:
    """Drop float-like noise: 1.5 * 1000000 → 1500000, keep cents when they exist."""
    return value.quantize(decimal.Decimal("0.01")).normalize() if value % 1 else value.quantize(1)
