"""Real-time signals (O10): urgency, sentiment and frustration from cheap heuristics.

Read on every message before any classifier runs, in well under a millisecond. An emergency puts
the escalation agent first in the chain even when the classifier missed it; frustration is a
signal, not an intent (TAXONOMY.md): it colours the reply and only becomes
`frustration_detected` when the message holds nothing else to act on.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from common.text import fold

Urgency = Literal["normal", "high", "emergency"]
Sentiment = Literal["negative", "neutral", "positive"]

FRUSTRATED_AT = 0.5


def _any(*patterns: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(patterns) + r")\b")


# Danger on its own: gas, water, fire, electricity (folded text: no accents, lower case).
_DANGER = _any(
    r"(?:perdida|fuga|escape) de gas",
    r"(?:olor|olorcito) a gas",
    r"huele a gas",
    r"se siente (?:el )?gas",
    r"monoxido",
    r"inundaci\w+",
    r"se (?:esta )?inund\w+",
    r"inundad[oa]s?",
    r"chispa\w*",
    r"chispazo\w*",
    r"(?:sale|hay|sale mucho|larga) humo",
    r"humo",
    r"fuego",
    r"incendi\w+",
    r"se (?:esta )?prend\w+ fuego",
    r"cortocircuito",
    r"electrocut\w+",
    r"explot\w+",
    r"explosion",
    r"gas leak\w*",
    r"leaking gas",
    r"smell\w* (?:of )?gas",
    r"carbon monoxide",
    r"flood\w*",
    r"spark\w*",
    r"smoke",
    r"on fire",
    r"fire",
    r"burning smell",
    r"smells? (?:like )?burning",
    r"electrocut\w+",
    r"explosion",
)
# No heating is an emergency only for someone vulnerable.
_NO_HEAT = _any(
    r"sin (?:calefaccion|calefa|calefactor|caldera|calor|agua caliente)",
    r"no (?:anda|funciona|prende|enciende) (?:la |el )?(?:calefaccion|calefa|caldera|calefactor)",
    r"no heat\w*",
    r"(?:heating|heater|boiler) (?:is )?(?:not working|broken|down|out)",
    r"without heat\w*",
)
_VULNERABLE = _any(
    r"abuel[oa]s?",
    r"anciano?a?s?",
    r"adulto mayor",
    r"bebes?",
    r"recien nacid[oa]s?",
    r"embarazada",
    r"oxigeno",
    r"enferm[oa]s?",
    r"grand(?:ma|pa|mother|father|parents?)",
    r"elderly",
    r"old (?:man|woman|lady)",
    r"bab(?:y|ies)",
    r"newborn",
    r"pregnant",
    r"infant",
)
_URGENT = _any(
    r"urgente\w*",
    r"urgencia",
    r"ya mismo",
    r"cuanto antes",
    r"lo antes posible",
    r"urgent\w*",
    r"asap",
    r"right now",
    r"immediately",
)
_INSULT = _any(
    r"inutil\w*",
    r"idiota\w*",
    r"pelotud\w+",
    r"boludo\w*",
    r"forro\w*",
    r"chanta\w*",
    r"incompetente\w*",
    r"ladron\w*",
    r"estafador\w*",
    r"la puta\w*",
    r"carajo",
    r"mierda",
    r"verguenza",
    r"useless",
    r"idiots?",
    r"incompetent",
    r"morons?",
    r"scam\w*",
    r"wtf",
    r"damn\w*",
    r"ridiculous",
    r"joke",
)
# Anger said in words: as telling as an insult, without being one.
_ANGER = _any(
    r"furios[oa]s?",
    r"indignad[oa]s?",
    r"inaceptable\w*",
    r"inadmisible\w*",
    r"intolerable\w*",
    r"una falta de respeto",
    r"rabia",
    r"furious\w*",
    r"livid",
    r"outraged?",
    r"unacceptable",
    r"inexcusable",
    r"pissed(?: off)?",
    r"fuming",
)
_REPEATED = _any(
    r"ya (?:les|te|se lo|se los) (?:dije|pedi|avise|explique)",
    r"otra vez",
    r"de nuevo",
    r"cuantas veces",
    r"por (?:segunda|tercera|cuarta) vez",
    r"todavia (?:no|nada|estoy esperando)",
    r"sigo esperando",
    r"hace (?:una semana|dias|horas) que",
    r"nadie (?:me )?(?:responde|contesta|viene|vino)",
    r"i (?:already|have already) (?:told|asked)",
    r"how many times",
    r"(?:once|yet) again",
    r"still (?:waiting|nothing|no)",
    r"nobody (?:came|answers|called)",
    r"for the (?:second|third|fourth) time",
)
_NEGATIVE = _any(
    r"mal\w*",
    r"pesim\w+",
    r"horrible\w*",
    r"desastre\w*",
    r"terrible\w*",
    r"enojad\w+",
    r"harto\w*",
    r"cansad[oa]s?",
    r"molest\w+",
    r"queja\w*",
    r"reclamo\w*",
    r"no funciona",
    r"no anda",
    r"awful",
    r"worst",
    r"bad",
    r"angry",
    r"upset",
    r"fed up",
    r"complain\w*",
    r"disappointed",
    r"broken",
)
_POSITIVE = _any(
    r"gracias",
    r"genial\w*",
    r"excelente\w*",
    r"perfecto",
    r"buenisimo",
    r"barbaro",
    r"joya",
    r"impecable",
    r"thanks?",
    r"thank you",
    r"great",
    r"excellent",
    r"perfect",
    r"awesome",
    r"appreciate\w*",
)


@dataclass(frozen=True)
class Signals:
    urgency: Urgency = "normal"
    sentiment: Sentiment = "neutral"
    frustration: float = 0.0  # 0..1
    reasons: tuple[str, ...] = field(default_factory=tuple)

    @property
    def emergency(self) -> bool:
        return self.urgency == "emergency"

    @property
    def frustrated(self) -> bool:
        return self.frustration >= FRUSTRATED_AT

    def as_trace(self) -> dict[str, object]:
        return {
            "urgency": self.urgency,
            "sentiment": self.sentiment,
            "frustration": round(self.frustration, 2),
            "reasons": list(self.reasons),
        }


def _caps_ratio(text: str) -> float:
    letters = [ch for ch in text if ch.isalpha()]
    if len(letters) < 8:  # "OK", "AC", "CUIT" are not shouting
        return 0.0
    return sum(ch.isupper() for ch in letters) / len(letters)


def _tokens(folded: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]{3,}", folded))


def _repeats_earlier(folded: str, earlier: Sequence[str]) -> bool:
    """The same ask again: most of its words were in one of the user's recent messages."""
    mine = _tokens(folded)
    if len(mine) < 3:
        return False
    for text in earlier:
        theirs = _tokens(fold(text))
        if theirs and len(mine & theirs) / len(mine | theirs) >= 0.7:
            return True
    return False


def _urgency(folded: str, reasons: list[str]) -> Urgency:
    if _DANGER.search(folded):
        reasons.append("danger")
        return "emergency"
    if _NO_HEAT.search(folded) and _VULNERABLE.search(folded):
        reasons.append("no_heat_vulnerable")
        return "emergency"
    if _URGENT.search(folded):
        reasons.append("urgent")
        return "high"
    return "normal"


def _frustration(text: str, folded: str, earlier: Sequence[str], reasons: list[str]) -> float:
    score = 0.0
    if _caps_ratio(text) >= 0.6:
        score += 0.4
        reasons.append("caps")
    if re.search(r"[!?¡¿]{3,}|!{2,}", text):
        score += 0.3
        reasons.append("exclamations")
    if _INSULT.search(folded):
        score += 0.5
        reasons.append("insult")
    if _ANGER.search(folded):
        score += 0.5
        reasons.append("anger")
    if _REPEATED.search(folded):
        score += 0.4
        reasons.append("repeated_phrase")
    if _repeats_earlier(folded, earlier):
        score += 0.4
        reasons.append("repeated_ask")
    return min(score, 1.0)


def _sentiment(folded: str, frustration: float) -> Sentiment:
    negative = len(_NEGATIVE.findall(folded)) + (2 if frustration >= FRUSTRATED_AT else 0)
    positive = len(_POSITIVE.findall(folded))
    if negative > positive:
        return "negative"
    if positive > negative:
        return "positive"
    return "neutral"


def read_signals(text: str, *, earlier_user_texts: Sequence[str] = ()) -> Signals:
    """The signals of one message; `earlier_user_texts` are the user's recent messages."""
    folded = fold(text)
    reasons: list[str] = []
    urgency = _urgency(folded, reasons)
    frustration = _frustration(text, folded, earlier_user_texts, reasons)
    return Signals(
        urgency=urgency,
        sentiment=_sentiment(folded, frustration),
        frustration=frustration,
        reasons=tuple(reasons),
    )
