"""Does a reply answer the question it follows? The language-only half of clarification (O8).

A question leaves a slot open (a date, a job, one of the listed options, yes or no…). These
checks read the reply's words alone — no records, no classifier — and say what kind of reply it
is: a "never mind", a "no sé", garbage, or words of the type the slot needs.
copilot/orchestration/clarify.py makes the decision with them (and with what the router read in
the reply).
"""

from __future__ import annotations

import re

from common.text import fold

# Whole replies that drop the question (folded, punctuation aside). `_CANCEL_THAT` are only
from nlu.normalize import word_set, words

# a "never mind" while a question is open: with none, "cancelá eso" cancels what was just done.
_NEVER_MIND = re.compile(
    r"^(?:no\s+)?(?:olvida(?:lo|la|te)?(?:\s+nomas)?|deja(?:lo|la)?(?:\s+(?:asi|nomas|nada))?|"
    r"no\s+importa|nada|nada\s+nada|ninguno|ninguna|never\s*mind|nevermind|forget\s+(?:it|that|"
    r"about\s+it)|skip\s+it|skip\s+that|nothing|no\s+matter|doesn'?t\s+matter)$"
)
_CANCEL_THAT = re.compile(
    r"^(?:no\s+)?(?:cancela(?:lo|la)?(?:\s+(?:eso|esto|todo))?|cancel(?:\s+(?:it|that|this))?|"
    r"deja(?:lo|la)?\s+sin\s+efecto|anula(?:lo|la)?\s+eso)$"
)
# "No sé", "ni idea", "I don't know": not an answer, and not a request either.
_DONT_KNOW = re.compile(
    r"^(?:(?:mm+|eh+|uh+|em+|hmm+|ah+|bueno|y|pues|la\s+verdad|sinceramente|honestamente|"
    r"disculpa|perdon|sorry|well|um+|honestly)\s+)*"
    r"(?:no\s+(?:se|sabria|sabria\s+decirte|tengo\s+(?:idea|ni\s+idea|la\s+menor\s+idea)|"
    r"me\s+acuerdo|lo\s+se|estoy\s+segur[oa])|ni\s+idea|que\s+se\s+yo|vaya\s+uno\s+a\s+saber|"
    r"quien\s+sabe|sepa\s+dios|i\s+(?:don'?t|do\s+not|dont)\s+know|i\s+have\s+no\s+idea|"
    r"no\s+idea|dunno|idk|not\s+sure|i'?m\s+not\s+sure|no\s+clue|i\s+(?:don'?t|dont)\s+remember)"
    r"(?:\s+(?:la\s+verdad|che|todavia|aun|bien|viste|sorry|perdon|yet|really|honestly|"
    r"tampoco|either|nada|nada\s+de\s+eso|anything|at\s+all))*$"
)
_MARKUP = re.compile(r"<\s*/?\s*[a-z!][^>]*>|&(?:[a-z]{2,8}|#\d{2,5});", re.IGNORECASE)
_KEYBOARD_RUNS = ("qwer", "wert", "asdf", "sdfg", "dfgh", "fghj", "ghjk", "hjkl", "zxcv", "xcvb")
_CONSONANT_RUN = re.compile(r"[bcdfghjklmnpqrstvwxz]{5,}")
_PUNCT = re.compile(r"[^\w#@:/']+")
# Options: a line of a list in the question ("- #12 …", "2. jueves 26/11 10:00 con …").
_OPTION_LINE = re.compile(r"^\s*(?:[-•*]|\d+[.)])\s+(.+)$", re.MULTILINE)
_ORDINALS = word_set(
    """
    primero primera primer segundo segunda tercero tercera tercer cuarto cuarta quinto quinta
    ultimo ultima anteultimo penultimo 1ro 1ero 2do 3ro 4to 5to first second third fourth fifth
    last 1st 2nd 3rd 4th 5th proximo proxima next earliest soonest
    """
)
_ANY = re.compile(
    r"\b(?:cualquier\w*|el\s+que\s+sea|la\s+que\s+sea|(?:me\s+)?da\s+(?:lo\s+mismo|igual)|"
    r"elegi\s+vos|decidi\s+vos|any(?:\s+one)?|anyone|whichever|either|you\s+(?:choose|pick|decide))\b"
)
_YES_NO = re.compile(
    r"^(?:si+|sip|sep|no+|nop|nel|dale|ok|okay|claro|exacto|correcto|afirmativo|negativo|"
    r"obvio|es\s+(?:el|la)\s+mism[oa]|mism[oa]|es\s+otr[oa]|otr[oa]|(?:es\s+)?(?:uno\s+)?nuev[oa]|"
    r"yes|yeah|yep|yup|nope|sure|correct|right|same|different|another|(?:it'?s\s+)?(?:a\s+)?new)\b"
)
# Words that carry nothing about which row or value is meant.
_FILLER = word_set(
    """
    el la los las lo le de del al a que ese esa eso este esta esto uno una un es era son si no
    dale ok okay bueno opcion numero nro n con por favor porfa y o e en para mas muy tambien
    the one that this it is was yes option number please with and or of for to a an
    mmm eh ah che hola pues entonces ya
    """
)
_DATE_WORDS = word_set(
    """
    hoy manana pasado lunes martes miercoles jueves viernes sabado domingo semana mes finde
    enero febrero marzo abril mayo junio julio agosto septiembre setiembre octubre noviembre
    diciembre proximo proxima que viene today tomorrow monday tuesday wednesday thursday friday
    saturday sunday week weekend month next january february march april may june july
    august september october november december tonight
    """
)
_TIME_WORDS = word_set("hs hrs hora horas horario mediodia tarde noche am pm noon morning evening")
_CLOCK = re.compile(r"\b\d{1,2}(?::\d{2}|\s*(?:hs|h|hrs|am|pm)\b)|\ba\s+las\s+\d{1,2}\b")
_DAY_MONTH = re.compile(r"\b\d{1,2}[/-]\d{1,2}(?:[/-]\d{2,4})?\b|\bel\s+\d{1,2}\b")
_ID = re.compile(r"#\s?(\d+)")


def _whole(text: str) -> str:
    """The folded reply without punctuation or emoji, spaces squashed."""
    return " ".join(_PUNCT.sub(" ", fold(text.replace("’", "'"))).split())


def never_mind(text: str, *, question_open: bool = True) -> bool:
    """The whole reply drops what was asked: "olvidalo", "no importa", "never mind"… With a
    question open, "cancelá eso" / "cancel that" too (with none it cancels what was done)."""
    whole = _whole(text)
    if _NEVER_MIND.match(whole):
        return True
    return question_open and bool(_CANCEL_THAT.match(whole))


def dont_know(text: str) -> bool:
    """The whole reply says the operator does not know: "no sé", "ni idea", "I don't know"."""
    return bool(_DONT_KNOW.match(_whole(text)))


def garbage(text: str) -> bool:
    """Markup (HTML tags or entities) or random characters: never an answer to anything."""
    if _MARKUP.search(text):
        return True
    tokens = words(text)
    if not tokens:
        # Only keyboard symbols ("#$%&/"); an emoji alone is no answer, but not noise either.
        return len(re.findall(r"[!-/:-@\[-`{-~]", text)) >= 3
    gibberish = [token for token in tokens if _gibberish(token)]
    return len(gibberish) * 2 >= len(tokens)


def _gibberish(token: str) -> bool:
    if token.isdigit() or len(token) < 4:
        return False
    if not re.search(r"[aeiouy]", token) or _CONSONANT_RUN.search(token):
        return True
    return any(run in token for run in _KEYBOARD_RUNS)


def options_of(question: str) -> list[str]:
    """The listed options of a question (folded), in order; [] when it lists none."""
    return [fold(line) for line in option_lines(question)]


def option_lines(question: str) -> list[str]:
    """The listed options of a question as written (without their bullet or number)."""
    return [line.strip() for line in _OPTION_LINE.findall(question)]


def without_options(question: str) -> str:
    """The question with its option lines taken out (what stays around a list of choices)."""
    kept = _OPTION_LINE.sub("", question)
    return re.sub(r"\n{2,}", "\n", kept).strip()


def content_words(text: str) -> list[str]:
    """The folded words that say something (not articles, not "dale", not "por favor")."""
    return [token for token in words(text) if token not in _FILLER]


def points_at_option(reply: str, question: str) -> bool:
    """The reply points at one of the options the question lists by its place ("el segundo",
    "2"), its id ("#12") or "cualquiera": an answer whatever else it says."""
    options = options_of(question)
    if not options:
        return False
    folded = fold(reply)
    if _ANY.search(folded) or any(token in _ORDINALS for token in words(reply)):
        return True
    listing = "\n".join(options)
    if any(f"#{number}" in listing for number in _ID.findall(folded)):
        return True
    content = content_words(reply)
    return len(content) == 1 and content[0].isdigit() and 1 <= int(content[0]) <= len(options)


def names_option(reply: str, question: str) -> bool:
    """Words of the reply stand in one of the listed options' lines ("el del jueves",
    "la Kangoo", "el de las 10")."""
    listing = "\n".join(options_of(question))
    return any(
        (token.isdigit() or len(token) >= 3)
        and re.search(rf"(?<!\w){re.escape(token)}(?!\w)", listing)
        for token in content_words(reply)
    )


def yes_or_no(text: str) -> bool:
    """The reply opens with yes or no ("sí", "no, es otro", "yes, same one")."""
    return bool(_YES_NO.match(_whole(text)))


def dateish(text: str) -> bool:
    """Words of a day: "el jueves", "mañana", "15/12", "el 15", "next week"."""
    folded = fold(text)
    return bool(set(words(text)) & _DATE_WORDS or _DAY_MONTH.search(folded))


def timeish(text: str) -> bool:
    """Words of a time of day: "a las 10", "10hs", "15:30", "a la tarde", "3pm"."""
    folded = fold(text)
    return bool(_CLOCK.search(folded) or set(words(text)) & _TIME_WORDS)


def has_digits(text: str, at_least: int = 1) -> bool:
    return sum(ch.isdigit() for ch in text) >= at_least


def job_reference(text: str) -> bool:
    """A job named by its number ("#12", "el 12", "trabajo 12")."""
    return bool(_ID.search(text) or re.search(r"\b\d{1,6}\b", text))


# A bare yes or no to an offer ("¿querés que te pase con una persona?"): the whole reply, its
# courtesy aside. Phrases of more than one word are joined with "_" before the words are read.
_AGREE = word_set(
    """
    si sii siii sip sep dale ok okay okey oka bueno claro obvio perfecto listo joya genial de_una
    por_favor porfa porfavor pasame paseme pasamela hacelo quiero me_parece_bien esta_bien
    yes yeah yep yup sure please ok_please go_ahead do_it right alright all_right fine absolutely
    of_course i_would yes_please
    """
)
_DECLINE = word_set("no nop nope nah nel not_now no_thanks no_gracias")
_COURTESY = word_set(
    """
    gracias muchas mil che bueno igual ahora nomas entonces mejor hace_falta esta_bien deja
    thanks thank you it_s ok okay fine right now then
    """
)
_PHRASES = re.compile(
    r"\b(de una|por favor|me parece bien|esta bien|hace falta|go ahead|do it|all right|"
    r"of course|i would|yes please|ok please|not now|no thanks|no gracias|it s)\b"
)


def _answer_words(text: str) -> list[str]:
    whole = _whole(text).replace("'", " ")
    return _PHRASES.sub(lambda m: m.group(0).replace(" ", "_"), whole).split()


def agrees(text: str) -> bool:
    """The whole reply says yes and nothing else: "sí", "dale", "sí, por favor", "ok, pasame",
    "yes please" — not "sí pero el lunes", not "no"."""
    tokens = _answer_words(text)
    if not tokens:  # a thumbs-up alone, in any skin tone
        return "\U0001f44d" in text and not re.sub(r"[\U0001f44d\U0001f3fb-\U0001f3ff\s]", "", text)
    return (
        bool(tokens)
        and tokens[0] in _AGREE
        and all(token in _AGREE or token in _COURTESY for token in tokens)
        and not any(token in _DECLINE for token in tokens)
    )


def declines(text: str) -> bool:
    """The whole reply says no and nothing else: "no", "no, gracias", "nah", "not now"."""
    tokens = _answer_words(text)
    return (
        bool(tokens)
        and tokens[0] in _DECLINE
        and all(token in _DECLINE or token in _COURTESY for token in tokens)
    )
