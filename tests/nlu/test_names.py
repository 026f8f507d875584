"""Names on file matched however they are typed (nlu/names.py): case, accents, typos, sounds."""

from __future__ import annotations

import pytest

from nlu.entities import extract_entities
from nlu.names import find_names, match_vocabulary, sound, tokenize
from nlu.values import Entities, Vocabulary
from tests.nlu.conftest import make_context

NAMES = ("Valeria Godoy", "Hugo Ocampo", "Noelia Villafañe", "Walter Saavedra", "Mirta Zalazar",
         "Graciela Ibarra", "Romina Cabral")  # fmt: skip


@pytest.mark.parametrize(
    ("typed", "name"),
    [
        ("baleria godoi llamo", "Valeria Godoy"),  # v/b and a final y typed i
        ("ugo ocampo", "Hugo Ocampo"),  # the silent h dropped
        ("noelia viyafane", "Noelia Villafañe"),  # ll/y, no ñ
        ("walter savedra", "Walter Saavedra"),  # a doubled letter single
        ("mirta salasar", "Mirta Zalazar"),  # z/s
        ("la clienta graciela ibara llamo re caliente", "Graciela Ibarra"),
        ("GRACIELA IBARRA", "Graciela Ibarra"),
    ],
)
def test_a_misspelt_full_name_is_the_one_on_file(typed: str, name: str) -> None:
    found = match_vocabulary(tokenize(typed), NAMES)
    assert found is not None and found[0] == name


@pytest.mark.parametrize(
    "typed",
    [
        "todo bien, gracias",
        "la caldera hace ruido",
        "baja la factura de gas",
        "vale, mañana a las 10",
        "ocupado todo el dia",
        "hola buenas",
    ],
)
def test_common_words_are_no_name_on_file(typed: str) -> None:
    assert match_vocabulary(tokenize(typed), NAMES) is None


def test_a_sound_alike_surname_alone_is_not_guessed() -> None:
    # A partial mention must be exact: "godoi" alone could be anyone's.
    assert match_vocabulary(tokenize("llamo godoi"), NAMES) is None
    assert match_vocabulary(tokenize("llamo godoy"), NAMES) == ("Valeria Godoy", 6)


def test_sounds_fold_spellings_together_and_keep_others_apart() -> None:
    assert sound("valeria") == sound("baleria")
    assert sound("hugo") == sound("ugo")
    assert sound("godoy") == sound("godoi")
    assert sound("zalazar") == sound("salasar")
    assert sound("ibarra") != sound("ibarbia")


@pytest.mark.parametrize(
    "text",
    [
        "se puede cambiar mi turno para el martes? soy Eduarddo Olmedo",
        "presu p/ Lorena Lezcano limpieza de split",
        "el cliente grasiela ibarra esta re caliente",
    ],
)
def test_a_misspelt_name_on_file_is_found_once_as_the_records_spell_it(text: str) -> None:
    vocabulary = Vocabulary(customers=("Eduardo Olmedo", "Lorena Lescano", "Graciela Ibarra"))
    hits = find_names(text, vocabulary)
    assert [(hit.name, hit.matched) for hit in hits] in (
        [("Eduardo Olmedo", True)], [("Lorena Lescano", True)], [("Graciela Ibarra", True)],
    )  # fmt: skip


@pytest.mark.parametrize(
    "text",
    ["Soy Rommina Cabral y aparte me pueden mandar a alguien el martes?",
     "Hola, me mudé. Soy Valeriia Godoy, hasta qué hora atienden?"],
)  # fmt: skip
def test_a_misspelt_name_on_file_wins_over_the_capitalised_words_around_it(text: str) -> None:
    """ "Soy Rommina Cabral" read as a new name of three words would hide the one on file."""
    hits = find_names(text, Vocabulary(customers=NAMES))
    assert [(hit.name, hit.matched) for hit in hits] in (
        [("Romina Cabral", True)],
        [("Valeria Godoy", True)],
    )


@pytest.mark.parametrize(
    ("text", "role", "on_file", "written"),
    [
        # The words the message wrote, spelt as on file: evaluation files name people as written.
        ("armale un presupuesto a la Panadería La Espiga por dos splits",
         "customer", "Panadería La Espiga SRL", "Panadería La Espiga"),
        ("dale la fiorino a martin mñn", "technician", "Martín Sosa", "Martín"),
        ("soy graciela ivarra, vivo en Cabildo", "customer", "Graciela Ibarra", "Graciela Ibarra"),
        ("cancel hotel plaza castelar job pls",
         "customer", "Hotel Plaza Castelar SA", "Hotel Plaza Castelar"),
        # A name's full stop, number and "&" are the name too, not where it ends.
        ("¿Cuánto nos debe en total el Consorcio Av. Santa Fe 3312?",
         "customer", "Consorcio Av. Santa Fe 3312", "Consorcio Av. Santa Fe 3312"),
        ("inundacion en el sotano d cabildo 2150 sale agua",
         "customer", "Consorcio Av. Cabildo 2150", "Cabildo 2150"),
        ("Validá el CUIT del Estudio Contable Ferreyra & Asociados, porfa",
         "customer", "Estudio Contable Ferreyra & Asociados",
         "Estudio Contable Ferreyra & Asociados"),
        ("pasá la visita del Consorcio Juramento 1875. Es urgente",
         "customer", "Consorcio Juramento 1875", "Consorcio Juramento 1875"),
    ],
)  # fmt: skip
def test_a_snapped_name_is_reported_as_written(
    text: str, role: str, on_file: str, written: str
) -> None:
    vocabulary = Vocabulary(**{f"{role}s": (on_file,)})
    entities = extract_entities(text, make_context(vocabulary), "es")
    # Handlers get the name on file; the evaluation gets it as the message wrote it.
    assert getattr(entities, role) == on_file
    assert entities.as_eval_dict()[role] == written


def test_a_name_of_its_own_keeps_how_it_was_written() -> None:
    own = Entities(customer="Graciela Ibarra")
    other = Entities(customer="Panadería La Espiga SRL", customer_written="Panadería La Espiga")
    assert own.merged_with(other).as_eval_dict()["customer"] == "Graciela Ibarra"
    assert Entities().merged_with(other).as_eval_dict()["customer"] == "Panadería La Espiga"
