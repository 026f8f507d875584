"""Secrets at rest: organisations' API keys and WhatsApp credentials are stored as Fernet
tokens, never as plain text. A model names each one with an `EncryptedText` over its column.

The key is `settings.FIELD_ENCRYPTION_KEY` (a Fernet key, or any string, which is hashed into
one) or, when that is empty, derived from SECRET_KEY. Tokens made under the SECRET_KEY-derived
key stay readable after FIELD_ENCRYPTION_KEY is set, so turning it on needs no migration.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
from typing import Any, Self, overload

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings

logger = logging.getLogger(__name__)


def _fernet_key(material: str) -> bytes:
    """`material` itself when it is a Fernet key, else a key derived from it."""
    try:
        if len(base64.urlsafe_b64decode(material.encode())) == 32:
            return material.encode()
    except (binascii.Error, ValueError):
        pass
    digest = hashlib.sha256(b"capataz.field-encryption:" + material.encode()).digest()
    return base64.urlsafe_b64encode(digest)


def _fernet() -> MultiFernet:
    keys: list[bytes] = []
    configured = getattr(settings, "FIELD_ENCRYPTION_KEY", "")
    if configured:
        keys.append(_fernet_key(configured))
    keys.append(_fernet_key(settings.SECRET_KEY))
    return MultiFernet([Fernet(key) for key in keys])


def encrypt(plain: str) -> str:
    """The token stored in the database for `plain` ("" stays "")."""
    return _fernet().encrypt(plain.encode()).decode() if plain else ""


def decrypt(token: str) -> str:
    """The plain text of `token`; "" when it is empty or no longer readable (the key changed),
    which leaves the organisation without a key rather than failing every turn."""
    if not token:
        return ""
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        logger.warning("a stored secret cannot be decrypted with the current keys")
        return ""


def digest(plain: str) -> str:
    """A stable digest of a secret, to find a row again by it (the token changes each time)."""
    return hashlib.sha256(plain.strip().encode()).hexdigest() if plain.strip() else ""


class EncryptedText:
    """A secret's plain text on a model, kept encrypted in a text column of its own:
    `api_key = EncryptedText("api_key_encrypted")`. Reading decrypts ("" when unreadable);
    assigning strips and encrypts, and with `digest_column` also stores the digest there.

    A descriptor over the existing column rather than a field class, so the schema (and the
    migrations) stay as they were and the admin and the forgetting sweep still see the column.
    """

    def __init__(self, column: str, *, digest_column: str = "") -> None:
        self.column = column
        self.digest_column = digest_column

    @overload
    def __get__(self, instance: None, owner: type[Any]) -> Self: ...

    @overload
    def __get__(self, instance: object, owner: type[Any]) -> str: ...

    def __get__(self, instance: object | None, owner: type[Any]) -> Self | str:
        if instance is None:
            return self
        return decrypt(getattr(instance, self.column))

    def __set__(self, instance: object, plain: str) -> None:
        setattr(instance, self.column, encrypt(plain.strip()))
        if self.digest_column:
            setattr(instance, self.digest_column, digest(plain))
