"""Fixtures for the regions tests: every test that takes ``impl`` runs twice, once against
the C extension and once against the pure-Python fallback (the C run is skipped only when
the extension was not built, which ``pip install`` allows when there is no compiler)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from types import ModuleType

import pytest

import pyweb_regions

_NAMES = [
    "ModuleGuard",
    "Arena",
    "PAGE_SIZE",
    "pool_stats",
    "utf8_length",
    "alloc_install",
    "alloc_installed",
    "alloc_enable",
    "alloc_counts",
    "alloc_reset_counts",
]


def load(name: str) -> ModuleType:
    try:
        return pyweb_regions.implementation(name)
    except ImportError:
        pytest.skip("the C extension pyweb_regions._regions was not built")


@pytest.fixture(params=["c", "python"])
def impl(request) -> ModuleType:
    """The implementation module itself (``_regions`` or ``_fallback``)."""
    return load(request.param)


@pytest.fixture(params=["c", "python"])
def use_impl(request, monkeypatch) -> str:
    """Make pyweb_regions (and so pyweb.regions and the Site) use one implementation."""
    module = load(request.param)
    for name in _NAMES:
        monkeypatch.setattr(pyweb_regions, name, getattr(module, name))
    monkeypatch.setattr(pyweb_regions, "VERSION_TAG", bool(module.VERSION_TAG))
    monkeypatch.setattr(pyweb_regions, "FAST_CHECK", module.FAST_CHECK)
    monkeypatch.setattr(pyweb_regions, "IMPLEMENTATION", request.param)
    monkeypatch.setattr(pyweb_regions, "ALLOC_AVAILABLE", request.param == "c")
    return request.param


def write_site(root: Path, files: dict[str, str]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(content).lstrip("\n"), encoding="utf-8")
    return root
