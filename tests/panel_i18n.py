"""The Spanish of issue 16's new strings, read from locale/es_AR/panel_answers.po as a fallback
of the compiled catalogue: tested before the integrator merges it into django.po (and after,
unchanged, since the merged catalogue answers first)."""

from __future__ import annotations

import gettext as gettext_module
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.utils.translation import trans_real

FRAGMENT = Path(settings.BASE_DIR) / "locale" / "es_AR" / "panel_answers.po"


class _Fragment(gettext_module.NullTranslations):
    """locale/es_AR/panel_answers.po, read as a fallback of the compiled catalogue: the lines'
    Spanish is tested before the integrator merges it into django.po (and after, unchanged)."""

    def __init__(self, entries: dict[str, list[str]]) -> None:
        super().__init__()
        self.entries = entries

    def gettext(self, message: str) -> str:
        return self.entries.get(message, [message])[0]

    def ngettext(self, msgid1: str, msgid2: str, n: int) -> str:
        forms = self.entries.get(msgid1)
        if forms is None:
            return msgid1 if n == 1 else msgid2
        return forms[0 if n == 1 else min(1, len(forms) - 1)]


def _unquote(line: str) -> str:
    return json.loads(line[line.index('"') :])


def read_fragment(path: Path) -> dict[str, list[str]]:
    entries: dict[str, list[str]] = {}
    for block in path.read_text(encoding="utf-8").split("\n\n"):
        lines = [x for x in block.splitlines() if x and not x.startswith("#")]
        context = next((_unquote(x) for x in lines if x.startswith("msgctxt ")), None)
        msgid = next((_unquote(x) for x in lines if x.startswith("msgid ")), "")
        forms = [_unquote(x) for x in lines if x.startswith("msgstr")]
        if msgid:
            entries[f"{context}\x04{msgid}" if context else msgid] = forms
    return entries


@pytest.fixture
def spanish_fragment() -> Iterator[None]:
    catalogue = trans_real.translation("es-ar")
    before = catalogue._fallback
    catalogue.add_fallback(_Fragment(read_fragment(FRAGMENT)))
    yield
    catalogue._fallback = before
