"""What a result document records of the machine a run measured on: hardware, Python, package versions, the git
commit, and the load other processes put on it while timing (``LoadProbe``), so that a reader of two runs can tell
a regression from a busy machine (docs/results.md, "environment")."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import attrs

#: The packages whose versions every document records (read from the installed metadata: nothing is imported).
PACKAGES = (
    "speechperf",
    "numpy",
    "torch",
    "paddlepaddle",
    "onnxruntime",
    "onnx",
    "paddle2onnx",
    "silero-vad",
    "soundfile",
    "soxr",
)


def git_state(folder: str | Path) -> tuple[str | None, bool | None]:
    """The commit checked out in ``folder`` and whether tracked files differ from it; (None, None) when the folder
    is in no git work tree or git is not installed."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
        )
        if commit.returncode != 0:
            return None, None
        dirty = subprocess.run(
            ["git", "-C", str(folder), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
        )
        return commit.stdout.strip(), bool(dirty.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        return None, None


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = None
    return versions


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def speechperf_commit() -> str | None:
    """The commit of the speechperf checkout in use, with ``-dirty`` when it has changes; None if not in git."""
    commit, dirty = git_state(Path(__file__).resolve().parent)
    return None if commit is None else commit + ("-dirty" if dirty else "")


def machine() -> dict[str, Any]:
    """The machine and software every document records; a command adds its own keys (threads, backend, ...)."""
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "packages": package_versions(),
        "git_commit": speechperf_commit(),
    }


def _busy_cpu_seconds() -> float:
    """CPU seconds every process on the machine has run since boot (user + system + nice + irq), from psutil."""
    import psutil

    t = psutil.cpu_times()
    return sum(getattr(t, name, 0.0) for name in ("user", "nice", "system", "irq", "softirq", "steal"))


@attrs.define
class LoadProbe:
    """The load other processes put on the machine while a run timed: ``start()`` before the timed work,
    ``stop()`` after it. ``busy_cores_others`` is the cores other processes kept busy on average over the run
    (machine CPU time minus this process's, over wall time): a figure that says whether two runs saw the same
    machine, where the load average alone mixes in this run's own threads."""

    _t0: float | None = None
    _machine0: float = 0.0
    _own0: float = 0.0
    load_before: tuple[float, float, float] | None = None
    result: dict[str, Any] | None = None

    def start(self) -> LoadProbe:
        self.load_before = _loadavg()
        self._machine0, self._own0, self._t0 = _busy_cpu_seconds(), _own_cpu_seconds(), time.monotonic()
        return self

    def stop(self) -> dict[str, Any]:
        if self._t0 is None:
            raise RuntimeError("LoadProbe.stop() before start()")
        wall = max(time.monotonic() - self._t0, 1e-9)
        machine_s = _busy_cpu_seconds() - self._machine0
        own_s = _own_cpu_seconds() - self._own0
        others, own, cores = max(0.0, machine_s - own_s) / wall, own_s / wall, os.cpu_count() or 1
        self.result = {
            "seconds": round(wall, 3),
            "busy_cores_others": round(others, 2),
            "busy_cores_own": round(own, 2),
            "loadavg_before": self.load_before,
            "loadavg_after": _loadavg(),
            "cpu_count": cores,
            "busy": is_busy(others, cores, own),
        }
        return self.result


#: Cores other processes may keep busy on average while a run times: above it, and with fewer cores left idle than
#: the run used plus half a core, the run shared its cores and its figures are marked as measured on a busy machine.
#: (The roofs' rule, speechperf.meters.roofs.BUSY_CORES, with the cores the run really used in place of its threads.)
BUSY_CORES_OTHERS = 0.75


def is_busy(others: float, cores: int, own: float) -> bool:
    """Whether other processes keeping ``others`` of ``cores`` busy left a run that used ``own`` cores too few."""
    return others > BUSY_CORES_OTHERS and cores - others < max(own, 1.0) + 0.5


def describe_load(load: dict[str, Any]) -> str:
    """``other processes kept 1.52 of 2 cores busy (load average 3.43)``: a probe's figures in words."""
    average = load.get("loadavg_before")
    text = f"other processes kept {load.get('busy_cores_others', 0.0):.2f} of {load.get('cpu_count')} cores busy"
    return text + (f" (load average {average[0]:.2f})" if average else "")


def busy_warning(load: dict[str, Any] | None) -> str | None:
    """The line a command logs under figures measured on a busy machine; None on a quiet one (or no probe)."""
    if not load or not load.get("busy"):
        return None
    return (
        f"warning: measured on a busy machine: {describe_load(load)} while timing; the figures are slower and "
        "noisier than on a quiet one (docs/results.md, environment)"
    )


def _own_cpu_seconds() -> float:
    """This process and its finished children: a compare child or a derive export counts as the run's own."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _loadavg() -> tuple[float, float, float] | None:
    try:
        one, five, fifteen = os.getloadavg()
    except (OSError, AttributeError):
        return None
    return (round(one, 2), round(five, 2), round(fifteen, 2))
