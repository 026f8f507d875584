"""The one accent folding, and the variants its callers need."""

from __future__ import annotations

from common.text import fold, fold_keep_length, strip_accents


def test_fold_drops_case_and_accents() -> None:
    assert fold("Mañana, AGENDÁ a Pérez") == "manana, agenda a perez"


def test_fold_may_change_the_length_but_fold_keep_length_does_not() -> None:
    text = "Straße ﬁno Ñandú"
    assert fold(text) == "strasse fino nandu"
    kept = fold_keep_length(text)
    assert len(kept) == len(text) and kept == "straße ﬁno nandu"


def test_strip_accents_keeps_the_case() -> None:
    assert strip_accents("Martín Sosa, ÁNGEL") == "Martin Sosa, ANGEL"
