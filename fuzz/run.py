"""Run one fuzz target under atheris (coverage-guided, libFuzzer): ``make fuzz-atheris``.

    python fuzz/run.py parser --seconds 300          # grows fuzz/corpus/parser
    python fuzz/run.py arena --seconds 30 --ci       # CI: new inputs go to a temp dir
    python fuzz/run.py arena --replay                # every kept input once, no atheris

The kept corpus is ``fuzz/corpus/TARGET/`` (seed inputs, and what earlier runs found that
reached new code); ``--ci`` reads it but writes new inputs elsewhere, so CI never changes
the repository. An input that fails is written to ``fuzz/crashes/TARGET-crash-*``: fix the
bug, then move the file to ``fuzz/regressions/TARGET/`` where ``tests/fuzz`` replays it on
every ``make test``.

The ``arena`` target exercises C code. ``make fuzz-atheris`` fuzzes it coverage-guided,
then replays the whole corpus (``--replay``) and fuzzes it again against ``pyweb_regions``
built with AddressSanitizer and UndefinedBehaviorSanitizer (as ``make asan-test`` does), so
a buffer overrun is reported where it happens instead of corrupting memory silently. Two
runs because a preloaded ASan runtime takes over libFuzzer's coverage hooks (atheris warns
so): under ASan the mutations are no longer guided, and gcc, unlike clang, cannot add
libFuzzer coverage to the C code itself. The guided run finds the inputs, the ASan runs
check what they do to memory.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", choices=("parser", "forms", "quot", "arena"))
    parser.add_argument("--seconds", type=int, default=300, help="how long to fuzz")
    parser.add_argument("--ci", action="store_true", help="leave the kept corpus unchanged")
    parser.add_argument("--replay", action="store_true", help="run every kept input once")
    args, extra = parser.parse_known_args(argv)
    if args.replay:
        count = replay(args.target)
        print(f"{args.target}: {count} kept inputs replayed, none failed")
        return 0

    import atheris

    with atheris.instrument_imports(include=["pyweb", "pyweb_regions", "targets"]):
        sys.path.insert(0, HERE)
        from targets import TARGETS

    corpus = os.path.join(HERE, "corpus", args.target)
    crashes = os.path.join(HERE, "crashes")
    os.makedirs(corpus, exist_ok=True)
    os.makedirs(crashes, exist_ok=True)
    dirs = [corpus]
    if args.ci:  # libFuzzer writes new inputs into the first directory
        dirs.insert(0, tempfile.mkdtemp(prefix=f"pyweb-fuzz-{args.target}-"))
    libfuzzer = [
        sys.argv[0],
        f"-max_total_time={args.seconds}",
        f"-artifact_prefix={os.path.join(crashes, args.target)}-",
        "-max_len=8192",
        "-timeout=10",
        "-rss_limit_mb=2048",
        "-print_final_stats=1",
        *extra,
        *dirs,
    ]
    atheris.Setup(libfuzzer, TARGETS[args.target])
    atheris.Fuzz()
    return 0


def kept_inputs(target: str) -> list[str]:
    """The corpus and the regressions of ``target`` (paths, sorted)."""
    found = []
    for kind in ("corpus", "regressions"):
        folder = os.path.join(HERE, kind, target)
        if os.path.isdir(folder):
            found += sorted(os.path.join(folder, name) for name in os.listdir(folder))
    return found


def replay(target: str) -> int:
    """Run every kept input of ``target`` once; the first failure propagates."""
    sys.path.insert(0, HERE)
    from targets import TARGETS

    run = TARGETS[target]
    paths = kept_inputs(target)
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        try:
            run(data)
        except Exception as exc:
            raise AssertionError(f"{target} fails on {path}: {exc!r}") from exc
    return len(paths)


if __name__ == "__main__":
    sys.exit(main())
