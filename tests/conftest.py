"""Test-wide settings: one temporary speechperf cache for the whole run, and what the ``slow`` marker means.

Reference models are built on demand into the cache; sharing one folder lets every test module reuse the tiny zoo
built by the first one, and keeps the suite from writing into the user's ~/.cache. Subprocesses inherit it. The
cache starts with fixed roofs (``fixed_roofs``), so no bench or profile measures them.

Under pytest-xdist (the README's test command runs ``-n auto``) the workers share that cache, and a test that
measures how many cores a run keeps busy, or a speed against the machine's roofs, runs alone: the other workers wait
(``ALONE``, ``alone``).

``slow`` marks a test that takes more than 2 s (setup, call and teardown, as ``--durations`` shows them), so that
``pytest -m "not slow"`` is the fast lane (CONTRIBUTING.md). ``tests/lane.py`` keeps the marker meaning what it says:
every run lists the unmarked tests over 2 s, and a fast-lane run fails on one that was over in wall *and* CPU time
(why both, on a shared machine: its docstring).
"""

import contextlib
import fcntl
import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest

from speechperf.cache import CACHE_ENV
from tests import lane

# the shared asserts of the show tests say what differs, as a test's own do
pytest.register_assert_rewrite("tests.show_again")

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
    # A shell's background job (`cmd &`, nohup, a CI step run that way) starts with SIGINT ignored, and every child
    # inherits that: the Ctrl-C tests' speechperf processes then ran to the end instead of exiting 130. Take it back.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if os.environ.get(CACHE_ENV) is None:
        _made.append(tempfile.mkdtemp(prefix="speechperf-test-cache-"))
        os.environ[CACHE_ENV] = _made[0]
        fixed_roofs()
    lane.pytest_configure(config)


#: Tests whose figures another worker's test would change: cores kept busy (cpu/wall), speed against the roofs.
ALONE_MODULES = frozenset({"test_threads.py", "test_roofline.py"})
ALONE_TESTS = frozenset({"test_one_thread_uses_one_core", "test_two_threads_use_two_cores"})  # the conformance suite's


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in ALONE_MODULES or getattr(item, "originalname", item.name) in ALONE_TESTS:
            item.add_marker("alone")
    workers = getattr(config, "workerinput", {}).get("workercount")
    if workers:
        items[:] = alone_first_in_every_share(heavy_modules_first(items), workers)


def heavy_modules_first(items: list) -> list:
    """The modules with the most ``slow`` tests first, each module's tests together and in their order (its
    fixtures are set up once). Worksteal's idle worker takes the end of the other's queue: ending on the quick
    unit modules, the two workers finish together instead of one waiting out a minute-long test started last."""
    modules: dict = {}
    for item in items:
        modules.setdefault(item.path, []).append(item)
    slow = {path: sum(i.get_closest_marker("slow") is not None for i in tests) for path, tests in modules.items()}
    return [item for path in sorted(modules, key=lambda p: -slow[p]) for item in modules[path]]


def alone_first_in_every_share(items: list, workers: int) -> list:
    """The order that starts each worker's share with ``alone`` tests. xdist's worksteal hands each worker a
    contiguous share of the collection (``len(left) // workers_left`` items in turn); an ``alone`` test met mid-run
    waited for the other worker's test to end, up to a minute idle behind one slow test (57 s of worker time in a
    suite run). Run first, the alone tests of every share wait only for each other."""
    alone = [item for item in items if item.get_closest_marker("alone") is not None]
    rest = [item for item in items if item.get_closest_marker("alone") is None]
    ordered: list = []
    left = len(items)
    for worker in range(workers):
        share = left // (workers - worker)
        mine = alone[worker::workers]
        take = max(0, share - len(mine))
        ordered += mine + rest[:take]
        del rest[:take]
        left -= share
    return ordered + rest


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    # xdist's default, "load", deals each worker its share of the tests up front; the slow tests here run from under
    # 1 s to 90 s, so one worker was left with a long tail while the other sat idle. "worksteal" lets an idle worker
    # take half of the other's remaining queue. An explicit --dist wins.
    if getattr(config.option, "numprocesses", None) and getattr(config.option, "dist", "no") == "no":
        config.option.dist = "worksteal"


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: one worker per usable core, at most 4 (each holds torch and paddle: about 1.5 GiB)."""
    return min(len(os.sched_getaffinity(0)), 4)


@contextlib.contextmanager
def workers_lock(alone: bool):
    """A readers-writer lock over the run's workers (``fcntl.flock`` on files in the shared cache): every test holds
    it shared, an ``alone`` test exclusive. The turnstile keeps a waiting ``alone`` test from starving: while it
    waits, no other test may start."""
    folder = Path(os.environ[CACHE_ENV])
    with open(folder / ".workers-turnstile", "a") as turnstile, open(folder / ".workers-room", "a") as room:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(room, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(room, fcntl.LOCK_UN)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Setup (module fixtures too), call and teardown under the workers' lock, when there are workers."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        yield
        return
    with workers_lock(item.get_closest_marker("alone") is not None):
        yield


def pytest_unconfigure(config):
    for folder in _made:
        shutil.rmtree(folder, ignore_errors=True)
