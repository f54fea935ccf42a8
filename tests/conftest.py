"""Test-wide settings: one temporary speechperf cache for the whole run, and what the ``slow`` marker means.

Reference models are built on demand into the cache; sharing one folder lets every test module reuse the tiny zoo
built by the first one, and keeps the suite from writing into the user's ~/.cache. Subprocesses inherit it.

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


def pytest_configure(config):
    if os.environ.get(CACHE_ENV) is None:
        _made.append(tempfile.mkdtemp(prefix="speechperf-test-cache-"))
        os.environ[CACHE_ENV] = _made[0]
    lane.pytest_configure(config)


def pytest_unconfigure(config):
    for folder in _made:
        shutil.rmtree(folder, ignore_errors=True)
