"""What the WhatsApp channel itself says to a customer (in their language): messages it cannot
read, media received, kept, refused or read."""

from __future__ import annotations

from copilot.orchestration.replies import t


def cannot_read(language: str) -> str:
    """The one line (a day, per conversation) answering a WhatsApp message the channel cannot
    read: a video, a sticker, a location, contacts, an order (whatsapp/webhook.py)."""
    return t(
        language,
        es="Por ahora puedo leer texto, fotos, audios y documentos, pero no esto: ¿me escribís "
        "lo que necesitás?",
        en="For now I can read text, photos, voice notes and documents, but not this: could you "
        "write me what you need?",
    )


def received(kind: str, language: str) -> str:
    return t(language, es=f"[{kind} recibido por WhatsApp]", en=f"[{kind} received on WhatsApp]")


# --- events about the conversation (issue 27.1): notes for the panel, never sent ----------------


def number_changed(old: str, new: str, language: str) -> str:
    return t(language, es=f"El cliente cambió su número de WhatsApp de +{old} a +{new}: las "
             "respuestas van al número nuevo.",
             en=f"The customer changed their WhatsApp number from +{old} to +{new}: replies go "
             "to the new number.")  # fmt: skip


def identity_changed(language: str) -> str:
    return t(language, es="WhatsApp avisa que cambió la identidad del cliente (reinstaló WhatsApp "
             "o cambió de teléfono).",
             en="WhatsApp says the customer's identity changed (WhatsApp reinstalled or a new "
             "phone).")  # fmt: skip


def edited_unseen(language: str) -> str:
    return t(
        language,
        es="El cliente editó un mensaje; WhatsApp no manda el texto nuevo.",
        en="The customer edited a message; WhatsApp does not send the new text.",
    )


def deleted_unseen(language: str) -> str:
    return t(language, es="El cliente borró un mensaje.", en="The customer deleted a message.")


def calls_answered(accepted: bool, language: str) -> str:
    if accepted:
        return t(language, es="El cliente aceptó que lo llamemos por WhatsApp.",
                 en="The customer agreed to be called on WhatsApp.")  # fmt: skip
    return t(language, es="El cliente no aceptó que lo llamemos por WhatsApp.",
             en="The customer declined to be called on WhatsApp.")  # fmt: skip


# --- WhatsApp media (issue 14.5) ----------------------------------------------------------------

_MEDIA_NAMES = {  # kind: (es, en)
    "image": ("foto", "photo"),
    "audio": ("audio", "voice note"),
    "document": ("documento", "document"),
}


def _media_name(kind: str, language: str) -> str:
    es, en = _MEDIA_NAMES.get(kind, (kind, kind))
    return t(language, es=es, en=en)


def media_received(kind: str, language: str, caption: str = "") -> str:
    """The panel's line for a photo, voice note or document a customer sent."""
    name = _media_name(kind, language)
    gender = "a" if kind == "image" else "o"
    line = t(
        language, es=f"[{name} recibid{gender} por WhatsApp]", en=f"[{name} received on WhatsApp]"
    )
    return f"{line} {caption}".strip()


def media_ask_text(kind: str, language: str) -> str:
    """Stored, not read (the embedded engine, or a provider that cannot read it)."""
    if kind == "image":
        return t(language,
                 es="Recibí tu foto y la guardé, pero todavía no puedo leer fotos: ¿me escribís "
                    "la marca, el modelo y qué falla?",
                 en="I got your photo and kept it, but I cannot read photos yet: could you write "
                    "me the brand, the model and what is wrong?")  # fmt: skip
    if kind == "audio":
        return t(language,
                 es="Recibí tu audio y lo guardé, pero todavía no puedo escuchar audios: ¿me lo "
                    "escribís, por favor?",
                 en="I got your voice note and kept it, but I cannot listen to voice notes yet: "
                    "could you write it to me, please?")  # fmt: skip
    return t(language,
             es="Recibí tu documento y lo guardé: ¿me contás por escrito qué necesitás?",
             en="I got your document and kept it: could you tell me in writing what you "
                "need?")  # fmt: skip


def media_kept(kind: str, language: str) -> str:
    """Stored, not read, and the customer wrote a caption (a turn answers it)."""
    if kind == "image":
        return t(language, es="Recibí tu foto y la guardé (todavía no puedo leer fotos).",
                 en="I got your photo and kept it (I cannot read photos yet).")  # fmt: skip
    return t(language, es="Recibí tu documento y lo guardé.", en="I got your document and kept it.")


def media_unread(kind: str, language: str) -> str:
    """Stored, but the model could not read it."""
    if kind == "audio":
        return t(language,
                 es="Guardé tu audio, pero no pude entenderlo: ¿me lo escribís, por favor?",
                 en="I kept your voice note, but I could not make it out: could you write it to "
                    "me, please?")  # fmt: skip
    return t(language,
             es="Guardé tu foto, pero no pude leerla: ¿me escribís la marca, el modelo y qué "
                "falla?",
             en="I kept your photo, but I could not read it: could you write me the brand, the "
                "model and what is wrong?")  # fmt: skip


def media_too_large(kind: str, limit_bytes: int, language: str) -> str:
    name = _media_name(kind, language)
    if limit_bytes >= 1024 * 1024:
        size = f"{limit_bytes / (1024 * 1024):g} MB"
    else:
        size = f"{max(1, round(limit_bytes / 1024))} KB"
    return t(language,
             es=f"No pude recibir tu {name}: pesa más de {size}, el máximo que acepto. ¿Me mandás "
                "uno más liviano o me lo escribís?",
             en=f"I could not take your {name}: it is larger than {size}, the most I accept. "
                "Could you send a smaller one or write it to me?")  # fmt: skip


def media_wrong_type(kind: str, mime_type: str, accepted: list[str], language: str) -> str:
    name = _media_name(kind, language)
    kinds = ", ".join(item.split("/")[-1].upper() for item in accepted)
    what = mime_type or t(language, es="desconocido", en="unknown")
    return t(language,
             es=f"No pude recibir tu {name}: es de un tipo que no acepto ({what}). Mandámelo como "
                f"{kinds}, o escribime qué necesitás.",
             en=f"I could not take your {name}: it is of a type I do not accept ({what}). Send it "
                f"as {kinds}, or write me what you need.")  # fmt: skip


def media_unavailable(kind: str, language: str) -> str:
    name = _media_name(kind, language)
    return t(language,
             es=f"No pude descargar tu {name} de WhatsApp: ¿me lo mandás de nuevo o me lo "
                "escribís?",
             en=f"I could not download your {name} from WhatsApp: could you send it again or "
                "write it to me?")  # fmt: skip


def photo_read(
    reading: dict[str, str], language: str, *, equipment: str = "", job: int | None = None
) -> str:
    """What a photo showed, and where it was noted."""
    labels = {
        "kind": t(language, es="equipo", en="equipment"),
        "brand": t(language, es="marca", en="brand"),
        "model": t(language, es="modelo", en="model"),
        "capacity": t(language, es="capacidad", en="capacity"),
        "symptom": t(language, es="falla", en="fault"),
    }
    parts = [f"{labels[key]}: {reading[key]}" for key in labels if reading.get(key)]
    text = t(language, es="Leí tu foto — ", en="I read your photo — ") + "; ".join(parts) + "."
    if equipment and job:
        text += t(language, es=f" Lo anoté en tu equipo ({equipment}) y en el trabajo #{job}.",
                  en=f" I noted it on your equipment ({equipment}) and on job #{job}.")  # fmt: skip
    elif equipment:
        text += t(language, es=f" Lo anoté en tu equipo ({equipment}).",
                  en=f" I noted it on your equipment ({equipment}).")  # fmt: skip
    elif job:
        text += t(language, es=f" Lo anoté en el trabajo #{job}.", en=f" I noted it on job #{job}.")
    text += t(language, es=" Si algo no está bien, escribime la corrección.",
              en=" If anything is wrong, write me the correction.")  # fmt: skip
    return text
