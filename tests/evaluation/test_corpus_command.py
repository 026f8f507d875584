"""`manage.py corpus --out DIR [--org SLUG]` writes files `manage.py evaluate` scores."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from agents.services import agents_install_defaults
from tests import factories


def _read(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_it_writes_three_splits_without_an_organisation(tmp_path: Path) -> None:
    out = io.StringIO()
    call_command("corpus", "--out", str(tmp_path), stdout=out)
    for split in ("train", "dev", "test"):
        rows = _read(tmp_path / f"{split}.jsonl")
        assert rows and all(row["input"] and row["expected_intents"] for row in rows)
    families = {
        split: {
            t
            for row in _read(tmp_path / f"{split}.jsonl")
            for t in row["tags"]
            if str(t).startswith("family:")
        }  # fmt: skip
        for split in ("train", "dev", "test")
    }
    assert not families["train"] & families["test"]
    assert not families["dev"] & families["test"]
    assert "2026-11-18" in out.getvalue()


@pytest.mark.django_db
def test_with_an_organisation_it_uses_its_customers(tmp_path: Path) -> None:
    org = factories.make_org("Clima Sur", slug="clima-sur")
    agents_install_defaults(organisation=org)
    factories.make_customer(org, "Ana Sívori")
    call_command("corpus", "--out", str(tmp_path), "--org", "clima-sur", stdout=io.StringIO())
    text = (tmp_path / "train.jsonl").read_text(encoding="utf-8").lower()
    assert "ana s" in text


@pytest.mark.django_db
def test_an_unknown_organisation_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="no organisation"):
        call_command("corpus", "--out", str(tmp_path), "--org", "nadie", stdout=io.StringIO())
