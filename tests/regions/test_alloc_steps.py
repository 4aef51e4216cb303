"""Allocation accounting by the page's own steps (``SiteRegions.counted``), in process, on
each loop: a page is charged what it allocates while it runs, not what other tasks allocate
while it waits; a page that a page runs gets no slot of its own (the outer one pays); a
page that raises is charged up to its exception."""

from __future__ import annotations

import asyncio
import types
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import trio

import pyweb_regions
from pyweb import runtime
from pyweb.regions import SiteRegions

from .conftest import load

pytestmark = pytest.mark.loops("trio", "asyncio")


def run_on(loop: str, main: Callable[[], Awaitable[Any]]) -> Any:
    return trio.run(main) if loop == "trio" else asyncio.run(main())  # type: ignore[arg-type]


@pytest.fixture
def regions(tmp_path: Path) -> SiteRegions:
    load("c")
    if not pyweb_regions.ALLOC_AVAILABLE:
        pytest.skip("pyweb_regions uses its Python fallback here")
    return SiteRegions(str(tmp_path), profile_alloc=True)


def test_a_page_is_charged_its_own_steps_only(regions, loop):
    ctx = types.SimpleNamespace()
    kept: list[bytearray] = []
    nested: list[object] = []

    async def other(done: Any) -> None:  # runs while the page waits: 1 MB, not the page's
        kept.append(bytearray(1_000_000))
        done.set()

    async def page(done: Any) -> str:
        kept.append(bytearray(100_000))
        nested.append(regions.enter())  # a page run by this page: no slot of its own
        regions.in_flight -= 1
        runtime.spawn_background(other, done)
        await done.wait()
        kept.append(bytearray(100_000))
        return "ok"

    async def main() -> str:
        done = runtime.current().Event()
        slot = regions.enter()
        try:
            return await regions.counted(page(done), slot)
        finally:
            regions.leave(ctx, "page", slot)

    assert run_on(loop, main) == "ok"
    assert nested == [None]
    assert 200_000 <= ctx.alloc[0] < 300_000, ctx.alloc
    assert regions.page_allocs["page"] == [1, *ctx.alloc]


def test_a_page_that_raises_is_charged_up_to_its_exception(regions, loop):
    ctx = types.SimpleNamespace()

    async def page() -> None:
        block = bytearray(150_000)
        await runtime.sleep(0)
        raise ValueError(len(block))

    async def main() -> None:
        await regions.run(ctx, "boom", page)

    with pytest.raises(ValueError):
        run_on(loop, main)
    assert 150_000 <= ctx.alloc[0] < 250_000, ctx.alloc
    assert regions.in_flight == 0
