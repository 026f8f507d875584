"""No icon of the panel needs an emoji font (issue 28): the screens draw their marks with
characters the common system fonts have (DejaVu, Liberation, Noto Sans) or with inline SVG. A
headless Chromium on a server, or an office PC without a colour-emoji font, showed the pause
mark of a step held for approval (U+23F8) as an empty box."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Pictographs, emoji and the media-control marks: found in colour-emoji fonts only.
EMOJI = re.compile("[\U0001f000-\U0001faff\u23e9-\u23fa\u2b50\u2b55\ufe0f]")
SHOWN = [
    *sorted((ROOT / "templates").rglob("*.html")),
    *sorted((ROOT / "static" / "css").glob("*.css")),
    *sorted((ROOT / "static" / "js").glob("*.js")),
]


def test_no_mark_on_screen_needs_an_emoji_font() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}: {match.group()!r}"
        for path in SHOWN
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for match in EMOJI.finditer(line)
    ]
    assert SHOWN and found == []


def test_the_check_sees_an_emoji() -> None:
    assert EMOJI.search("nota de voz 🎤") and EMOJI.search("en espera ⏸")
    assert not EMOJI.search("✓ ✕ ⚠ ⚑ ‖ … ↷ •")
