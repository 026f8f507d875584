"""Out of scope although it holds a word of the trade: the dollar's rate ("¿a cuánto está el
dólar?" is not a price of ours), a translation ("traducime 'factura' al inglés" is not an
invoice), sports results, general knowledge. The classifier reads such questions by their
domain word, so these phrasings make a part `unknown` whatever it says (TAXONOMY: unknown is
"out of scope for the business"), the same way danger words make an emergency.
"""

from __future__ import annotations

import re

from common.text import fold

_CURRENCY = r"(?:dolar(?:es)?(?:\s+(?:blue|oficial|mep|tarjeta))?|blue|euros?|reales|real|bitcoin)"
_LANGUAGE = (
    r"(?:ingles|portugues|frances|italiano|aleman|chino|castellano|espanol|english|spanish|"
    r"portuguese|french|italian|german|chinese)"
)
# Public transport and other businesses, whose hours are not ours.
_ELSEWHERE = (
    r"(?:subte|tren|trenes|colectivo|colectivos|bondi|banco|correo|super|supermercado|shopping|"
    r"museo|subway|train|bus|bank|post\s+office|museum|mall)"
)
# Other countries (not a street: "Uruguay 1200" is an address, so never followed by a number).
_COUNTRY = (
    r"(?:uruguay|chile|brasil|brazil|paraguay|bolivia|peru|mexico|espana|spain|"
    r"estados\s+unidos|usa|the\s+us|italia|italy|francia|france)(?!\s*\d)"
)
_OFF_TOPIC = re.compile(
    r"\b(?:"
    # exchange rates
    rf"(?:cuanto|como)\s+(?:esta|cotiza|cerro|abrio|vale|sale)\s+(?:hoy\s+)?(?:el\s+)?{_CURRENCY}|"
    rf"(?:cotizacion|tipo\s+de\s+cambio|precio)\s+del?\s+{_CURRENCY}|"
    r"exchange\s+rate|(?:dollar|euro|peso)\s+(?:rate|exchange)|"
    r"how\s+much\s+is\s+(?:the\s+)?(?:dollar|euro)|"
    # translation
    r"traduc\w*|traduz\w*|translat\w*|"
    rf"(?:como\s+se\s+dice|how\s+do\s+you\s+say|what\s+does)\b.*\b(?:en|in)\s+{_LANGUAGE}|"
    # sports
    r"(?:quien|who)\s+(?:gano|won|gana|wins|va\s+a\s+ganar|will\s+win)|"
    r"champions(?:\s+league)?|libertadores|mundial|world\s+cup|super\s*bowl|superclasico|"
    # when a match is played, its score, the standings
    r"(?:a\s+que\s+hora|cuando)\s+(?:juega|juegan|arranca\s+el\s+partido|empieza\s+el\s+partido)|"
    r"what\s+time\s+(?:does|is)\s+the\s+(?:\w+\s+)?(?:game|match)|"
    r"(?:score|result)\s+of\s+the\s+(?:\w+\s+)?(?:game|match)|"
    r"tabla\s+de\s+posiciones|standings|"
    # other businesses' timetables and bookings: the subway's hours, a table, a flight
    rf"horarios?\s+del?\s+{_ELSEWHERE}|{_ELSEWHERE}\s+(?:hours|schedule|timetable)|"
    r"(?:una\s+)?mesa\s+para\s+(?:dos|tres|cuatro|\d+)|table\s+for\s+(?:two|three|four|\d+)|"
    r"(?:pasaje|vuelo|pasajes|vuelos)\s+(?:a|para|de)\b|flights?\s+to\b|"
    # general knowledge
    r"capital\s+(?:de|of)\s+(?!trabajo)|how\s+many\s+people\s+live|cuantos\s+habitantes|"
    r"cuanta\s+gente\s+(?:vive|hay)|"
    r"poblacion\s+de|population\s+of|weather\s+(?:in|like)|clima\s+en|"
    r"(?:quien|who)\s+(?:invento|descubrio|invented|discovered)|"
    rf"(?:iva|impuestos?|vat|taxes|tax\s+rate)\s+(?:en|in)\s+{_COUNTRY}"
    r")\b"
)


def off_topic(text: str) -> bool:
    """An ask about the world, not about the business, though it may name a trade word."""
    return bool(_OFF_TOPIC.search(fold(text)))
