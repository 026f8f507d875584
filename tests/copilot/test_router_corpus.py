"""An organisation's router learns from the corpus generated from its records (nlu/corpus),
kept by fingerprint in the process and on disk (copilot/router_cache.py)."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from agents.services import agents_install_defaults
from business.models import Organisation
from copilot import router_cache
from nlu import Router
from nlu.values import Context
from tests import factories

TODAY = datetime.date(2026, 11, 18)
NOW = datetime.datetime(2026, 11, 18, 10, 0, tzinfo=ZoneInfo("America/Argentina/Buenos_Aires"))


@pytest.fixture
def corpus_on(settings: Any, tmp_path: Path) -> Path:
    settings.NLU_CORPUS = True
    settings.VAR_DIR = tmp_path
    router_cache.forget()
    return tmp_path


@pytest.fixture
def clima(db: None) -> Organisation:
    org = factories.make_org("Clima Sur", slug="clima-sur")
    agents_install_defaults(organisation=org)
    factories.make_customer(org, "Ana Sívori")
    factories.make_technician(org, "Tito Alvarado")
    return org


def _words(router: Router) -> set[str]:
    return set(router.classifier.vectorisers[1].vocabulary)


def test_the_router_learns_the_corpus_a_new_process_loads_it_and_new_nlu_code_trains_again(
    corpus_on: Path, clima: Organisation, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.NLU_CORPUS = False
    registry_only = router_cache.router_for(clima)
    router_cache.forget()
    settings.NLU_CORPUS = True

    router = router_cache.router_for(clima)

    assert router.fingerprint != registry_only.fingerprint
    assert _words(router) > _words(registry_only)
    assert router.intents == registry_only.intents  # the corpus adds no intent of its own
    assert router.tagger is not None and registry_only.tagger is None
    assert list(corpus_on.glob("nlu-routers/*.pickle"))
    _reads_what_is_out_of_scope(router, registry_only, clima)
    # Every text the scope model learnt from ships its vector: none was embedded, none stored.
    assert not (corpus_on / "nlu-routers" / "encoder.npz").exists()

    router_cache.forget()  # a new process: nothing in memory

    def no_training(*args: object, **kwargs: object) -> Router:
        raise AssertionError("trained again")

    build = router_cache.build_router
    monkeypatch.setattr(router_cache, "build_router", no_training)
    again = router_cache.router_for(clima)
    assert again.fingerprint == router.fingerprint
    assert again is not router
    assert again.tagger is not None and again.tagger.intents == router.tagger.intents

    # The file is keyed by the nlu package's code too: after an upgrade, a pickled classifier of
    # the old code (same registry, same corpus) was loaded and read with the old features.
    router_cache.forget()  # a new process, with other nlu code
    monkeypatch.setattr(router_cache, "nlu_code_version", lambda: "other-code")
    trained: list[object] = []

    def counted(*args: Any, **kwargs: Any) -> Router:
        trained.append(args)
        return build(*args, **kwargs)

    monkeypatch.setattr(router_cache, "build_router", counted)
    router_cache.router_for(clima)
    assert len(trained) == 1
    assert len(list(corpus_on.glob("nlu-routers/*.pickle"))) == 2


def _reads_what_is_out_of_scope(router: Router, registry_only: Router, org: Organisation) -> None:
    """The encoder's scope model (nlu.scope_model) overrules a write read from the words of a
    message about something else, and leaves requests of the trade alone."""
    assert router.scope is not None and registry_only.scope is None
    ctx = Context(today=TODAY, now=NOW, tz="America/Argentina/Buenos_Aires",
                  vocabulary=router_cache.vocabulary_for(org))  # fmt: skip
    outside = "how much was the electricity bill at my house last month"
    assert registry_only.understand(outside, ctx).intents != ["unknown"]  # its words: an invoice
    reading = router.understand(outside, ctx)
    assert reading.intents == ["unknown"]
    assert any(note.startswith("out of scope") for note in reading.trace["rules_applied"])
    for text, intents in [
        ("agendale a Ana Sívori una instalación de split el jueves a las 10", ["book_job"]),
        ("mañana no viene Tito Alvarado, está enfermo", ["technician_sick"]),
        ("hola, me pueden mandar a alguien el martes? se me rompió el aire", ["book_job"]),
    ]:
        assert router.understand(text, ctx).intents == intents, text


def test_an_unreadable_cache_file_means_training_again(corpus_on: Path) -> None:
    path = router_cache._cache_path("0123456789abcdef")
    path.parent.mkdir()
    path.write_bytes(b"not a router")
    assert router_cache._load("0123456789abcdef") is None
    assert router_cache._load("fedcba9876543210") is None  # no file


def test_the_corpus_uses_the_organisation_records(clima: Organisation) -> None:
    records = router_cache.corpus_records(clima)
    assert list(records.customers) == ["Ana Sívori"]
    assert list(records.technicians) == ["Tito Alvarado"]
    assert records.streets  # the customer's address


def test_without_the_setting_the_router_is_the_registry_s(
    clima: Organisation, settings: Any, tmp_path: Path
) -> None:
    settings.VAR_DIR = tmp_path
    router_cache.forget()
    router_cache.router_for(clima)
    assert not list(tmp_path.glob("nlu-routers/*"))
