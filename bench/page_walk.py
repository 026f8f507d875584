"""Walk the panel as each role, in each language, at a phone's and a laptop's width (issue 28).

    make run                       # in another terminal (the demo organisation and its users)
    .venv/bin/python bench/page_walk.py --base http://127.0.0.1:8000 [--password capataz]

For every page reachable from the navigation (and up to `--per-shape` detail pages of each URL
shape: /jobs/<id>/, /customers/<id>/, …), signed in as `operadora`, `gerente` and `admin`, in
es-AR and en, at 390 and 1366 px wide, it counts:
  - horizontal overflow: the page wider than the window, or a visible element whose right edge
    passes the window's (outside the containers that scroll on purpose);
  - in Spanish pages, English words from a kept list and raw references (`job:258`);
  - axe-core's serious and critical violations (tests/browser/vendor/axe.min.js), at both widths.
It prints one line per finding and the totals. Debian's Chromium, driven by Playwright; nothing
is downloaded.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlparse

ROOT = Path(__file__).resolve().parent.parent
AXE = ROOT / "tests" / "browser" / "vendor" / "axe.min.js"
USERS = ("operadora", "gerente", "admin")
LANGUAGES = ("es-AR", "en")
WIDTHS = (390, 1366)
START = ("/", "/chat/", "/admin/")
SKIP = re.compile(
    r"/(logout|i18n|static|media)/|/admin/.*/(delete|history)/|\.pdf$|/pdf/|/export|\?.*download"
)
# English-only words a Spanish screen must not show (whole words, case-sensitive where they
# begin a label). Words that are Spanish too ("No", "Total", "Email", "Ticket") are not listed.
ENGLISH = re.compile(
    r"\b(Updated|Created|Organisation|Organization|Save|Delete|Search|Filter|Approve|Reject|"
    r"Pending|booked|cancelled|Customer|Customers|Technician|Vehicle|Invoice|Quote|"
    r"Schedule|Overview|Settings|Enabled|Disabled|Yes|Submit|Back|Next|Previous|Today|Week|"
    r"Sign out|Unpaid|Paid|Amount|Description|Phone|Address|held for approval|Open|Closed|"
    r"Status|Details|Name|Date|Price|Run|Runs|Accept|Dismiss|Answer|Answers|Message|Steps?|"
    r"agents?|jobs|customers|invoices|the|and|with|for|embedded|hybrid|executed|expired|failed|"
    r"routed)\b"
)
RAW = re.compile(r"\b(job|customer|invoice|quote|ticket|technician|vehicle|agent):\d+\b")
OVERFLOW_JS = """(width) => {
  const out = [];
  const page = document.documentElement.scrollWidth;
  if (page > width + 1) out.push('page ' + page);
  const scrolls = (n) => {
    for (let p = n.parentElement; p; p = p.parentElement) {
      if (/(auto|scroll)/.test(getComputedStyle(p).overflowX)) return true;
    }
    return false;
  };
  for (const n of document.querySelectorAll('body *')) {
    const r = n.getBoundingClientRect();
    if (!r.width || !r.height || r.right <= width + 1 || scrolls(n)) continue;
    if (n.closest('.visually-hidden')) continue;  // clipped to nothing: never seen
    const s = getComputedStyle(n);
    if (s.visibility === 'hidden' || s.position === 'fixed') continue;
    const name = n.id ? '#' + n.id : n.tagName.toLowerCase() + '.' + [...n.classList].join('.');
    out.push(name + ' ' + Math.round(r.right));
    if (out.length > 4) break;
  }
  return out;
}"""
HIDDEN = "script, style, [hidden], .visually-hidden, pre, code, .mono, textarea"
# Text marked as written in another language (a message, an answer, a title) is not the screen's.
TEXT_JS = f"""() => {{ const clone = document.body.cloneNode(true);
  clone.querySelectorAll('{HIDDEN}').forEach((n) => n.remove());
  clone.querySelectorAll('[lang]:not([lang^="es"])').forEach((n) => n.remove());
  return clone.innerText; }}"""
HREFS_JS = "(as) => as.map((a) => a.getAttribute('href'))"
SERIOUS = ("serious", "critical")


def main() -> int:
    from playwright.sync_api import sync_playwright

    args = _arguments()
    findings: Counter[str] = Counter()
    pages_seen = 0
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=args.chromium)
        for user in USERS:
            for language in LANGUAGES:
                context = browser.new_context(
                    locale=language, extra_http_headers={"Accept-Language": language}
                )
                page = context.new_page()
                _login(page, args.base, user, args.password)
                paths = _paths(page, args.base, args.per_shape)
                for path in paths:
                    pages_seen += 1
                    for kind, detail in _check(page, args.base, path, language):
                        findings[kind] += 1
                        print(f"{user:10} {language:5} {kind:9} {path}  {detail}")
                context.close()
        browser.close()
    print(f"\n{pages_seen} pages × {len(WIDTHS)} widths (users × languages × pages)")
    for kind in ("overflow", "english", "raw", "axe", "error"):
        print(f"{kind:9} {findings[kind]}")
    return 0


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", default="http://127.0.0.1:8000")
    parser.add_argument("--password", default="capataz")
    parser.add_argument("--per-shape", type=int, default=2)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    return parser.parse_args()


def _login(page: Any, base: str, user: str, password: str) -> None:
    page.goto(urljoin(base, "/login/"))
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", password)
    page.press("input[name=password]", "Enter")
    page.wait_for_load_state("networkidle")


def _shape(path: str) -> str:
    return re.sub(r"\d+", "<id>", path)


def _paths(page: Any, base: str, per_shape: int) -> list[str]:
    """The pages linked from the start pages' navigation and content, a few per URL shape."""
    seen: list[str] = []
    shapes: Counter[str] = Counter()
    queue = list(START)
    while queue:
        path = queue.pop(0)
        if path in seen or SKIP.search(path) or shapes[_shape(path)] >= per_shape:
            continue
        seen.append(path)
        shapes[_shape(path)] += 1
        if len(seen) > 2 and path.count("/") > 3:
            continue  # detail pages are visited, not crawled further
        try:
            page.goto(urljoin(base, path))
        except Exception:
            continue
        for href in page.eval_on_selector_all(
            "a[href]", "(as) => as.map((a) => a.getAttribute('href'))"
        ):
            target = urlparse(urljoin(base + path, href))
            if target.netloc == urlparse(base).netloc and target.path not in seen:
                queue.append(target.path)
    return seen


def _check(page: Any, base: str, path: str, language: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 844 if width < 500 else 900})
        response = page.goto(urljoin(base, path))
        if response is None or response.status >= 400:
            return [("error", str(response.status if response else "no response"))]
        page.wait_for_load_state("networkidle")
        found += [("overflow", f"{width}px {item}") for item in page.evaluate(OVERFLOW_JS, width)]
        page.add_script_tag(path=str(AXE))
        results = page.evaluate("async () => await axe.run(document)")
        found += [
            ("axe", f"{width}px {v['id']}") for v in results["violations"] if v["impact"] in SERIOUS
        ]
    if language.startswith("es"):
        text = page.evaluate(TEXT_JS)
        found += [("english", word) for word in sorted(set(ENGLISH.findall(text)))]
        found += [("raw", ref.group(0)) for ref in RAW.finditer(text)]
    return found


if __name__ == "__main__":
    sys.exit(main())
