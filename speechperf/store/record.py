"""A finished run as the store keeps it: its ``runs`` row and its ``metrics`` rows, read from the JSON document
the command writes with ``-o`` (the same document, whether or not ``-o`` was given), plus what that document does
not hold: the machine's name and the git state of the folder the command ran in (docs/history.md)."""

from __future__ import annotations

import hashlib
import json
import os
import platform
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from speechperf.results.environment import git_state

#: Where each command's document keeps its table rows, and the name of a row (a cell) in it.
ROWS = {"bench": ("summary", None), "compare": ("summary", "cell"), "optimize": ("table", "variant")}
#: The metric ``speechperf history`` shows per run: the mean per-sample runtime of the whole run, in ms.
HEADLINE = {"bench": "runtime_mean_ms", "compare": "mean_ms", "optimize": "latency_ms"}
TOTAL = "total"


def environment_of(command: str, doc: dict[str, Any]) -> dict[str, Any]:
    """The environment the run recorded (compare: its first run that recorded one); {} when none did."""
    if command == "compare":
        return next((r["environment"] for r in doc.get("runs") or () if r.get("environment")), {})
    return doc.get("environment") or {}


def shown_environment(command: str, doc: dict[str, Any]) -> dict[str, Any]:
    """The environment a report shows, one level flattened (``packages.numpy``). A compare's runs are merged: a key
    every run agrees on is shown once, one they differ on (``backend``, a framework's version) lists each distinct
    value in run order, so the page does not pass the first child's backend off as the whole comparison's."""
    docs = [r["environment"] for r in doc.get("runs") or () if r.get("environment")] if command == "compare" else []
    envs = [_flat(e) for e in docs] or [_flat(doc.get("environment") or {})]
    shown: dict[str, list[Any]] = {}
    for env in envs:
        for key, value in env.items():
            values = shown.setdefault(key, [])
            if value not in values:
                values.append(value)
    return {k: v[0] if len(v) == 1 else " | ".join(map(str, v)) for k, v in shown.items()}


def _flat(env: dict[str, Any]) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in env.items():
        if isinstance(value, dict):
            flat.update({f"{key}.{k}": v for k, v in value.items()})
        else:
            flat[key] = value
    return flat


def backends_of(command: str, doc: dict[str, Any]) -> list[str]:
    if command == "compare":
        return sorted({c["backend"] for c in doc.get("cells") or ()})
    if command == "optimize":
        return [doc["backend"]]
    env = doc.get("environment") or {}
    return [env["backend"], *sorted(env.get("pinned_backends") or {})] if env.get("backend") else []


def metric_rows(command: str, doc: dict[str, Any]) -> list[tuple[str | None, str | None, str | None, str, float]]:
    """(backend, cell, stage, metric, value) for every number in the command's table rows. bench has a row per
    stage and a ``total`` row; compare and optimize have one row per cell (``total``)."""
    key, cell_key = ROWS[command]
    single = doc.get("backend") if command == "optimize" else None
    out = []
    for row in doc.get(key) or ():
        backend, cell = row.get("backend", single), row.get(cell_key) if cell_key else None
        stage = row.get("stage", TOTAL)
        for metric, value in row.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out.append((backend, cell, stage, metric, float(value)))
    return out + (_compare_stages(doc) if command == "compare" else [])


def _compare_stages(doc: dict[str, Any]) -> list[tuple[str | None, str | None, str | None, str, float]]:
    """compare's per-stage figure, which its table (one row per cell) does not have: each cell's mean per-sample
    runtime of each stage (``mean_ms``), the mean over its finished runs of each run's mean, as the ranking's."""
    backends = {c["label"]: c["backend"] for c in doc.get("cells") or ()}
    per_run: dict[tuple[str, str], list[float]] = {}
    for run in doc.get("runs") or ():
        for stage in (run.get("timings") or {}).get("stages") or ():
            samples = [sum(ns) / len(ns) for ns in stage["ns"].values() if ns]
            if samples:
                key = (run["label"], f"stage{stage['stage']} {stage['role']}")
                per_run.setdefault(key, []).append(sum(samples) / len(samples) / 1e6)
    return [
        (backends.get(label), label, stage, "mean_ms", sum(means) / len(means))
        for (label, stage), means in per_run.items()
    ]


def config_hash(config: Any) -> str | None:
    """What identifies a config across runs: a hash of its merged form, keys sorted (the same YAML written in
    another order, or reached through other overrides, is the same config)."""
    if config is None:
        return None
    # the backend is the run's, not the config's: bench on one backend and compare over several share a config
    general = {k: v for k, v in (config.get("general") or {}).items() if k != "backend"}
    text = json.dumps({**config, "general": general}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def record(command: str, doc: dict[str, Any], exit_code: int | None, cwd: str | Path | None = None) -> dict[str, Any]:
    """The ``runs`` row of a finished run (docs/history.md, "Schema")."""
    folder = Path(cwd or os.getcwd())
    commit, dirty = git_state(folder)
    env = environment_of(command, doc)
    config = doc.get("config") or {}
    return {
        "time": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": command,
        "config_hash": config_hash(doc.get("config")),
        "model": (config.get("general") or {}).get("model_type"),
        "backends": ",".join(backends_of(command, doc)),
        "complete": int(bool(doc.get("complete"))),
        "exit_code": exit_code,
        "cwd": str(folder),
        "git_commit": commit,
        "git_dirty": None if dirty is None else int(dirty),
        "hostname": platform.node(),
        "cpu": env.get("cpu"),
        "cores": env.get("cpu_count") or os.cpu_count(),
        "python": env.get("python") or platform.python_version(),
        "packages": env.get("packages") or {},
        "result_schema_version": doc.get("schema_version"),
        "result": json.dumps(doc, allow_nan=False, default=str),
    }
