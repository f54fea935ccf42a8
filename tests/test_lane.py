"""The fast lane's rule (tests/lane.py) on a tiny test file run by pytest in this process, with a limit of 0.1 s:
an unmarked test over it in wall and CPU time fails a ``-m "not slow"`` run, and only that test is named; one that
waits (wall time, no CPU), one marked slow, and one that imports a framework for the first time do not."""

from __future__ import annotations

import pytest

from speechperf.cache import CACHE_ENV
from tests.lane import selects_the_fast_lane

pytest_plugins = ["pytester"]

TESTS = """
import time

import pytest


def spin(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_busy():
    spin(0.25)


def test_waits():
    time.sleep(0.25)


@pytest.mark.slow
def test_busy_but_marked():
    spin(0.25)


def test_quick():
    assert True
"""


@pytest.fixture
def lane(pytester, monkeypatch):
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # the inner run loads only what it is given
    # The inner run's own cache: a zoo build by another xdist worker in this run's cache would otherwise excuse
    # test_busy as "first build of ..." and the fast lane would pass.
    monkeypatch.setenv(CACHE_ENV, str(pytester.path / "cache"))
    pytester.makeini("[pytest]\nslow_seconds = 0.1\nmarkers =\n    slow: takes long\n")
    pytester.makepyfile(test_tiny=TESTS)
    return pytester


def test_an_unmarked_test_over_the_limit_in_wall_and_cpu_time_fails_the_fast_lane(lane):
    result = lane.runpytest("-p", "tests.lane", "-m", "not slow")
    result.assert_outcomes(passed=3, deselected=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.re_match_lines([r".*2 test\(s\) over 0.1 s without the slow marker; 1 fail the fast lane.*"])
    result.stdout.re_match_lines([r"^FAIL +\d+\.\d\ds wall +\d+\.\d\ds CPU test_tiny.py::test_busy$"])
    result.stdout.re_match_lines(
        [r"^ +\d+\.\d\ds wall +\d+\.\d\ds CPU test_tiny.py::test_waits$"]
    )  # listed, not failed
    assert "test_busy_but_marked" not in result.stdout.str() and "test_quick" not in result.stdout.str()


def test_a_run_of_the_whole_suite_lists_the_slow_test_and_passes(lane):
    result = lane.runpytest("-p", "tests.lane")
    result.assert_outcomes(passed=4)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.re_match_lines([r"^ +\d+\.\d\ds wall +\d+\.\d\ds CPU test_tiny.py::test_busy$"])


def test_a_first_import_of_a_framework_is_listed_not_failed(lane, monkeypatch):
    import tests.lane

    monkeypatch.setattr(tests.lane, "FIRST_IMPORTS", frozenset({"lane_heavy_module"}))
    lane.makepyfile(
        lane_heavy_module="import time\nend = time.process_time() + 0.25\nwhile time.process_time() < end:\n    pass\n"
    )
    lane.makepyfile(test_import="def test_imports():\n    import lane_heavy_module\n")
    lane.syspathinsert()
    result = lane.runpytest("-p", "tests.lane", "-m", "not slow", "test_import.py")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.re_match_lines([r".*CPU test_import.py::test_imports \(first import of lane_heavy_module\)$"])


def test_a_build_into_the_shared_zoo_cache_is_listed_not_failed(lane):
    lane.makepyfile(
        test_build="""
        import os, time
        from pathlib import Path

        def test_builds():
            folder = Path(os.environ["SPEECHPERF_CACHE_DIR"]) / "zoo" / "tiny" / "s2t"
            folder.mkdir(parents=True)
            end = time.process_time() + 0.25
            while time.process_time() < end:
                pass
            (folder / "manifest.json").write_text("{}")

        def test_uses_the_build():
            spin = time.process_time() + 0.25
            while time.process_time() < spin:
                pass
        """
    )
    result = lane.runpytest("-p", "tests.lane", "-m", "not slow", "test_build.py")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the second one has no excuse
    result.stdout.re_match_lines(
        [r"^ +0\.\d\ds wall +0\.\d\ds CPU test_build.py::test_builds \(first build of s2t/tiny\)$"]
    )
    result.stdout.re_match_lines([r"^FAIL .*test_build.py::test_uses_the_build$"])


@pytest.mark.parametrize(
    "markexpr, fast",
    [("not slow", True), ("  not   slow ", True), ("not slow and not gpu", True), ("(not slow)", True)]
    + [("slow", False), ("", False), ("not slow or slow", False), ("gpu", False)],
)
def test_the_fast_lane_is_a_selection_that_leaves_slow_out(markexpr, fast):
    assert selects_the_fast_lane(markexpr) is fast
