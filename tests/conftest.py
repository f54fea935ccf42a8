"""Test-wide settings: one temporary speechperf cache for the whole run, and what the ``slow`` marker means.

Reference models are built on demand into the cache; sharing one folder lets every test module reuse the tiny zoo
built by the first one, and keeps the suite from writing into the user's ~/.cache. Subprocesses inherit it. The
cache starts with fixed roofs (``fixed_roofs``), so no bench or profile measures them.

``slow`` marks a test that takes more than 2 s (setup, call and teardown, as ``--durations`` shows them), so that
``pytest -m "not slow"`` is the fast lane (CONTRIBUTING.md). ``tests/lane.py`` keeps the marker meaning what it says:
every run lists the unmarked tests over 2 s, and a fast-lane run fails on one that was over in wall *and* CPU time
(why both, on a shared machine: its docstring).
"""

import os
import shutil
import tempfile

from speechperf.cache import CACHE_ENV
from tests import lane

_made: list[str] = []


def pytest_addoption(parser):
    lane.pytest_addoption(parser)


#: The roofs a test run starts with (GFLOP/s, GB/s), stated, not measured; tests/test_roofline.py measures real ones.
FIXED_ROOFS = (100.0, 20.0)


def fixed_roofs() -> None:
    """Cache fixed roofs at every usable thread count. bench and profile measure the machine's roofs in a child when
    none are cached (~10 s of CPU), and on a busy machine they are not cached, so without this every bench or
    profile a test ran on a shared machine measured them again: a test's time, and the suite's, followed the load."""
    from speechperf.meters.roofs import Roof, Roofs, store

    how = "fixed by tests/conftest.py for the test run, not measured"
    for threads in range(1, len(os.sched_getaffinity(0)) + 1):
        compute, memory = Roof(FIXED_ROOFS[0], "numpy", how), Roof(FIXED_ROOFS[1], "numpy", how)
        store(Roofs(threads, {"numpy": compute}, {}, memory))


def pytest_configure(config):
    if os.environ.get(CACHE_ENV) is None:
        _made.append(tempfile.mkdtemp(prefix="speechperf-test-cache-"))
        os.environ[CACHE_ENV] = _made[0]
        fixed_roofs()
    lane.pytest_configure(config)


def pytest_unconfigure(config):
    for folder in _made:
        shutil.rmtree(folder, ignore_errors=True)
