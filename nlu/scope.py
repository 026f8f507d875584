"""Out of scope although it holds a word of the trade: the dollar's rate ("¿a cuánto está el
dólar?" is not a price of ours), a translation ("traducime 'factura' al inglés" is not an
invoice), sports results, general knowledge. The classifier reads such questions by their
domain word, so these phrasings make a part `unknown` whatever it says (TAXONOMY: unknown is
"out of scope for the business"), the same way danger words make an emergency.
"""

from __future__ import annotations

import re

from nlu.normalize import fold

_CURRENCY = r"(?:dolar(?:es)?(?:\s+(?:blue|oficial|mep|tarjeta))?|blue|euros?|reales|real|bitcoin)"
_LANGUAGE = (
    r"(?:ingles|portugues|frances|italiano|aleman|chino|castellano|espanol|english|spanish|"
    r"portuguese|french|italian|german|chinese)"
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
    # general knowledge
    r"capital\s+(?:de|of)\s+(?!trabajo)|how\s+many\s+people\s+live|cuantos\s+habitantes|"
    r"poblacion\s+de|population\s+of|weather\s+(?:in|like)|clima\s+en"
    r")\b"
)


def off_topic(text: str) -> bool:
    """An ask about the world, not about the business, though it may name a trade word."""
    return bool(_OFF_TOPIC.search(fold(text)))
