"""Secrets at rest: organisations' API keys are stored as Fernet tokens, never as plain text.

The key is `settings.FIELD_ENCRYPTION_KEY` (a Fernet key, or any string, which is hashed into
one) or, when that is empty, derived from SECRET_KEY. Tokens made under the SECRET_KEY-derived
key stay readable after FIELD_ENCRYPTION_KEY is set, so turning it on needs no migration.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging

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
