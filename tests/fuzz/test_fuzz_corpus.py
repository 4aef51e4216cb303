"""Every input the fuzzers keep (fuzz/corpus/) and every input that once failed
(fuzz/regressions/) runs through its target on each ``make test``: a crash found by
``make fuzz-atheris`` stays a regression test once its file is moved to fuzz/regressions/."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

FUZZ = Path(__file__).resolve().parents[2] / "fuzz"
_spec = importlib.util.spec_from_file_location("pyweb_fuzz_run", FUZZ / "run.py")
assert _spec is not None and _spec.loader is not None
run = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run)


@pytest.mark.parametrize("target", ["parser", "forms", "quot", "arena"])
def test_kept_inputs_pass(target):
    count = run.replay(target)
    assert count >= 2, f"fuzz/corpus/{target} has lost its seeds"


def test_a_failing_input_is_reported_with_its_file(tmp_path, monkeypatch):
    # The replay names the file: what a developer needs to reproduce a regression.
    bad = tmp_path / "regressions" / "quot"
    bad.mkdir(parents=True)
    (bad / "crash-1").write_bytes(b"x")
    monkeypatch.setattr(run, "HERE", str(tmp_path))
    import targets  # the module replay imported from fuzz/

    def broken(data: bytes) -> None:
        raise KeyError("undocumented")

    monkeypatch.setitem(targets.TARGETS, "quot", broken)
    with pytest.raises(AssertionError, match="crash-1"):
        run.replay("quot")
    assert os.path.exists(bad / "crash-1")
