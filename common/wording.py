"""Words in a chosen language: the one translation system (gettext) for text that follows a
message's language rather than the interface's.

A reply is written in the language of the message it answers (an English question gets an English
answer on a Spanish screen), so the code that writes replies cannot rely on the request's active
language. It marks its sentences with `gettext_lazy` (English msgids, Spanish in
locale/es_AR/LC_MESSAGES/django.po) and renders them here, under `translation.override`:

    from django.utils.translation import gettext_lazy as _
    say(language, _("I registered %(name)s."), name=customer.name)

`language` is a message's language as the NLU names it ("es" or "en") or a Django language code.
"""

from __future__ import annotations

from django.utils import translation
from django.utils.functional import Promise

# The NLU says "es"; our Spanish catalogue is es-AR (voseo).
_DJANGO_LANGUAGE = {"es": "es-ar", "en": "en"}


def django_language(language: str) -> str:
    """The Django language code for an NLU language ("es" → "es-ar"); others pass through."""
    return _DJANGO_LANGUAGE.get(language, language or "es-ar")


def say(language: str, message: str | Promise, /, **values: object) -> str:
    """`message` in `language`, with `%(name)s` placeholders filled from `values`."""
    with translation.override(django_language(language)):
        text = str(message)
    return text % values if values else text
