"""The generated corpus as evaluation files (`manage.py corpus`): train, dev and test JSONL in
PRODUCT.md's format, from an organisation's records and registry or from the shipped defaults."""

from __future__ import annotations

import json
from pathlib import Path

from agents.defaults import default_specs
from agents.selectors import intent_specs
from business.models import Organisation
from copilot.router_cache import corpus_records
from nlu.corpus import SPLITS, Line, Records, generate


class CorpusError(Exception):
    """A problem with the command's input that the user can fix."""


def corpus_lines(org_slug: str | None, *, seed: int = 0) -> list[Line]:
    """The organisation's corpus (its records, its registry's intents), else the shipped
    registry's with the lexicons' names: the same lines its router trains on (train split)."""
    if org_slug is None:
        agents = {name: spec.agent for name, spec in default_specs().items()}
        return generate(Records(), agents, seed=seed)
    organisation = Organisation.objects.filter(slug=org_slug).first()
    if organisation is None:
        raise CorpusError(f"no organisation with slug {org_slug!r}")
    agents = {spec.name: spec.agent for spec in intent_specs(organisation)}
    return generate(corpus_records(organisation), agents, seed=seed)


def write_splits(lines: list[Line], out: Path) -> dict[str, int]:
    """`out/train.jsonl`, `out/dev.jsonl`, `out/test.jsonl`; the number of lines in each."""
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, int] = {}
    for split in SPLITS:
        rows = [line for line in lines if line.split == split]
        with (out / f"{split}.jsonl").open("w", encoding="utf-8") as handle:
            for number, line in enumerate(rows, start=1):
                handle.write(json.dumps(line.as_case(number), ensure_ascii=False) + "\n")
        written[split] = len(rows)
    return written
