"""Hypothesis profiles for the protocol tests.

"default" keeps tests/protocol well under a minute; "fuzz" (HYPOTHESIS_PROFILE=fuzz) runs
many more examples without a deadline, for a long local or nightly run.
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
