"""The service a message is about, from a lexicon of trades (AC, heating, plumbing, gas...).

Returns the phrase as the operator wrote it (lowercased), including the kind of work when it is
attached ("instalación de split", "AC repair"), so the scheduling agent can pick a job type.
"""

from __future__ import annotations

import re

from copilot.understanding.normalize import fold_keep_length

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
_WORK_ES = (
    r"(?:instalacion|instalar|reparacion|reparar|mantenimiento|service|servicio|revision|"
    r"revisar|limpieza|limpiar|arreglo|arreglar|cambio|cambiar|colocacion|colocar|control|"
    r"inspeccion|visita\s+tecnica|carga|recarga|destapacion|destape|destapar|chequeo|"
    r"desinstalacion)"
)
_WORK_EN = (
    r"(?:installation|install|installing|repair|repairing|fix|fixing|maintenance|service|"
    r"servicing|inspection|inspect|cleaning|clean|check|checkup|check-up|tune-up|tune\s+up|"
    r"replacement|replace|recharge|refill|unclogging|unclog)"
)
_EQ = "(?:" + "|".join(_EQUIPMENT_ES + _EQUIPMENT_EN) + ")"
_OF = r"(?:\s+(?:de(?:l)?|de\s+la|de\s+los|para\s+(?:el|la)|of(?:\s+the)?|on(?:\s+the)?|"
_OF += r"for(?:\s+the)?|to(?:\s+the)?|the|el|la|los|las|un|una|a|an)){0,2}"
_AND = r"\s+(?:y|e|and|&)\s+"
_WORK = rf"(?:{_WORK_ES}|{_WORK_EN})"
# Work alone still names a job ("un service", "mantenimiento", "destapación").
_WORK_ALONE = r"(?:service|mantenimiento|destapacion|maintenance|plumbing|plomeria)"
# "instalación de calefón y termotanque", "heating and cooling checkup", "service y carga de gas".
_UNIT = rf"(?:{_WORK}{_OF}\s+{_EQ}(?:{_AND}{_EQ})*|{_EQ}(?:{_AND}{_EQ})*(?:\s+{_WORK_EN})?)"
_PATTERNS = [
    re.compile(rf"\b(?:{_UNIT}|{_WORK_ALONE})(?:{_AND}{_UNIT})+\b"),
    re.compile(rf"\b{_UNIT}\b"),
    re.compile(rf"\b{_WORK_ALONE}\b"),
]


def find_service(text: str) -> str | None:
    """The longest service phrase, as written (lowercased), or None."""
    folded = fold_keep_length(text)
    for pattern in _PATTERNS:
        matches = list(pattern.finditer(folded))
        if matches:
            best = max(matches, key=lambda m: (m.end() - m.start(), -m.start()))
            return text[best.start() : best.end()].lower()
    return None
