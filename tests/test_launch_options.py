"""One --executor / --jobs / --timeout declaration (speechperf.cli.options.launch_options) for every command that
launches children: the same choices, from the executors registry, and the same ranges."""

from __future__ import annotations

import click
import pytest

from speechperf.cli import main
from speechperf.launch.executors import EXECUTORS

LAUNCHING = ("compare", "optimize", "tune")


def _param(command: str, name: str) -> click.Parameter:
    cmd = main.commands[command]
    return next(p for p in cmd.params if p.name == name)


@pytest.mark.parametrize("command", LAUNCHING)
def test_every_launching_command_offers_the_registry_s_executors(command):
    executor = _param(command, "executor")
    assert isinstance(executor.type, click.Choice)
    assert tuple(executor.type.choices) == tuple(EXECUTORS)
    assert executor.default == "local"


def test_jobs_and_timeout_are_declared_alike_everywhere():
    for name in ("jobs", "timeout_s"):
        types = {repr(_param(command, name).type) for command in LAUNCHING}
        assert len(types) == 1, (name, types)


@pytest.mark.parametrize("command", ["compare", "optimize"])
def test_every_executor_s_summary_is_in_the_help(command):
    help_text = _param(command, "executor").help or ""
    for name, module in EXECUTORS.items():
        assert f"{name}: {module.SUMMARY}" in help_text


def test_tune_s_help_says_why_it_refuses_inprocess():
    help_text = _param("tune", "executor").help or ""
    assert "inprocess: each child" not in help_text and "Not inprocess: its runs share this process" in help_text


@pytest.mark.parametrize(
    "args",
    [
        ["compare", "--backends", "onnxruntime", "--workdir", "{o}"],
        ["optimize", "-b", "onnxruntime", "--method", "ort-dynamic", "--out-dir", "{o}"],
    ],
)
def test_jobs_the_executor_cannot_run_are_refused_before_any_work(tmp_path, args):
    from click.testing import CliRunner

    from tests.test_outputs import one_line_error

    out = tmp_path / "o"
    given = [a.format(o=out) for a in args]
    result = CliRunner().invoke(main, [*given, "--executor", "inprocess", "--jobs", "2"])
    assert one_line_error(result) == "Error: --executor inprocess runs one child at a time; got --jobs 2"
    assert not out.exists()
