"""One trained router per organisation, kept in this process until its examples or its intents'
specs change (agents.selectors.examples_fingerprint reads both).

Training takes a noticeable fraction of a second, a turn must not pay it, so the router is built
once and reused while the registry's example fingerprint stays the same. Reading the fingerprint
means reading every example (~6 ms), so a process keeps it for `FINGERPRINT_TTL` seconds and
drops it at once when this process saves an agent or an intent (signals in copilot/apps.py): an
admin's edit retrains the next turn here, and other processes within the TTL. Each process keeps
its own cache: nothing here assumes a single process.

Names in the records (customers, technicians) change with every new customer, so they are not
part of the trained router: `vocabulary_for` reads them, names only, and keeps them like the
fingerprint — dropped at once when this process saves or deletes a customer or a technician
(copilot/apps.py), re-read after `VOCABULARY_TTL` seconds for what other processes wrote.

With `settings.NLU_CORPUS` on (the default; the test suite turns it off but in the tests of it)
the classifier also learns from the train split of a corpus generated from the organisation's
records when its router is (re)built (nlu.corpus): a new customer does not retrain anything, a
registry edit retrains with the records of that moment. Those routers take seconds to train, so
they are kept by fingerprint (registry, specs and corpus lines), in this process and on disk
under VAR_DIR, where the other processes (daphne, the Celery worker) and the next start find them.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import pickle
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

import nlu
from agents.defaults import default_specs, load_default_agents
from agents.selectors import (
    agents_for_org,
    examples_fingerprint,
    intent_specs,
    training_examples,
)
from business.models import Address, Customer, Organisation, PriceItem, Technician
from nlu import Router, build_router, encoder
from nlu.corpus import (
    Records,
    generate,
    person_intents,
    tagged_lines,
    training_lines,
    varied_records,
)
from nlu.router import fingerprint_of
from nlu.tagger import Span
from nlu.values import Example, IntentSpec, Vocabulary, with_role

logger = logging.getLogger(__name__)

# Beyond this many names the snapping would dominate the turn; the newest records win, which are
# the ones operators talk about.
VOCABULARY_LIMIT = 5000


@dataclass(frozen=True)
class _Cached:
    fingerprint: str
    router: Router


_cache: dict[int, _Cached] = {}
# organisation id → (fingerprint, when it was read, monotonic seconds)
_fingerprints: dict[int, tuple[str, float]] = {}
FINGERPRINT_TTL = 5.0
_guard = threading.Lock()
_org_locks: dict[int, threading.Lock] = {}


def _lock_for(organisation_id: int) -> threading.Lock:
    # One lock per organisation: a slow training for one tenant never blocks the others.
    with _guard:
        return _org_locks.setdefault(organisation_id, threading.Lock())


def _train(organisation: Organisation) -> Router:
    examples = [
        Example(text=text, intent=intent, agent=agent, lang=lang)
        for text, intent, agent, lang in training_examples(organisation)
    ]
    names = list(agents_for_org(organisation).values_list("name", flat=True))
    specs = intent_specs(organisation)
    if not settings.NLU_CORPUS:
        return build_router(examples, agent_names=names, specs=specs)
    return _with_corpus(examples, names, specs, corpus_records(organisation))


# Records sampled for the corpus: enough names for variety, a bounded cost per rebuild.
CORPUS_RECORDS = 300
# fingerprint → router trained with a corpus: an A/B arm or a second organisation on the same
# registry and records reuses it (a handful at a time; the disk keeps the rest).
_with_corpus_cache: dict[str, Router] = {}
_WITH_CORPUS_KEPT = 8


def corpus_records(organisation: Organisation) -> Records:
    """The organisation's own names, streets and services, newest first, as plain lists."""

    def newest(queryset: object, field: str) -> list[str]:
        rows = queryset.filter(organisation=organisation).order_by("-pk")  # type: ignore[attr-defined]
        return [value for value in rows.values_list(field, flat=True)[:CORPUS_RECORDS] if value]

    return Records(
        customers=newest(Customer.objects, "name"),
        technicians=newest(Technician.objects.filter(active=True), "name"),
        streets=newest(Address.objects, "street"),
        services=newest(PriceItem.objects, "name"),
    )


def corpus_examples(records: Records, specs: list[IntentSpec]) -> list[Example]:
    """The train split of the organisation's corpus, for the intents its registry has."""
    agents = {spec.name: spec.agent for spec in specs}
    return [
        Example(text=text, intent=intent, agent=agents[intent], lang=lang)
        for text, intent, lang in training_lines(generate(records, agents))
    ]


def scope_lines(specs: list[IntentSpec]) -> list[tuple[str, bool]]:
    """The corpus's train split written with the lexicons' names, each line flagged when it is
    out of scope: the same texts for every organisation, so their encoder vectors ship with the
    code (nlu/data/encoder.npz) and the scope model learns every voice (customers on WhatsApp,
    fast typing, dictation) at no cost."""
    agents = {spec.name: spec.agent for spec in specs}
    outside = with_role({spec.name: spec for spec in specs}, "out_of_scope")
    if not outside:
        return []
    return [(text, intent in outside)
            for text, intent, _ in training_lines(generate(Records(), agents))]  # fmt: skip


def shipped_encoder_texts() -> list[str]:
    """What the scope model of an organisation with the shipped registry embeds."""
    specs = list(default_specs().values())
    examples = [line for agent in load_default_agents() for intent in agent["intents"]
                for key in ("examples_es", "examples_en")
                for line in intent[key].splitlines() if line.strip()]  # fmt: skip
    return list(dict.fromkeys([*examples, *(text for text, _ in scope_lines(specs))]))


def corpus_spans(
    records: Records, specs: list[IntentSpec]
) -> tuple[list[tuple[str, list[Span]]], dict[str, frozenset[str]]]:
    """The entity tagger's lines (the corpus's train split, and the same with made-up names) and
    the intents that name each kind of person."""
    agents = {spec.name: spec.agent for spec in specs}
    lines = generate(records, agents) + generate(varied_records(records), agents, seed=1)
    return tagged_lines(lines), person_intents(lines)


def _with_corpus(
    examples: list[Example], names: list[str], specs: list[IntentSpec], records: Records
) -> Router:
    corpus = corpus_examples(records, specs)
    key = fingerprint_of(examples + [Example("", "", name) for name in names], specs, corpus)
    router = _with_corpus_cache.get(key) or _load(key)
    if router is None:
        _encoder_store()
        tagged, people = corpus_spans(records, specs)
        router = build_router(
            examples, agent_names=names, specs=specs, corpus=corpus, tagged=tagged,
            gazetteer=(records.customers, records.technicians), tagged_intents=people,
            scope_lines=scope_lines(specs),
        )  # fmt: skip
        _store(key, router)
    if len(_with_corpus_cache) >= _WITH_CORPUS_KEPT:
        _with_corpus_cache.pop(next(iter(_with_corpus_cache)))
    _with_corpus_cache[key] = router
    return router


def _encoder_store() -> None:
    """The encoder's vectors of texts the shipped file lacks (an admin's new examples) are kept
    beside the routers, for the next build in any process."""
    encoder.use_store(Path(settings.VAR_DIR) / "nlu-routers" / "encoder.npz")


def _cache_path(key: str) -> Path:
    """The file of a router, named by its fingerprint and the code that trained it: a pickle
    holds the classifier and tuning that code made, so after an upgrade of `nlu/` (a new
    feature, another threshold) the old file is another router, and the next turn trains."""
    return Path(settings.VAR_DIR) / "nlu-routers" / f"{key}-{nlu_code_version()}.pickle"


@functools.cache
def nlu_code_version() -> str:
    """A digest of the nlu package's code and data files (read once per process)."""
    root = Path(nlu.__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in {".py", ".json", ".jsonl", ".txt"}:
            digest.update(path.relative_to(root).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _load(key: str) -> Router | None:
    # Our own files under VAR_DIR, written by _store; a file that does not load is retrained.
    try:
        with _cache_path(key).open("rb") as handle:
            router = pickle.load(handle)  # noqa: S301
    except FileNotFoundError:
        return None
    except Exception:  # a truncated file, a class that changed: train again
        logger.warning("router cache %s unreadable; training again", key, exc_info=True)
        return None
    return router if isinstance(router, Router) else None


def _store(key: str, router: Router) -> None:
    path = _cache_path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Written aside and renamed: a process never reads half a file another one is writing.
        handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(handle, "wb") as out:
            pickle.dump(router, out, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, path)
    except OSError:
        logger.warning("router cache %s not written", key, exc_info=True)


def registry_fingerprint(organisation: Organisation) -> str:
    """The registry's example fingerprint, read at most every FINGERPRINT_TTL seconds."""
    now = time.monotonic()
    known = _fingerprints.get(organisation.pk)
    if known is not None and now - known[1] < FINGERPRINT_TTL:
        return known[0]
    fingerprint = examples_fingerprint(organisation)
    _fingerprints[organisation.pk] = (fingerprint, now)
    return fingerprint


def registry_changed(organisation_id: int | None) -> None:
    """An agent or intent of the organisation was saved or deleted: read the fingerprint again."""
    if organisation_id is None:  # a shipped template: no organisation's router depends on it
        return
    _fingerprints.pop(organisation_id, None)


def router_for(organisation: Organisation) -> Router:
    """The organisation's router, trained from its registry; retrained when the examples change."""
    fingerprint = registry_fingerprint(organisation)
    cached = _cache.get(organisation.pk)
    if cached is not None and cached.fingerprint == fingerprint:
        return cached.router
    with _lock_for(organisation.pk):
        cached = _cache.get(organisation.pk)  # another thread may have trained it meanwhile
        if cached is not None and cached.fingerprint == fingerprint:
            return cached.router
        router = _train(organisation)
        _cache[organisation.pk] = _Cached(fingerprint, router)
        return router


# (organisation id, registry fingerprint, overrides digest) → router: the A/B tests' arms whose
# intents differ from the live registry (few at a time; a new fingerprint drops the older ones).
_arm_cache: dict[tuple[int, str, str], Router] = {}


def router_with_intents(
    organisation: Organisation, overrides: dict[str, list[dict[str, str]]]
) -> Router:
    """The organisation's router with some agents' intents and examples replaced (an A/B test
    arm's, agents/abtest.py); the plain cached router when there are none. Trained once per
    process and arm while the registry stays the same."""
    if not overrides:
        return router_for(organisation)
    fingerprint = registry_fingerprint(organisation)
    digest = hashlib.sha256(
        json.dumps(overrides, sort_keys=True, ensure_ascii=False).encode("utf-8")
    ).hexdigest()
    key = (organisation.pk, fingerprint, digest)
    router = _arm_cache.get(key)
    if router is not None:
        return router
    with _lock_for(organisation.pk):
        router = _arm_cache.get(key)
        if router is not None:
            return router
        examples = [
            Example(text=text, intent=intent, agent=agent, lang=lang)
            for text, intent, agent, lang in training_examples(organisation)
            if agent not in overrides
        ]
        for agent_name, intents in overrides.items():
            for intent in intents:
                for lang in ("es", "en"):
                    block = intent.get(f"examples_{lang}") or ""
                    examples.extend(
                        Example(text=line.strip(), intent=intent["name"], agent=agent_name,
                                lang=lang)
                        for line in block.splitlines()
                        if line.strip()
                    )  # fmt: skip
        names = list(agents_for_org(organisation).values_list("name", flat=True))
        router = build_router(examples, agent_names=names, specs=intent_specs(organisation))
        for stale in [k for k in _arm_cache if k[0] == organisation.pk and k[1] != fingerprint]:
            _arm_cache.pop(stale, None)
        _arm_cache[key] = router
        return router


def forget(organisation_id: int | None = None) -> None:
    """Drop one organisation's router (or all): tests and the admin's "retrain now"."""
    with _guard:
        if organisation_id is None:
            _cache.clear()
            _vocabularies.clear()
            _with_corpus_cache.clear()
            _fingerprints.clear()
            _arm_cache.clear()
        else:
            _cache.pop(organisation_id, None)
            _vocabularies.pop(organisation_id, None)
            _fingerprints.pop(organisation_id, None)
            for key in [k for k in _arm_cache if k[0] == organisation_id]:
                _arm_cache.pop(key, None)


# organisation id → (its names, when they were read, monotonic seconds)
_vocabularies: dict[int, tuple[Vocabulary, float]] = {}
VOCABULARY_TTL = 5.0


def vocabulary_for(organisation: Organisation) -> Vocabulary:
    """Customer and active technician names of the organisation: two name-only queries, at most
    once per `VOCABULARY_TTL` seconds or after this process changed one of those records."""
    kept = _vocabularies.get(organisation.pk)
    if kept is not None and time.monotonic() - kept[1] < VOCABULARY_TTL:
        return kept[0]
    vocabulary = _read_vocabulary(organisation)
    _vocabularies[organisation.pk] = (vocabulary, time.monotonic())
    return vocabulary


def names_changed(organisation_id: int | None) -> None:
    """A customer or technician of the organisation (None: of any) was saved or deleted here."""
    if organisation_id is None:
        _vocabularies.clear()
    else:
        _vocabularies.pop(organisation_id, None)


def _read_vocabulary(organisation: Organisation) -> Vocabulary:
    customers = (
        Customer.objects.filter(organisation=organisation)
        .order_by("-pk")
        .values_list("name", flat=True)[:VOCABULARY_LIMIT]
    )
    technicians = Technician.objects.filter(organisation=organisation, active=True).values_list(
        "name", flat=True
    )
    return Vocabulary(customers=tuple(customers), technicians=tuple(technicians))
