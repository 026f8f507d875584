"""The field rules every entry shares: the models' `clean()` and field validators, the services,
the admin and the forms all call these, so a CUIT, a phone, an amount or a period is judged the
same way whichever door it came in through."""

from __future__ import annotations

import datetime
import re
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from business.cuit import cuit_problem, format_cuit

# Argentina's IVA rates run from 0 (exempt) to 27 % (some utilities); anything else is a typo.
IVA_MAX = Decimal("27")

non_negative = MinValueValidator(Decimal("0"), gettext_lazy("It cannot be negative."))
positive = MinValueValidator(Decimal("0.01"), gettext_lazy("It must be more than zero."))
iva_bounds = (
    MinValueValidator(Decimal("0"), gettext_lazy("IVA cannot be negative.")),
    MaxValueValidator(IVA_MAX, gettext_lazy("IVA is at most 27%%.")),
)


def field_error(field_name: str, message: str, code: str = "invalid") -> ValidationError:
    return ValidationError({field_name: ValidationError(message, code=code)})


def normalise_phone(raw: str, field_name: str = "phone") -> str:
    """An Argentine phone in E.164, e.g. "011 4567-8901" → "+541145678901" (the one stored form:
    the copilot, the admin and the demo all write it, and the search matches its digits).

    Rules: "+" or "00" keep the country code given; "54…" is already international; a leading
    trunk "0" is dropped; ten digits are area code + number; eight digits are a local number in
    the Buenos Aires area (11), where the company works. Raises ValidationError otherwise.
    """
    text = (raw or "").strip()
    digits = re.sub(r"\D", "", text)
    if text.startswith("+"):
        result = digits
    elif digits.startswith("00"):
        result = digits[2:]
    elif digits.startswith("54") and len(digits) >= 12:
        result = digits
    else:
        national = digits[1:] if digits.startswith("0") else digits
        if len(national) == 8:
            national = "11" + national
        result = "54" + national if len(national) == 10 else ""
    if not 10 <= len(result) <= 15 or re.sub(r"[\d\s().+\-/]", "", text):
        message = _("That does not look like a phone number: %(raw)s") % {"raw": raw}
        raise field_error(field_name, message)
    return "+" + result


# Area codes of three digits (the big cities outside Buenos Aires); 11 is Buenos Aires' two,
# and the rest of the country's are four (ENACOM's numbering plan).
THREE_DIGIT_AREAS = frozenset(
    {
        "220",
        "221",
        "223",
        "230",
        "236",
        "237",
        "249",
        "260",
        "261",
        "263",
        "264",
        "266",
        "280",
        "291",
        "294",
        "297",
        "298",
        "299",
        "336",
        "341",
        "342",
        "343",
        "345",
        "348",
        "351",
        "353",
        "358",
        "362",
        "364",
        "370",
        "376",
        "379",
        "380",
        "381",
        "383",
        "385",
        "387",
        "388",
    }
)


def format_phone(stored: str) -> str:
    """The one way a phone is shown: "+54 11 4567-8901", a mobile "+54 9 11 5555-0000"; a
    number from elsewhere (or not in E.164) as it is."""
    text = (stored or "").strip()
    if not text.startswith("+54") or not text[1:].isdigit():
        return text
    national = text[3:]
    mobile = national.startswith("9")
    if mobile:
        national = national[1:]
    if len(national) != 10:
        return text
    if national.startswith("11"):
        area_length = 2
    elif national[:3] in THREE_DIGIT_AREAS:
        area_length = 3
    else:
        area_length = 4
    area, local = national[:area_length], national[area_length:]
    return " ".join(["+54", *(["9"] if mobile else []), area, f"{local[:-4]}-{local[-4:]}"])


def optional_phone(raw: str, field_name: str = "phone") -> str:
    return normalise_phone(raw, field_name) if (raw or "").strip() else ""


def clean_cuit(raw: str) -> str:
    """The CUIT as NN-NNNNNNNN-N, "" for none; ValidationError (on "cuit") when it is invalid."""
    if not (raw or "").strip():
        return ""
    problem = cuit_problem(raw)
    if problem is not None:
        messages = {
            "not_digits": _("A CUIT has only digits (and optional dashes)."),
            "length": _("A CUIT has 11 digits."),
            "prefix": _("A CUIT starts with 20, 23, 24, 27, 30, 33 or 34."),
            "check_digit": _("That CUIT's check digit is wrong: please check the number."),
        }
        raise field_error("cuit", messages.get(problem, _("That CUIT is not valid.")), problem)
    return format_cuit(raw)


def check_period[T: (datetime.date, datetime.time)](
    start: T | None,
    end: T | None,
    field_name: str,
    message: str,
) -> None:
    """`end` must not come before `start` (either missing means there is nothing to compare)."""
    if start is not None and end is not None and end < start:
        raise field_error(field_name, message, "period")
