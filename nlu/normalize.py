"""Word helpers shared by the rules, the entity extractors and the classifier, on folded text
(the folding itself is `common.text`)."""

from __future__ import annotations

import re

from common.text import fold

_WORD = re.compile(r"[a-z0-9ñ]+(?:'[a-z]+)?")


def words(text: str) -> list[str]:
    """Folded word tokens."""
    return _WORD.findall(fold(text))


def squash_spaces(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def word_set(text: str) -> frozenset[str]:
    """A set from whitespace-separated words (long word lists read better as text)."""
    return frozenset(text.split())


# A conjugated verb follows these, an imperative never does ("lo esperé toda la mañana", "ya
# pagué", "yo le mandé": a first-person preterite of an -ar verb is accented like the voseo
# imperative of an -er verb, "hacé"; the voseo imperative takes its pronouns after: "esperalo").
BEFORE_A_CONJUGATED_VERB = word_set("lo la le los las les me te se nos ya yo")
# Words ending in an accented vowel that are not a voseo imperative ("agendá", "poné").
ACCENTED_NOT_VERBS = frozenset(
    ["está", "acá", "allá", "ahí", "así", "aquí", "sí", "mamá", "papá", "bebé", "café", "sofá"]
)
# A noun follows these, never a verb: "la factura", "una carga", "el pase" are things.
BEFORE_A_NOUN = word_set(
    "el la los las un una unos unas mi mis tu tus su sus del al este esta ese esa"
)


# A word said twice in a row, with at most a comma between: dictation's stutter ("the, the
# campaign", "que que", "el, el técnico"). Letters only: "10 10" may be two numbers.
_REPEATED = re.compile(r"\b([^\W\d_]+)(?:,\s*|\s+)\1\b", re.IGNORECASE)


def without_stutter(text: str) -> str:
    """The text with a word repeated right after itself said once ("uh let's kick off the, the
    campaign" → "uh let's kick off the campaign"): the comma between would otherwise cut the
    request in two."""
    previous = None
    while previous != text:
        previous, text = text, _REPEATED.sub(r"\1", text)
    return text


# Words that take back what was just said (dictation's self-correction: "el martes, no, perdón,
# el jueves", "at three, actually no, four"), as a regex alternation over folded text. The
# segmenter (a part that opens or a cut that follows with them) and the entity finders (two
# values with them between) add what only they may read so: a bare "no", "sorry".
TAKE_BACK = (
    r"actually|i\s+mean|no\s+wait|wait\s+no|scratch\s+that|make\s+(?:it|that)|perdon|digo|"
    r"mejor(?:\s+dicho)?|quise\s+decir|o\s+sea\s+no"
)
