"""Optional dependencies, named by the extra that installs them.

pyweb's core needs only trio and a few small packages; a database driver or the Redis client
comes with an *extra* (``pip install 'pyweb[postgresql]'``). Without it, Python's own error
is ``No module named 'asyncpg'``, which does not say what to install. :func:`require` imports
such a module or raises :class:`MissingExtra` naming the extra.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["MissingExtra", "require"]


class MissingExtra(ImportError):
    """An optional package is not installed; the message names the extra that brings it."""

    def __init__(self, module: str, extra: str, needed_for: str) -> None:
        self.extra = extra
        super().__init__(
            f"{needed_for} needs the {module} package, which is not installed: "
            f"pip install 'pyweb[{extra}]' (in a clone of pyweb: .venv/bin/pip install -e "
            f"'.[{extra}]')",
            name=module,
        )


def require(module: str, extra: str, needed_for: str) -> ModuleType:
    """Import ``module``, or raise :class:`MissingExtra` saying to install ``extra``."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module.split(".")[0] and exc.name != module:
            raise  # the module is there; something it imports is missing
        raise MissingExtra(module, extra, needed_for) from None
