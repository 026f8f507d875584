"""Whom a message is about: the organisation as a whole, or the record under discussion.

"¿Quién nos debe plata?", "Who has overdue invoices?", "¿qué vehículos tenemos libres
mañana?" ask about the whole organisation: the customer or job the conversation was about must
not narrow them. "¿Cuánto debe?" or "¿y él cuánto debe?" lean on that subject. A message points
at the subject with a pronoun or a demonstrative ("él", "ella", "este cliente", "su", "his",
"her", "this customer"); it is organisation-wide when it asks *who/which/what …* of the records
or what *we* have ("tenemos", "hay", "do we", "is there"), and points at nobody.
"""

from __future__ import annotations

import re

from common.text import fold

_POINTS = re.compile(
    r"\b(?:el|ella|ellos|ellas|su|sus|suyo|suya|le|les|lo|la\s+misma|el\s+mismo|"
    r"(?:este|esta|ese|esa|aquel|aquella)\s+(?:cliente|clienta|senor|senora|trabajo|visita|"
    r"tecnico|job|factura)|"
    r"he|she|him|his|her|hers|their|them|(?:this|that|the\s+same)\s+(?:customer|client|job|visit|"
    r"one|invoice|guy|lady))\b"
)
# "¿cuánto le debe?" keeps "le"; "el cliente", "el viernes", "la factura" are articles, not
# pronouns: only "él"/"ella" with their accent or standing alone after a preposition count.
_ARTICLE_EL = re.compile(r"\b(?:el|la)\s+\w")
_ORG_WIDE = re.compile(
    r"^(?:y\s+)?(?:quien(?:es)?|que\s+(?:clientes|vehiculos|camionetas|tecnicos|trabajos|facturas|"
    r"equipos)|cuales|cuantos\s+(?:clientes|trabajos)|who|which|what\s+(?:customers|vehicles|vans|"
    r"techs|technicians|jobs|invoices)|how\s+many)\b"
    r"|\b(?:tenemos|nos\s+deben|nos\s+debe|hay\s+(?:alguna|algun|facturas|clientes|vehiculos|"
    r"camionetas)|do\s+we|we\s+have|are\s+there|is\s+there|owes?\s+us|anyone|everyone|todos)\b"
)


def points_at_subject(text: str) -> bool:
    """The message leans on the record under discussion (a pronoun or a demonstrative)."""
    if re.search(r"\b(?:él|ella)\b", text.lower()):
        return True
    folded = fold(text)
    without_articles = _ARTICLE_EL.sub(" ", folded)
    return bool(_POINTS.search(without_articles))


def organisation_wide(text: str) -> bool:
    """It asks about the organisation's records as a whole and points at no one."""
    folded = fold(text).strip(" ¿?¡!")
    return bool(_ORG_WIDE.search(folded)) and not points_at_subject(text)


# A document already issued, pointed at: "la última", "la factura anterior", "esa factura", "la
# de ayer", "the latest one", "that invoice". A word for the work after "última" ("la última
# visita", "the last install") points at a job, which a new document may be for: not this.
_LAST = r"(?:ultim[oa]|anterior|mas\s+reciente|last|latest|previous|most\s+recent)"
_DOCUMENT = r"(?:factura|comprobante|invoice|bill)"
_ENDS = r"(?=\s*(?:$|[,.;:!?)]|que\b|de\b|del\b|emitida\b|hecha\b|one\b|you\b|we\b))"
_EXISTING = re.compile(
    rf"\b(?:(?:la|el|the)\s+(?:{_DOCUMENT}\s+)?{_LAST}(?:\s+{_DOCUMENT}\b|{_ENDS})"
    rf"|(?:esa|esta|aquella|la\s+misma|that|this|the\s+same)\s+{_DOCUMENT}\b"
    rf"|la\s+(?:{_DOCUMENT}\s+)?de\s+(?:ayer|anteayer|antes|la\s+semana\s+pasada|el\s+mes\s+pasado)\b"
    rf"|(?:yesterday|last\s+week|last\s+month)'?s\s+{_DOCUMENT}\b"
    rf"|{_LAST}\s+{_DOCUMENT}\b)"
)


def refers_to_existing(text: str) -> bool:
    """The message points at a document already issued ("mandame la factura de Graciela Ibarra,
    la última"), not at one to make: a create intent whose `existing_as` the registry sets reads
    as that intent instead (generate_invoice → payment_status)."""
    return bool(_EXISTING.search(fold(text).strip()))
