"""docs/backends.md's second worked example, a runtime that loads no ONNX (``examples/speechperf-pt2``: torch.export
programs), registered as an installed plugin is (its package and a ``*.dist-info`` with its entry point on
PYTHONPATH) and run in fresh processes: its own conformance suite, the version of a framework module without
``__version__``, its category table over ``batch_range=[1,3]`` (two steps, the rows adding up to each step), and the
template's ``profile --preset tiny`` step on it (the zoo's S2T reaches it as the torch-eager factory spec and is
exported into its cache folder)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip(
    "torch", reason="the pt2 example plugin runs torch.export programs: pip install 'speechperf[torch]'"
)

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "speechperf-pt2"


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("pt2-plugin")
    shutil.copytree(EXAMPLE / "speechperf_pt2", root / "speechperf_pt2")
    dist = root / "speechperf_pt2-0.1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: speechperf-pt2\nVersion: 0.1.0\n")
    (dist / "entry_points.txt").write_text("[speechperf.backends]\npt2 = speechperf_pt2.backend:Pt2Backend\n")
    return root


def run(plugin_path: Path, *args: str, cwd: Path | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(plugin_path), os.environ.get("PYTHONPATH", "")]),
        "COLUMNS": "200",
    }
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)


@pytest.mark.slow
def test_its_conformance_suite_passes(plugin_path, tmp_path):
    done = run(plugin_path, "-m", "pytest", str(EXAMPLE / "tests"), "-p", "no:cacheprovider", "-q", "-rs", cwd=tmp_path)
    tail = done.stdout[-3000:]
    assert done.returncode == 0, tail
    # every capability it has is checked: FLOPs by the counting rule, the profiled loop from step 0, the files
    skipped = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    checked = ("flops", "profiler", "missing_model_file", "wrong_format")
    assert not [line for line in skipped if any(name in line for name in checked)], tail


@pytest.mark.slow
def test_backends_lists_it_with_the_version_of_a_module_without_one(plugin_path, tmp_path):
    import importlib.metadata

    done = run(plugin_path, "-m", "speechperf", "backends", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (row,) = [b for b in json.loads(done.stdout) if b["name"] == "pt2"]
    assert row["available"] is True and row["version"] == importlib.metadata.version("torch")


@pytest.mark.slow
def test_the_template_profile_step_runs_on_it(plugin_path, tmp_path):
    """The template's `profile --preset tiny` (bench's default config; `bench --preset tiny` on a plugin:
    tests/test_plugin.py): the zoo's S2T exported to .pt2 on first use, the category table of batch_range=[1,3]
    covering 2 steps on the shared clock, its ops never more than the steps."""
    trace = tmp_path / "pt2 trace.json"
    options = f"batch_range=[1,3]; profile_path={trace}"
    profile = run(
        plugin_path, "-m", "speechperf", "profile", "-b", "pt2", "--preset", "tiny", "--profiler-options", options,
        "-o", str(tmp_path / "profile.json"), cwd=tmp_path,
    )  # fmt: skip
    assert profile.returncode == 0, profile.stderr[-2000:]
    assert "pt2 step by category (2 steps)" in profile.stdout, profile.stdout
    from speechperf.profiler.categories import CategoryTable
    from speechperf.results import read

    table = CategoryTable.read(trace.with_name("pt2 trace.categories.json"))
    assert table.steps == 2 and 0 < table.ops_ns <= table.step_ns  # between ops: the rest, never negative
    # the steps are timed by the clock that times every backend: the table's span is the two timed steps
    timing = read(tmp_path / "profile.json").body["timing"]
    assert table.step_ns == sum(timing["step_ns"])
    assert json.loads(trace.read_text())["traceEvents"]
