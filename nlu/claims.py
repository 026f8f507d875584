"""Whether a text says that an action was done ("Listo, te agendé a Pérez", "The job is booked").

The llm engine checks a step's final text against what its tools did (O4): a text that claims
a write no tool performed is not shown as the answer. This reads the claim, in Spanish or
English, per clause: a question ("¿querés que lo agende?") or a negated clause ("no pude
agendarlo", "I couldn't book it") claims nothing.
"""

from __future__ import annotations

import re

from common.text import fold

_ES_DONE_VERBS = (
    "agende|reserve|programe|reprograme|cancele|anule|movi|registre|cree|cargue|genere|emiti|"
    "hice|facture|asigne|envie|mande|despache|abri|anote|actualice|modifique|cambie|di de alta|"
    "deje (?:agendad|reservad|programad|cancelad|registrad|cread|cargad|asignad)[oa]s?"
)
_ES_PARTICIPLES = (
    "agendad|reservad|programad|reprogramad|cancelad|anulad|registrad|cread|cargad|generad|"
    "emitid|facturad|asignad|enviad|despachad|abiert|actualizad|modificad|confirmad|completad|"
    "hech"
)
_EN_PARTICIPLES = (
    "booked|scheduled|rescheduled|cancell?ed|created|registered|added|issued|generated|"
    "assigned|dispatched|sent|opened|moved|updated|invoiced|filed|confirmed|completed|done"
)
# Spanish first-person preterite needs its accent ("agendé"); without it ("agende") it is also
# a subjunctive ("que lo agende"), so the accentless form counts only after "ya"/"te"/"lo"/"la".
_ES_ACCENTED = re.compile(
    r"\b(?:agendé|reservé|programé|reprogramé|cancelé|anulé|moví|registré|creé|cargué|generé|"
    r"emití|facturé|asigné|envié|mandé|despaché|abrí|anoté|actualicé|modifiqué|cambié)\b"
)
_CLAIMS = (
    re.compile(rf"\b(?:ya|te|lo|la|los|las|le|les) (?:{_ES_DONE_VERBS})\b"),
    re.compile(
        rf"\b(?:quedo|quedaron|esta|estan|fue|fueron|ha sido|han sido) (?:ya )?"
        rf"(?:{_ES_PARTICIPLES})[oa]s?\b"
    ),  # fmt: skip
    re.compile(
        r"\bse (?:agendo|reservo|programo|reprogramo|cancelo|anulo|registro|creo|genero|"
        r"emitio|facturo|asigno|envio|despacho|abrio)\b"
    ),  # fmt: skip
    re.compile(r"^(?:listo|hecho|perfecto,? (?:ya|listo))\b"),
    re.compile(rf"\bi(?:'ve| have)? (?:just |already |now )?(?:{_EN_PARTICIPLES})\b"),
    re.compile(
        rf"\b(?:is|are|has been|have been|was|were|got) (?:now |already |all )?"
        rf"(?:{_EN_PARTICIPLES})\b"
    ),  # fmt: skip
    re.compile(r"^(?:done|all set|completed|success)\b"),
)
_NEGATION = re.compile(
    r"\b(?:no|not|never|nunca|ni|sin|unable|cannot|can't|couldn't|didn't|wasn't|weren't|isn't|"
    r"aren't|hasn't|haven't|won't|todavia no|aun no|failed|fallo|error)\b|n't\b"
)
_CLAUSE = re.compile(r"[^.!?;:\n]+[.!?;:\n]?")


def claims_done(text: str) -> bool:
    """Whether some affirmative, non-question clause of `text` says an action was done."""
    for match in _CLAUSE.finditer(text):
        clause = match.group().strip()
        if not clause or clause.endswith("?") or clause.startswith("¿"):
            continue
        lowered = clause.lower().lstrip("¡!-* ")
        folded = fold(lowered)
        found = _ES_ACCENTED.search(lowered)
        start = found.start() if found else None
        if start is None:
            for pattern in _CLAIMS:
                hit = pattern.search(folded)
                if hit:
                    start = hit.start()
                    break
        if start is None:
            continue
        before = folded[:start] if found is None else fold(lowered[: found.start()])
        if not _NEGATION.search(before):
            return True
    return False
