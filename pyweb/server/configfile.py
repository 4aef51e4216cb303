"""The configuration file: ``pyweb.toml``, every flag of ``pyweb serve`` in one place.

Marlow's server (§6) reads its settings from a file and reads it again on SIGHUP, so an
operator changes a timeout without a restart. pyweb keeps one rule that makes the file
easy to learn: **a key is a flag of** ``pyweb serve`` **spelled with underscores**::

    # pyweb.toml
    host = "0.0.0.0"
    port = 8080
    scheduler = "pool"
    keepalive_timeout = 2.5
    access_log = "logs/access.log"

Because the keys *are* the flags, both come from one table, the
:class:`~pyweb.server.config.ServerConfig` fields marked with ``setting(...)``: the file is
checked with the same readers as the command line (each setting's ``parse`` and choices),
and "flags override the file" is just argparse defaults: the file's values become the
parser's defaults, and a flag given on the command line wins over its default.

A bad file is refused with its name, the line and the reason, the way a compiler reports
an error; on SIGHUP a bad file is refused and the old settings stay (see
``docs/production.md``).
"""

from __future__ import annotations

import difflib
import re
import tomllib
from pathlib import Path
from typing import Any

from .config import Setting, settings

__all__ = ["ConfigFileError", "CONFIG_FILE_NAME", "find_config_file", "read_config_file"]

CONFIG_FILE_NAME = "pyweb.toml"
"""The file looked for in the site directory when ``--config`` is not given."""

SECTIONS_READ_ELSEWHERE = ("schedule",)
"""Tables of the file that are not settings: ``[[schedule]]`` (pyweb.jobs.schedule_file)."""


class ConfigFileError(ValueError):
    """A configuration file that cannot be used: ``path:line: reason``."""

    def __init__(self, path: str, line: int | None, reason: str) -> None:
        self.path = path
        self.line = line
        self.reason = reason
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: {reason}")


def find_config_file(site_dir: str, explicit: str | None) -> str | None:
    """The file to read: ``--config PATH`` if given (it must exist), else
    ``SITE/pyweb.toml`` if it exists, else none."""
    if explicit is not None:
        if not Path(explicit).is_file():
            raise ConfigFileError(explicit, None, "no such configuration file")
        return explicit
    candidate = Path(site_dir) / CONFIG_FILE_NAME
    return str(candidate) if candidate.is_file() else None


def _line_of(text: str, key: str) -> int | None:
    """The line where ``key = ...`` or ``[key]`` is written (tomllib keeps no positions)."""
    name = rf"[\"']?{re.escape(key)}[\"']?"
    pattern = re.compile(rf"^\s*(?:{name}\s*=|\[\s*{name}\s*[\].])")
    for number, line in enumerate(text.splitlines(), start=1):
        if pattern.match(line):
            return number
    return None


def _file_settings() -> dict[str, Setting]:
    """The settings a file may hold, by key (``keepalive_timeout``...)."""
    return {f.name: how for f, how in settings() if how.in_file}


def _convert(name: str, how: Setting, value: Any) -> Any:
    """Check ``value`` the way the command line checks the flag; raise ValueError."""
    flag = "--" + name.replace("_", "-")
    if how.switch:
        if not isinstance(value, bool):
            raise ValueError(f"{flag} is true or false, not {value!r}")
        return value
    if isinstance(value, list) and how.parse is not None and how.parse.__name__ == "text_list":
        if not all(isinstance(item, str) for item in value):
            raise ValueError(f"{flag} takes a list of strings, not {value!r}")
        value = ",".join(value)  # the list settings read "a, b" (their flag's spelling)
    if isinstance(value, dict | list):
        raise ValueError(f"{flag} takes one value, not {type(value).__name__} {value!r}")
    if isinstance(value, bool):
        # TOML's true would pass int() as 1: a boolean where a number goes is a mistake.
        raise ValueError(f"{flag} takes a value, not {str(value).lower()}")
    converted: Any = value
    if how.parse is not None:
        try:
            converted = how.parse(str(value))  # the flag's own reader: same checks, same words
        except ValueError as exc:
            raise ValueError(f"{flag}: {exc}") from None
    elif not isinstance(value, str):
        raise ValueError(f"{flag} takes text, not {value!r}")
    if how.choices is not None and converted not in how.choices:
        raise ValueError(f"{flag}: {value!r} is not one of {', '.join(map(str, how.choices))}")
    return converted


def read_config_file(path: str, parser: object = None) -> dict[str, Any]:
    """Read and check ``path`` against the settings of
    :class:`~pyweb.server.config.ServerConfig` (``parser``, the ``serve`` parser these
    settings made, is accepted and not needed).

    Returns ``{name: value}`` ready for ``parser.set_defaults(**values)``. Raises
    :class:`ConfigFileError` naming the line for a syntax error, an unknown key (with the
    nearest known one), or a value the flag would refuse.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigFileError(path, None, f"cannot read it: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        found = re.search(r"\(at line (\d+), column \d+\)", message)
        if found:
            line: int | None = int(found.group(1))
        elif "(at end of document)" in message:
            line = max(1, len(text.splitlines()))
        else:
            line = None
        reason = re.sub(r"\s*\((at line \d+, column \d+|at end of document)\)", "", message)
        raise ConfigFileError(path, line, f"not valid TOML: {reason}") from None
    options = _file_settings()
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key in SECTIONS_READ_ELSEWHERE:
            continue
        dest = key.replace("-", "_")
        how = options.get(dest)
        if how is None:
            near = difflib.get_close_matches(dest, list(options), n=1)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            if isinstance(value, dict):
                reason = f"unknown section [{key}]: settings are top-level keys{hint}"
            else:
                reason = f"unknown setting {key!r}{hint}"
            raise ConfigFileError(path, _line_of(text, key), reason)
        try:
            values[dest] = _convert(dest, how, value)
        except ValueError as exc:
            raise ConfigFileError(path, _line_of(text, key), str(exc)) from None
    return values
