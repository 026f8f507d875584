"""Customer and technician names: snapped to the organisation's records, else as written.

1. Vocabulary: each known name is matched token by token against the message (accent- and
   case-insensitive, small typos tolerated through difflib); a full name beats a surname alone,
   which beats a unique first name. Ambiguous partial matches are not guessed.
2. Otherwise, capitalised spans introduced by a cue ("para", "cliente", "for", "técnico", an
   honorific) or followed by an absence phrase ("está enfermo", "is sick"), honorifics dropped.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import lru_cache

from common.text import fold
from nlu.name_words import (
    CUSTOMER_AFTER,
    CUSTOMER_CUES,
    HONORIFICS,
    JOB_NOUNS,
    LIVES_IN,
    NOT_NAME,
    STREET_WORDS,
    TECHNICIAN_AFTER,
    TECHNICIAN_NOUNS,
    TECHNICIAN_VERBS,
    VEHICLES,
)
from nlu.values import Vocabulary

_TOKEN = re.compile(r"[^\W\d_](?:\.[^\W\d_])+\.?|[^\W\d_][\w'’&-]*|\d+|&|[,;:.!?¿¡()\"]")
_ARTICLES = frozenset({"el", "la", "los", "las", "the", "lo"})
_ABBREVIATED = frozenset({"hnos", "cia", "inc", "co", "ltd", "jr", "sr", "sa", "srl"})
_PARTICLES = frozenset(
    {"de", "del", "la", "las", "los", "el", "da", "di", "van", "von", "y", "e", "and", "&"}
)
_POSSESSIVE = re.compile(r"['’]s$")
_COMPANY_SUFFIXES = frozenset({"sa", "s.a.", "srl", "s.r.l.", "sas", "s.a.s.", "hnos", "hnos."})


@dataclass(frozen=True)
class Token:
    text: str
    folded: str
    start: int
    end: int

    @property
    def capitalised(self) -> bool:
        return self.text[:1].isupper()


@dataclass(frozen=True)
class NameHit:
    name: str
    role: str  # "customer" | "technician"
    matched: bool  # snapped to the vocabulary
    start: int
    score: float


def tokenize(text: str) -> list[Token]:
    tokens = []
    for m in _TOKEN.finditer(text):
        word = _POSSESSIVE.sub("", m[0])  # "Hall's" → "Hall"
        tokens.append(Token(word, fold(word).strip(".'’"), m.start(), m.start() + len(word)))
    return tokens


# -- vocabulary ---------------------------------------------------------------------------------


@lru_cache(maxsize=64)
def _index(names: tuple[str, ...]) -> dict[str, list[int]]:
    """Folded token → indexes of the names that contain it."""
    index: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        for token in {t.folded for t in tokenize(name) if t.folded.isalpha()}:
            index.setdefault(token, []).append(i)
    return index


# Spellings that sound alike in es-AR, folded to one (ordered: "ll" before "l", "ce" before "c").
_SOUNDS = (("ll", "y"), ("v", "b"), ("z", "s"), ("ce", "se"), ("ci", "si"), ("qu", "k"),
           ("ch", "x"), ("h", ""), ("w", "gu"))  # fmt: skip


@lru_cache(maxsize=4096)
def sound(token: str) -> str:
    """How a folded name token sounds: "Valleria" and "Baleria", "Ugo" and "Hugo", "Godoi" and
    "Godoy" share it (doubled letters single, a final y an i)."""
    for written, said in _SOUNDS:
        token = token.replace(written, said)
    token = re.sub(r"(.)\1+", r"\1", token)
    return token[:-1] + "i" if token.endswith("y") else token


@lru_cache(maxsize=64)
def _sound_index(tokens: frozenset[str]) -> dict[str, list[str]]:
    index: dict[str, list[str]] = {}
    for token in tokens:
        index.setdefault(sound(token), []).append(token)
    return index


def _similar_tokens(token: str, index: dict[str, list[int]]) -> list[tuple[str, bool]]:
    """Vocabulary tokens that `token` may be, each with whether it is an exact (folded) match:
    a typo (same first letter, difflib ≥ 0.8) or the same sound (`sound`), never a common word."""
    if token in index:
        return [(token, True)]
    if len(token) < 3 or token in NOT_NAME:
        return []
    alike = _sound_index(frozenset(index)).get(sound(token), [])
    if len(token) < 4:
        return [(t, False) for t in alike]
    pool = [t for t in index if t[:1] == token[:1] and abs(len(t) - len(token)) <= 2]
    close = difflib.get_close_matches(token, pool, n=3, cutoff=0.8)
    return [(t, False) for t in dict.fromkeys([*alike, *close])]


def _name_parts(name: str) -> list[str]:
    return [t.folded for t in tokenize(name) if t.folded.isalpha()]


def _score_names(tokens: list[Token], names: tuple[str, ...]) -> dict[int, tuple[float, int]]:
    """name index → (score, first matching offset).

    1.0+ when every token of the name is present (typos tolerated); a partial mention counts
    only with exact tokens: a surname alone 0.7, a first name alone 0.5.
    """
    index = _index(names)
    seen: dict[int, dict[str, bool]] = {}
    first: dict[int, int] = {}
    for token in tokens:
        if not token.folded.isalpha() or (token.folded in NOT_NAME and not token.capitalised):
            continue
        for vocab_token, exact in _similar_tokens(token.folded, index):
            for i in index[vocab_token]:
                hits = seen.setdefault(i, {})
                hits[vocab_token] = hits.get(vocab_token, False) or exact
                first.setdefault(i, token.start)
    scores = {}
    for i, hits in seen.items():
        parts = _name_parts(names[i])
        if all(part in hits for part in parts):
            scores[i] = (1.0 + 0.1 * len(parts), first[i])
        elif parts[-1] in hits and hits[parts[-1]] and len(parts[-1]) >= 4:
            scores[i] = (0.7, first[i])
        elif parts[0] in hits and hits[parts[0]]:
            scores[i] = (0.5, first[i])
    return scores


def match_vocabulary(tokens: list[Token], names: tuple[str, ...]) -> tuple[str, int] | None:
    """The best known name in the tokens and where it starts; None if absent or ambiguous."""
    if not names:
        return None
    scores = _score_names(tokens, names)
    if not scores:
        return None
    ranked = sorted(scores.items(), key=lambda item: -item[1][0])
    best, (score, start) = ranked[0]
    if score < 1.0 and len(ranked) > 1 and ranked[1][1][0] >= score:
        return None  # "Juan" with two Juans on file: do not guess
    if score < 1.0 and _other_capitalised_next_to(tokens, start, _name_parts(names[best])):
        return None  # "Marta Gómez" is not "Marta Suárez" on file
    return names[best], start


def as_written(text: str, name: str, start: int) -> str:
    """The words of `name`, a name on file found at `start`, that the text writes there, in its
    order and spelt as on file: "Panadería La Espiga" for "Panadería La Espiga SRL", "Martín"
    for "Martín Sosa", "Graciela Ibarra" for "graciela ivarra". Evaluation files name people as
    written (TAXONOMY.md); the handlers look them up by the name on file."""
    index = _index((name,))
    spelt = {t.folded: t.text for t in tokenize(name)}
    # What a name holds besides words: the full stop of "Av.", the number of "Consorcio
    # Juramento 1875", the "&" of "Ferreyra & Asociados". Written there, they are the name too.
    marks = {t.text for t in tokenize(name) if not t.folded.isalpha()}
    written = ""
    for token in tokenize(text):
        if token.start < start:
            continue
        similar = [t for t, _exact in _similar_tokens(token.folded, index)]
        if similar:
            written += " " + spelt.get(similar[0], token.text)
        elif written and token.text in marks:
            written += token.text if _GLUED.match(token.text) else " " + token.text
        else:
            break
    return written.strip().rstrip(",;:.") or name


_GLUED = re.compile(r"[,;:.!?)]")


def match_vocabulary_all(tokens: list[Token], names: tuple[str, ...]) -> list[tuple[str, int]]:
    """Every full-name match, or else the best unambiguous partial one."""
    if not names:
        return []
    scores = _score_names(tokens, names)
    full = [(names[i], start) for i, (score, start) in scores.items() if score >= 1.0]
    if full:
        return sorted(full, key=lambda item: item[1])
    best = match_vocabulary(tokens, names)
    return [best] if best else []


def _other_capitalised_next_to(tokens: list[Token], start: int, parts: list[str]) -> bool:
    position = next(i for i, t in enumerate(tokens) if t.start == start)
    neighbours = tokens[max(0, position - 1) : position] + tokens[position + 1 : position + 2]
    return any(
        t.capitalised and t.folded.isalpha() and t.folded not in NOT_NAME and t.folded not in parts
        for t in neighbours
    )


# -- free text ------------------------------------------------------------------------------------


def _is_name_token(token: Token) -> bool:
    if token.folded in _COMPANY_SUFFIXES:
        return True
    return token.capitalised and _alpha(token.folded) and token.folded not in NOT_NAME


def _alpha(word: str) -> bool:
    """Letters, allowing the apostrophes and hyphens of names ("O'Brien", "Saint-Exupéry")."""
    return re.sub(r"['’-]", "", word).isalpha()


def _spans(tokens: list[Token]) -> list[tuple[int, int]]:
    """[start, end) token ranges of capitalised name-like runs (particles allowed inside)."""
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(tokens):
        if not _is_name_token(tokens[i]) or tokens[i].folded in _COMPANY_SUFFIXES:
            i += 1
            continue
        j = i + 1
        while j < len(tokens):
            if _is_name_token(tokens[j]):
                j += 1
            elif (
                tokens[j].folded in _PARTICLES
                and j + 1 < len(tokens)
                and _is_name_token(tokens[j + 1])
            ):
                j += 2
            else:
                break
        spans.append((i, j))
        i = j
    return spans


def _previous(tokens: list[Token], start: int) -> list[str]:
    """Folded words before a span, nearest first, skipping honorifics, articles and "Sra." dots."""
    words: list[str] = []
    for k in range(start - 1, max(-1, start - 6), -1):
        token = tokens[k]
        if token.folded in HONORIFICS or token.folded in _ARTICLES or token.text == ".":
            if token.text == "." and not (k > 0 and tokens[k - 1].folded in HONORIFICS):
                break  # a full stop, not the dot of "Sra."
            continue
        if token.text in "!?;:,¿¡":
            break
        words.append(token.folded)
    return words


def _cue_role(tokens: list[Token], start: int) -> str | None:
    """The role the words before a span give it ("el técnico X", "mandá a X", "para X")."""
    before = _previous(tokens, start)
    first = before[0] if before else ""
    second = before[1] if len(before) > 1 else ""
    if first in TECHNICIAN_NOUNS or first in TECHNICIAN_VERBS:
        return "technician"
    if first in ("a", "al", "to") and (second in TECHNICIAN_VERBS or second in JOB_NOUNS):
        return "technician"  # "mandá a Díaz", "pasá sus trabajos a Ramón"
    if first in ("a", "al", "to", "para", "for") and _clause_assigns(tokens, start):
        following = _next_word(tokens, start)
        return "customer" if following in JOB_NOUNS else "technician"  # "to the Hall install"
    if first in CUSTOMER_CUES:
        return "customer"
    return None


def _next_word(tokens: list[Token], start: int) -> str:
    """The first word after the name span that begins at `start`."""
    k = start
    while k < len(tokens) and (_is_name_token(tokens[k]) or tokens[k].folded in _PARTICLES):
        k += 1
    return tokens[k].folded if k < len(tokens) else ""


def _honorific_before(tokens: list[Token], start: int) -> bool:
    return any(t.folded in HONORIFICS for t in tokens[max(0, start - 3) : start])


def _clause_assigns(tokens: list[Token], start: int) -> bool:
    """The clause gives someone a vehicle or assigns work ("asignale la Kangoo a Ramón")."""
    clause_start = start
    while clause_start > 0 and tokens[clause_start - 1].text not in ".!?;:,":
        clause_start -= 1
    clause_end = start
    while clause_end < len(tokens) and tokens[clause_end].text not in ".!?;:,":
        clause_end += 1
    words = [t.folded for t in tokens[clause_start:clause_end]]
    return any(w.startswith(("asign", "assign", "reasign")) or w in VEHICLES for w in words)


def _is_place(tokens: list[Token], start: int, end: int) -> bool:
    """Addresses and neighbourhoods look like names: "Av. San Martín 1450", "Thames 820, Villa
    Crespo", "12 Oak Street", "cerca de Caballito"."""
    if any(t.folded in STREET_WORDS for t in tokens[start:end]):
        return True
    after = tokens[end] if end < len(tokens) else None
    if after is not None and after.text.isdigit():
        return True
    if start > 0 and tokens[start - 1].text.isdigit():
        return True
    if start > 1 and tokens[start - 1].text == "," and tokens[start - 2].text.isdigit():
        return True
    before = _previous(tokens, start)
    if len(before) > 1 and before[1] in ("cerca", "near", "barrio", "zona"):
        return True
    return len(before) > 1 and before[0] in ("en", "in", "at") and before[1] in LIVES_IN


def _role_after(tokens: list[Token], end: int) -> str | None:
    following = " ".join(t.folded for t in tokens[end : end + 5])
    return "technician" if TECHNICIAN_AFTER.match(following) else None


def _span_role(tokens: list[Token], start: int, end: int) -> str | None:
    """customer / technician when the context says this span is a person or a company."""
    role = _role_after(tokens, end)
    if role is None and _honorific_before(tokens, start):
        return "customer"  # "send Mrs. Nguyen a quote": a technician is not "Mrs."
    role = role or _cue_role(tokens, start)
    if role:
        return role
    following = tokens[end].folded if end < len(tokens) else ""
    name_tokens = [t for t in tokens[start:end] if _is_name_token(t)]
    after = {t.folded for t in tokens[end : end + 2]}
    if _honorific_before(tokens, start) or following in JOB_NOUNS or after & CUSTOMER_AFTER:
        return "customer"  # "la Sra. Ledesma", "the Walker job", "Ortiz pagó"
    if len(name_tokens) > 1:
        return "customer"  # a full name needs no cue: "Mario Quiroga ya pagó"
    return None


def free_text_names(text: str, tokens: list[Token]) -> list[NameHit]:
    hits: list[NameHit] = []
    for start, end in _spans(tokens):
        run = [t for t in tokens[start:end] if t.folded not in HONORIFICS]
        if not run or _is_place(tokens, start, end):
            continue
        if len(run) == 1 and len(run[0].text) < 2:
            continue  # "B" of "4B"
        if all(t.text.isupper() for t in run) and run[-1].folded not in _COMPANY_SUFFIXES:
            continue  # acronyms and shouting: "IVA", "ESTOY HARTA"
        role = _span_role(tokens, start, end)
        if role is None:
            continue
        end_offset = run[-1].end
        if run[-1].folded in _ABBREVIATED and text[end_offset : end_offset + 1] == ".":
            end_offset += 1  # "Gómez y Hnos."
        hits.append(NameHit(text[run[0].start : end_offset], role, False, run[0].start, 0.5))
    return hits


# Lowercase names only after customer words: after "técnico" a lowercase word is usually a verb
# ("el técnico dejó todo sucio").
_STRONG_CUES = frozenset(["cliente", "clienta", "customer", "client"]) | HONORIFICS


def lowercase_names(text: str, tokens: list[Token]) -> list[NameHit]:
    """Names typed in lowercase right after an unambiguous cue ("el cliente juan perez")."""
    hits: list[NameHit] = []
    for k, token in enumerate(tokens):
        if token.folded not in _STRONG_CUES:
            continue
        run: list[Token] = []
        for nxt in tokens[k + 1 : k + 4]:
            if len(run) == 2:
                break  # without capitals the end of a name is a guess: first and last name
            if nxt.folded in HONORIFICS and not run:
                continue
            if not nxt.folded.isalpha() or nxt.folded in NOT_NAME or nxt.capitalised:
                break
            if nxt.text[-1:] in ("á", "é", "í", "ó"):
                break  # a verb: "la clienta llamó"
            run.append(nxt)
        if run:
            hits.append(
                NameHit(text[run[0].start : run[-1].end], "customer", False, run[0].start, 0.3)
            )
    return hits


def _overlap(hit: NameHit, other: NameHit) -> bool:
    """The two hits share words of the text (a misspelt name on file is about its length)."""
    return hit.start < other.start + len(other.name) and other.start < hit.start + len(hit.name)


def find_names(text: str, vocabulary: Vocabulary) -> list[NameHit]:
    """Every name found, in text order: vocabulary matches first claim their words."""
    tokens = tokenize(text)
    found: list[NameHit] = []
    for role, names in (("technician", vocabulary.technicians), ("customer", vocabulary.customers)):
        for name, start in match_vocabulary_all(tokens, names):
            if not any(hit.name == name for hit in found):
                found.append(NameHit(name, role, True, start, 1.0))
    for hit in free_text_names(text, tokens) + lowercase_names(text, tokens):
        # The same words, however misspelt ("soy Eduarddo Olmedo"), are the name on file.
        # So are words around a name on file ("Soy Rommina Cabral" holds "Romina Cabral").
        covered = any(
            fold(hit.name) in fold(other.name)
            or fold(other.name) in fold(hit.name)
            or (other.matched and _overlap(hit, other))
            for other in found
        )
        if not covered:
            found.append(hit)
    return sorted(found, key=lambda hit: hit.start)
