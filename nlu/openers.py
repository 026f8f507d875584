"""Does a text start like a request? Learned from how the training examples start.

After a bare "y"/"and" a new request starts with a verb or a question ("y agendale", "and book",
"y cuánto debe"), while the second half of a name or a service does not ("y María Pérez",
"y termotanque"). The words the organisation's examples start with are the best list of such
openers; Spanish imperative morphology (voseo "agendá", clitics "hacele", "pasalo") covers the rest.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable
from typing import Literal

from common.text import fold

# Words that may precede the real opener: clitics, negation, "si"/"que" clauses, politeness.
from nlu.normalize import ACCENTED_NOT_VERBS, BEFORE_A_CONJUGATED_VERB, word_set

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
# Office verbs whose imperative takes clitics: "agendale", "hacele", "decime", "pásenlo", "dalo".
_STEMS = (
    r"agend|cancel|pas|mand|arm|hac|factur|cotiz|cobr|registr|carg|asign|reasign|dej|pon|busc|"
    r"fij|avis|llam|reprogram|program|corr|mov|cambi|actualiz|valid|verific|cheque|revis|dec|"
    r"mostr|tra|emit|gener|envi|despach|anot|reserv|confirm|suspend|anul|borr|elimin|agreg|cre|"
    r"d|pregunt|record|inform|escrib|contest|respond|averigu|consegu|comunic|coordin|organiz|"
    r"prepar|calcul|sac|baj|ped|traspas|fich|pidel|ofrec|arregl|visit|list|pas|notific"
)
_CLITIC_IMPERATIVE = re.compile(
    rf"^(?:{_STEMS})(?:a|e|i|en|an)?(?:me|te|le|lo|la|les|los|las|nos|selo|sela|selos|selas|"
    r"melo|mela|melos|melas|telo|tela)$"
)
# The plural imperative without a pronoun, how a customer asks the company ("Cancelen lo del
# martes", "Manden a alguien", "Vengan mañana"): an -ar verb's ends in -en, like an -er verb's
# present ("corren", "hacen"), so these are the office's verbs, not a suffix.
_PLURAL_IMPERATIVES = word_set(
    """
    agenden cancelen pasen manden armen facturen coticen cobren registren carguen asignen dejen
    busquen fijen avisen llamen reprogramen programen cambien actualicen validen verifiquen
    chequeen revisen muestren emitan generen envien despachen anoten reserven confirmen
    suspendan anulen borren eliminen agreguen pregunten recuerden informen averiguen consigan
    comuniquen coordinen organicen preparen calculen saquen bajen pidan arreglen visiten
    notifiquen vengan hagan traigan pongan digan escriban respondan contesten muevan den
    """
)
# English has no imperative morphology: the office verbs, which are often nouns too ("invoice").
_ENGLISH_VERBS = word_set(
    """
    book schedule reschedule move push cancel call create add register find search look pull
    show update change edit fix validate verify check quote invoice bill charge send dispatch
    assign reassign give put set make issue generate follow remind start kick list tell let get
    mark email text notify contact escalate transfer connect please
    """
)
# Fields of a customer record: "CUIT 2012...", "cel 11 4567..." after a request are its details.
ATTRIBUTES = word_set(
    """
    cuit cuil dni tel telefono cel celular movil direccion domicilio mail email correo address
    phone number numero
    """
)
# A clause that says where someone lives or a place is ("vive en Cabildo 500", "con domicilio en
# ...", "en la calle Thames 1200", "she lives at 12 Main St", "located at ...") is the address of
# the record the request before it names: a detail, like "dirección ..." (ATTRIBUTES).
_ADDRESS_CUE = re.compile(
    r"(?:con\s+|with\s+)?(?:(?:el|la|su|the|his|her|their)\s+)?"
    r"(?:(?:cliente|clienta|customer|client|she|he|they|it)\s+)?"
    r"(?:(?:vive|viven|vivia|queda|quedan|esta\s+ubicad[oa]|se\s+mudo|se\s+mudaron|"
    r"lives?|living|is\s+located|located|moved|domicilio|direccion)\s+(?:en|at|on|in|a|to|es|is)"
    r"|en\s+(?:la\s+)?(?:calle|avenida|av|pasaje|pje|diagonal|ruta)"
    r"|(?:calle|street|address|domicilio|direccion))\b"
)
# "…vive en Av. Cabildo 3500, CABA, y agendale…": a place alone before a comma ("CABA", "Villa
# Crespo", "Lanús") ends the address before it; the request opens after the comma.
# Who is writing ("soy Daniel Ibarra", "me llamo Ana", "les escribe el encargado", "this is Tom
# Green", "my name is Ann"): on WhatsApp a customer says it before or after the request. Like a
# record's field, it is a detail of the request beside it, never a request of its own.
_INTRODUCTION = re.compile(
    r"\s*(?i:(?:hola|buenas|buen\s+d[ií]a|buenos\s+d[ií]as|buenas\s+tardes|hi|hello)[\s,!.]+)?"
    r"(?i:soy|me\s+llamo|mi\s+nombre\s+es|les\s+(?:habla|escribe)|te\s+(?:habla|escribe)|"
    r"(?:les\s+|te\s+)?(?:hablo|escribo|escribimos|hablamos)(?=\s+del?\b)|"
    r"my\s+name\s+is|this\s+is|i'?m|i\s+am)\s+(?:el|la|de|cliente|clienta|[A-ZÁÉÍÓÚÑ])",
)
_PLACE_CLAUSE = re.compile(r"\s*((?:[A-ZÁÉÍÓÚÑ][\w.'-]*\s+){0,2}[A-ZÁÉÍÓÚÑ][\w.'-]*)\s*,")
# Questions start requests too, typed with or without their accents.
_QUESTION = word_set(
    """
    cuanto cuanta cuantos cuantas cuando donde como quien quienes cual cuales tenes tienen hay
    what which who when where how why is are do does did can could will would has have should
    """
)
# English asks in the first person ("I want a manager", "we need someone Friday"): the pronoun is
# always capitalised, so the examples never teach it as an opener.
_WANTS = re.compile(r"(?:i|we)\s+(?:want|need|would\s+like|'d\s+like|d\s+like)\b")
# Words ending in a stressed vowel that are not voseo imperatives.
# How a clause starts that tells *about* someone instead of asking for something: reported speech
# ("dice que...", "pregunta si..."), a state ("está re caliente", "anda sin aire", "they're
# upset"), a reason ("porque gotea", "because it leaks"). After a request it is the request's
# context: its money, price, availability or anger words are evidence, not a second request.
_REPORTS = word_set(
    """
    dice dicen dijo pregunta preguntan quiere quieren queria sabe esta estan estaba anda andan
    andaba tiene tienen tenia parece queja quejan quejaba necesita porque xq pq encima sigue
    she he they it its it's they're she's he's theyre shes hes because since cause cuz coz
    says said asks asked wants wanted complains complained paid is are was were has had keeps
    seems sounds needs nadie nobody
    """
)
# "…, que ya pagó la seña", "…, q se quejó": after a request a clause led by "que" gives its
# reason (es-AR uses "que" for "because"); only an imperative makes it a request ("que lo agenden"
# is not one either: a request opens with the verb).
_SUBORDINATE = frozenset({"que", "q"})
# "el cliente está enojado", "the owner is really angry": a person, then how they are.
_PEOPLE = word_set(
    """
    cliente clienta clientes senora senor tipo tipa dueno duena vecino vecina encargado
    encargada customer client owner guy lady man woman tenant
    """
)
_CONDITIONS = frozenset({"si", "if"})
_WORD = re.compile(r"[^\W\d_][\w']*")


def _real_words(text: str) -> list[str]:
    """Lowercased words (accents kept) after the clitics/connectors that may lead a request."""
    return [w for w in _WORD.findall(text.lower()) if fold(w) not in _LEAD]


def opener_words(texts: Iterable[str]) -> frozenset[str]:
    """Words the training examples typically start with, accents kept ("cargá" is not "carga").

    A word counts when it starts at least two examples, starts a fair share (a fifth) of the
    examples that contain it, and is written in lowercase somewhere: "agendá" or "necesito" do,
    while "está" or "todo" appear mostly elsewhere and "Ann" (a name) is always capitalised.
    """
    first: Counter[str] = Counter()
    anywhere: Counter[str] = Counter()
    lowercase: set[str] = set()
    for text in texts:
        words = _real_words(text)
        if words and fold(words[0]) not in _ARTICLES:
            first[words[0]] += 1
        anywhere.update(set(words))
        lowercase.update(w for w in _WORD.findall(text) if w.islower())
    learned = {w for w, n in first.items() if n >= 2 and n / anywhere[w] >= 0.2 and w in lowercase}
    return frozenset(learned | _ENGLISH_VERBS)


def _imperative(word: str) -> bool:
    if word[-1:] in ("á", "é", "í") and word not in ACCENTED_NOT_VERBS:
        return True  # voseo: "agendá", "cancelá", "pedí"
    folded = fold(word)
    return folded in _PLURAL_IMPERATIVES or bool(_CLITIC_IMPERATIVE.match(folded))


def _imperative_among(text: str, first: int = 5) -> bool:
    """An imperative among the first `first` real words (`_real_words`) of the text."""
    raw = _WORD.findall(text.lower())
    seen = 0
    for i, word in enumerate(raw):
        if fold(word) in _LEAD:
            continue
        if _imperative(word) and not (i and fold(raw[i - 1]) in BEFORE_A_CONJUGATED_VERB):
            return True
        seen += 1
        if seen == first:
            break
    return False


def _place_first(text: str, openers: frozenset[str]) -> bool:
    match = _PLACE_CLAUSE.match(text)
    if match is None:
        return False
    words = match.group(1).split()
    return not any(_imperative(w) or w.lower() in openers or fold(w) in _QUESTION for w in words)


# A customer asks the company in the plural with the pronoun first, es-AR's polite request:
# "me mandan la factura", "¿me dicen cuánto debo?", "nos confirman el turno". Not reported speech
# ("me dicen que ya pagó" tells what others said) nor how things are ("me deben", "me tienen
# podrida", "me cobran de más").
_TO_ME = frozenset({"me", "nos"})
_NOT_ASKED = word_set(
    """
    tienen deben estan quedan faltan gustan parecen cobran andan vienen dan duelen funcionan
    """
)


def _asks_you_all(raw: list[str]) -> bool:
    words = [w for w in raw if fold(w) in _TO_ME or fold(w) not in _LEAD]
    if len(words) < 2 or fold(words[0]) not in _TO_ME:
        return False
    at = raw.index(words[0])
    if at and fold(raw[at - 1]) == "no":
        return False  # "no me funcionan las luces": how things are
    verb = fold(words[1])
    if len(verb) < 5 or not verb.endswith(("an", "en")) or verb in _NOT_ASKED:
        return False
    after = raw.index(words[1], at) + 1
    return after == len(raw) or fold(raw[after]) not in _SUBORDINATE


def _reports(words: list[str]) -> bool:
    """Does the clause tell about someone (see _REPORTS)? A third-person preterite ("ya pagó",
    "se quejó", "aprobó") tells too."""
    first = fold(words[0])
    if first in _REPORTS or (words[0].endswith("ó") and len(words[0]) > 3):
        return True
    person = fold(words[1]).removesuffix("'s") if len(words) > 2 else ""
    return first in _ARTICLES and person in _PEOPLE


def tells_about_someone(text: str) -> bool:
    """Does the message open by telling about a person ("la clienta Ibarra llamó re caliente",
    "el cliente Pérez llamó", "Llamó la señora Gómez")? Then what follows is what it tells."""
    words = _real_words(text)
    return bool(words) and (fold(words[0]) in _PEOPLE or _reports(words))


Opening = Literal["request", "detail", "report", "other"]


def how_it_starts(text: str, openers: frozenset[str]) -> Opening:
    """ "request" when the first real word is one the examples start with, or an imperative comes
    early; "detail" when it starts with a field of a record ("CUIT ...", "cel ...", "dirección
    ..."), which belongs to the request before it; "report" when it tells about someone or sets
    a condition ("dice que está enojado", "ya pagó", "si hay lugar", "they're upset"); "other"
    otherwise.

    "si está, agendale..." starts a request too: a Spanish imperative among the first five
    words counts (voseo with its accent, or a verb with clitics: "agendale", "pasalo").
    Openers keep their accents: "cargá una visita" starts a request, "carga de gas" does not.
    """
    words = _real_words(text)
    if not words:
        return "other"
    if fold(words[0]) in ATTRIBUTES or _ADDRESS_CUE.match(" ".join(fold(w) for w in words)):
        return "detail"
    if _INTRODUCTION.match(text) and not any(_imperative(w) for w in words[:3]):
        return "detail"
    if _place_first(text, openers):
        return "detail"
    imperative = _imperative_among(text)
    raw = _WORD.findall(text.lower())
    if fold(raw[0]) in _CONDITIONS and not imperative:
        return "report"  # "si hay lugar", "if there's a slot": a condition on the request
    if fold(raw[0]) in _SUBORDINATE and not imperative and fold(words[0]) not in _QUESTION:
        return "report"  # "que la semana pasada ya pagó": the reason for the request
    if fold(words[0]) in _QUESTION or imperative or _WANTS.match(fold(text).lstrip()):
        return "request"
    if _asks_you_all(raw) or _wished(words) or _OFFICE_INFINITIVE.match(fold(words[0])):
        return "request"
    # Before the learned openers: the examples of a complaint start with "se queja" too.
    if _reports(words):
        return "report"
    return "request" if words[0] in openers or _slipped_opener(words[0], openers) else "other"


# "Quería pasar la visita del jueves…", "quisiera saber cuánto debo": a wish with what is wished
# asks for it (a customer's polite first person; after "llamó Gómez," the same request
# reported). "quería que…" leaves "que" to the lead words, and "la clienta quería…" opens with
# the person.
_WISHES = word_set("queria quisiera queriamos quisieramos necesitaria necesitariamos")
_INFINITIVE = re.compile(r"^[a-zñ]{2,}(?:ar|er|ir)(?:me|te|le|lo|la|les|los|nos)?$")
# An office verb in the infinitive opens a request: the second of two wished things ("quería
# cambiar mi dirección … y agendar el mantenimiento…") and an operator's note ("agendar service
# p/ Gómez").
_OFFICE_INFINITIVE = re.compile(rf"^(?:{_STEMS})(?:ar|er|ir)(?:me|te|le|lo|la|les|los|nos)?$")


def _wished(words: list[str]) -> bool:
    return len(words) > 1 and fold(words[0]) in _WISHES and bool(_INFINITIVE.match(fold(words[1])))


# Before these a verb is governed ("hay que pasar", "can you book", "the call"), not a new request.
_GOVERNED = word_set(
    """
    to can could would will should must you i we he she they it please need want lets let
    de del para por a al con sin en que q xq pq no ni se me te le lo la les los nos su sus mi
    tu hay voy vas va vamos van puedo podes puede pueden quiero queres quiere tenes tengo
    """
)


def opens_mid_sentence(word: str, previous: str, openers: frozenset[str], fast: bool) -> bool:
    """Can a request start at `word` with no connector or punctuation before it, as in a
    dictated or fast-typed run-on ("marcelo esta enfermo pasa todos sus trabajos al viernes")?
    Only at an imperative (voseo with its accent or a verb with clitics, "pasale"; without its
    accent when the whole message is typed without accents, `fast`) — English office verbs are
    nouns as often ("the Hoffman invoice") — and never right after a word that governs it ("hay
    que pasar", "can you book") or an article ("una carga de gas"). The segmenter still has to
    find the two parts better explained apart than together."""
    before = fold(previous)
    if before in _GOVERNED or before in _ARTICLES or before in _LEAD:
        return False
    if _imperative(word):
        return True
    return fast and fold(word) in _unaccented_voseo(openers)


@functools.lru_cache(maxsize=16)
def _unaccented_voseo(openers: frozenset[str]) -> frozenset[str]:
    """The learned openers that are voseo imperatives ("pasá", "cargá"), without the accent."""
    return frozenset(fold(o) for o in openers if o[-1:] in ("á", "é", "í") and _imperative(o))


# Shorter words are too often another word one slip away ("pasa", "carga").
_SLIP_MIN = 5


def _slipped_opener(word: str, openers: frozenset[str]) -> bool:
    """An opener typed fast: one letter doubled or extra, dropped, or swapped with the next
    ("prseu", "persu" for "presu"; "pasmae" for "pasame"; "agendaale"). Never a letter for
    another ("ayudas" is not "ayudar")."""
    if len(word) < _SLIP_MIN:
        return False
    typed = word.lower()
    whole, dropped = _slip_table(openers)
    return typed in dropped or bool(_slips(typed) & whole)


def _slips(word: str) -> set[str]:
    """The word with one letter taken out or two neighbours swapped."""
    found = {word[:i] + word[i + 1 :] for i in range(len(word))}
    found |= {word[:i] + word[i + 1] + word[i] + word[i + 2 :] for i in range(len(word) - 1)}
    return found - {word}


@functools.lru_cache(maxsize=16)
def _slip_table(openers: frozenset[str]) -> tuple[frozenset[str], frozenset[str]]:
    """The openers of _SLIP_MIN letters or more, and each with one letter dropped."""
    whole = frozenset(o.lower() for o in openers if len(o) >= _SLIP_MIN)
    dropped = {o[:i] + o[i + 1 :] for o in whole for i in range(len(o))}
    return whole, frozenset(d for d in dropped if len(d) >= _SLIP_MIN)


def starts_like_request(text: str, openers: frozenset[str]) -> bool:
    return how_it_starts(text, openers) == "request"


def verb_intents(
    texts: Iterable[str], intents: Iterable[str], *, min_examples: int = 3, share: float = 0.85
) -> dict[str, str]:
    """Opening verbs that (nearly) always start one intent in the examples: "facturale" →
    generate_invoice, "invoice" → generate_invoice, while "pasá" (reschedule, bulk_reschedule,
    escalate...) says nothing. Keys are folded: "facturá" and "factura" are one word typed two ways.
    """
    counts: dict[str, Counter[str]] = {}
    voseo: set[str] = set()  # "agendá": a verb by its accent, which folding takes away
    for text, intent in zip(texts, intents, strict=True):
        words = _real_words(text)
        if words and fold(words[0]) not in _ARTICLES:
            counts.setdefault(fold(words[0]), Counter())[intent] += 1
            if _imperative(words[0]):
                voseo.add(fold(words[0]))
    learned: dict[str, str] = {}
    for word, by_intent in counts.items():
        intent, n = by_intent.most_common(1)[0]
        verb = word in voseo or word in _ENGLISH_VERBS
        if verb and n >= min_examples and n / sum(by_intent.values()) >= share:
            learned[word] = intent
    return learned


def opening_word(text: str) -> str:
    """The folded first real word ("Y facturale a Juan..." → "facturale"), or ""."""
    words = _real_words(text)
    return fold(words[0]) if words else ""


def opening_verb(text: str) -> str:
    """The folded first real word when it is a verb in the imperative ("agendá", "cancelalo",
    "book"), else "": "¿la factura 12 está paga?" opens with a noun that folds like "facturá"."""
    words = _real_words(text)
    if not words or not (_imperative(words[0]) or fold(words[0]) in _ENGLISH_VERBS):
        return ""
    return fold(words[0])
