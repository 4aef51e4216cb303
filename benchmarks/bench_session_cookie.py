"""The check of a session cookie, on every request that sends one: the plain signed id
(before sessions had an absolute lifetime) against the timestamped one they use now
(``signing.timed_signer``, whose signature carries the time the id was made).

Run: ``.venv/bin/python benchmarks/bench_session_cookie.py`` (microseconds per check, the
best of five runs of 200,000).
"""

from __future__ import annotations

import timeit

from pyweb import signing


def main() -> None:
    signing.configure("k" * 32)
    plain = signing.signer("pyweb.session")
    timed = signing.timed_signer("pyweb.session")
    plain_cookie = plain.sign("x" * 32)
    timed_cookie = timed.sign("x" * 32)
    assert plain.unsign(plain_cookie) == timed.unsign(timed_cookie, max_age=60) == b"x" * 32
    n = 200_000
    for name, check in (
        ("plain id (no lifetime)", lambda: plain.unsign(plain_cookie)),
        ("timed id, max_age", lambda: timed.unsign(timed_cookie, max_age=43200)),
    ):
        best = min(timeit.repeat(check, number=n, repeat=5)) / n
        print(f"{name:24} {best * 1e6:6.2f} µs")


if __name__ == "__main__":
    main()
