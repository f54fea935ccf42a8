"""``speechperf history``: the stored runs, filtered, as rows; and one metric of them as series per backend and
stage, over time or over commits (docs/history.md)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs

from speechperf.errors import SpeechperfError
from speechperf.store import db
from speechperf.store.record import HEADLINE, TOTAL

COLUMNS = ("id", "time", "command", "model", "config", "backends", "commit", "headline")
#: ``--plot runtime``: the mean per-sample runtime (ms) under each command's own name for it, so that bench,
#: compare and optimize runs land on one plot.
RUNTIME = "runtime"
X_AXES = ("time", "commit")


@attrs.frozen
class Filters:
    backend: str | None = None
    model: str | None = None  #: a model_type (S2T) or a config hash (its first characters)
    since: str | None = None  #: an ISO date or time, UTC when it names no zone
    commit: str | None = None  #: a commit's first characters
    limit: int | None = None

    def where(self) -> tuple[str, list[Any]]:
        clauses, params = [], []
        if self.backend:
            clauses.append("(',' || backends || ',') LIKE ?")
            params.append(f"%,{self.backend},%")
        if self.model:
            clauses.append("(model = ? OR config_hash LIKE ?)")
            params += [self.model, f"{self.model}%"]
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
        )
        if value not in found and not (column == "model" and _is_hash_prefix(store, value)):
            raise SpeechperfError(
                f"{what} {value!r}: no stored run has it; the store holds: {', '.join(found) or 'none'}"
            )


def _is_hash_prefix(store: Path, value: str) -> bool:
    return bool(db.select(store, "SELECT 1 FROM runs WHERE config_hash LIKE ? LIMIT 1", [f"{value}%"]))


def runs(store: Path, filters: Filters) -> list[dict[str, Any]]:
    """The runs that pass ``filters``, newest first, as the listing's rows."""
    _check_known(store, filters)
    where, params = filters.where()
    limit = f" LIMIT {int(filters.limit)}" if filters.limit else ""
    found = db.select(
        store,
        "SELECT id, time, command, model, config_hash, backends, git_commit, git_dirty FROM runs"
        f"{where} ORDER BY id DESC{limit}",
        params,
    )
    out = []
    for r in found:
        head = db.select(
            store,
            "SELECT backend, cell, value FROM metrics WHERE run_id = ? AND metric = ? AND stage = ? ORDER BY value",
            [r["id"], HEADLINE[r["command"]], TOTAL],
        )
        commit = None if r["git_commit"] is None else r["git_commit"][:10] + ("-dirty" if r["git_dirty"] else "")
        out.append(
            {
                "id": r["id"],
                "time": r["time"],
                "command": r["command"],
                "model": r["model"],
                "config": r["config_hash"],
                "backends": r["backends"],
                "commit": commit,
                "headline": ", ".join(f"{h['cell'] or h['backend']} {h['value']:.3f}" for h in head[:4])
                + (f" ms ({HEADLINE[r['command']]})" if head else ""),
            }
        )
    return out


def metrics(store: Path) -> list[str]:
    return [m for (m,) in db.select(store, "SELECT DISTINCT metric FROM metrics ORDER BY metric", [])]


def series(store: Path, metric: str, filters: Filters, stage: str | None) -> dict[str, list[tuple[str, str, float]]]:
    """Per line (``backend`` or ``backend stage``, led by the model type and config hash when the runs are of
    several configs): (time, commit, value) of every stored run passing ``filters``, oldest first. An unknown metric or stage is one line listing those stored."""
    known = metrics(store)
    names = sorted(set(HEADLINE.values())) if metric == RUNTIME else [metric]
    if not set(names) & set(known):
        raise SpeechperfError(
            f"--plot {metric!r}: no stored run has this metric; stored metrics: {', '.join([RUNTIME, *known])}"
        )
    marks = ", ".join("?" * len(names))
    stages = [s for (s,) in db.select(store, f"SELECT DISTINCT stage FROM metrics WHERE metric IN ({marks})", names)]
    if stage is not None and stage not in stages:
        raise SpeechperfError(f"--stage {stage!r}: not a stored stage of {metric}; stages: {', '.join(sorted(stages))}")
    _check_known(store, filters)
    where, params = filters.where()
    where = where.replace(" WHERE ", " AND ", 1)
    rows = db.select(
        store,
        "SELECT runs.id, runs.time, runs.git_commit, runs.git_dirty, runs.model, runs.config_hash, "
        "metrics.backend, metrics.cell, metrics.stage, "
        f"metrics.value FROM metrics JOIN runs ON runs.id = metrics.run_id WHERE metrics.metric IN ({marks})"
        + (" AND metrics.stage = ?" if stage else "")
        + where
        + " ORDER BY runs.id",
        [*names, *([stage] if stage else []), *params],
    )
    lines: dict[str, list[tuple[str, str, float]]] = {}
    # runs of different configs are never joined into one line: the line names the config when there are several
    configs = {r["config_hash"] for r in rows}
    for r in rows:
        if filters.backend and r["backend"] != filters.backend:
            continue
        name = r["backend"] or "?"
        if r["cell"] and r["cell"] != name:  # a compare cell (onnxruntime t=2), an optimize variant (fp32)
            name = r["cell"] if name in r["cell"] else f"{name} {r['cell']}"
        if len(stages) > 1 and not stage:
            name = f"{name} {r['stage']}"
        if len(configs) > 1:
            name = f"{r['model'] or '?'} {(r['config_hash'] or '?')[:6]}: {name}"
        commit = (r["git_commit"] or "no commit")[:10] + ("-dirty" if r["git_dirty"] else "")
        lines.setdefault(name, []).append((r["time"], commit, r["value"]))
    return lines
