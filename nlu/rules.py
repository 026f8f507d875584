"""The rules tier: what is obvious needs no classifier.

- `#agent text` directives (a direct line to a named sub-agent);
- messages that are only small talk: greeting, or thanks / goodbye (→ farewell);
- a bare CUIT (→ validate_cuit);
- courtesy stripped from around a request, since "hola" or "gracias" around a request is not an
  intent of its own (TAXONOMY labelling rules).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from common.text import fold_keep_length
from nlu.cuit import _DOTTED_CUIT, CUIT_IN_TEXT
from nlu.normalize import squash_spaces
from nlu.values import Directive

_DIRECTIVE = re.compile(r"^\s*#([^\W\d][\w.-]*)(?:[\s:,]+(.*))?$", re.DOTALL)

# Folded phrases; word boundaries are added around each alternative.
_GREETING = [
    r"hol+a+s?", r"holis", r"holi", r"buen(?:os|as)?(?:\s+(?:dias?|tardes?|noches?))?",
    r"que\s+tal", r"como\s+(?:estas|andas|va|anda|le\s+va|te\s+va)", r"todo\s+bien",
    r"como\s+va\s+todo", r"hi+", r"hel+o+", r"hey+", r"good\s+(?:morning|afternoon|evening|day)",
    r"morning", r"how\s+are\s+you(?:\s+doing)?", r"how\s+are\s+things", r"what'?s\s+up",
    r"how(?:'?s|\s+is)\s+(?:it|everything|everyone)\s+going",
    r"greetings", r"che", r"saludos", r"que\s+onda", r"buen\s+dia",
]  # fmt: skip
_THANKS = [
    r"(?:muchas|mil|muchisimas)?\s*gracias(?:\s+(?:totales|mil|de\s+nuevo|igual|por\s+todo))?",
    r"graciass+", r"grax", r"thank\s+you(?:\s+(?:so\s+much|very\s+much|again))?",
    r"thanks?(?:\s+(?:a\s+lot|so\s+much|again))?", r"thx", r"ty", r"cheers",
    r"te\s+agradezco", r"muy\s+amable", r"appreciate\s+it", r"much\s+appreciated",
]  # fmt: skip
_FAREWELL = [
    r"cha+u+(?:cito)?", r"chao", r"adios", r"nos\s+vemos",
    r"hasta\s+(?:luego|manana|pronto|la\s+proxima)",
    r"(?:eso\s+)?(?:es|seria|era)\s+todo(?:\s+por\s+(?:hoy|ahora))?", r"nada\s+mas",
    r"buen(?:a|as|os)?\s+(?:finde|fin\s+de\s+semana|jornada|descanso)",
    r"que\s+(?:tengas|tengan|andes|sigas)\s+(?:un\s+|una\s+)?(?:buen|lindo|bien)\w*"
    r"(?:\s+(?:dia|tarde|noche|finde|jornada))?",
    r"bye+", r"good\s*bye", r"see\s+(?:you|ya)(?:\s+(?:later|tomorrow|soon))?", r"later",
    r"that'?s\s+(?:all|it|everything)(?:\s+for\s+(?:now|today))?", r"take\s+care",
    r"have\s+a\s+(?:good|nice|great)\s+(?:day|one|night|weekend)", r"(?:good\s*)?night",
    r"me\s+voy", r"listo\s+eso\s+es\s+todo",
]  # fmt: skip
# Acknowledgements and fillers that may surround small talk without changing it.
_FILLER = [
    r"ok+(?:ey|ay|a)?", r"dale", r"listo", r"perfecto", r"genial", r"barbaro", r"joya",
    r"buenisimo",
    r"great", r"perfect", r"awesome", r"cool", r"nice", r"sure", r"alright", r"all\s+right",
    r"bien", r"bueno", r"si", r"yes", r"y", r"and", r"a\s+todos", r"everyone", r"all", r"team",
    r"equipo", r"gente", r"chicos", r"chicas", r"capo", r"amigo", r"amiga", r"crack", r"por\s+hoy",
    r"for\s+now", r"for\s+today", r"then", r"entonces", r"ya", r"nomas", r"igual", r"again",
    r"de\s+nuevo", r"so", r"much", r"very", r"a\s+lot", r"there", r"guys", r"folks", r"you",
    r"to\s+you", r"vos", r"a\s+vos", r"ustedes", r"hermoso", r"lindo", r"dear",
    # Dictation's fillers and "that's it": "bueno, eh, ya está, gracias, nos vemos mañana".
    r"eh+", r"este", r"o\s+sea", r"ya\s+esta", r"eso\s+es\s+todo", r"um+", r"uh+",
]  # fmt: skip


def _alternation(phrases: list[str]) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(f"(?:{p})" for p in phrases) + r")\b")


_GREETING_RE = _alternation(_GREETING)
_THANKS_RE = _alternation(_THANKS)
_FAREWELL_RE = _alternation(_FAREWELL)
_FILLER_RE = _alternation(_FILLER)
_NOISE = re.compile(r"[^\w]+|_")
_CUIT_WORDS = _alternation(
    [
        r"cuit", r"cuil", r"valida\w*", r"verifica\w*", r"chequea\w*", r"check", r"validate",
        r"verify", r"is", r"this", r"it", r"valid", r"es", r"el", r"este", r"esta", r"bien",
        r"correcto", r"ok", r"the", r"number", r"numero", r"nro", r"de", r"del", r"cliente",
    ]
)  # fmt: skip
# Courtesy that can wrap a request; stripped before classifying (keeps what the operator asked).
_LEADING = _alternation(_GREETING + _THANKS + [r"por\s+favor", r"porfa", r"please", r"pls", r"plz"])
_ANYWHERE = re.compile(r"\b(?:por\s+favor|porfa(?:vor)?|please|pls|plz|xfa|x\s+fa)\b[,!.]?")


_HEAD = re.compile(
    r"^[\W_]*" + _alternation(_GREETING + _THANKS + [r"bueno", r"dale", r"ok"]).pattern + r"[\W_]*"
)
_TAIL = re.compile(
    r"[\W_]*"
    + _alternation(_THANKS + [p for p in _FAREWELL if "night" not in p and p != r"later"]).pattern
    + r"[\W_]*$"
)


def parse_directive(text: str, agent_names: Sequence[str] = ()) -> Directive | None:
    """`#agent text` → Directive; the name is canonicalised only when it matches exactly."""
    match = _DIRECTIVE.match(text)
    if not match:
        return None
    typed = match[1].rstrip(".")
    canonical = {name.casefold(): name for name in agent_names}
    return Directive(agent=canonical.get(typed.casefold(), typed), text=(match[2] or "").strip())


def _only(text: str, *patterns: re.Pattern[str]) -> str:
    """What is left of folded text after removing the given phrases and punctuation/emoji."""
    for pattern in patterns:
        text = pattern.sub(" ", text)
    return _NOISE.sub(" ", text).strip()


def small_talk(text: str) -> str | None:
    """ "greeting" or "farewell" when the whole message is small talk, else None."""
    folded = fold_keep_length(text)
    if _only(folded, _GREETING_RE, _THANKS_RE, _FAREWELL_RE, _FILLER_RE):
        return None
    if _THANKS_RE.search(folded) or _FAREWELL_RE.search(folded):
        return "farewell"
    if _GREETING_RE.search(folded) or re.search(r"[👋🙋]", text):
        return "greeting"
    if re.search(r"[🙏👍]", text):
        return "farewell"  # a thumbs-up or thanks emoji alone closes the conversation
    return None


def bare_cuit(text: str) -> bool:
    """The message is a CUIT, possibly with "validá el CUIT" around it."""
    folded = fold_keep_length(text)
    spans = [m.span() for p in (CUIT_IN_TEXT, _DOTTED_CUIT) for m in p.finditer(folded)]
    if len(spans) != 1:
        return False
    start, end = spans[0]
    rest = folded[:start] + " " + folded[end:]
    return not _only(rest, _CUIT_WORDS, _GREETING_RE, _THANKS_RE, _FILLER_RE, _LEADING)


def strip_courtesy(text: str) -> str:
    """The request without the greeting/thanks wrapped around it ("hola! agendá..." → "agendá...").

    Only leading and trailing courtesy (and "por favor"/"please" anywhere) is removed, so words
    inside the request ("buenas noticias") are left alone.
    """
    for match in reversed(list(_ANYWHERE.finditer(fold_keep_length(text)))):
        text = text[: match.start()] + " " + text[match.end() :]
    return squash_spaces(_strip_edges(text))


def _strip_edges(text: str) -> str:
    """Remove courtesy phrases (and punctuation/emoji between them) at the start and the end."""
    for _ in range(4):
        folded = fold_keep_length(text)
        head = _HEAD.match(folded)
        if head and head.end() < len(text):
            text = text[head.end() :]
            continue
        tail = _TAIL.search(folded)
        if tail and tail.start() > 0:
            text = text[: tail.start()]
            continue
        break
    return text.strip(" ,;:-")


# Urgent danger (TAXONOMY "emergency"): these phrases make a request an emergency whatever the
# classifier says, because missing one costs far more than a false alarm.
_DANGER = re.compile(
    r"\b(?:olor\s+a\s+gas|huele\s+a\s+gas|(?:perdida|fuga|escape)\s+de?\s+gas|gas\s+leak\w*|"
    r"smell\w*\s+(?:of\s+)?gas|gas\s+smell\w*|chispa\w*|sparks?|sparking|humo|smoke|"
    r"fuego|incendi\w*|(?:on|a|the)\s+fire|fire\s+(?:in|at|on)|llamas|flames|inund\w*|flood\w*|"
    r"revent\w*\s+(?:un|el|la|una)\s+\w+|"
    r"burst\s+pipe|pipe\s+burst|monoxido|monoxide|electrocut\w*|cortocircuito|short\s+circuit|"
    r"cable\s+pelado|olor\s+a\s+quemado|burning\s+smell|smell\w*\s+(?:of\s+)?burning)\b"
)
_NO_HEAT = re.compile(
    r"\b(?:sin\s+(?:calefaccion|calefactor|gas|agua\s+caliente)|no\s+heat\w*|without\s+heat\w*)\b"
)
_VULNERABLE = re.compile(
    r"\b(?:\d{2}\s+anos|abuel\w*|ancian\w*|beb\w*|recien\s+nacid\w*|embarazad\w*|oxigeno|"
    r"elderly|baby|newborn|pregnant|oxygen|\d{2}\s+years?\s+old)\b"
)


def is_danger(text: str) -> bool:
    """Urgent danger: gas, fire, sparks, flooding, or no heating for a vulnerable person."""
    folded = fold_keep_length(text)
    if _DANGER.search(folded):
        return True
    return bool(_NO_HEAT.search(folded) and _VULNERABLE.search(folded))
