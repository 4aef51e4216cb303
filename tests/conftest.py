"""Hypothesis profiles for the whole suite, and the two loops servers run on.

Here, at the top of tests/, because hypothesis reads the profile when ``@given`` decorates a
test, that is when its module is imported: a profile loaded by a conftest further down
(it used to live in tests/protocol/) reached only the modules collected after it, and the
tests in tests/app, tests/cache, ... ran with hypothesis's own defaults, timing health
checks included (on a fresh clone the first ``st.text()`` builds hypothesis's Unicode
table, one draw of about a second, which failed ``too_slow``).

"default" keeps ``make test`` within its budget and asserts nothing about time (this machine
is shared; see the developers' guide); "fuzz" (HYPOTHESIS_PROFILE=fuzz) runs many more
examples, for a long local or nightly run.

The loops: a module marked ``pytest.mark.loops("trio", "asyncio")`` runs each test once per
loop selected by ``--loops`` (default both; ``PYWEB_TEST_LOOPS`` sets the default), with the
``loop`` fixture naming it; every test (and every fixture of its module) runs inside
``pyweb.testing.use_loop(loop)``, so the servers it starts through pyweb.testing run on
that loop. See tests/loops.py.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from pyweb.protocol.response import use_c_framer
from pyweb.testing.server import running_servers, use_loop
from tests.helpers import chat_in_two_workers
from tests.loops import lacked, selected, xfail_on_asyncio

settings.register_profile(
    "default",
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "fuzz",
    max_examples=20_000,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

# Sites that sign (sessions, CSRF tokens on POST forms) need a secret key outside --dev; the
# suite's servers, in this process and in the ones it starts, share this one. A test of the
# "no key" refusal removes it with monkeypatch.
os.environ.setdefault("PYWEB_SECRET_KEY", "the-test-suite-key-not-a-secret-0123456789")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--loops",
        default=os.environ.get("PYWEB_TEST_LOOPS", "trio,asyncio"),
        help="the loops tests marked loops(...) run on: trio,asyncio (default; "
        "PYWEB_TEST_LOOPS sets it), trio, or asyncio",
    )
    parser.addoption(
        "--framers",
        default=os.environ.get("PYWEB_TEST_FRAMERS", "built"),
        help="the reply framers the tests that use the `framer` fixture (tests/server, "
        "tests/protocol/test_response.py) run with: built (default: the C framer when it "
        "is built, the Python one otherwise; PYWEB_TEST_FRAMERS sets it), c "
        "(pyweb_regions._frame), python, or c,python",
    )
    parser.addoption(
        "--heads",
        default=os.environ.get("PYWEB_TEST_HEADS", "built"),
        help="how the parser's tests (tests/protocol/conftest.py) read request heads: built "
        "(default: with the C head when it is built; PYWEB_TEST_HEADS sets it), c, python, "
        "or c,python",
    )


def c_paths(option: str, built: bool) -> list[str]:
    """The C fast paths a run chose (``--framers``, ``--heads``): "built" is "c" when the C
    module is built (and not switched off by ``PYWEB_REGIONS=python``), "python" otherwise.
    The C paths agree with the Python ones on every input (their differential tests, which
    always run both); ``make test`` runs the rest of the suite with what is built, ``make
    test-pure`` with the Python paths alone, as on a machine without a compiler."""
    names = [name for name in option.split(",") if name]
    return [("c" if built else "python") if name == "built" else name for name in names]


def pytest_configure(config: pytest.Config) -> None:
    selected(config.getoption("--loops"))  # a typo stops the run before collection


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """One run per loop for the tests marked ``loops(...)``; one per framer (``--framers``)
    for the tests that use the ``framer`` fixture, unless their module's servers run in
    other processes (it says why in ``SERVERS_ELSEWHERE``), where the switch cannot reach."""
    if "framer" in metafunc.fixturenames and not hasattr(metafunc.module, "SERVERS_ELSEWHERE"):
        framers = c_paths(metafunc.config.getoption("--framers"), use_c_framer(None))
        metafunc.parametrize("framer", framers, indirect=True, scope="module")
    mark = metafunc.definition.get_closest_marker("loops")
    if mark is None or "loop" not in metafunc.fixturenames:
        return
    chosen = selected(metafunc.config.getoption("--loops"))
    params = [pytest.param(name, id=name) for name in mark.args if name in chosen]
    if metafunc.definition.get_closest_marker("loop_free") is not None:
        params = params[:1]  # no server: a second loop would run the same code again
    if not params:  # e.g. a trio-only test in a run on asyncio alone
        params = [pytest.param(mark.args[0], id=mark.args[0], marks=pytest.mark.skip(
            reason=f"runs on {', '.join(mark.args)} only; --loops chose {', '.join(chosen)}"))]
    metafunc.parametrize("loop", params, indirect=True, scope="module")


SERIAL_DIRS = ("reliability",)
"""Directories whose tests measure a normal client's wait under attack: ``make test`` runs
them alone (``-m serial``), after the rest has run in parallel, so that the other tests do
not take the CPU they measure."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests under SERIAL_DIRS are marked serial. The asyncio run of a test marked
    ``asyncio_lacks(...)`` (on the test, or on one of its ``pytest.param``s) is a strict
    xfail; that of a ``pytest.param`` marked ``trio_only("why")`` is skipped, saying why."""
    here = os.path.dirname(__file__)
    serial = tuple(os.path.join(here, d) + os.sep for d in SERIAL_DIRS)
    for item in items:
        if str(item.path).startswith(serial):
            item.add_marker(pytest.mark.serial)
        callspec = getattr(item, "callspec", None)
        if callspec is None or callspec.params.get("loop") != "asyncio":
            continue
        trio_only = item.get_closest_marker("trio_only")  # on one pytest.param of many
        if trio_only is not None:
            item.add_marker(pytest.mark.skip(reason=f"about trio: {trio_only.args[0]}"))
        lacks = lacked(item, callspec.params)
        if lacks:
            item.add_marker(xfail_on_asyncio(lacks))


@pytest.fixture(scope="module", autouse=True)
def loop(request: pytest.FixtureRequest) -> Iterator[str]:
    """The loop this test's servers run on: its parameter, or trio for unmarked tests.

    Module-scoped and autouse, so that it is in place before any other fixture of the
    module (a module-scoped server fixture starts its server on the right loop too)."""
    name = str(getattr(request, "param", "trio"))
    with use_loop(name):
        yield name


@pytest.fixture(scope="module")
def framer(request: pytest.FixtureRequest) -> Iterator[str]:
    """The reply framer of this module's tests, in this process (servers it starts in a
    thread included): ``"c"``, the fast path ``pyweb_regions._frame`` (skipped when it is
    not built), or ``"python"``, ``frame_response``'s own code. Module-scoped: a module's
    servers never see it change under them."""
    name = str(getattr(request, "param", "c"))
    if name not in ("c", "python"):
        raise ValueError(f"--framers: c or python, not {name!r}")
    before = use_c_framer(None)
    if not use_c_framer(name == "c") and name == "c":
        use_c_framer(before)
        pytest.skip("the C framer is not built (or PYWEB_REGIONS=python)")
    yield name
    use_c_framer(before)


@pytest.fixture(autouse=True)
def _servers_on_the_tests_loop(loop: str) -> Iterator[None]:
    """A server a test used must run on the test's loop. The trap this catches: a
    module-scoped fixture that starts a server without depending on ``loop`` is built once
    and kept for both runs, so the asyncio run would quietly test the trio server."""
    yield
    wrong = [s for s in running_servers() if s.loop != loop]
    if wrong:
        pytest.fail(
            f"a server on {wrong[0].loop} is running in a test on {loop}: a fixture that "
            "starts a server and outlives a test must take the `loop` fixture", pytrace=False
        )


@pytest.fixture(scope="module")
def chat_workers(loop: str) -> Iterator[int]:
    """The example chat in two ``pyweb serve`` worker processes sharing Redis, on the
    module's loop (tests/test_chat_workers.py, tests/browser); its port."""
    with chat_in_two_workers() as port:
        yield port
