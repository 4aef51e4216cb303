"""benchmarks/peers.py's tables: ratios of the same round, missing peers, the targets.

The benchmark itself is never run in tests (its numbers depend on the machine); these check
the arithmetic and the report it prints from measurements made up here, so that a change
to the harness cannot quietly print wrong ratios or crash when a peer is missing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
_path = list(sys.path)
sys.path.insert(0, str(BENCHMARKS))
import peers  # noqa: E402

# peers.py puts benchmarks/apps on the path and imports its ``page`` module: take both back,
# so that no other test's site can import the benchmark's ``page`` by mistake.
sys.path[:] = _path
sys.modules.pop("page", None)


def m(rnd: int, server: str, scenario: str, rps: float, **kw: float) -> peers.Measurement:
    return peers.Measurement(rnd, server, scenario, True, rps=rps, server_cpu=kw.get("cpu", 1.0),
                             p99_ms=kw.get("p99", 1.0))  # fmt: skip


def args(**kw: object) -> object:
    a = peers.parse_args(["--servers", "uvicorn,raw-uvloop,pyweb-asyncio,granian-rsgi",
                          "--scenarios", "hello,hello-close", "--rounds", "2", "--no-pin"])  # fmt: skip
    a.missing = {}
    for k, v in kw.items():
        setattr(a, k, v)
    return a


def test_same_round_ratio_is_the_median_of_ratios_within_rounds():
    # Round 2 is twice as fast for both servers: the ratio within each round is 0.5, while
    # the ratio of the medians (15 / 45 ... ) would mix the rounds.
    results = [m(1, "a", "hello", 10), m(1, "b", "hello", 20),
               m(2, "a", "hello", 20), m(2, "b", "hello", 40), m(3, "a", "hello", 99)]  # fmt: skip
    rounds = peers.by_round(results)
    assert peers.same_round_ratio(rounds, "hello", "a", "b") == pytest.approx(0.5)
    assert peers.same_round_ratio(rounds, "hello", "a", "nobody") is None


def test_cpu_per_request_is_cores_over_rate():
    assert peers.cpu_per_request(m(1, "a", "hello", 20_000, cpu=0.5)) == pytest.approx(25.0)
    assert peers.cpu_per_request(peers.Measurement(1, "a", "hello", False)) == 0.0


def test_report_shows_a_missing_peer_as_missing_and_still_reports_the_others():
    results = [m(1, "uvicorn", sc, 100) for sc in ("hello", "hello-close")]
    results += [m(1, "pyweb-asyncio", sc, 60, cpu=0.9) for sc in ("hello", "hello-close")]
    results += [m(1, "raw-uvloop", sc, 200, cpu=0.9) for sc in ("hello", "hello-close")]
    a = args(missing={"granian-rsgi": "granian not installed"})
    text = peers.report(a, results)
    assert "| granian-rsgi | missing | missing | – |" in text
    assert "| pyweb-asyncio | 60 [0.60×] | 60 [0.60×] |" in text
    assert "granian-rsgi (granian not installed)" in text
    # the aim against raw uvloop: 60 / 200 by req/s, and by CPU per request the same here
    assert "| asyncio: hello ≥ 0.6× raw-uvloop | 0.30 | 0.30 | NOT met |" in text


def test_report_of_a_saved_run_is_the_same_report(tmp_path, capsys):
    results = [m(r, s, sc, 100 * r + (50 if s == "uvicorn" else 0))
               for r in (1, 2) for s in ("uvicorn", "pyweb-asyncio") for sc in ("hello", "hello-close")]  # fmt: skip
    a = args(servers=["uvicorn", "pyweb-asyncio"])
    saved = tmp_path / "run.json"
    meta = {"args": {k: v for k, v in vars(a).items()}, "machine": {"cpus": "2", "cpu": "x",
            "kernel": "y"}, "wrk": "wrk", "peers": {}, "project": {}}  # fmt: skip
    saved.write_text(json.dumps({"meta": meta, "results": [vars(x) for x in results]}))
    out = tmp_path / "out.md"
    assert peers.main(["--from-json", str(saved), "--markdown", str(out)]) == 0
    printed = capsys.readouterr().out
    assert peers.report(a, results) in printed
    assert peers.report(a, results) in out.read_text()


def test_targets_give_the_asyncio_server_alone_when_the_handler_was_measured():
    # The handler row bounds what pages could reach: the same aims, for the server alone.
    servers = ["uvicorn", "raw-uvloop", "granian-rsgi", "pyweb-asyncio", "pyweb-asyncio-handler"]
    rates = {"uvicorn": 100, "raw-uvloop": 300, "granian-rsgi": 140, "pyweb-asyncio": 110,
             "pyweb-asyncio-handler": 170}  # fmt: skip
    results = [m(1, s, sc, rates[s]) for s in servers for sc in ("hello", "dynamic")]
    text = peers.targets(args(servers=servers, scenarios=["hello", "dynamic"]), results)
    assert "| asyncio: hello ≥ 0.6× raw-uvloop | 0.37 | 0.37 | NOT met |" in text
    assert "| asyncio server alone (a handler, no pages): hello ≥ 0.6× raw-uvloop | 0.57 |" in text
    assert "| asyncio server alone: 984 B page ≥ 1.5× uvicorn | 1.70 | 1.70 | met |" in text
    assert "| asyncio server alone: ahead of granian-rsgi (the lowest of its own URLs) | 1.21 |" in text
    # without the handler row, no such lines
    plain = [r for r in results if r.server != "pyweb-asyncio-handler"]
    assert "server alone" not in peers.targets(args(servers=servers[:4]), plain)


def test_frameworks_join_the_run_and_get_a_table_fastest_hello_first():
    a = peers.parse_args(["--servers", "uvicorn,pyweb-asyncio", "--frameworks",
                          "--scenarios", "hello,static", "--rounds", "1", "--no-pin"])  # fmt: skip
    assert a.servers[:2] == ["uvicorn", "pyweb-asyncio"]
    assert set(peers.FRAMEWORK_ROWS) <= set(a.servers)
    a.missing = {"robyn": "not installed"}
    results = [m(1, "uvicorn", sc, 100) for sc in ("hello", "static")]
    results += [m(1, "pyweb-asyncio", sc, 90) for sc in ("hello", "static")]
    results += [m(1, "fastapi", sc, 20) for sc in ("hello", "static")]
    results += [m(1, "sanic", sc, 40, cpu=0.8) for sc in ("hello", "static")]
    table = peers.frameworks_table(a, results)
    rows = [line.split(" | ")[0].lstrip("| ") for line in table[2:]]
    assert rows[0] == "**pyweb-asyncio**"
    assert rows.index("sanic") < rows.index("fastapi")  # faster hello first
    assert "| robyn | missing | missing |" in "\n".join(table)
    assert "40 (20000 µs)" in "\n".join(table)  # req/s, then CPU µs per request
    assert "The frameworks users pick" in peers.report(a, results)


def test_a_framework_that_serves_files_under_a_prefix_is_asked_there():
    static = peers.SCENARIOS["static"]
    assert peers.scenario_for(static, "falcon").path == "/files/" + static.path.lstrip("/")
    assert peers.scenario_for(static, "fastapi") is static
    assert peers.scenario_for(peers.SCENARIOS["hello"], "falcon").path == "/hello"
    for name in peers.FRAMEWORKS:
        assert peers.server_command(name, 8000)  # every framework has a command line
