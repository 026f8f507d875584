"""The Spanish catalogue as the panel reads it: the compiled locale/es_AR/LC_MESSAGES/django.mo
holds every message of django.po (nothing fuzzy, nothing left in English), and every "what I did"
line of every tool reads in Spanish, including the ones whose templates are marked where they are
written and translated later (`ngettext_lazy` / `gettext_noop` in agents/step_lines.py)."""

from __future__ import annotations

import ast
import gettext as gettext_module
from pathlib import Path

import pytest
from django.conf import settings

from agents.registry import ToolResult
from agents.step_lines import DONE, FAILED, tool_line

LOCALE = Path(settings.BASE_DIR) / "locale" / "es_AR" / "LC_MESSAGES"

# One structured result that makes every DONE template write a line (counts of 2: the plural).
DATA = {
    "jobs": [{"id": 1}, {"id": 2}],
    "slots": [{}, {}],
    "technicians": [{}, {}],
    "customers": [{}, {}],
    "customer": {"name": "Gómez"},
    "invoices": [{}, {}],
    "total_owed": "1.000",
    "moved": [1, 2],
    "not_moved": [3, 4],
    "dry_run": False,
    "absence": {"technician": "Ana"},
    "affected_job_ids": [1, 2],
    "quote": {"number": "P-7", "total": "10.000"},
    "invoice": {"letter": "B", "number": "0001-00000007", "total": "10.000"},
    "ticket": {"id": 9, "priority": "urgent"},
    "items": [{}, {}],
    "available": [{}, {}],
    "vehicle": {"plate": "AB123CD"},
    "job": {"id": 5},
    "job_id": 5,
    "technician": {"name": "Ana"},
    "equipment": [{}, {}],
    "valid": True,
}


def _po_entries(path: Path) -> list[dict[str, str]]:
    """Each live entry of a .po file as {keyword: text, "flags": ...}; obsolete (#~) skipped."""
    entries: list[dict[str, str]] = []
    for block in path.read_text(encoding="utf-8").split("\n\n"):
        entry: dict[str, str] = {"flags": ""}
        key = ""
        for line in block.splitlines():
            if line.startswith("#,"):
                entry["flags"] += line[2:]
            elif line.startswith("#"):
                continue
            elif line.startswith('"'):
                entry[key] += ast.literal_eval(line)
            else:
                key, _, text = line.partition(" ")
                entry[key] = ast.literal_eval(text)
        if "msgid" in entry and entry["msgid"]:
            entries.append(entry)
    return entries


def test_the_catalogue_has_no_fuzzy_or_untranslated_message() -> None:
    entries = _po_entries(LOCALE / "django.po")
    assert len(entries) > 1000
    fuzzy = [e["msgid"] for e in entries if "fuzzy" in e["flags"]]
    empty = [
        e["msgid"] for e in entries if not all(v for k, v in e.items() if k.startswith("msgstr"))
    ]
    assert fuzzy == [] and empty == []


def test_the_compiled_catalogue_holds_every_message_of_the_po() -> None:
    with (LOCALE / "django.mo").open("rb") as compiled:
        catalogue = gettext_module.GNUTranslations(compiled)._catalog  # type: ignore[attr-defined]
    for entry in _po_entries(LOCALE / "django.po"):
        msgid = entry["msgid"]
        if "msgctxt" in entry:
            msgid = f"{entry['msgctxt']}\x04{msgid}"
        if "msgid_plural" in entry:
            got = [catalogue.get((msgid, n)) for n in (0, 1)]
            assert got == [entry["msgstr[0]"], entry["msgstr[1]"]], f"recompile: {msgid!r}"
        else:
            assert catalogue.get(msgid) == entry["msgstr"], f"recompile: {msgid!r}"


@pytest.mark.parametrize("tool", sorted(DONE))
def test_every_tools_line_reads_in_spanish(tool: str) -> None:
    result = ToolResult(ok=True, data=DATA, summary="")
    english, spanish = tool_line(tool, result, "en"), tool_line(tool, result, "es")
    assert english and spanish and spanish != english, tool


@pytest.mark.parametrize("tool", sorted(FAILED))
def test_every_tools_failure_reads_in_spanish(tool: str) -> None:
    result = ToolResult(ok=False, data={}, summary="", error="boom")
    english, spanish = tool_line(tool, result, "en"), tool_line(tool, result, "es")
    assert english.startswith("Could not") and spanish.startswith("No "), (tool, spanish)


def test_the_lines_marked_for_later_choose_their_plural_in_spanish() -> None:
    one = {**DATA, "items": [{}], "available": [{}], "equipment": [{}], "jobs": [{}]}
    done = ToolResult(ok=True, data=one, summary="")
    assert tool_line("price_list", done, "es") == "Leí 1 precio"
    assert tool_line("vehicles_available", done, "es") == "Encontré 1 vehículo libre"
    assert tool_line("follow_up_list", done, "es") == "1 trabajo para hacer seguimiento"
    many = ToolResult(ok=True, data=DATA, summary="")
    assert tool_line("price_list", many, "es") == "Leí 2 precios"
    assert tool_line("seasonal_targets", many, "es") == "2 clientes para la campaña de temporada"
    assert tool_line("quote_create", many, "es") == "Armé el presupuesto P-7 por $ 10.000"
    assert tool_line("quote_find", many, "en") == "Found quote P-7"
