"""How a customer writes and what they say they prefer: cheap, deterministic readings for the
customer profile (P3) and the style of the replies (P4).

- `read_register`: voseo ("podés", "fijate", "decime"), usted ("usted", "podría", "dígame") or
  tuteo ("puedes", "tienes"); "" when one message does not tell.
- `read_brevity`: brief or detailed, from the length of several messages.
- `stated_preference`: the days and the part of the day a message says someone prefers
  ("Gómez prefiere los martes a la mañana", "I can only do Thursdays").
- `to_usted`: a voseo reply said in usted, for a customer who writes that way (bounded to the
  forms the replies use; anything else is left as it is).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from common.text import fold
from nlu.dates import WEEKDAYS

# Folded forms. Voseo: stressed -ás/-és/-ís present tense and stressed imperatives with
from nlu.normalize import words

# clitics; usted: the pronoun and the forms it governs; tuteo: -as/-es present and "tú".
_VOSEO = re.compile(
    r"\b(?:vos|sos|podes|tenes|queres|sabes|necesitas|venis|decis|estas|fijate|decime|"
    r"mandame|avisame|pasame|llamame|contame|agendame|escribime|confirmame|dale)\b"
)
_USTED = re.compile(
    r"\b(?:usted|ud|podria|digame|disculpe|avise|llameme|quisiera|le agradezco|"
    r"agradeceria|senor|senora|estimad[oa]s?|cordialmente|atentamente)\b"
)
_TUTEO = re.compile(r"\b(?:tu|puedes|tienes|quieres|necesitas tu|dime|avisame tu)\b")
_ACCENTED_VOSEO = re.compile(r"\b\w+(?:ás|és|ís)\b", re.IGNORECASE)

REGISTERS = ("voseo", "usted", "tuteo")
BRIEF_WORDS, DETAILED_WORDS = 8, 30


def read_register(text: str) -> str:
    """ "voseo", "usted", "tuteo" or "" (English, or nothing that tells)."""
    folded = fold(text)
    scores = {
        "usted": len(_USTED.findall(folded)) * 2,  # rarer, and unmistakable when present
        "voseo": len(_VOSEO.findall(folded)) + len(_ACCENTED_VOSEO.findall(text)),
        # "tú" folds to "tu", which is also the possessive: only the verbs count.
        "tuteo": len([w for w in _TUTEO.findall(folded) if w != "tu"]),
    }
    best = max(scores, key=lambda name: scores[name])
    return best if scores[best] > 0 else ""


def read_brevity(texts: Sequence[str]) -> str:
    """ "brief" or "detailed" from the average length of several messages; "" from fewer than
    two or in between."""
    counts = [len(words(text)) for text in texts if text.strip()]
    if len(counts) < 2:
        return ""
    average = sum(counts) / len(counts)
    if average <= BRIEF_WORDS:
        return "brief"
    return "detailed" if average >= DETAILED_WORDS else ""


_CUE = re.compile(
    r"\b(?:prefier\w*|prefer\w*|suele\w*|suel[oe]n?|siempre|solo (?:puede|puedo|pueden)|"
    r"mejor|usually|always|only|likes?)\b"
)
_DAY = re.compile(
    r"\b(?:los |on |the )?(" + "|".join(sorted(WEEKDAYS, key=len, reverse=True)) + r")s?\b"
)
_PARTS = (
    (
        "morning",
        re.compile(r"\b(?:a la manana|por la manana|de manana|mornings?|temprano|early)\b"),
    ),
    ("afternoon", re.compile(r"\b(?:a la tarde|por la tarde|de tarde|afternoons?)\b")),
    ("evening", re.compile(r"\b(?:a la noche|por la noche|evenings?)\b")),
)


@dataclass(frozen=True)
class Preference:
    weekdays: tuple[int, ...] = ()  # 0 = Monday
    part_of_day: str = ""  # morning / afternoon / evening


def stated_preference(text: str) -> Preference | None:
    """The days / part of the day a message says are preferred; None without a cue word
    ("prefiere", "suele", "siempre", "only on"…) or without a day or part of the day."""
    folded = fold(text)
    if not _CUE.search(folded):
        return None
    days = tuple(dict.fromkeys(WEEKDAYS[m[1]] for m in _DAY.finditer(folded)))
    part = next((name for name, pattern in _PARTS if pattern.search(folded)), "")
    if not days and not part:
        return None
    return Preference(weekdays=days, part_of_day=part)


# Voseo → usted, for the forms the replies use (folded keys are not needed: replies are ours).
_TO_USTED = (
    ("¿Cuál te sirve?", "¿Cuál le sirve?"),
    ("Te propongo", "Le propongo"),
    ("te propongo", "le propongo"),
    ("Decime", "Dígame"),
    ("decime", "dígame"),
    ("Avisame", "Avíseme"),
    ("avisame", "avíseme"),
    ("Confirmame", "Confírmeme"),
    ("confirmame", "confírmeme"),
    ("necesitás", "necesita"),
    ("querés", "quiere"),
    ("podés", "puede"),
    ("tenés", "tiene"),
    ("Escribime", "Escríbame"),
    ("escribime", "escríbame"),
    ("te sirve", "le sirve"),
    ("te ayudo", "le ayudo"),
    ("me dijiste", "me dijo"),
    ("Te ayudo", "Le ayudo"),
    ("te aviso", "le aviso"),
    ("te confirmo", "le confirmo"),
)


def to_usted(text: str) -> str:
    for voseo, usted in _TO_USTED:
        text = text.replace(voseo, usted)
    return text
