"""A pytest plugin for ``make test-compiled``: the tests run against build/mypyc's compiled
modules, and fail at once if those are not the ones imported.

pytest puts the project's root first on ``sys.path`` when it collects ``tests/`` (a
package), which would import the plain modules; this plugin is loaded before that
(``-p compiled_plugin``, with ``PYTHONPATH=build/mypyc:scripts``), so ``pyweb`` is already
the compiled copy by then.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_compiled import BUILD, COMPILED  # noqa: E402 - the list the build compiled


def _check() -> None:
    for path in COMPILED:
        module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
        where = Path(module.__file__ or "")
        if where.suffix != ".so" or BUILD not in where.parents:
            raise RuntimeError(f"{module.__name__} is not compiled: {where} (make compiled)")


_check()


def pytest_report_header() -> str:
    return f"compiled build: {len(COMPILED)} modules from {BUILD}"
