"""The bundled encoder's vectors, kept by text (nlu/encoder.py), and the scope model trained on
them (nlu/scope_model.py). The encoder runs for real: its model ships in the wheel."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command

from nlu import Router, encoder
from nlu.scope_model import ScopeModel, train_scope
from nlu.values import Context


@pytest.fixture
def store(tmp_path: Path) -> object:
    path = tmp_path / "encoder.npz"
    encoder.use_store(path)
    yield path
    encoder.use_store(None)


def test_a_shouted_message_is_read_in_lower_case_and_spaces_do_not_count() -> None:
    assert encoder.prepared("ES LA TERCERA VEZ!!! pásenlo") == "es la tercera vez!!! pásenlo"
    assert encoder.prepared("Agendale a  Pérez\n el jueves") == "Agendale a Pérez el jueves"
    assert encoder.key_of("LLAMÁ A PÉREZ") == encoder.key_of("llamá a pérez")


def test_vectors_are_unit_rows_kept_in_the_store_and_read_back(store: Path) -> None:
    encoder.embed(["un mensaje que se lee una vez"])  # a message read: never stored
    assert not store.exists()
    texts = ["hola, ¿me mandan un técnico el jueves?", "who won the game last night?"]
    vectors = encoder.embed(texts, keep=True)
    assert vectors.shape == (2, encoder.DIM)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)
    assert store.exists()  # computed training vectors are stored for other processes

    encoder.use_store(None)
    encoder.use_store(store)  # another process reads the file instead of embedding
    again = encoder.embed(list(reversed(texts)))
    assert np.allclose(again[::-1], vectors, atol=1e-2)  # float16 on disk


def test_an_unreadable_store_is_recomputed(store: Path) -> None:
    store.write_bytes(b"not numpy")
    encoder.use_store(None)
    encoder.use_store(store)
    assert encoder.embed(["una carga de gas"]).shape == (1, encoder.DIM)


def test_the_shipped_file_holds_the_shipped_registry_and_corpus(db: None) -> None:
    # Editing agents/data/default_agents.json or the corpus means running the command again.
    call_command("encoder_cache", "--check")


def test_the_scope_model_learns_what_is_about_something_else() -> None:
    inside = [
        "agendale una visita a Pérez el jueves", "hacele un presupuesto a Gómez por el split",
        "book a boiler repair for Monday", "who is free tomorrow afternoon?",
        "facturale el último trabajo a Ruiz", "send me the invoice for the Evans job",
    ]  # fmt: skip
    outside = [
        "¿quién ganó el partido anoche?", "pasame la receta del flan",
        "what's the weather like tomorrow", "recommend me a good movie",
        "reservá una mesa para cenar el viernes", "book a flight to Madrid",
    ]  # fmt: skip
    model = train_scope(inside + outside, [False] * len(inside) + [True] * len(outside))
    assert model is not None
    assert model.out_of_scope("¿cuánto está el dólar hoy?") > 0.5
    assert model.out_of_scope("agendame una visita para el martes") < 0.5
    assert train_scope(inside, [False] * len(inside)) is None  # one kind only: nothing learnt


def test_a_failing_encoder_leaves_the_words_reading_and_trains_no_scope_model(
    monkeypatch: pytest.MonkeyPatch, router: Router, ctx: Context
) -> None:
    """The encoder's engine or model file failing mid-turn: no opinion, never a failed turn."""
    model = ScopeModel(weights=(1.0,) * encoder.DIM, bias=50.0)  # "out of scope" for anything
    scoped = dataclasses.replace(router, scope=model)

    calls: list[list[str]] = []

    def broken(texts: list[str]) -> list[object]:
        calls.append(texts)
        raise RuntimeError("e5: cannot map the model file")

    monkeypatch.setattr(encoder, "_compute", broken)
    text = "mmm y si le ponemos algo a las 9 al de siempre"
    assert model.out_of_scope(text) is None
    assert scoped.understand(text, ctx).intents == router.understand(text, ctx).intents
    assert len(calls) == 2  # the reading asked the encoder (unsure of the words), and went on
    assert train_scope(["agendá", "receta del flan"], [False, True]) is None
