"""Does a text start like a request? Learned from how the training examples start.

After a bare "y"/"and" a new request starts with a verb or a question ("y agendale", "and book",
"y cuánto debe"), while the second half of a name or a service does not ("y María Pérez",
"y termotanque"). The words the organisation's examples start with are the best list of such
openers; Spanish imperative morphology (voseo "agendá", clitics "hacele", "pasalo") covers the rest.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from copilot.understanding.normalize import fold, word_set

# Words that may precede the real opener: clitics, negation, "si"/"que" clauses, politeness.
_LEAD = word_set(
    """
    me te le lo la les los nos se no ya si que q porfa please pls just also then tambien
    despues luego ademas ahi aca bueno ah oh ok okay dale che if so and but pero igual entonces
    well hey y e tmb aparte encima
    """
)
_ARTICLES = word_set(
    """
    el la los las un una unos unas the a an this that my your our
    """
)
_IMPERATIVE = re.compile(
    r"^\w{2,}(?:ale|ales|alo|ala|alos|alas|ame|amelo|amela|emelo|ele|eles|elo|ela|ime|imelo|"
    r"ile|ilo|enme|anme|enlo|anlo|ate|ete|ite)$"
)
_WORD = re.compile(r"[a-z0-9']+")


def opener_words(texts: Iterable[str]) -> frozenset[str]:
    """The first real word of each training example (articles and proper names excluded)."""
    found: set[str] = set()
    for text in texts:
        words = _WORD.findall(fold(text))
        first = next((w for w in words if w not in _LEAD), None)
        if first and first not in _ARTICLES and not first.isdigit():
            found.add(first)
    return frozenset(found)


def starts_like_request(text: str, openers: frozenset[str]) -> bool:
    """The first real word is one the examples start with, or a verb-looking word comes early.

    "si está, agendale..." starts a request too: a Spanish imperative among the first three
    words counts (voseo with its accent, or a clitic ending: "agendale", "pasalo", "mandame").
    """
    raw = [w for w in _RAW_WORD.findall(text) if fold(w) not in _LEAD]
    if not raw:
        return False
    if fold(raw[0]) in openers:
        return True
    return any(_IMPERATIVE.match(fold(w)) or w[-1:] in ("á", "é", "í") for w in raw[:3])


_RAW_WORD = re.compile(r"[^\W\d_][\w']*")
