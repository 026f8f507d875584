"""Issue 16's Spanish comes from the compiled catalogue (locale/es_AR/LC_MESSAGES/django.mo):
its lines were merged into django.po, so the tests read Spanish the way the running panel does,
through `translation.override("es-ar")`, with no fallback of their own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.utils.translation import ngettext, override


@pytest.fixture
def spanish_catalogue() -> Iterator[None]:
    """Fail with the fix in the message, not with twenty English-vs-Spanish diffs, when the
    compiled catalogue lacks issue 16's lines (a .mo not recompiled after the .po changed)."""
    with override("es-ar"):
        line = ngettext("Found %(count)s job", "Found %(count)s jobs", 2) % {"count": 2}
    assert line == "Encontré 2 trabajos", (
        "locale/es_AR/LC_MESSAGES/django.mo lacks the panel's Spanish: "
        "run `manage.py compilemessages -i .venv`"
    )
    yield


# The old name, for tests written before the fragment was merged into the catalogue.
spanish_fragment = spanish_catalogue
