"""Spanish or English, from function words and orthography; cheap enough for every message."""

from __future__ import annotations

import re
from collections.abc import Iterable

from common.text import fold, fold_keep_length
from nlu.normalize import word_set, words
from nlu.values import Language

# Frequent function words and office vocabulary that exist in only one of the two languages
# (folded: no accents). Shared words ("no", "a", "me", "son", "hay" vs "hey") are left out.
_ES = word_set(
    """
    el la los las lo de del que y e en para por con sin un una unos unas es esta este esto
    estos estas son hay al se su sus mi mis tu le les nos ya muy mas pero como cuando donde
    quien cual cuanto cuantos cuanta que porque si tambien despues luego ademas hoy manana
    ayer semana lunes martes miercoles jueves viernes sabado domingo hola buenas buen dia
    dias tardes noches gracias chau adios favor necesito quiero podes puedo tengo tiene
    cliente clientes presupuesto factura turno tecnico pago cobro precio precios horario
    horarios agenda agendame agenda dale cancela cancelar pasa pasalo mandame mandar sigue
    vino todo nada algo otro otra eso esa ese aca alla ahi bueno listo perfecto genial
    saludos nuevo nueva arreglo reparacion instalacion mantenimiento gas calefon caldera
    estufa termotanque
    """
)
_EN = word_set(
    """
    the and to for of in on at is are was were be been do does did can could would should
    will what which who when where why how this that these those it its my your our their
    his her with without from please thanks thank you hi hello hey bye goodbye morning
    afternoon evening today tomorrow yesterday week next monday tuesday wednesday thursday
    friday saturday sunday customer customers client quote invoice job jobs appointment
    booking book schedule cancel move technician tech payment paid pay price prices hours
    open need want have has get send check new create add update change find show i we all
    any some there up out if not just also then plus sick vehicle truck van repair install
    maintenance heater boiler leak they them he she someone anyone right away now send
    never mind forget yes yeah sure sorry nope
    """
)
# Voseo imperatives and -ción nouns are unmistakably Spanish even without function words.
_VOSEO = re.compile(r"\b(?:\w+ciones?|\w{4,}(?:ame|ale|alo|amelo|emelo))\b")
_SPANISH_MARKS = re.compile(r"[ñ¿¡áéíóú]", re.IGNORECASE)


# A run of two or more Title-case words ("Panadería La Espiga", "Hotel Plaza Castelar"), which
# may carry short lowercase particles ("Casa de Té"): a proper name says nothing about the
# language the operator writes in.
_NAME_RUN = re.compile(
    r"\b[A-ZÁÉÍÓÚÑ][^\W\d_A-Z]*(?:\s+(?:(?:de|del|la|las|los|y|of|the)\s+)?"
    r"[A-ZÁÉÍÓÚÑ][^\W\d_A-Z]+)+"
)


def _without_names(text: str, known: Iterable[str]) -> str:
    """The text with proper names blanked out: names known in the records, then Title-case runs."""
    folded = fold_keep_length(text)
    # A cheap substring test first: the vocabulary may hold thousands of names.
    present = [fold(n).strip() for n in known if n.strip() and fold(n).strip() in folded]
    for name in sorted(present, key=len, reverse=True):
        for m in reversed(list(re.finditer(rf"\b{re.escape(name)}\b", folded))):
            text = text[: m.start()] + " " * (m.end() - m.start()) + text[m.end() :]
            folded = folded[: m.start()] + " " * (m.end() - m.start()) + folded[m.end() :]
    return _NAME_RUN.sub(lambda m: _keep_leading_word(m.group(0)), text)


def _keep_leading_word(run: str) -> str:
    """A sentence may start with a capitalised function word before a name ("Hola Juan Pérez",
    "Ask Kevin Li"): it is evidence, so it stays."""
    first, _, _rest = run.partition(" ")
    token = fold(first)
    evidence = token in _ES or token in _EN or _VOSEO.fullmatch(token)
    return first + " " if evidence else " "


def detect_language(text: str, names: Iterable[str] = ()) -> Language:
    """ "es" or "en". Ties and empty texts go to Spanish, the first market.

    Proper names are left out first ("Panadería La Espiga" in an English message, "Ernest Walker"
    in a Spanish one): `names` are the ones known in the records, and any run of Title-case words
    counts as one too.
    """
    stripped = _without_names(text, names)
    if words(stripped):
        text = stripped  # a message that is only a name is judged by the name
    tokens = words(text)
    es = sum(token in _ES for token in tokens)
    en = sum(token in _EN for token in tokens)
    es += 2 * len(_SPANISH_MARKS.findall(text))
    folded = fold(text)
    es += sum(1 for _ in _VOSEO.finditer(folded))
    return "en" if en > es else "es"
