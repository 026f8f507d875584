"""Finding before creating: a request that asks to *find* something, and the answer to
"¿es el mismo que…?".

`asks_to_find` reads the request's own verb — the first word after courtesy, pronouns and modals
("che, ¿me podés buscar…", "can you please look up…") — and says whether it asks to find, look
up or show: a search phrasing never registers anything, however close the classifier's scores
are ("buscame el cliente Consorcio Av. Cabildo 2150" once read as a registration, 0.447 against
0.445). The verbs are families, not sentences: every voseo, tú, infinitive and clitic form of
buscar, encontrar, mostrar, fijarse, consultar, averiguar; "dame / pasame los datos…";
"¿tenés a…?" as a question; find, search, look up / for, pull up, show, do we have… And the
typos operators make in them ("bucame", "busame", "serch", "encontrme"), measured against those
verbs' usual forms: one letter wrong, missing, extra or swapped, which no other office verb
is (tests/nlu).

`same_or_new` reads the operator's answer to the question a likely duplicate raises.
"""

from __future__ import annotations

import re
from typing import Literal

from common.text import fold

# Words before the verb that say nothing about what is asked: courtesy, pronouns, modals.
from nlu.normalize import word_set

_BEFORE_VERB = word_set(
    """
    che hola buenas buenos buen dia dias tardes bueno dale ok okay y e tambien ahora ahi aca
    porfa favor por ya entonces igual perdon disculpa disculpame me te nos se le les vos
    podes podras podrias puedes puede pueden podrian podemos podria quiero queria quisiera
    necesito necesitaria necesitamos preciso precisamos hay que tenes tienes tengo tenemos
    vamos voy a al dejame rapido rapidamente urgente toque
    dicen decis decime diganme saben sabes sabran si
    hi hey hello so and also then now just quickly quick real can could would will you please
    pls plz i we need to want wanna like i'd let's lets let us go ahead help me try
    """
)
# A question with these verbs asks whether a record exists ("¿tenés a Juan Pérez?").
_EXISTS = word_set("tenes tenemos tienen tienes existe existen hay")
_NEW = word_set("nuevo nueva nuevos nuevas new")
_CLITIC = r"(?:me|te|le|les|lo|la|los|las|nos|melo|mela|selo|sela|mele)?"
# One word is the verb: the forms of the families (folded), never a noun that starts like one
# ("encuentro", "consultorio", "mostrador", "finde" may name a customer or a day).
_SEARCH_VERB = re.compile(
    r"^(?:"
    r"(?:bus(?:ca|car|cas|co|camos|cando|quen|que|ques|queda|quedas)|"
    r"encontr(?:a|ar|as|amos|ando|aste)|encuentr(?:a|an|as|e|en)|"
    r"mostr(?:a|ar|as|ando)|muestr(?:a|an|e|en)|"
    rf"consult(?:a|ar|as|en)|averigu(?:a|ar|as|e|en)){_CLITIC}|"
    r"fij(?:ate|ese|ense|arse|ame|emos)|"  # fijarse, not "fijá la visita" (set it)
    r"find|finds|finding|search|searches|searching|locate|display|fetch|lookup|look-up"
    r")$"
)
# Two or three words are the verb.
_SEARCH_PHRASE = re.compile(
    r"^(?:look\s+(?:up|for|into)|bring\s+up|show|"
    r"(?:cheque\w*|revis\w*|mira\w*|check\w*)\s+(?:si|if|whether)|"
    r"ver\s+(?!si\b)\w+|"  # "ver los datos de…", not "a ver si…"
    r"(?:esta|estan|figura)\s+(?:en\s+(?:la\s+)?(?:base|sistema)|registrad\w*|cargad\w*|"
    r"anotad\w*|dad[oa]s?\s+de\s+alta)|"
    r"trae\w*\s+tod[oa]|pull\s+\w+|(?:give|tell|remind|send|get)\s+me|"
    r"(?:abr\w*|trae\w*|open|get|give|send|tell|dame|das|da|pasame|pasas|pasa|decime|decis|"
    r"mandame|tirame|record\w*|necesito|quiero|queria|quisiera|need|want)\s+"
    r"(?:me\s+)?(?:(?:los|las|el|la|sus|su|the|their|his|her)\s+)?"
    r"(?:datos|dato|ficha|info\w*|contacto|telefono|tel|celular|direccion|mail|email|correo|"
    r"cuit|historial|historia|numero|movil|whatsapp|details|record|file|contact|phone|number|"
    r"mobile|address|email|history)|"
    r"do\s+we\s+have|have\s+we\s+got|is\s+there\s+(?:a|an|any))\b"
)
# The usual forms of the search verbs: a word one typo away from one is that verb, mistyped.
_USUAL = word_set(
    """
    buscame busca buscar buscalo buscala buscas encontrame encontra encontrar encontralo fijate
    mostrame mostra mostrar consulta consultame averigua averiguame search lookup
    """
)
_TOKEN = re.compile(r"[a-z0-9ñ]+(?:['-][a-z]+)?")
_MAX_LEAD = 6


def one_typo(a: str, b: str) -> bool:
    """Whether `a` is `b` with at most one letter wrong, missing, extra or swapped."""
    if a == b:
        return True
    if abs(len(a) - len(b)) > 1:
        return False
    i = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    swapped = a[i : i + 2] == b[i : i + 2][::-1] and a[i + 2 :] == b[i + 2 :]
    return swapped or a[i + 1 :] in (b[i + 1 :], b[i:]) or a[i:] == b[i + 1 :]


def _is_search_verb(word: str) -> bool:
    if _SEARCH_VERB.match(word):
        return True
    return len(word) >= 5 and word.isalpha() and any(one_typo(word, usual) for usual in _USUAL)


def asks_to_find(text: str) -> bool:
    """Whether the request's own verb asks to find, look up or show (see the module docstring).
    A question opened after an introduction is read from its "¿" ("soy Valeria López, ¿me
    dicen si tienen lugar el sábado?")."""
    if "¿" in text[1:] and _asks_to_find(text[text.index("¿", 1) :]):
        return True
    return _asks_to_find(text)


def _asks_to_find(text: str) -> bool:
    folded = fold(text)
    tokens = _TOKEN.findall(folded)
    question = "?" in text or "¿" in text
    for index, word in enumerate(tokens[: _MAX_LEAD + 1]):
        rest = " ".join(tokens[index : index + 6])
        if _is_search_verb(word) or _SEARCH_PHRASE.match(rest):
            return True
        if question and word in _EXISTS and not (_NEW & set(tokens)):
            return True
        if word not in _BEFORE_VERB:
            return False  # the request's verb is another one
    return False


# --- "¿es el mismo que…?" ------------------------------------------------------------------

_UNSURE = re.compile(
    r"^(?:no\s+(?:se|sabria|sabemos|tengo\s+idea|estoy\s+segur[oa]|me\s+acuerdo|recuerdo)|"
    r"ni\s+idea|quizas?|capaz|tal\s+vez|puede\s+ser|maybe|not\s+sure|no\s+idea|"
    r"i\s+(?:don'?t|do\s+not)\s+know|dunno|perhaps)\b"
)
_IS_NEW = re.compile(
    r"\b(?:es\s+otr[oa]|otr[oa]\s+(?:persona|cliente|distint[oa])|un[oa]?\s+nuev[oa]|"
    r"es\s+nuev[oa]|(?:cliente|persona)\s+nuev[oa]|distint[oa]|diferente|"
    r"no\s+es\s+(?:el|la)\s+mism[oa]|no\s+es\s+(?:ese|esa|el|ella)|no\s+son\s+(?:los|las)|"
    r"registr\w+\s+(?:igual|nomas|de\s+todas\s+formas)|d[ae]l[oa]\s+de\s+alta|"
    r"(?:a\s+)?new\s+(?:one|customer|client|person)|it'?s\s+new|different|another\s+(?:one|"
    r"customer|client|person)|not\s+the\s+same|(?:register|create|add)\s+(?:it|them|him|her|"
    r"anyway|a\s+new))\b"
)
_NO = re.compile(r"^(?:no|nop|nope|nah|negativo|para\s+nada)\b")
_IS_SAME = re.compile(
    r"^(?:s[ií]+|sip|sep|yes|yep|yeah|yup|correct\w*|exact\w*|claro|afirmativo|right)\b|"
    r"\b(?:mism[oa]|same|ese\s+mismo|es\s+(?:ese|esa|el|ella)|that'?s\s+(?:the\s+one|him|her|"
    r"them|it)|that\s+one|ya\s+(?:esta|existe|lo\s+tenemos|la\s+tenemos)|us[aá]\s+(?:ese|esa|"
    r"el\s+que)|use\s+(?:that|the\s+existing))\b"
)


def same_or_new(answer: str) -> Literal["same", "new"] | None:
    """ "same" (sí, es el mismo, yes, that's the one), "new" (no, es otro, it's a new one) or
    None when the answer says neither or is unsure ("no sé", "not sure")."""
    folded = " ".join(fold(answer).replace(",", " ").split())
    if not folded or _UNSURE.match(folded):
        return None
    if _IS_NEW.search(folded) or _NO.match(folded):
        return "new"
    if _IS_SAME.search(folded):
        return "same"
    return None
