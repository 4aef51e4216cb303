"""Build hook for the C extensions.

Everything about the package lives in pyproject.toml; this file exists only because
setuptools declares C extensions in Python. The ``pyweb_regions`` extension (arenas,
module snapshots, allocation counters: SMLserver §2.1/§5, Hop §3.1), the reply framer's
and the request parser's C fast paths (``pyweb_regions._frame``, ``pyweb_regions._head``)
are the ``EXTENSIONS``. Each entry is optional: when a compiler is missing the build
carries on, ``pyweb_regions`` falls back to its pure-Python implementation and the
protocol to its Python code.
"""

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

EXTENSIONS: list[Extension] = [
    Extension(
        "pyweb_regions._regions",
        sources=["pyweb_regions/_regions.c"],
        # CFLAGS from the environment come after these (make asan-test adds the sanitizer).
        extra_compile_args=["-O2", "-Wall", "-Wno-missing-field-initializers"],
    ),
    Extension(
        # The reply head framed in C (pyweb/protocol/response.py's fast path).
        "pyweb_regions._frame",
        sources=["pyweb_regions/_frame.c"],
        extra_compile_args=["-O2", "-Wall", "-Wno-missing-field-initializers"],
    ),
    # The C fast path of the request parser (pyweb.protocol.parser.C_HEAD): optional too;
    # without it the Python parser does everything.
    Extension(
        "pyweb_regions._head",
        sources=["pyweb_regions/_head.c"],
        extra_compile_args=["-O2", "-Wall"],
    ),
]


class optional_build_ext(build_ext):
    """Build what can be built; a failed C build must never block ``make run``."""

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:  # compiler missing or failing: use the fallback
            print(f"warning: building {ext.name} failed ({exc}); using the Python fallback")


setup(ext_modules=EXTENSIONS, cmdclass={"build_ext": optional_build_ext})
