"""Spanish or English, from function words and orthography; cheap enough for every message."""

from __future__ import annotations

import re

from copilot.understanding.normalize import fold, word_set, words
from copilot.understanding.values import Language

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
    maintenance heater boiler leak
    """
)
_SPANISH_MARKS = re.compile(r"[ñ¿¡áéíóú]", re.IGNORECASE)


def detect_language(text: str) -> Language:
    """ "es" or "en". Ties and empty texts go to Spanish, the first market."""
    tokens = words(text)
    es = sum(token in _ES for token in tokens)
    en = sum(token in _EN for token in tokens)
    es += 2 * len(_SPANISH_MARKS.findall(text))
    # Voseo imperatives and -ción nouns are unmistakably Spanish even without function words.
    folded = fold(text)
    es += len(re.findall(r"\b(?:\w+ciones?|\w{4,}(?:ame|ale|alo|amelo|emelo))\b", folded))
    return "en" if en > es else "es"
