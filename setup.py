"""Build hook for the one compiled part: lumikit.trace._fastevents, an optional faster trace-chunk reader.

Everything else is configured in pyproject.toml. The extension is optional: where no C compiler is at hand
(a bare container), the install goes on without it and lumikit reads traces with msgspec alone, to the same
numbers (tests/trace/test_fast_events.py), only slower.
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension("lumikit.trace._fastevents", ["lumikit/trace/_fastevents.c"],
                             extra_compile_args=["-O2"], optional=True)])
