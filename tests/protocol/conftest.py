"""The parser's tests run with the parser's C request head (``parser.C_HEAD``,
``pyweb_regions._head``) or with the Python path alone, as ``--heads`` says (``make test``:
the C head when it is built; ``make test-pure``: the Python path; ``--heads c,python``:
both). The C head takes a subset of the heads and must agree with the Python path on all
of them (test_c_head.py checks that, always with both), so these suites (the h11
differential tests included) hold either to the same expectations. A "c" run without the
C module built (or with ``PYWEB_REGIONS=python``) is skipped. The other modules here
(the reply framer's) run once, with whatever the parser has.

Module scope: a function-scoped fixture would be set up once for all the examples of a
hypothesis test (and hypothesis warns about that); the switch is the same for all of them.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pyweb.protocol import parser as P

BUILT = P.C_HEAD

PARSER_MODULES = ("test_parser", "test_oracle", "test_differences", "test_fast_path")
"""The modules run with both request heads."""


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.module.__name__.rsplit(".", 1)[-1] in PARSER_MODULES:
        from tests.conftest import c_paths

        heads = c_paths(metafunc.config.getoption("--heads"), BUILT is not None)
        metafunc.parametrize("head_path", heads, indirect=True, scope="module")


@pytest.fixture(scope="module", autouse=True)
def head_path(request: pytest.FixtureRequest) -> Iterator[str]:
    """Which path parses request heads in this module: "c" (the C head first), "python",
    or "default" (whatever ``PYWEB_REGIONS`` and the build chose)."""
    name = str(getattr(request, "param", "default"))
    if name == "default":
        yield name
        return
    if name == "c" and BUILT is None:
        pytest.skip("pyweb_regions._head is not built (or PYWEB_REGIONS=python)")
    saved = P.C_HEAD
    P.C_HEAD = BUILT if name == "c" else None
    try:
        yield name
    finally:
        P.C_HEAD = saved
