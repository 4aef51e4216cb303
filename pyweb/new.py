"""``pyweb new NAME``: a new site that runs, with its settings and its test.

Django's ``startproject`` made the first five minutes of a project one command; this is
pyweb's. It copies the skeleton in ``pyweb/skeleton/`` to a new folder ``NAME``:

    NAME/
      README.md         how to serve it, test it and deploy it
      pyweb.toml        the settings, outside the site folder: never served
      site/             what the server serves (SMLserver's page scripts, Hop's services)
        index.py        a page script, run per request
        api.py          a service module: functions bound to URLs with typed parameters
        templates/      template pages (about.html) and the layout they share
        style.css       a static file
      tests/
        test_site.py    pytest: serves the site on a real socket and asks every URL

The copy refuses to write over anything that exists, so running it twice is harmless.
"""

from __future__ import annotations

import keyword
import os
import re
from pathlib import Path

__all__ = ["SKELETON", "create_site", "SiteExists"]

SKELETON = Path(__file__).with_name("skeleton")
"""The files a new site starts with, each ``FILE.tmpl`` (the suffix keeps linters, type
checkers and test runners from taking them for pyweb's own code); ``{{name}}`` in them
becomes the site's name."""

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


class SiteExists(FileExistsError):
    """``pyweb new`` found something at the path it would create."""


def create_site(path: str | os.PathLike[str]) -> list[Path]:
    """Copy the skeleton to a new folder ``path``; the files written, in order. Raises
    :class:`ValueError` for a name that is not a plain folder name and
    :class:`SiteExists` when ``path`` exists."""
    target = Path(path)
    name = target.name
    if not _NAME.fullmatch(name) or keyword.iskeyword(name):
        raise ValueError(
            f"a site's name is a letter followed by letters, digits, '_' or '-', got {name!r}"
        )
    if target.exists():
        raise SiteExists(f"{target} already exists; pyweb new makes a new folder")
    written = []
    for source in sorted(SKELETON.rglob("*")):
        if source.is_dir() or "__pycache__" in source.parts:
            continue
        if source.suffix != ".tmpl":
            continue
        destination = target / str(source.relative_to(SKELETON)).removesuffix(".tmpl")
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_text(source.read_text("utf-8").replace("{{name}}", name), "utf-8")
        written.append(destination)
    return written
