"""``speechperf compare --executor ray`` on a local Ray (``ray.init(num_cpus=2)``): the same child runs as Ray
tasks, each child pinned to its own core, results gathered into the same JSON."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from speechperf.cli import main
from speechperf.compare.plan import build_cells
from speechperf.errors import SpeechperfError
from speechperf.launch.executors.ray import claim_cores
from speechperf.launch.launcher import run_cells

REPO = Path(__file__).resolve().parents[1]
FAST = ["general.dataset_size=1", "general.repeat=1", "general.warmup=1", "general.meters=[runtime]"]


@pytest.fixture(scope="module")
def local_ray():
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def test_claimed_cores_are_never_held_twice_and_a_dead_holder_frees_them(tmp_path):
    with claim_cores(1, [0, 1], tmp_path) as first, claim_cores(1, [0, 1], tmp_path) as second:
        assert first != second and sorted(first + second) == [0, 1]
        with pytest.raises(SpeechperfError, match=r"no 1 free core\(s\) among \[0, 1\] after 0.2 s"):
            with claim_cores(1, [0, 1], tmp_path, timeout_s=0.2):
                pass
    with claim_cores(2, [0, 1], tmp_path) as both:  # released at the end of the block
        assert both == [0, 1]
    # A process killed while it holds a core (a Ray worker OOM-killed) gives it back.
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
         "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)", str(tmp_path / "0.lock")],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdout.readline().strip() == "held"
    with claim_cores(1, [0, 1], tmp_path) as cores:
        assert cores == [1]
    holder.kill()
    holder.wait()
    with claim_cores(2, [0, 1], tmp_path, timeout_s=5) as cores:
        assert cores == [0, 1]
    with pytest.raises(SpeechperfError, match=r"threads = 3: this node lets the task use 2 core\(s\)"):
        with claim_cores(3, [0, 1], tmp_path):
            pass


@pytest.mark.slow
def test_ray_tasks_run_the_children_pinned_to_their_cores(local_ray, tmp_path):
    cells = build_cells(
        ["onnxruntime", "torch"], [1], [], config=REPO / "configs" / "S2T.yaml", preset="tiny", sets=FAST
    )
    results = run_cells(cells, 1, tmp_path, executor="ray", jobs=2)
    assert [(r.label, r.ok) for r in results] == [("onnxruntime", True), ("torch", True)], [r.reason for r in results]
    available = set(os.sched_getaffinity(0))
    assert all(len(r.cores) == 1 and set(r.cores) <= available for r in results)  # each pinned to one core
    first, second = sorted(results, key=lambda r: r.started_at)
    if second.started_at < first.started_at + first.wall_s:  # they ran at the same time: never on the same core
        assert first.cores != second.cores
    assert all(r.node == socket.gethostname() and r.exit_code == 0 for r in results)
    written = json.loads((tmp_path / "runs.json").read_text())["runs"]
    assert sorted(r["label"] for r in written) == ["onnxruntime", "torch"]
    for r in results:
        bench = json.loads(Path(r.json_path).read_text())
        assert bench["result"]["backend"] == r.label and bench["result"]["threads"] == 1


@pytest.mark.slow
def test_compare_cli_on_ray_writes_the_same_json(local_ray, tmp_path):
    out = tmp_path / "c.json"
    result = CliRunner().invoke(
        main,
        [
            "compare",
            "--executor",
            "ray",
            "--backends",
            "onnxruntime",
            "--runs",
            "2",
            "--config",
            str(REPO / "configs" / "S2T.yaml"),
            "--preset",
            "tiny",
            "--dataset-size",
            "1",
            "--repeat",
            "1",
            "--meters",
            "runtime",
            "--workdir",
            str(tmp_path / "w"),
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["complete"] is True and len(data["runs"]) == 2
    assert all(r["ok"] and r["node"] == socket.gethostname() and len(r["cores"]) == 1 for r in data["runs"])
    assert "Time (mean ± σ):" in result.output
