"""What the WhatsApp channel itself says to a customer (in their language): messages it cannot
read, media received, kept, refused or read."""

from __future__ import annotations

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from common.wording import say


def cannot_read(language: str) -> str:
    """The one line (a day, per conversation) answering a WhatsApp message the channel cannot
    read: a video, a sticker, a location, an order with no product (whatsapp/webhook.py)."""
    return say(
        language,
        _(
            "For now I can read text, photos, voice notes and documents, but not this: could you "
            "write me what you need?"
        ),
    )


def received(kind: str, language: str) -> str:
    return say(language, _("[%(kind)s received on WhatsApp]"), kind=kind)


def flow_answered(fields: tuple[tuple[str, str | bool], ...], language: str) -> str:
    """A flow's answer as the customer's message: one "field: value" line per answered field
    (a checkbox "yes" or "no")."""
    yes, no = pgettext_lazy("a flow's checkbox", "yes"), pgettext_lazy("a flow's checkbox", "no")
    return "\n".join(
        f"{name}: {say(language, yes if value else no) if isinstance(value, bool) else value}"
        for name, value in fields
    )


# --- events about the conversation (issue 27.1): notes for the panel, never sent ----------------


def number_changed(old: str, new: str, language: str) -> str:
    return say(language, _("The customer changed their WhatsApp number from +%(old)s to +%(new)s: "
                           "replies go to the new number."), old=old, new=new)  # fmt: skip


def identity_changed(language: str) -> str:
    return say(language, _("WhatsApp says the customer's identity changed (WhatsApp reinstalled "
                           "or a new phone)."))  # fmt: skip


def edited_unseen(language: str) -> str:
    return say(language, _("The customer edited a message; WhatsApp does not send the new text."))


def deleted_unseen(language: str) -> str:
    return say(language, _("The customer deleted a message."))


def calls_answered(accepted: bool, language: str) -> str:
    if accepted:
        return say(language, _("The customer agreed to be called on WhatsApp."))
    return say(language, _("The customer declined to be called on WhatsApp."))


# --- WhatsApp media (issue 14.5) ----------------------------------------------------------------

_MEDIA_NAMES: dict[str, Promise] = {
    "image": pgettext_lazy("WhatsApp media", "photo"),
    "audio": pgettext_lazy("WhatsApp media", "voice note"),
    "document": pgettext_lazy("WhatsApp media", "document"),
}

_MEDIA_RECEIVED: dict[str, Promise] = {  # the panel's line, by kind (an unknown kind: `received`)
    "image": _("[photo received on WhatsApp]"),
    "audio": _("[voice note received on WhatsApp]"),
    "document": _("[document received on WhatsApp]"),
}


def _media_name(kind: str, language: str) -> str:
    name = _MEDIA_NAMES.get(kind)
    return say(language, name) if name is not None else kind


def media_received(kind: str, language: str, caption: str = "") -> str:
    """The panel's line for a photo, voice note or document a customer sent."""
    line = _MEDIA_RECEIVED.get(kind)
    said = say(language, line) if line is not None else received(kind, language)
    return f"{said} {caption}".strip()


def media_ask_text(kind: str, language: str) -> str:
    """Stored, not read (the embedded engine, or a provider that cannot read it)."""
    if kind == "image":
        return say(language, _("I got your photo and kept it, but I cannot read photos yet: could "
                               "you write me the brand, the model and what is wrong?"))  # fmt: skip
    if kind == "audio":
        return say(language, _("I got your voice note and kept it, but I cannot listen to voice "
                               "notes yet: could you write it to me, please?"))  # fmt: skip
    return say(language, _("I got your document and kept it: could you tell me in writing what "
                           "you need?"))  # fmt: skip


def media_kept(kind: str, language: str) -> str:
    """Stored, not read, and the customer wrote a caption (a turn answers it)."""
    if kind == "image":
        return say(language, _("I got your photo and kept it (I cannot read photos yet)."))
    return say(language, _("I got your document and kept it."))


def media_unread(kind: str, language: str) -> str:
    """Stored, but the model could not read it."""
    if kind == "audio":
        return say(language, _("I kept your voice note, but I could not make it out: could you "
                               "write it to me, please?"))  # fmt: skip
    return say(language, _("I kept your photo, but I could not read it: could you write me the "
                           "brand, the model and what is wrong?"))  # fmt: skip


def media_too_large(kind: str, limit_bytes: int, language: str) -> str:
    name = _media_name(kind, language)
    if limit_bytes >= 1024 * 1024:
        size = f"{limit_bytes / (1024 * 1024):g} MB"
    else:
        size = f"{max(1, round(limit_bytes / 1024))} KB"
    return say(language, _("I could not take your %(name)s: it is larger than %(size)s, the most "
                           "I accept. Could you send a smaller one or write it to me?"),
               name=name, size=size)  # fmt: skip


def media_wrong_type(kind: str, mime_type: str, accepted: list[str], language: str) -> str:
    name = _media_name(kind, language)
    kinds = ", ".join(item.split("/")[-1].upper() for item in accepted)
    what = mime_type or say(language, pgettext_lazy("a file's type", "unknown"))
    return say(language, _("I could not take your %(name)s: it is of a type I do not accept "
                           "(%(what)s). Send it as %(kinds)s, or write me what you need."),
               name=name, what=what, kinds=kinds)  # fmt: skip


def media_unavailable(kind: str, language: str) -> str:
    name = _media_name(kind, language)
    return say(language, _("I could not download your %(name)s from WhatsApp: could you send it "
                           "again or write it to me?"), name=name)  # fmt: skip


_PHOTO_LABELS: dict[str, Promise] = {  # what a photo showed, in the order the reply says it
    "kind": pgettext_lazy("what a photo showed", "equipment"),
    "brand": pgettext_lazy("what a photo showed", "brand"),
    "model": pgettext_lazy("what a photo showed", "model"),
    "capacity": pgettext_lazy("what a photo showed", "capacity"),
    "symptom": pgettext_lazy("what a photo showed", "fault"),
}


def photo_read(
    reading: dict[str, str], language: str, *, equipment: str = "", job: int | None = None
) -> str:
    """What a photo showed, and where it was noted."""
    parts = [
        f"{say(language, label)}: {reading[key]}"
        for key, label in _PHOTO_LABELS.items()
        if reading.get(key)
    ]
    lines = [say(language, _("I read your photo — %(parts)s."), parts="; ".join(parts))]
    if equipment and job:
        lines.append(say(language, _("I noted it on your equipment (%(equipment)s) and on job "
                                     "#%(job)s."), equipment=equipment, job=job))  # fmt: skip
    elif equipment:
        lines.append(say(language, _("I noted it on your equipment (%(equipment)s)."),
                         equipment=equipment))  # fmt: skip
    elif job:
        lines.append(say(language, _("I noted it on job #%(job)s."), job=job))
    lines.append(say(language, _("If anything is wrong, write me the correction.")))
    return " ".join(lines)
