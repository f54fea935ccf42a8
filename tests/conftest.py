"""Test-wide settings: one temporary speechperf cache for the whole run, and what the ``slow`` marker means.

Reference models are built on demand into the cache; sharing one folder lets every test module reuse the tiny zoo
built by the first one, and keeps the suite from writing into the user's ~/.cache. Subprocesses inherit it.

``slow`` marks a test that takes more than ``SLOW_SECONDS`` (setup, call and teardown, as ``--durations`` shows
them), so that ``pytest -m "not slow"`` is the fast lane (CONTRIBUTING.md). A run lists, at its end, the tests
over that time without the marker, so the marker keeps meaning what it says.
"""

import os
import shutil
import tempfile

from speechperf.cache import CACHE_ENV

_made: list[str] = []

#: A test longer than this (seconds, its phases together) is marked ``slow``.
SLOW_SECONDS = 2.0
_seconds: dict[str, float] = {}
_unmarked: set[str] = set()


def pytest_configure(config):
    if os.environ.get(CACHE_ENV) is None:
        _made.append(tempfile.mkdtemp(prefix="speechperf-test-cache-"))
        os.environ[CACHE_ENV] = _made[0]


def pytest_unconfigure(config):
    for folder in _made:
        shutil.rmtree(folder, ignore_errors=True)


def pytest_runtest_logreport(report):
    _seconds[report.nodeid] = _seconds.get(report.nodeid, 0.0) + report.duration
    if "slow" not in report.keywords:
        _unmarked.add(report.nodeid)


def pytest_terminal_summary(terminalreporter):
    over = sorted((s, n) for n, s in _seconds.items() if n in _unmarked and s > SLOW_SECONDS)
    if over:
        terminalreporter.write_sep("-", f"{len(over)} test(s) over {SLOW_SECONDS:g} s without the slow marker")
        for seconds, nodeid in reversed(over):
            terminalreporter.write_line(f"{seconds:6.2f}s {nodeid}")
