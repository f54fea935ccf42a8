"""A finished run as the store keeps it: its ``runs`` row and its ``metrics`` rows, read from its result document
(``speechperf.results.Document``, the same whether or not ``-o`` was given) by its ``kind``, plus what that document
does not hold: the machine's name and the git state of the folder the command ran in (docs/history.md)."""

from __future__ import annotations

import hashlib
import json
import os
import platform
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from speechperf.results import Document
from speechperf.results.environment import git_state

#: The figure ``speechperf history`` shows per run, by kind: the first of these its rows have (one name for every
#: kind, ``speechperf.results.figures``): the mean per-sample runtime, or a serving run's rate.
HEADLINE: dict[str, tuple[str, ...]] = {
    "bench": ("mean_ms",),
    "compare": ("mean_ms",),
    "compare-best": ("mean_ms",),
    "optimize": ("mean_ms",),
    "tune": ("mean_ms",),
    "serving": ("peak_qps", "samples_per_s"),
    "loadgen": ("peak_qps", "samples_per_s"),
}
#: Version 1 documents stored before the envelope kept their own names: bench's and optimize's mean.
V1_HEADLINE = {"bench": ("runtime_mean_ms",), "compare": ("mean_ms",), "optimize": ("latency_ms",)}
TOTAL = "total"
#: The key naming a row (a cell, a variant) in each kind's rows; bench's rows are named by their stage.
CELL_KEY = {
    "compare": "cell",
    "compare-best": "cell",
    "serving": "cell",
    "optimize": "variant",
    "tune": "candidate",
    "profile": "category",
}


def row_name(kind: str, row: dict[str, Any]) -> str | None:
    """The name of a row of a ``kind`` document, what diff compares and history draws a line of: a compare cell,
    an optimize variant; for loadgen the scenario (``Server peak`` for a peak search's result, ``Offline
    accuracy``); None for a peak search's trial (its rate differs from run to run: nothing to line it up with)."""
    if kind == "loadgen":
        if row.get("trial") is not None:
            return None
        mode = row.get("mode")
        return str(row.get("scenario")) + ("" if mode in (None, "performance") else f" {mode}")
    key = CELL_KEY.get(kind)
    return None if key is None else row.get(key)


def environment_of(doc: Document) -> dict[str, Any]:
    """The environment the run recorded; a compare whose envelope has none: its first run that recorded one."""
    if doc.environment.get("cpu") is None and doc.kind in ("compare", "compare-best"):
        runs = doc.get("runs") or ()
        return next((r["environment"] for r in runs if r.get("environment")), doc.environment)
    return doc.environment


def shown_environment(doc: Document) -> dict[str, Any]:
    """The environment a report shows, one level flattened (``packages.numpy``). A compare's runs are merged: a key
    every run agrees on is shown once, one they differ on (``backend``, a framework's version) lists each distinct
    value in run order, so the page does not pass the first child's backend off as the whole comparison's."""
    runs = doc.get("runs") or () if doc.kind in ("compare", "compare-best") else ()
    children = [r["environment"] for r in runs if isinstance(r, dict) and r.get("environment")]
    envs = [_flat(e) for e in children] or [_flat(doc.environment)]
    if children and doc.environment:
        envs.insert(0, _flat(doc.environment))
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


def backends_of(doc: Document) -> list[str]:
    """Every backend the run measured: its rows' and cells', the document's own, the environment's."""
    found = {r["backend"] for r in doc.rows if isinstance(r.get("backend"), str)}
    found |= {c["backend"] for c in doc.get("cells") or () if isinstance(c, dict) and c.get("backend")}
    env = environment_of(doc)
    for one in (doc.get("backend"), env.get("backend")):
        if isinstance(one, str):
            found.add(one)
    if env.get("backend"):
        found |= set(env.get("pinned_backends") or {})
    return sorted(found)


def metric_rows(doc: Document) -> list[tuple[str | None, str | None, str | None, str, float]]:
    """(backend, cell, stage, metric, value) for every number in the document's rows. bench has a row per stage
    and a ``total`` row; the other kinds one row per cell, variant or scenario (``total``). A loadgen peak search's
    trials are left out (in the stored document, not in the metrics)."""
    single = doc.get("backend") or environment_of(doc).get("backend")
    out = []
    for row in doc.rows:
        if doc.kind == "loadgen" and row_name(doc.kind, row) is None:
            continue
        backend = row.get("backend", single)
        cell = row_name(doc.kind, row)
        stage = row.get("stage", TOTAL)
        for metric, value in row.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and metric != "trial":
                out.append((backend, cell, stage, metric, float(value)))
    return out + (_compare_stages(doc) if doc.kind in ("compare", "compare-best") else [])


def _compare_stages(doc: Document) -> list[tuple[str | None, str | None, str | None, str, float]]:
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
    if not isinstance(config, dict):
        return None
    # the backend is the run's, not the config's: bench on one backend and compare over several share a config
    general = {k: v for k, v in (config.get("general") or {}).items() if k != "backend"}
    text = json.dumps({**config, "general": general}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def record(doc: Document, exit_code: int | None, cwd: str | Path | None = None) -> dict[str, Any]:
    """The ``runs`` row of a finished run (docs/history.md, "Schema"); its ``command`` column holds the kind."""
    folder = Path(cwd or os.getcwd())
    commit, dirty = git_state(folder)
    env = environment_of(doc)
    config = doc.config if isinstance(doc.config, dict) else {}
    return {
        "time": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": doc.kind,
        "config_hash": config_hash(doc.config),
        "model": (config.get("general") or {}).get("model_type"),
        "backends": ",".join(backends_of(doc)),
        "complete": int(bool(doc.complete)),
        "exit_code": exit_code,
        "cwd": str(folder),
        "git_commit": commit,
        "git_dirty": None if dirty is None else int(dirty),
        "hostname": platform.node(),
        "cpu": env.get("cpu"),
        "cores": env.get("cpu_count") or os.cpu_count(),
        "python": env.get("python") or platform.python_version(),
        "packages": env.get("packages") or {},
        "result_schema_version": doc.schema_version,
        "result": json.dumps(doc.to_json(), allow_nan=False, default=str),
    }
