"""Multi-intent segmentation: where does one request end and the next begin?

1. Candidate boundaries: sentence ends, commas, and es/en connectors ("y", "e", "además", "después",
   "luego", "también", "and", "then", "also", "plus", "and then", "and also", ...).
2. Every span between two candidates is classified once (one batched call; the classifier
   analyses each piece once and adds up the counts of a span's pieces).
3. A dynamic programme picks the partition with the best score: each segment contributes the log of
   its top probability, each cut earns a bonus by its evidence ("y después" more than a bare "y"),
   and neighbouring segments must disagree on the intent (two halves of one request classify the
   same: "Juan y María", "service y carga de gas", "15/12 y 16/12" stay together).
4. After a bare "y"/"and", a comma or a full stop, a part must *open* like a request (a verb the
   registry's examples start with, a Spanish imperative, a question word: see openers.py); a
   record's detail ("CUIT 30...", "cel 11...") never stands alone; a verbless part needs high
   confidence and enough words (", humidity near Denver"); a part the classifier barely
   recognises ("en fin", "tengo a los chicos acá") is a comment on its neighbour.
5. No phantom intents: a part that tells about someone or sets a condition ("que está re caliente
   porque no le anda el aire", "ya pagó la seña", "si hay lugar", "she's furious") and reads as
   one of the *cue* intents (a price, a payment, availability, a grievance) is the context of the
   request before it, not a request: it never starts a segment, and it is left out of the
   classification of the segment that holds it, so its cue words cannot change that request's
   intent either ("agendale a Quiroga el split, ya pagó la seña" is a booking). A message that
   opens by telling about someone and has no part that opens like a request ("la clienta Ibarra
   llamó re caliente, dice que…") is what it tells.

The whole message is one of the partitions, so a split happens only when the parts explain the
text better than the whole does. Tuning was measured on MixSNIPS dev and the golden set; the
weights are in log-probability of the classifier's scores.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from common.text import fold, fold_keep_length
from nlu.amounts import SPELLED_NUMBER_WORDS
from nlu.normalize import TAKE_BACK, word_set
from nlu.openers import tells_about_someone

# A clause that asks for a second thing to be done first or afterwards: "después de agendarle",
# "antes de facturarlo", "una vez que lo agendes", "once you book it", "after you send it",
# "as soon as you book". Only before a verb: "después de las 3" or "after 5pm" are times.
_AFTER_DOING = (
    r"(?:despues|antes|luego)\s+de(?=\s+[a-z]+(?:ar|er|ir)(?:le|lo|la|les|los|las|me|selo|sela)?\b)|"
    r"una\s+vez\s+que|ni\s+bien|(?:once|after|before|as\s+soon\s+as)(?=\s+you\b)"
)


def _typed_fast(word: str) -> str:
    """A connector word as a regex that also matches it typed fast: one letter doubled, dropped
    or swapped with the next ("desspues", "tambin", "aprate"). Slips that spell another word
    ("parte" for "aparte") do not count."""
    slips = {word}
    for i in range(len(word)):
        slips.add(word[:i] + word[i] + word[i:])  # doubled
        slips.add(word[:i] + word[i + 1 :])  # dropped
        if i + 1 < len(word):
            slips.add(word[:i] + word[i + 1] + word[i] + word[i + 2 :])  # swapped
    slips -= _REAL_WORDS
    return "(?:" + "|".join(sorted(slips, key=len, reverse=True)) + ")"


# Words one slip away from a connector that are words of their own.
_REAL_WORDS = word_set("parte lego uego")
_DESPUES, _TAMBIEN, _ADEMAS, _APARTE, _LUEGO = (
    _typed_fast(w) for w in ("despues", "tambien", "ademas", "aparte", "luego")
)

# Folded connector phrases, longest first so "y después" wins over "y".
_CONNECTORS = [
    rf"y\s+(?:{_DESPUES}|{_LUEGO}|{_TAMBIEN}|{_ADEMAS}|de\s+paso|encima|{_APARTE})", r"y\s+que",
    r"y\s+si", r"and\s+(?:then|also|after\s+that|afterwards|as\s+well)", r"as\s+well\s+as",
    r"after\s+that", _AFTER_DOING, _ADEMAS, rf"{_DESPUES}(?!\s+de)", rf"{_LUEGO}(?!\s+de)",
    _TAMBIEN, r"tmb", _APARTE, r"de\s+paso", r"encima", r"asimismo", r"por\s+otro\s+lado",
    r"otra\s+cosa", r"y", r"e", r"and", r"then", r"also", r"plus", r"afterwards",
]  # fmt: skip
_CONNECTOR_RE = re.compile(r"\s+(?:" + "|".join(_CONNECTORS) + r")\b[,:]?\s+")
# A comma, or a dash between clauses ("is out sick tomorrow — push his jobs"; a hyphen only
# with a space before it and no number around it: "Gómez-Rivas" is a name, "11 - 5555" a phone).
_COMMA_RE = re.compile(
    r"(?:\s*,|\s*[—–]|(?<!\d)\s+-(?!\s*\d))\s*(?:(?:" + "|".join(_CONNECTORS) + r")\b[,:]?\s*)?"
)
_SENTENCE_RE = re.compile(
    r"(?<!\b[a-z])(?<!\bsr)(?<!\bsra)(?<!\bdr)(?<!\bdra)(?<!\bav)(?<!\bst)(?<!\bmr)(?<!\bmrs)"
    r"(?<!\bnro)(?<!\bhnos)(?<!\bing)(?<!\blic)[.!?;]+[\"')]*\s+(?:(?:"
    + "|".join(_CONNECTORS)
    + r"|ah|oh|ok|bueno)\b[,:]?\s*)*|\n+"
)
# "encima" ("on top of that") mostly piles another grievance onto a complaint, so it is weak.
_STRONG = re.compile(
    r"\b(?:"
    + _AFTER_DOING
    + rf"|{_DESPUES}(?!\s+de)|{_LUEGO}(?!\s+de)|{_TAMBIEN}|{_ADEMAS}|de\s+paso|{_APARTE}|tmb|"
    r"asimismo|por\s+otro\s+lado|"
    r"otra\s+cosa|then|also|plus|after\s+that|afterwards|as\s+well)\b"
)
_MAX_BOUNDARIES = 9
_CHARACTER_BUDGET = 60_000
_WORD = re.compile(r"[a-z]+")


@dataclass(frozen=True)
class Boundary:
    start: int  # the connector occupies text[start:end]; it belongs to neither side
    end: int
    # "strong" (después, also...) | "sentence" | "comma" | "weak" (a bare y/and) | "bare" (no
    # connector at all: before a verb that opens a request in a run-on)
    kind: str
    connector: str = ""  # folded connector text


@dataclass(frozen=True)
class Segment:
    text: str
    start: int
    end: int
    probs: tuple[float, ...]

    @property
    def top(self) -> int:
        return max(range(len(self.probs)), key=self.probs.__getitem__)

    @property
    def confidence(self) -> float:
        return self.probs[self.top]


@dataclass(frozen=True)
class Tuning:
    """What a split costs (negative: what it earns), by the evidence at the cut, in log-probability.

    The classifier is confident even on a text that mixes two requests, so the whole message
    usually scores close to 0; explicit connectors must earn a split, and the neighbours-differ,
    opener and confidence rules keep the splits honest.
    """

    sentence: float = -3.0
    comma: float = -2.0
    strong: float = -3.0  # "y después", "and then", "also", "además"
    weak: float = -1.5  # a bare "y" / "and"
    bare: float = -1.0  # nothing between the parts: "está enfermo pasá sus trabajos"
    min_content_words: int = 1
    # Cut kinds after which the next segment must start like a request ("y agendale", "and book"),
    # so "Juan y María Pérez", "calefón y termotanque" or "the fox and the child" stay whole.
    needs_opener: frozenset[str] = frozenset({"weak", "comma", "sentence", "bare"})
    # ... unless the part is this confident on its own (", humidity near Denver" after a
    # request is a request without a verb; "Villa Crespo" or "misma hora" never score this high).
    confident_without_opener: float = 0.9
    # "dirección Belgrano 300 Quilmes" is a detail of the request before it, not a request.
    content_words_without_opener: int = 3
    # A part the classifier barely recognises ("tengo a los chicos acá", "en fin") is a comment on
    # its neighbour, not a request of its own.
    min_part_confidence: float = 0.25
    # A later part after a comma, a full stop, a bare "y" or nothing must be surer than that: a
    # reason or an aside ("…, conseguí a otro técnico") is read weakly as some intent, a second
    # request clearly. Chosen on the corpus's dev families (0.3–0.45 tie; 0.55 loses requests).
    side_confidence: float = 0.35
    # Cut kinds after which a report ("dice que...", "they're upset") reading as a cue intent is
    # context: an explicit "además" / "also" still opens a second request.
    context_after: frozenset[str] = frozenset({"weak", "comma", "sentence"})


# Opens a request at this word, after that one, in a message typed without accents or not?
OpensAt = Callable[[str, str, bool], bool]
_ACCENTED = re.compile(r"[áéíóúÁÉÍÓÚñÑ]")


def boundaries(text: str, opens_at: OpensAt | None = None) -> list[Boundary]:
    """Candidate split points, in text order, without overlaps. With `opens_at`, a word of a
    run-on that opens a request is a candidate too (kind "bare")."""
    folded = fold_keep_length(text)
    found: list[Boundary] = []
    for kind, pattern in (
        ("sentence", _SENTENCE_RE),
        ("comma", _COMMA_RE),
        ("weak", _CONNECTOR_RE),
    ):
        for m in pattern.finditer(folded):
            start, end = m.span()
            if start == 0 or end >= len(text.rstrip()):
                continue
            if not any(b.start < end and start < b.end for b in found):
                connector = folded[start:end].strip()
                strength = "strong" if _STRONG.search(connector) else kind
                found.append(Boundary(start, end, strength, connector))
    if opens_at is not None:
        found += _bare(text, found, opens_at)
    found.sort(key=lambda b: b.start)
    limit = _boundary_limit(len(text))
    if len(found) > limit:
        # Keep the strongest evidence.
        rank = {"strong": 0, "sentence": 1, "comma": 2, "weak": 3, "bare": 4}
        found = sorted(sorted(found, key=lambda b: rank[b.kind])[:limit], key=lambda b: b.start)
    return found


_TOKEN = re.compile(r"[^\W\d_][\w']*")
# Words a run-on's part needs before a bare cut: "pasá" after one word is its subject or a slip.
_MIN_WORDS_BEFORE = 2


def _bare(text: str, found: Sequence[Boundary], opens_at: OpensAt) -> list[Boundary]:
    """Cuts before the words of a run-on that open a request, away from the other cuts."""
    fast = not _ACCENTED.search(text)
    words = list(_TOKEN.finditer(text))
    bare = []
    for k in range(_MIN_WORDS_BEFORE, len(words) - 1):
        at = words[k].start()
        if any(b.start <= at <= b.end for b in found):
            continue
        if text[words[k - 1].end() : at].strip():
            continue  # punctuation or a value in between: the other cuts' business
        if opens_at(words[k][0], words[k - 1][0], fast):
            bare.append(Boundary(at, at, "bare"))
    return bare


def _boundary_limit(length: int) -> int:
    """How many cuts to consider: every span between two cuts is classified, and k cuts over a
    text of n characters add up counts for about n·(k+2)(k+3)/6 characters, kept under a fixed
    budget so a pasted paragraph costs milliseconds, not seconds."""
    k = _MAX_BOUNDARIES
    while k > 1 and length * (k + 2) * (k + 3) / 6 > _CHARACTER_BUDGET:
        k -= 1
    return k


def _content_words(text: str) -> int:
    """Words that could carry a request (not function words, not values)."""
    folded = fold(text)
    return sum(1 for w in _WORD.findall(folded) if len(w) > 2 and w not in _STOP)


_STOP = word_set(
    """
    de del la las los el un una unos unas que con por para en al a y e o the of to for in on
    at and or an with from by this that his her their its my your our
    """
)
# Dictation's fillers and a bare copula carry no request: "o sea, | necesito un presupuesto …,
# son, eh, | seis equipos" must not stand as parts of their own.
_STOP |= word_set("eh ehh eeh mmm mm um uh umm este sea bueno digamos viste mira son")
# Numbers said in words are values, as digits are: "…, son, este, noventa y cinco mil" is the
# amount of the request before it, not a part.
_STOP |= SPELLED_NUMBER_WORDS | word_set(
    """
    veinti cientos mil millon millones luca lucas one two three four five six seven eight nine
    ten eleven twelve twenty thirty forty fifty sixty seventy eighty ninety hundred thousand
    """
)


# Rows of probabilities per span: a numpy array or nested sequences both index as [span][intent].
SpanClassifier = Callable[[Sequence[str], Sequence[tuple[int, int]]], Any]


def joined(classify: Callable[[Sequence[str]], Sequence[Sequence[float]]]) -> SpanClassifier:
    """A span classifier from a plain text classifier (pieces joined with a space)."""

    def classify_spans(
        pieces: Sequence[str], spans: Sequence[tuple[int, int]]
    ) -> Sequence[Sequence[float]]:
        return classify([" ".join(pieces[i:j]) for i, j in spans])

    return classify_spans


def segment(
    text: str,
    classify_spans: SpanClassifier,
    how_it_starts: Callable[[str], str] = lambda _text: "request",
    tuning: Tuning = Tuning(),
    cues: frozenset[int] = frozenset(),
    opens_at: OpensAt | None = None,
) -> list[Segment]:
    """The best partition of `text` into request segments (one segment when it is one request).

    `classify_spans(pieces, spans)` gives one probability row per [start, end) range of pieces,
    the pieces being the text between candidate cuts (connectors left out). `cues` are the
    columns of the intents a report can only be evidence for (point 5 above).
    """
    cuts = boundaries(text, opens_at)
    # Segment i..j (0 <= i < j <= n) spans from the end of cut i-1 to the start of cut j-1.
    starts = [0] + [b.end for b in cuts]
    ends = [b.start for b in cuts] + [len(text)]
    pieces = [text[start:end] for start, end in zip(starts, ends, strict=True)]
    spans = [(i, j) for i in range(len(starts)) for j in range(i + 1, len(starts) + 1)]
    texts = [text[starts[i] : ends[j - 1]].strip() for i, j in spans]
    probs = classify_spans(pieces, spans)
    context = _context_pieces(pieces, cuts, spans, probs, how_it_starts, tuning, cues)
    if context:
        # Only the spans that hold a context piece are classified again, without it.
        bare = ["" if k in context else piece for k, piece in enumerate(pieces)]
        holding = [(i, j) for i, j in spans if any(i <= k < j for k in context)]
        again = dict(zip(holding, classify_spans(bare, holding), strict=True))
        probs = [again.get(span, row) for span, row in zip(spans, probs, strict=True)]
    table = {
        span: Segment(seg_text, starts[span[0]], ends[span[1] - 1], tuple(float(p) for p in row))
        for span, seg_text, row in zip(spans, texts, probs, strict=True)
    }
    return _best_partition(len(starts), table, cuts, tuning, how_it_starts, context)


def _context_pieces(
    pieces: Sequence[str],
    cuts: Sequence[Boundary],
    spans: Sequence[tuple[int, int]],
    probs: Any,
    how_it_starts: Callable[[str], str],
    tuning: Tuning,
    cues: frozenset[int],
) -> frozenset[int]:
    """Pieces that are the context of the request before them (point 5 of the module's doc)."""
    row_of = dict(zip(spans, probs, strict=True))
    context = set()
    # "la clienta Ibarra llamó re caliente, dice que le dejaron todo sucio" asks nothing: a
    # message that opens by telling about someone and makes no request is about what it tells.
    told = tells_about_someone(pieces[0]) and not any(
        how_it_starts(piece.strip()) == "request" for piece in pieces
    )
    for k in range(1, len(pieces)):
        if cuts[k - 1].kind not in tuning.context_after or told:
            continue
        row = [float(p) for p in row_of[(k, k + 1)]]
        top = max(range(len(row)), key=row.__getitem__)
        if top in cues and how_it_starts(pieces[k].strip()) == "report":
            context.add(k)
    return frozenset(context)


def _segment_score(seg: Segment, tuning: Tuning) -> float | None:
    if _content_words(seg.text) < tuning.min_content_words:
        return None
    return math.log(max(seg.confidence, 1e-9))


def _cost(cut: Boundary, tuning: Tuning) -> float:
    return float(getattr(tuning, cut.kind))


# A part that takes back what the one before it said: dictation's self-correction.
_CORRECTION_START = re.compile(
    rf"\s*(?:(?:uh|um|eh|este)\W+)*(?:{TAKE_BACK}|no\W+(?:{TAKE_BACK}|wait|sorry))\b"
)
# The same, said at the end of the part before the cut ("…at three pm, actually no").
_TAKES_BACK_AT_END = re.compile(rf"\b(?:{TAKE_BACK}|actually\s+no|no\W+(?:perdon|mejor))\W*$")


def _allowed(
    cut: Boundary, tuning: Tuning, seg: Segment, how_it_starts: Callable[[str], str]
) -> str:
    """May `seg` start after `cut`? "yes", "no", or "if the part before is a clear request".

    After a comma, a full stop or a bare "y"/"and" the part must open like a request, or be
    confident and wordy enough on its own (", humidity near Denver"); after a bare "and" that
    also needs the part before to be a clear request, so "put Tom and Ann Walker down for..."
    stays whole. A record's detail ("CUIT ...", "cel ...") never stands alone.
    """
    if cut.kind not in tuning.needs_opener:
        return "yes"
    if cut.kind == "bare":
        # The cut is at a verb that opens a request; with nothing between the parts, the one
        # before must be a clear request of its own ("marcelo esta enfermo" | "pasa todo").
        return "if clear before"
    if _CORRECTION_START.match(fold(seg.text)):
        return "no"  # "…at three pm, actually no, make it four pm": it fixes the part before
    opening = how_it_starts(seg.text)
    if opening in ("request", "detail"):
        return "yes" if opening == "request" else "no"
    verbless_request = (
        seg.confidence >= tuning.confident_without_opener
        and _content_words(seg.text) >= tuning.content_words_without_opener
    )
    if not verbless_request:
        return "no"
    return "if clear before" if cut.kind == "weak" else "yes"


def _repeats_request(
    cut: Boundary, before: Segment, seg: Segment, how_it_starts: Callable[[str], str]
) -> bool:
    """Two requests of one intent: both parts open with a verb and a connector joins them
    ("agendale a Graciela ... y agendale también a Ernesto ...", "book Ann ..., and book Tom
    ..."); the labelling rules collapse them again unless they name different customers or
    dates. A bare comma or a full stop is not enough: "mañana se corta la luz, pasá las visitas"
    is one move with its reason."""
    if cut.kind == "sentence" or not _WORD.search(cut.connector):
        return False
    return how_it_starts(before.text) == "request" and how_it_starts(seg.text) == "request"


# A clause that sets a condition or a time for what follows: "si pagó, …", "antes de que me hagan
# la factura, …", "once you book it, …".
_CONDITION_START = re.compile(
    r"\s*[¿¡]?(?:si|if|(?:antes|despues|luego)\s+de\s+que|una\s+vez\s+que|ni\s+bien|apenas|"
    r"before|after|once|as\s+soon\s+as)\b"
)


# es-AR names what a request is about first, "lo de Gómez", and the request takes it back with
# a pronoun: "lo de Gómez, pasalo al viernes" (fillers may come first: "eh, lo de…").
_TOPIC_START = re.compile(r"\s*(?:(?:eh|este|bueno|mira|che|y)\W+)*lo\s+del?\b")


def _leans_on_next(text: str, how_it_starts: Callable[[str], str]) -> bool:
    """A first part that cannot stand alone: a detail ("soy Daniel Ibarra." before "¿me pasan
    el turno…?"), a condition ("antes de que me hagan la factura, ¿me confirman el CUIT?") or
    the topic ("lo de Gómez, pasalo al viernes") of the request that follows."""
    opening = how_it_starts(text)
    if opening == "detail" or _CONDITION_START.match(fold(text)):
        return True
    return opening != "request" and bool(_TOPIC_START.match(fold(text)))


def _best_partition(
    n: int,
    table: dict[tuple[int, int], Segment],
    cuts: list[Boundary],
    tuning: Tuning,
    how_it_starts: Callable[[str], str],
    context: frozenset[int] = frozenset(),
) -> list[Segment]:
    """Viterbi over cut points; the state is (position, intent of the last segment)."""
    # best[j][label] = (score, path) for partitions of pieces 0..j ending with that label.
    best: list[dict[int, tuple[float, list[Segment]]]] = [{} for _ in range(n + 1)]
    best[0][-1] = (0.0, [])
    for j in range(1, n + 1):
        for i in range(j):
            seg = table[(i, j)]
            whole = i == 0 and j == n
            if i in context:
                continue  # the context of the request before it never stands alone
            score = _segment_score(seg, tuning)
            if not whole and (score is None or seg.confidence < tuning.min_part_confidence):
                continue
            score = score if score is not None else math.log(max(seg.confidence, 1e-9))
            if i == 0 and not whole and _leans_on_next(seg.text, how_it_starts):
                # ... unless the request it leans on is inside it: "soy Sebastián López, me
                # pasan el turno al 25/11? | y otra cosa, me mandan la factura".
                inside = (how_it_starts(table[(k, k + 1)].text) == "request" for k in range(1, j))
                if not any(inside):
                    continue
            if i > 0 and cuts[i - 1].kind != "strong" and seg.confidence < tuning.side_confidence:
                continue  # not after "además", "also": those announce a second request
            allowed = _allowed(cuts[i - 1], tuning, seg, how_it_starts) if i > 0 else "yes"
            if i > 0 and _TAKES_BACK_AT_END.search(fold(table[(0, i)].text)):
                allowed = "no"  # "…at three pm, actually no, | make it four pm"
            if allowed == "no":
                continue
            cost = _cost(cuts[i - 1], tuning) if i > 0 else 0.0
            for last, (prev_score, path) in best[i].items():
                if last == seg.top and not (
                    i > 0 and _repeats_request(cuts[i - 1], path[-1], seg, how_it_starts)
                ):
                    continue  # two halves of one request
                if allowed != "yes" and path[-1].confidence < tuning.confident_without_opener:
                    continue
                total = prev_score + score - cost
                if seg.top not in best[j] or total > best[j][seg.top][0]:
                    best[j][seg.top] = (total, [*path, seg])
    return max(best[n].values(), key=lambda item: item[0])[1]
