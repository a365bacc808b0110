"""Hypothesis profiles for the fuzz suite: a short fixed-seed one for every test run, a long one.

``FLEET_FUZZ_PROFILE=long`` (what ``make fuzz`` sets) runs 10,000 inputs per parser kind with
a fresh random seed; the default, ``ci``, runs 200 per kind, derandomized, so that ``make
test`` sees the same inputs every time and stays short.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

_COMMON = {
    "deadline": None,  # a loaded machine must not fail a test: timing is the benchmark's job
    "database": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    "print_blob": True,
}
settings.register_profile("ci", max_examples=200, derandomize=True, **_COMMON)
settings.register_profile("long", max_examples=10_000, **_COMMON)
