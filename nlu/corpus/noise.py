"""Noise models: what typing fast, writing on WhatsApp and dictating do to a clean sentence.

A line is a list of pieces — the template's literal text and its slot values — and each model
rewrites pieces one by one, so the entity spans are recomputed from the pieces afterwards and stay
exact. Literal text gets every model; slot values only the ones that keep them findable (case,
accents) — except people's names, which fast typists and customers misspell (`misspell_name`: a
doubled or dropped letter, v/b, z/s, ll/y, a dropped h) and which must still be matched to the
organisation's records; the piece keeps the name as written in the records for the label.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from common.text import fold
from common.text import fold_keep_length as _plain

_EMOJIS = ("🙏", "👍", "😅", "🙂", "😡", "🔥", "✅", "😬", "👋")
# Abbreviations operators type (es-AR) and their English counterparts; whole words only.
_SHORT_ES = {
    "que": "q", "porque": "xq", "por": "x", "para": "p/", "mañana": "mñn", "también": "tmb",
    "favor": "fa", "con": "c/", "de": "d", "todo": "tdo", "bueno": "bno", "hola": "hla",
}  # fmt: skip
_SHORT_EN = {
    "please": "pls", "you": "u", "are": "r", "tomorrow": "tmrw", "thanks": "thx",
    "because": "bc", "for": "4", "to": "2",
}  # fmt: skip
_FILLERS_ES = ("eh", "este", "o sea", "bueno", "mirá", "digamos")
_FILLERS_EN = ("uh", "um", "like", "you know", "so")
_PUNCTUATION = re.compile(r"[¿?¡!.,:;]")


@dataclass
class Piece:
    text: str
    label: str = ""  # the entity it is ("" for literal text and unlabelled slots)
    value: bool = False  # a slot value (models that would lose the value skip it)
    canonical: str = ""  # a misspelt name: the records' spelling (the label)


def _words(piece: Piece, rng: random.Random, table: dict[str, str], rate: float) -> None:
    def swap(match: re.Match[str]) -> str:
        short = table.get(match[0].lower())
        return short if short and rng.random() < rate else match[0]

    piece.text = re.sub(r"[\wáéíóúñ]+", swap, piece.text)


def _typo(text: str, rng: random.Random) -> str:
    """One slip of the fingers: a doubled letter or two letters swapped, inside a long word."""
    words = text.split(" ")
    long_words = [i for i, w in enumerate(words) if len(w) >= 5 and w.isalpha()]
    if not long_words:
        return text
    i = rng.choice(long_words)
    word, at = words[i], rng.randrange(1, len(words[i]) - 2)
    if rng.random() < 0.5:
        words[i] = word[: at + 1] + word[at] + word[at + 1 :]
    else:
        words[i] = word[:at] + word[at + 1] + word[at] + word[at + 2 :]
    return " ".join(words)


# Sound-alike spellings of es-AR (one is applied, where the name has it).
_SOUNDS = (("v", "b"), ("b", "v"), ("z", "s"), ("s", "z"), ("ll", "y"), ("y", "ll"), ("ce", "se"),
           ("ci", "si"), ("h", ""))  # fmt: skip
# Chance that a person's name is misspelt, by voice.
MISSPELL = {"fast": 0.3, "wa": 0.3, "dict": 0.15}


def misspell_name(name: str, rng: random.Random) -> str:
    """One misspelling of a person's name: a sound-alike spelling, a doubled letter or a dropped
    doubled one; the first word keeps its first letter unless it is a silent h."""
    words = name.split(" ")
    i = rng.randrange(len(words))
    word = words[i]
    lower = word.lower()
    options = [(a, b) for a, b in _SOUNDS if a in lower[1:] or (a == "h" and lower.startswith("h"))]
    if options and rng.random() < 0.6:
        a, b = rng.choice(options)
        at = lower.find(a, 0 if a == "h" else 1)
        word = word[:at] + (b.upper() if word[at].isupper() else b) + word[at + len(a) :]
        if at == 0 and word:
            word = word[0].upper() + word[1:] if words[i][:1].isupper() else word
    elif len(word) >= 5:
        doubles = [k for k in range(1, len(word)) if word[k] == word[k - 1]]
        at = rng.choice(doubles) if doubles else rng.randrange(2, len(word) - 1)
        word = word[:at] + word[at + 1 :] if doubles else word[:at] + word[at] + word[at:]
    words[i] = word
    return " ".join(words)


def _filler(text: str, rng: random.Random, fillers: tuple[str, ...]) -> str:
    words = text.split(" ")
    if len(words) < 3:
        return text
    at = rng.randrange(1, len(words))
    return " ".join([*words[:at], rng.choice(fillers), *words[at:]])


def apply_noise(pieces: list[Piece], voice: str, lang: str, rng: random.Random) -> None:
    """Rewrite the pieces in place as the voice writes (see nlu.corpus.families)."""
    lower = {"fast": 0.9, "wa": 0.4, "dict": 0.7, "neg": 0.4, "talk": 0.5}.get(voice, 0.05)
    strip = {"fast": 0.8, "wa": 0.5, "dict": 0.3, "neg": 0.4, "talk": 0.5}.get(voice, 0.15)
    do_lower, do_strip = rng.random() < lower, rng.random() < strip
    typo = {"fast": 0.35, "wa": 0.2}.get(voice, 0.0)
    for piece in pieces:
        if do_lower:
            piece.text = piece.text.lower()
        if do_strip:
            piece.text = _strip_accents(piece.text)
        if piece.label in ("customer", "technician") and rng.random() < MISSPELL.get(voice, 0.0):
            piece.canonical, piece.text = piece.text, misspell_name(piece.text, rng)
        if piece.value:
            continue
        if voice == "fast":
            _words(piece, rng, _SHORT_ES if lang == "es" else _SHORT_EN, 0.6)
        if voice in ("fast", "dict"):
            piece.text = _PUNCTUATION.sub("", piece.text)
        if voice == "dict" and rng.random() < 0.3:
            piece.text = _filler(piece.text, rng, _FILLERS_ES if lang == "es" else _FILLERS_EN)
        if typo and rng.random() < typo:
            piece.text = _typo(piece.text, rng)
    if voice in ("fast", "wa", "talk") and rng.random() < 0.35:
        pieces.append(Piece(" " + rng.choice(_EMOJIS)))


# Clipped words of the trade as operators type them (es-AR) — only the retyped variants use them
# (`retype`), so the base lines keep their draws.
_CLIPPED_ES = {
    "presupuesto": "presu", "factura": "fact", "cliente": "cli", "clienta": "cli",
    "teléfono": "tel", "dirección": "dire", "técnico": "tec", "información": "info",
    "mantenimiento": "mant", "departamento": "depto", "reprogramá": "reprog",
    "urgente": "urg", "camioneta": "camio",
}  # fmt: skip
_CLIPPED_EN = {
    "appointment": "appt", "customer": "cust", "technician": "tech", "information": "info",
    "invoice": "inv", "address": "addr", "maintenance": "maint", "schedule": "sched",
    "quote": "qt", "tomorrow": "tmrw",
}  # fmt: skip
# Keys next to each other on a QWERTY keyboard: a finger that lands one key off.
_ROWS_QWERTY = ("qwertyuiop", "asdfghjklñ", "zxcvbnm")
_NEAR = {
    key: "".join(
        r[j] for r in _ROWS_QWERTY[max(0, i - 1) : i + 2] for j in (k - 1, k, k + 1)
        if 0 <= j < len(r) and r[j] != key
    )
    for i, row in enumerate(_ROWS_QWERTY)
    for k, key in enumerate(row)
}  # fmt: skip


def _slip(word: str, rng: random.Random) -> str:
    """One slip inside a word of four letters or more: two letters swapped, one doubled, one
    dropped, or a neighbouring key; the first letter stays (people see it)."""
    at = rng.randrange(1, len(word) - 1)
    kind = rng.randrange(4)
    if kind == 0:
        return word[:at] + word[at + 1] + word[at] + word[at + 2 :]
    if kind == 1:
        return word[: at + 1] + word[at] + word[at + 1 :]
    if kind == 2:
        return word[:at] + word[at + 1 :]
    near = _NEAR.get(word[at].lower(), "")
    return word[:at] + rng.choice(near) + word[at + 1 :] if near else word


def retype(pieces: list[Piece], lang: str, rng: random.Random, *, slips: float = 0.2) -> None:
    """Rewrite the pieces as an operator typing fast on a phone, harder than the `fast` voice:
    lowercase, no accents (mostly), abbreviations and clipped words, no punctuation, and slips
    of the fingers in any word of the literal text (`slips`: the chance per word). Slot values
    keep what makes them findable; people's names get misspelt as in `apply_noise`."""
    strip = rng.random() < 0.9
    short = _SHORT_ES if lang == "es" else _SHORT_EN
    clipped = _CLIPPED_ES if lang == "es" else _CLIPPED_EN

    def word(match: re.Match[str]) -> str:
        text = match[0]
        text = short.get(text, text) if rng.random() < 0.6 else text
        text = clipped.get(text, text) if rng.random() < 0.5 else text
        if strip:
            text = _strip_accents(text)
        if len(text) >= 4 and text.isalpha() and rng.random() < slips:
            text = _slip(text, rng)
        return text

    for piece in pieces:
        piece.text = piece.text.lower()
        if piece.label in ("customer", "technician") and rng.random() < MISSPELL["fast"]:
            misspelt = misspell_name(piece.text, rng)
            if fold(misspelt) != fold(piece.text):
                piece.canonical, piece.text = piece.text, misspelt
        if piece.value:
            piece.text = _strip_accents(piece.text) if strip else piece.text
            continue
        piece.text = _PUNCTUATION.sub("", piece.text)
        piece.text = re.sub(r"[\wáéíóúüñ]+", word, piece.text)
    if rng.random() < 0.3:
        pieces.append(Piece(" " + rng.choice(_EMOJIS)))


def _strip_accents(text: str) -> str:
    """Accents dropped, case kept; ñ stays (it is a key of its own on a Spanish keyboard)."""
    return "".join(
        ch if ch in "ñÑ" else _plain(ch).upper() if ch.isupper() else _plain(ch) for ch in text
    )
