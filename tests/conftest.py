"""Test-wide settings: one temporary speechperf cache for the whole run.

Reference models are built on demand into the cache; sharing one folder lets every test module reuse the tiny zoo
built by the first one, and keeps the suite from writing into the user's ~/.cache. Subprocesses inherit it.
"""

import os
import shutil
import tempfile

from speechperf.cache import CACHE_ENV

_made: list[str] = []


def pytest_configure(config):
    if os.environ.get(CACHE_ENV) is None:
        _made.append(tempfile.mkdtemp(prefix="speechperf-test-cache-"))
        os.environ[CACHE_ENV] = _made[0]


def pytest_unconfigure(config):
    for folder in _made:
        shutil.rmtree(folder, ignore_errors=True)
