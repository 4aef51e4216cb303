"""Shared helpers for the protocol tests: pyweb's parser and h11 driven the same way.

They live in :mod:`pyweb.testing.http` (public: students' parsers are checked with them);
this module only gives them the names the protocol tests use.
"""

from __future__ import annotations

from pyweb.protocol import Limits
from pyweb.testing.http import Parsed, run_h11, run_pyweb

DEFAULT_LIMITS = Limits()

__all__ = ["DEFAULT_LIMITS", "Parsed", "run_h11", "run_pyweb"]
