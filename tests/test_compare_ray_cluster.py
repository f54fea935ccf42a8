"""``--executor ray`` on a Ray cluster of two nodes simulated on this machine (``ray.cluster_utils.Cluster``, one
CPU each): a child killed (SIGKILL) and a task whose worker dies are each one failed run with its real reason, the
other runs go on, concurrent tasks never share a core, and every run's files (stderr.txt included) come back from
the task into the driver's run folders. About 30 s: cluster start, three tiny onnxruntime children."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import psutil
import pytest

from speechperf.launch.cell import Cell
from speechperf.launch.launcher import run_cells

FAST = "general: {model_type: S2T, dataset_size: 1, warmup: 0, repeat: 1, meters: [runtime]}\n"
ENDLESS = "general: {model_type: S2T, dataset_size: 1, warmup: 0, repeat: 1000000, meters: [runtime]}\n"
STAGE = "stage1: {model: s2t, preset: tiny, max_len_b: 3}\n"


@pytest.fixture
def two_nodes():
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    if ray.is_initialized():
        ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    cluster.add_node(num_cpus=1)
    ray.init(address=cluster.address, log_to_driver=False)
    cluster.wait_for_nodes()
    yield ray
    ray.shutdown()
    cluster.shutdown()


def children_of(marker: str) -> list[psutil.Process]:
    """The bench children whose command line names ``marker`` (their config file)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info["cmdline"] or []
        if "bench" in cmdline and any(marker in part for part in cmdline):
            found.append(proc)
    return found


def fault(marker: str, worker_too: bool, done: threading.Event) -> None:
    """Once the child of ``marker`` runs: SIGKILL it (an OOM kill) and, with ``worker_too``, first the Ray worker
    that runs its task (a worker dying under it)."""
    while not done.is_set():
        targets = children_of(marker)
        if targets:
            with_parent = [targets[0].parent()] if worker_too else []
            for proc in [*with_parent, targets[0]]:
                proc.kill()
            return
        time.sleep(0.1)


@pytest.mark.slow
def test_two_nodes_a_killed_child_and_a_dead_worker_are_one_failed_run_each(two_nodes, tmp_path):
    ray = two_nodes
    assert len([n for n in ray.nodes() if n["Alive"]]) == 2
    configs = {}
    for name, general in (("ok", FAST), ("killed", ENDLESS), ("crashed", ENDLESS)):
        configs[name] = tmp_path / f"{name}.yaml"
        configs[name].write_text(general + STAGE)
    cells = [Cell(name, "onnxruntime", 1, path) for name, path in configs.items()]
    done = threading.Event()
    faults = [
        threading.Thread(target=fault, args=("killed.yaml", False, done), daemon=True),
        threading.Thread(target=fault, args=("crashed.yaml", True, done), daemon=True),
    ]
    for thread in faults:
        thread.start()
    try:
        results = run_cells(cells, 1, tmp_path / "w", executor="ray", jobs=2, timeout_s=120)
    finally:
        done.set()
    by_label = {r.label: r for r in results}
    assert set(by_label) == {"ok", "killed", "crashed"}  # every run recorded: the faults stopped nothing else
    ok, killed, crashed = by_label["ok"], by_label["killed"], by_label["crashed"]
    assert ok.ok and ok.exit_code == 0, ok.reason
    assert killed.signal == "SIGKILL" and killed.exit_code == 137
    assert killed.reason == "killed by SIGKILL (out of memory or killed)"
    assert not crashed.ok and crashed.reason.startswith("Ray task failed: "), crashed.reason
    assert "Ray task failed" in Path(crashed.stderr_path).read_text()
    # The files came back from the task's scratch folder into the driver's run folders.
    for result in (ok, killed):
        assert Path(result.stderr_path).parent == tmp_path / "w" / "run1" / result.label
        assert Path(result.stderr_path).is_file()
    assert json.loads(Path(ok.json_path).read_text())["complete"] is True
    assert "speechperf bench: S2T on onnxruntime/cpu" in (Path(ok.json_path).parent / "stdout.txt").read_text()
    # Each child was pinned to one of this machine's cores; two that ran at once (two nodes, one CPU each) never
    # on the same one. Ray may start a child only after another ended (on CI, ok ended before killed began).
    machine = set(range(psutil.cpu_count()))
    assert all(len(r.cores) == 1 and set(r.cores) <= machine for r in (ok, killed))
    overlapped = ok.started_at < killed.started_at + killed.wall_s and killed.started_at < ok.started_at + ok.wall_s
    if overlapped:
        assert set(ok.cores).isdisjoint(killed.cores)
