"""``speechperf history``: the stored runs, filtered, as rows; and one metric of them as series per config and
backend (the total, or one stage), each point with the run's spread where it stored one, over time or over commits
(docs/history.md)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import attrs

from speechperf.errors import SpeechperfError, shorten_path
from speechperf.outputs import file_problem
from speechperf.results import Document, figures
from speechperf.results.document import loads
from speechperf.results.figures import shown
from speechperf.store import db
from speechperf.store.record import HEADLINE, TOTAL, V1_HEADLINE

COLUMNS = ("id", "time", "kind", "model", "config", "backends", "commit", "headline")
#: ``--plot runtime``: the mean per-sample runtime (ms), ``mean_ms``, of bench, compare and optimize runs on one
#: plot, version 1 documents' own names for it (``runtime_mean_ms``, ``latency_ms``) included.
RUNTIME = "runtime"
X_AXES = ("time", "commit")
#: The spread a run stores beside a figure, drawn as its error bar: compare's is over its process runs' means,
#: bench's over its per-sample runtimes.
ERROR_OF = {"mean_ms": "stdev_ms"}
#: A config's stage models (``stage1.model: whisper-tiny-en``), read from the stored document's config.
_STAGE_MODELS = "SELECT value FROM json_tree(runs.result, '$.config') WHERE fullkey GLOB '$.config.stage*.model'"


class Point(NamedTuple):
    time: str
    commit: str
    value: float
    error: float | None = None  #: the run's own spread of the value (ERROR_OF), None where it stored none


@attrs.frozen
class Filters:
    backend: str | None = None
    #: a model_type (S2T), a stage's model name (whisper-tiny-en) or a config hash (its first characters)
    model: str | None = None
    since: str | None = None  #: an ISO date or time, UTC when it names no zone
    commit: str | None = None  #: a commit's first characters
    limit: int | None = None

    def where(self) -> tuple[str, list[Any]]:
        clauses, params = [], []
        if self.backend:
            clauses.append("(',' || backends || ',') LIKE ?")
            params.append(f"%,{self.backend},%")
        if self.model:
            clauses.append(f"(model = ? OR config_hash LIKE ? OR ? IN ({_STAGE_MODELS}))")
            params += [self.model, f"{self.model}%", self.model]
        if self.since:
            clauses.append("time >= ?")
            params.append(since_time(self.since))
        if self.commit:
            clauses.append("git_commit LIKE ?")
            params.append(f"{self.commit}%")
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


def since_time(text: str) -> str:
    """``--since 2026-01-31`` or ``2026-01-31T12:00``: the ISO time the runs' ``time`` column is compared with."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise SpeechperfError(
            f"--since {text!r}: not a date; give an ISO date or time such as 2026-01-31 or 2026-01-31T12:00"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="seconds")


def _check_known(store: Path, filters: Filters) -> None:
    """A filter naming a backend or model no stored run has: one line listing those the store holds."""
    for what, value, column in (("--backend", filters.backend, "backends"), ("--model", filters.model, "model")):
        if not value:
            continue
        found = sorted(
            {
                name
                for (text,) in db.select(store, f"SELECT DISTINCT {column} FROM runs", [])
                for name in (text or "").split(",")
                if name
            }
            | (_stage_models(store) if column == "model" else set())
        )
        if value not in found and not (column == "model" and _is_hash_prefix(store, value)):
            raise SpeechperfError(
                f"{what} {value!r}: no stored run has it; the store holds: {', '.join(found) or 'none'}"
            )


def _stage_models(store: Path) -> set[str]:
    sql = "SELECT DISTINCT t.value FROM runs, json_tree(runs.result, '$.config') AS t WHERE t.fullkey GLOB ?"
    return {m for (m,) in db.select(store, sql, ["$.config.stage*.model"]) if isinstance(m, str)}


def _is_hash_prefix(store: Path, value: str) -> bool:
    return bool(db.select(store, "SELECT 1 FROM runs WHERE config_hash LIKE ? LIMIT 1", [f"{value}%"]))


def runs(store: Path, filters: Filters) -> list[dict[str, Any]]:
    """The runs that pass ``filters``, newest first, as the listing's rows."""
    _check_known(store, filters)
    where, params = filters.where()
    limit = f" LIMIT {int(filters.limit)}" if filters.limit else ""
    found = db.select(store, f"SELECT {_LISTED} FROM runs{where} ORDER BY id DESC{limit}", params)
    return [_listed(store, r) for r in found]


_LISTED = "id, time, command, model, config_hash, backends, git_commit, git_dirty, result_schema_version"


def _listed(store: Path, r) -> dict[str, Any]:
    """A ``runs`` row as the listing shows it, with its headline figure per cell."""
    name, head = _headline(store, r["id"], r["command"], r["result_schema_version"])
    commit = None if r["git_commit"] is None else r["git_commit"][:10] + ("-dirty" if r["git_dirty"] else "")
    return {
        "id": r["id"],
        "time": r["time"],
        "kind": r["command"],
        "model": r["model"],
        "config": r["config_hash"],
        "backends": r["backends"],
        "commit": commit,
        "headline": ", ".join(f"{h['cell'] or h['backend']} {shown(name, h['value'])}" for h in head[:4])
        + (f" ({name})" if head else ""),
    }


def latest(store: Path, kind: str, config_hash: str | None, hostname: str) -> dict[str, Any] | None:
    """The newest stored run of ``kind`` with this config on this machine, as the listing shows it; None when
    the store holds none (or does not exist yet)."""
    if config_hash is None or not store.is_file():
        return None
    found = db.select(
        store,
        f"SELECT {_LISTED} FROM runs WHERE command = ? AND config_hash = ? AND hostname = ? ORDER BY id DESC LIMIT 1",
        [kind, config_hash, hostname],
    )
    return _listed(store, found[0]) if found else None


def _headline(store: Path, run_id: int, kind: str, version: int | None) -> tuple[str, list[Any]]:
    """The run's headline figure (``record.HEADLINE``; a version 1 document's own name for it) and its values per
    cell, lowest first."""
    names = (V1_HEADLINE if (version or 1) < 2 else HEADLINE).get(kind, ())
    for name in names:
        head = db.select(
            store,
            "SELECT backend, cell, value FROM metrics WHERE run_id = ? AND metric = ? AND stage = ? ORDER BY value",
            [run_id, name, TOTAL],
        )
        if head:
            return figures.V1_NAMES.get(kind, {}).get(name, name), head
    return "", []


def _aliases(metric: str) -> list[str]:
    """The names a stored metric may have: its own, and those version 1 documents gave it (``--plot mean_ms``
    finds a version 1 bench's ``runtime_mean_ms``); ``runtime``: the mean per-sample runtime of every kind."""
    wanted = {"mean_ms"} if metric == RUNTIME else {metric}
    old = {v1 for names in figures.V1_NAMES.values() for v1, now in names.items() if now in wanted}
    return sorted(wanted | old)


def _as_current(kind: str, version: int | None, name: str, value: float) -> tuple[str, float]:
    """A stored metric under its current name and unit: a version 1 run's renamed, its percents as fractions."""
    if (version or 1) >= 2:
        return name, value
    now = figures.V1_NAMES.get(kind, {}).get(name, name)
    return now, value / 100 if now in figures.V1_PERCENT.get(kind, ()) else value


def metrics(store: Path) -> list[str]:
    return [m for (m,) in db.select(store, "SELECT DISTINCT metric FROM metrics ORDER BY metric", [])]


def series(store: Path, metric: str, filters: Filters, stage: str | None) -> dict[str, list[Point]]:
    """Per line (``backend``, or a compare cell; led by the model type and config hash when the runs are of several
    configs): a Point of every stored run passing ``filters``, oldest first. The stage is ``stage``, else the total
    where the metric has one (a one-stage run's stage1 would repeat it), else one line per stage. An unknown
    metric or stage is one line listing those stored."""
    known = metrics(store)
    names = _aliases(metric)
    if not set(names) & set(known):
        raise SpeechperfError(
            f"--plot {metric!r}: no stored run has this metric; stored metrics: {', '.join([RUNTIME, *known])}"
        )
    stages = _stages(store, names)
    stage = plotted_stage(store, metric, stage)
    _check_known(store, filters)
    where, params = filters.where()
    where = where.replace(" WHERE ", " AND ", 1)
    error_name = ERROR_OF.get("mean_ms" if metric == RUNTIME else metric)
    wanted = [*names, *_aliases(error_name)] if error_name else names
    rows = db.select(
        store,
        "SELECT runs.id, runs.time, runs.command, runs.result_schema_version, runs.git_commit, runs.git_dirty, "
        "runs.model, runs.config_hash, metrics.metric, metrics.backend, metrics.cell, metrics.stage, "
        f"metrics.value FROM metrics JOIN runs ON runs.id = metrics.run_id "
        f"WHERE metrics.metric IN ({', '.join('?' * len(wanted))})"
        + (" AND metrics.stage = ?" if stage else "")
        + where
        + " ORDER BY runs.id",
        [*wanted, *([stage] if stage else []), *params],
    )
    values: dict[tuple, tuple[str, Any, float]] = {}  # (run, backend, cell, stage) -> (line, row, value)
    errors: dict[tuple, float] = {}
    # runs of different configs are never joined into one line: the line names the config when there are several
    configs = {r["config_hash"] for r in rows}
    for r in rows:
        if filters.backend and r["backend"] != filters.backend:
            continue
        now, value = _as_current(r["command"], r["result_schema_version"], r["metric"], r["value"])
        key = (r["id"], r["backend"], r["cell"], r["stage"])
        if error_name and now == error_name:
            errors[key] = value
            continue
        if now != metric and not (metric == RUNTIME and now == "mean_ms"):
            continue  # a name another kind, or another version, gives another figure
        values[key] = (_line_name(r, per_stage=stage is None and len(stages) > 1, configs=len(configs)), r, value)
    lines: dict[str, list[Point]] = {}
    for key, (name, r, value) in values.items():
        commit = (r["git_commit"] or "no commit")[:10] + ("-dirty" if r["git_dirty"] else "")
        lines.setdefault(name, []).append(Point(r["time"], commit, value, errors.get(key)))
    return lines


def _stages(store: Path, names: list[str]) -> list[str]:
    marks = ", ".join("?" * len(names))
    return [s for (s,) in db.select(store, f"SELECT DISTINCT stage FROM metrics WHERE metric IN ({marks})", names)]


def plotted_stage(store: Path, metric: str, stage: str | None) -> str | None:
    """The stage ``series`` draws: ``stage`` (refused with the stored ones when the metric has no such stage),
    else the total where the metric has one, else None (a line per stage)."""
    stages = _stages(store, _aliases(metric))
    if stage is not None and stage not in stages:
        raise SpeechperfError(f"--stage {stage!r}: not a stored stage of {metric}; stages: {', '.join(sorted(stages))}")
    return stage if stage is not None else (TOTAL if TOTAL in stages else None)


def _line_name(r, per_stage: bool, configs: int) -> str:
    """``onnxruntime``, a compare cell (``onnxruntime t=2``), an optimize variant; with its stage where each stage
    has a line; led by the model type and config hash where the runs are of several configs."""
    name = r["backend"] or "?"
    if r["cell"] and r["cell"] != name:  # a compare cell (onnxruntime t=2), an optimize variant (fp32)
        name = r["cell"] if name in r["cell"] else f"{name} {r['cell']}"
    if per_stage:
        name = f"{name} {r['stage']}"
    if configs > 1:
        name = f"{r['model'] or '?'} {(r['config_hash'] or '?')[:6]}: {name}"
    return name


def document(store: Path, run_id: int) -> Document:
    """The result document stored as run ``run_id`` (upgraded as a file would be); a one-line error when the store
    holds no such run."""
    if store.exists() and (problem := file_problem(store)) is not None:  # a FIFO would block, a folder is no store
        raise SpeechperfError(f"--store {shorten_path(store)} {problem}; a results store is an SQLite file")
    found = db.select(store, "SELECT result FROM runs WHERE id = ?", [run_id]) if store.is_file() else []
    if not found:
        last = db.select(store, "SELECT MAX(id) AS last FROM runs", []) if store.is_file() else []
        held = f"it holds runs 1 to {last[0]['last']}" if last and last[0]["last"] else "it holds no run"
        raise SpeechperfError(f"run {run_id}: not in the results store {shorten_path(store)}; {held}")
    return loads(found[0]["result"], f"run {run_id} of {shorten_path(store)}")
