"""Understanding by voice on the generated corpus's held-out families (issue 24).

    .venv/bin/python bench/voices.py [--split dev|test|both] [--json] [--show N]
    .venv/bin/python bench/voices.py --file CASES.jsonl [--file …] [--show N]

With `--file`, the labelled files (PRODUCT.md's evaluation format, a `voice:…` tag per case) are
read instead, on the demo organisation (`load_demo`: its customers, technicians and registry) at
the corpus's reference date: a way to score messages written apart from the corpus.

On a throw-away test database with the shipped registry and an organisation whose records are the
corpus lexicon's customers and technicians (so names are matched against its own records), the
organisation's router is built as production builds it (registry + the corpus's train families),
then every line of the dev and test families (nlu/corpus: splits are by family, so none of their
phrasing was trained on; tune on dev, report test) is read by the embedded engine. Per voice
(op operator, fast fast-typed, dict dictated, wa WhatsApp customer, neg hard negative, talk) and
per kind (single / multi):

- chain: the exact ordered chain; agent: the set of agents;
- entity F1 (evaluation.metrics); names: expected customer/technician found as typed (no case
  or accents);
- OOS: out-of-scope lines (only `unknown` expected) read as `unknown` alone;
- wrong writes: lines in which a write ran that the line did not ask for, after the write gate
  (bench/write_gate.py's settling of each step).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "capataz.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402
from write_gate import ran, writes_of  # noqa: E402

from agents.selectors import agents_for_org  # noqa: E402
from agents.services import agents_install_defaults  # noqa: E402
from business.models import Customer, Organisation, Technician  # noqa: E402
from common.text import fold  # noqa: E402
from copilot.router_cache import router_for, vocabulary_for  # noqa: E402
from evaluation.corpus import corpus_lines  # noqa: E402
from evaluation.metrics import Case, Prediction, case_from_json, compute_metrics  # noqa: E402
from evaluation.reading import Reader, read_case  # noqa: E402
from evaluation.services import reference_context  # noqa: E402
from nlu.corpus import lexicon  # noqa: E402
from nlu.tagger import gazetteer_of  # noqa: E402

VOICES = ("op", "fast", "dict", "wa", "neg", "talk")


@dataclass
class Scored:
    case: Case
    pred: Prediction
    wrong_write: bool
    voice: str = field(init=False)

    def __post_init__(self) -> None:
        self.voice = next((t[6:] for t in self.case.tags if t.startswith("voice:")), "?")


def _organisation() -> Organisation:
    organisation = Organisation.objects.create(name="Voices", slug="voices")
    agents_install_defaults(organisation=organisation)
    # Graciela Ibarra: issue 24's complaint is about her (bench --try).
    for name in [*lexicon.CUSTOMERS, "Graciela Ibarra"]:
        Customer.objects.create(organisation=organisation, name=name)
    for name in lexicon.TECHNICIANS:
        Technician.objects.create(organisation=organisation, name=name, zone="norte")
    return organisation


def _names(group: list[Scored]) -> tuple[int, int]:
    found = want = 0
    for s in group:
        for key in ("customer", "technician"):
            if key in s.case.expected_entities:
                want += 1
                found += fold(s.pred.entities.get(key, "")) == fold(s.case.expected_entities[key])
    return found, want


def summary(group: list[Scored], intent_agent: dict[str, str]) -> dict[str, Any]:
    metrics = compute_metrics([s.case for s in group], [s.pred for s in group], intent_agent)
    oos = [s for s in group if s.case.expected_intents == ["unknown"]]
    found, want = _names(group)
    return {
        "cases": len(group),
        "chain": round(metrics["chain_accuracy"], 3),
        "agent": round(metrics["agent_accuracy"], 3),
        "entity_f1": round(metrics["entity_f1"], 3),
        "names": f"{found}/{want}",
        "oos": f"{sum(s.pred.intents == ['unknown'] for s in oos)}/{len(oos)}",
        "wrong_writes": round(sum(s.wrong_write for s in group) / len(group), 4),
    }


def report(split: str, scored: list[Scored], intent_agent: dict[str, str]) -> dict[str, Any]:
    groups: dict[str, list[Scored]] = defaultdict(list)
    for s in scored:
        kind = "multi" if len(s.case.expected_intents) > 1 else "single"
        groups[s.voice].append(s)
        groups[f"{s.voice}/{kind}"].append(s)
    keys = ["all", *[v for v in VOICES if v in groups]]
    keys += sorted(k for k in groups if "/" in k)
    groups["all"] = scored
    return {key: summary(groups[key], intent_agent) for key in keys if groups[key]}


def _print(split: str, table: dict[str, Any]) -> None:
    if "all" not in table:  # an empty file (`--file /dev/null --try …`): nothing to score
        return
    print(f"\n{split}: {table['all']['cases']} lines")
    head = f"{'voice':<12}{'n':>5}{'chain':>7}{'agent':>7}{'entF1':>7}{'names':>9}{'oos':>8}"
    print(head + f"{'wrong w.':>10}")
    for key, row in table.items():
        print(
            f"{key:<12}{row['cases']:>5}{row['chain']:>7.3f}{row['agent']:>7.3f}"
            f"{row['entity_f1']:>7.3f}{row['names']:>9}{row['oos']:>8}{row['wrong_writes']:>10.2%}"
        )


def _demo() -> Organisation:
    from capataz.demo.load import SLUG, load_demo

    load_demo()
    return Organisation.objects.get(slug=SLUG)


def _file_cases(paths: list[str]) -> dict[str, list[dict[str, Any]]]:
    cases: dict[str, list[dict[str, Any]]] = {}
    for path in paths:
        rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
        cases[Path(path).stem] = rows
    return cases


def run(
    splits: list[str], show: int, tries: list[str], files: list[str] | None = None
) -> dict[str, Any]:
    organisation = _demo() if files else _organisation()
    lines = [] if files else corpus_lines(organisation.slug)
    started = time.perf_counter()
    router = router_for(organisation)
    print(f"router built in {time.perf_counter() - started:.1f} s (corpus, classifier, tagger)")
    writes = writes_of(organisation)
    agents = {agent.name: agent for agent in agents_for_org(organisation) if agent.enabled}
    intents = dict(router.intents)
    vocabulary = vocabulary_for(organisation)
    ctx = reference_context(organisation.timezone, lexicon.REFERENCE_DATE, vocabulary)
    reader = Reader.open(organisation, router, ctx, "embedded", None)
    for text in tries:
        understanding = router.understand(text, ctx)
        for task in understanding.tasks:
            print(f"  {text!r}: {task.intent} {task.confidence:.2f} {task.candidates[:3]}")
        print(f"    segments: {understanding.trace.get('segments')}")
        print(f"    entities: {understanding.entities.as_eval_dict()}")
        if router.tagger is not None:
            names = gazetteer_of(vocabulary.customers, vocabulary.technicians)
            spans = router.tagger.spans(text, names)
            print(f"    tagger: {[(text[a:b], label) for a, b, label in spans]}")
    tables: dict[str, Any] = {}
    named = _file_cases(files) if files else {}
    for split in list(named) or splits:
        rows = named.get(split) or [line.as_case(n) for n, line in enumerate(
            (line for line in lines if line.split == split), start=1)]  # fmt: skip
        scored = []
        for number, row in enumerate(rows, start=1):
            case = case_from_json(row)
            pred = read_case(reader, case, number)
            tasks = router.understand(case.input, ctx).tasks
            settled = (
                ran(t, agents, intents, writes, gate=True, specs=router.specs) for t in tasks
            )
            done = [i for i in settled if i]
            wrong = any(writes(i) and i not in case.expected_intents for i in done)
            scored.append(Scored(case, pred, wrong))
        tables[split] = report(split, scored, intents)
        misses = [s for s in scored if s.pred.intents != s.case.expected_intents or s.wrong_write]
        for s in scored if show else []:
            for key in ("customer", "technician"):
                want = s.case.expected_entities.get(key)
                if want and fold(s.pred.entities.get(key, "")) != fold(want):
                    got = s.pred.entities.get(key)
                    print(f"  [{s.voice}] {key} {want!r} → {got!r}: {s.case.input!r}")
        for s in misses[:show]:
            flag = " WRONG-WRITE" if s.wrong_write else ""
            chains = f"{s.case.expected_intents} → {s.pred.intents}"
            print(f"  [{s.voice}] {s.case.input!r}: {chains}{flag}")
    return tables


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--split", choices=("dev", "test", "both"), default="both")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--show", type=int, default=0, help="print up to N misread lines")
    parser.add_argument("--try", dest="tries", action="append", default=[], help="read TEXT")
    parser.add_argument("--file", dest="files", action="append", default=[], help="cases JSONL")
    args = parser.parse_args()
    splits = ["dev", "test"] if args.split == "both" else [args.split]
    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        tables = run(splits, args.show, args.tries, args.files)
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
    if args.json:
        print(json.dumps(tables))
    else:
        for split, table in tables.items():
            _print(split, table)


if __name__ == "__main__":
    main()
