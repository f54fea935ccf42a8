"""The fast lane's rule, kept by every run: a test without the ``slow`` marker takes at most ``slow_seconds``
(2 s; setup, call and teardown together).

Every run lists, at its end, the unmarked tests whose wall time (as ``--durations`` shows it) went over. A run that
selected the fast lane (``-m "not slow"``, as ``.ci/run`` runs it) also *fails* (exit 1, with the list) when one of
them went over by both measures:

- its wall time, what a developer waits for, and
- its CPU time: the pytest process's (every thread) plus its child processes' (``resource.getrusage``, SELF and
  CHILDREN, before and after the test's setup, call and teardown).

Wall time alone would fail a run spuriously on a shared machine: another user's build stretches every test's wall
time while its CPU time stays what the test costs. CPU time alone would count a test that keeps two cores busy for
1.5 s as 3 s. Over the limit by both, the test is slow wherever it runs. A test that sleeps or waits is caught by
the wall-time list only (a warning, never a failure).

The first import of a framework (torch, paddle: about 2 s of CPU each here) and the build of a reference model into
the run's shared cache (tests/conftest.py: the tiny zoo, built once per session) are paid once by whichever test
comes first in a selection, so a test that imported one of ``FIRST_IMPORTS`` or built a zoo model is listed but not
failed: the cost is the session's, not the test's, and moves when the selection changes.

``tests/conftest.py`` registers this plugin; ``pytest -p tests.lane`` loads it alone (its own test does so).
"""

from __future__ import annotations

import resource
import sys

import pytest

#: Top-level modules whose first import in a process costs seconds and lands on whichever test imports them first.
FIRST_IMPORTS = frozenset({"torch", "paddle", "onnxruntime", "ray", "matplotlib", "mlperf_loadgen", "ctranslate2"})


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _top_level_modules() -> set[str]:
    return {name for name in sys.modules if "." not in name}


def _zoo_builds() -> dict[str, float]:
    """Each zoo model in the run's cache (``<cache>/zoo/<preset>/<model>``) and when its manifest was written."""
    from speechperf.cache import cache_dir

    built = {}
    for manifest in (cache_dir() / "zoo").glob("*/*/manifest.json"):
        try:
            built[f"{manifest.parent.name}/{manifest.parent.parent.name}"] = manifest.stat().st_mtime
        except OSError:  # replaced while we looked
            continue
    return built


def selects_the_fast_lane(markexpr: str) -> bool:
    """Whether ``-m`` leaves the slow tests out: ``not slow``, alone or and-ed with more."""
    words = markexpr.replace("(", " ( ").replace(")", " ) ").split()
    return "or" not in words and any(words[i : i + 2] == ["not", "slow"] for i in range(len(words)))


class LaneTimer:
    def __init__(self, config: pytest.Config):
        self.limit = float(config.getini("slow_seconds"))
        self.enforced = selects_the_fast_lane(config.getoption("markexpr", "") or "")
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.imported: dict[str, set[str]] = {}
        self.unmarked: set[str] = set()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem):
        modules, zoo, cpu = _top_level_modules(), _zoo_builds(), _cpu_seconds()
        yield
        self.cpu[item.nodeid] = _cpu_seconds() - cpu
        built = {f"build of {name}" for name, when in _zoo_builds().items() if zoo.get(name) != when}
        self.imported[item.nodeid] = {
            f"import of {m}" for m in (_top_level_modules() - modules) & FIRST_IMPORTS
        } | built
        if item.get_closest_marker("slow") is None:
            self.unmarked.add(item.nodeid)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.wall[report.nodeid] = self.wall.get(report.nodeid, 0.0) + report.duration

    def over(self) -> list[str]:
        """The unmarked tests over the limit in wall time, slowest first."""
        slow = [n for n in self.unmarked if self.wall.get(n, 0.0) > self.limit]
        return sorted(slow, key=lambda n: -self.wall[n])

    def failing(self) -> list[str]:
        """The unmarked tests over the limit in wall and CPU time, not excused by a first import or zoo build: what
        fails the lane."""
        return [n for n in self.over() if self.cpu.get(n, 0.0) > self.limit and not self.imported.get(n)]

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus) -> None:
        if self.enforced and self.failing() and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter) -> None:
        over = self.over()
        if not over:
            return
        failing = set(self.failing()) if self.enforced else set()
        title = f"{len(over)} test(s) over {self.limit:g} s without the slow marker"
        if failing:
            title += f"; {len(failing)} fail the fast lane (over in wall and CPU time): mark them slow or speed them up"
        terminalreporter.write_sep("-", title, red=bool(failing), yellow=not failing)
        for nodeid in over:
            why = "FAIL " if nodeid in failing else "     "
            note = f" (first {', '.join(sorted(self.imported[nodeid]))})" if self.imported.get(nodeid) else ""
            terminalreporter.write_line(
                f"{why}{self.wall[nodeid]:6.2f}s wall {self.cpu.get(nodeid, 0.0):6.2f}s CPU {nodeid}{note}"
            )


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("slow_seconds", "a test longer than this (seconds, its phases together) is marked slow", default="2")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(LaneTimer(config), "speechperf-lane-timer")
