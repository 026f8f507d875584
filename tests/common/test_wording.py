"""common.wording: a sentence in the message's language, whatever the screen's language is."""

from django.utils import translation
from django.utils.translation import gettext_lazy as _

from common.wording import django_language, say

ROLLED_BACK = _("Rolled back to v%(old)d (recorded as v%(new)d).")


def test_spanish_reads_the_es_ar_catalogue_with_values():
    assert say("es", ROLLED_BACK, old=2, new=5) == "Se volvió a la v2 (registrada como v5)."


def test_english_is_the_msgid_even_on_a_spanish_screen():
    with translation.override("es-ar"):
        assert say("en", ROLLED_BACK, old=2, new=5) == "Rolled back to v2 (recorded as v5)."
        assert translation.get_language() == "es-ar"


def test_spanish_on_an_english_screen_leaves_the_screen_english():
    with translation.override("en"):
        assert say("es", ROLLED_BACK, old=1, new=3).startswith("Se volvió")
        assert translation.get_language() == "en"


def test_a_sentence_without_values_keeps_a_literal_percent():
    assert say("en", "100% done") == "100% done"


def test_language_codes():
    assert django_language("es") == "es-ar"
    assert django_language("en") == "en"
    assert django_language("es-ar") == "es-ar"
    assert django_language("") == "es-ar"
