"""The service a message is about, from a lexicon of trades (AC, heating, plumbing, gas...).

Returns the phrase as the operator wrote it (lowercased), including the kind of work when it is
attached ("instalación de split", "AC repair"), so the scheduling agent can pick a job type.
"""

from __future__ import annotations

import re

from common.text import fold_keep_length

# Folded (no accents) regex fragments; longer phrases first so they win over their parts.
_EQUIPMENT_ES = [
    r"aires?\s+acondicionados?(?:\s+split)?", r"splits?", r"calderas?", r"calefon(?:es)?",
    r"termotanques?", r"estufas?", r"calefactor(?:es)?", r"calefaccion(?:\s+central)?",
    r"radiador(?:es)?", r"piso\s+radiante", r"carga\s+de\s+gas", r"perdida\s+de\s+(?:gas|agua)",
    r"instalacion\s+de\s+gas", r"gas", r"destapacion(?:\s+de\s+\w+)?", r"cloacas?",
    r"tablero(?:\s+electrico)?", r"instalacion\s+electrica", r"disyuntor(?:es)?", r"termicas?",
    r"cableado", r"enchufes?", r"tomacorrientes?", r"canerias?", r"canos?", r"canillas?",
    r"inodoros?", r"bombas?\s+de\s+agua", r"bombas?", r"tanques?\s+de\s+agua", r"desagues?",
    r"griferias?", r"plomeria", r"electricidad", r"aires?", r"equipos?\s+de\s+aire",
    r"heladeras?", r"extractor(?:es)?", r"ventilador(?:es)?", r"perdidas?", r"refrigeracion",
]  # fmt: skip
_EQUIPMENT_EN = [
    r"air\s+condition(?:er|ers|ing)(?:\s+unit)?", r"a/?c(?:\s+units?)?", r"hvac", r"split\s+units?",
    r"boilers?", r"water\s+heaters?", r"tankless\s+heaters?", r"heaters?", r"furnaces?",
    r"heating(?:\s+system)?", r"radiators?", r"underfloor\s+heating", r"gas\s+(?:refill|recharge)",
    r"gas\s+lines?", r"gas", r"drains?(?:\s+cleaning|\s+unclogging)?", r"sewers?",
    r"electrical\s+panel", r"breaker\s+panel", r"breakers?", r"wiring", r"outlets?",
    r"pipes?", r"plumbing", r"faucets?", r"taps?", r"toilets?", r"water\s+pumps?", r"pumps?",
    r"water\s+tanks?", r"thermostats?", r"cooling", r"leaks?",
]  # fmt: skip
# Kinds of work, as nouns: "instalar 3 splits" or "revisar el aire" describe a task, while the
# service a job is booked as is named with a noun ("instalación de split", "boiler service").
_WORK_ES = (
    r"(?:instalacion|reparacion|mantenimiento|service|servicio|revision|limpieza|arreglo|cambio|"
    r"colocacion|control|inspeccion|carga|recarga|destapacion|destape|chequeo|desinstalacion)"
)
_WORK_EN = (
    r"(?:installation|install|repair|maintenance|service|servicing|inspection|cleaning|check|"
    r"checkup|check-up|tune-up|replacement|recharge|refill|unclogging)"
)
_EQ = "(?:" + "|".join(_EQUIPMENT_ES + _EQUIPMENT_EN) + ")"
_OF = r"\s+(?:de|del|of|for)"
_AND = r"\s+(?:y|e|and|&)\s+"
_WORK = rf"(?:{_WORK_ES}|{_WORK_EN})"
# "instalación de calefón y termotanque", "heating and cooling checkup", "boiler service".
_UNIT = rf"(?:{_WORK}{_OF}\s+{_EQ}(?:{_AND}{_EQ})*|{_EQ}(?:{_AND}{_EQ})*\s+{_WORK_EN})"
# "service y carga de gas": a bare kind of work joined to a full service phrase.
_PATTERNS = [
    re.compile(rf"\b(?:{_UNIT}|{_WORK})(?:{_AND}{_UNIT})+\b"),
    re.compile(rf"\b{_UNIT}\b"),
]


def find_service(text: str) -> str | None:
    """The service phrase (kind of work + equipment), as written and lowercased, or None.

    Equipment alone ("el aire gotea", "a new boiler") or work alone ("el service de ayer") is not
    a service to book: the labelling rules keep only the combination.
    """
    folded = fold_keep_length(text)
    for pattern in _PATTERNS:
        matches = list(pattern.finditer(folded))
        if matches:
            best = max(matches, key=lambda m: (m.end() - m.start(), -m.start()))
            return text[best.start() : best.end()].lower()
    return None
