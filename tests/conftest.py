"""Hypothesis profiles for the whole suite.

Here, at the top of tests/, because hypothesis reads the profile when ``@given`` decorates a
test, that is when its module is imported: a profile loaded by a conftest further down
(it used to live in tests/protocol/) reached only the modules collected after it, and the
tests in tests/app, tests/cache, ... ran with hypothesis's own defaults, timing health
checks included (on a fresh clone the first ``st.text()`` builds hypothesis's Unicode
table, one draw of about a second, which failed ``too_slow``).

"default" keeps ``make test`` within its budget and asserts nothing about time (this machine
is shared; see the developers' guide); "fuzz" (HYPOTHESIS_PROFILE=fuzz) runs many more
examples, for a long local or nightly run.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

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
