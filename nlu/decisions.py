"""A manager deciding a held action in the chat: "aprobá la #12", "rechazá la cancelación de
Bianchi porque el cliente llamó", "approve #12", "reject the Bianchi cancellation".

Only an order that *starts* with the verb is a decision ("¿quién aprobó la #12?" is a question,
not an approval). The action is named by its number or described by words that its summary must
contain; a reason may follow "porque", "ya que", "because", "since" or a colon. Reading a
decision says nothing about who may make it: the chat checks the speaker's role.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from common.text import fold, fold_keep_length

# Courtesy words an order may start with ("dale, aprobá la #12", "ok approve #12").
from nlu.normalize import word_set

_LEAD = r"(?:(?:dale|ok|okay|bueno|si|yes|che|please|por favor|porfa)[\s,.!:]+)*"
_APPROVE = (
    r"aproba(?:la|lo|le|las|los|me|r)?|apruebo|apruebe|apruebala|"
    r"autoriza(?:la|lo|r)?|autorizo|autorice|approve|authori[sz]e|accept"
)
_REJECT = (
    r"rechaza(?:la|lo|le|r)?|rechazo|rechace|denega(?:la|lo|r)?|deniego|"
    r"no (?:la |lo )?(?:apruebes|autorices)|reject|decline|deny|refuse"
)
_ORDER = re.compile(rf"^\s*{_LEAD}(?P<verb>{_APPROVE}|{_REJECT})\b(?P<rest>.*)$", re.DOTALL)
_REJECTING = re.compile(rf"^(?:{_REJECT})$")
_NUMBER = re.compile(
    r"(?:#|\b(?:n[°º]|nro\.?|numero|number|no\.)\s*|"
    r"\b(?:aprobacion|solicitud|pedido|accion|approval|request|action|la|el|the)\s+#?)(\d{1,9})\b"
)
_REASON = re.compile(
    r"\s*(?:,\s*)?(?:\bporque\b|\bya que\b|\bbecause\b|\bsince\b|\bmotivo:|\breason:|:|—| - )\s*"
)
_STOP = word_set(
    "la el los las lo le de del al a en con por para que una un uno the of a an to for on "
    "with this that it its esa ese esta este eso esto mi su sus please favor "
    "solicitud pedido accion aprobacion pendiente request approval action pending"
)


@dataclass(frozen=True)
class DecisionOrder:
    approve: bool
    approval_id: int | None  # "#12": that action
    words: tuple[str, ...]  # otherwise, words its summary must contain ("cancel", "bianchi")
    reason: str  # as the speaker wrote it (not folded)


def read_decision(text: str) -> DecisionOrder | None:
    """The decision the text orders, or None when it is not an order to approve or reject."""
    folded = fold(text)
    match = _ORDER.match(folded)
    if match is None:
        return None
    verb, rest = match.group("verb"), match.group("rest")
    approve = _REJECTING.match(verb) is None
    reason = ""
    cut = _REASON.search(rest)
    if cut is not None:
        # Folding keeps the length of plain text; the reason is taken from the original.
        offset = len(folded) - len(rest) + cut.end()
        reason = text[offset:].strip() if len(text) == len(folded) else rest[cut.end() :].strip()
        rest = rest[: cut.start()]
    number = _NUMBER.search(rest)
    approval_id = int(number.group(1)) if number is not None else None
    if number is not None:
        rest = rest[: number.start()] + " " + rest[number.end() :]
    words = tuple(
        word for word in re.findall(r"[a-z0-9ñ]+", rest) if word not in _STOP and not word.isdigit()
    )
    return DecisionOrder(approve=approve, approval_id=approval_id, words=words, reason=reason)


def summary_matches(order_words: tuple[str, ...], summary: str) -> bool:
    """Every word of the order is in the summary, by its first six letters ("cancelación"
    finds "Cancelar", "bianchi" finds "Bianchi")."""
    if not order_words:
        return False
    summary_words = re.findall(r"[a-z0-9ñ]+", fold(summary))
    candidates = [word for word in summary_words if len(word) >= 3]
    return all(
        any(c.startswith(word[:6]) or word.startswith(c[:6]) for c in candidates)
        for word in order_words
    )


_STATED_REASON = re.compile(r"\b(?:porque|ya que|debido a que|debido a|because|since|due to)\b\s*")


def stated_reason(text: str) -> str:
    """The reason a request gives for itself ("cancelá el de Bianchi porque viaja" → "viaja"),
    as written; "" when it gives none. Never the request itself."""
    folded = fold_keep_length(text)
    found = _STATED_REASON.search(folded)
    if found is None:
        return ""
    return " ".join(text[found.end() :].split())[:300].rstrip(" .")
