"""Check the built documentation site (``make docs`` runs it after mkdocs): no Sphinx role
(``:func:``, ``:class:``, ``:meth:``...) and no reStructuredText ``::`` marker left as text
in any page. Exit status 1, listing each page and what it shows, if one is found.

Usage: ``python scripts/check_docs_site.py site``
"""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|exc|obj|const|ref):`")
# "::" at the end of a paragraph's text, or alone: the literal-block marker shown as text
MARKER = re.compile(r"::\s*$")
BLOCK = re.compile(r"<(pre|code|script|style)\b.*?</\1>", re.S | re.I)
PARAGRAPH = re.compile(r"<(p|li|dd|td)\b[^>]*>(.*?)</\1>", re.S | re.I)
TAG = re.compile(r"<[^>]+>")


def problems(page: str) -> list[str]:
    text = BLOCK.sub(" ", page)  # code may legitimately show anything
    found = [f"raw role {m.group(0)!r}" for m in ROLE.finditer(html.unescape(TAG.sub(" ", text)))]
    for match in PARAGRAPH.finditer(text):
        words = html.unescape(TAG.sub("", match.group(2))).strip()
        if MARKER.search(words):
            found.append(f"'::' marker in {words[-60:]!r}")
    return found


def main(argv: list[str]) -> int:
    site = Path(argv[1] if len(argv) > 1 else "site")
    pages = sorted(site.rglob("*.html"))
    if not pages:
        print(f"check_docs_site: no pages in {site}/ (build the site first)", file=sys.stderr)
        return 1
    bad = 0
    for path in pages:
        for problem in problems(path.read_text(encoding="utf-8", errors="replace")):
            print(f"{path.relative_to(site)}: {problem}", file=sys.stderr)
            bad += 1
    if bad:
        print(f"check_docs_site: {bad} raw reStructuredText markup(s) in {site}/", file=sys.stderr)
        return 1
    print(f"check_docs_site: {len(pages)} pages, no raw roles or '::' markers")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
