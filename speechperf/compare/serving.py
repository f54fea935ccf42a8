"""``compare --scenario``: each cell's ``speechperf loadgen`` in a fresh process of its own, one after the other,
ranked by what the scenario reports: Server by MLPerf's figure, LoadGen's scheduled samples per second of the best
VALID trial (each child runs the peak search of ``speechperf.loadgen.peak`` within ``--budget``), Offline by
samples/s, SingleStream and MultiStream by
the latency percentile (lower first).

A child is ``python -m speechperf loadgen ... --output <workdir>/<cell>/run.json --log-dir
<workdir>/<cell>/loadgen-logs/<start time>`` (a fresh folder, so that a reused --workdir keeps earlier logs)
(``speechperf.launch.child.run_child``: its own session, its exit classified as every compare child's). Ctrl-C
reaches this process only; the running child is sent SIGINT, so that it writes what it measured and LoadGen's logs
before it ends (``speechperf.loadgen.run``), and its partial row is kept.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from speechperf.launch.cell import Cell
from speechperf.launch.child import run_child
from speechperf.launch.result import RunResult
from speechperf.results import DocumentError
from speechperf.results import read as read_document
from speechperf.tables import significant

log = logging.getLogger(__name__)
#: Seconds an interrupted child gets to write its exports and LoadGen's logs before its group is killed.
INTERRUPT_GRACE_S = 30.0
#: scenario -> (the row's figure, its header, whether higher is better)
METRIC = {
    "Server": ("peak_qps", "peak samples/s", True),
    "Offline": ("samples_per_s", "samples/s", True),
    "SingleStream": ("latency_ms", "latency (ms)", False),
    "MultiStream": ("latency_ms", "latency (ms)", False),
}


@attrs.frozen
class ServingOptions:
    """The loadgen options every child gets (``speechperf.cli.options.scenario_run_options`` and the rest)."""

    scenario: str
    target_qps: float | None = None
    target_latency_ms: float = 1000.0
    percentile: float | None = None
    duration_s: float = 600.0
    min_queries: int | None = None
    samples_per_query: int = 8
    budget_s: float = 300.0
    start_qps: float | None = None  # the peak search's first rate (tune's searches of a rate known from its screening)
    instances: int = 1
    user_conf: str | None = None  # MLPerf's user.conf / audit.config, passed to every child as given
    audit_conf: str | None = None
    #: the scenario's MLPerf percentile, what the children use without --percentile (speechperf.loadgen.settings;
    #: given by the command, so that compare does not import the loadgen layer beside it)
    mlperf_percentile: float = 99.0

    @property
    def latency_percentile(self) -> float:
        return self.percentile if self.percentile is not None else self.mlperf_percentile

    def loadgen_args(self) -> list[str]:
        args = ["--scenario", self.scenario, "--target-latency-ms", repr(self.target_latency_ms)]
        args += ["--duration", repr(self.duration_s), "--instances", str(self.instances)]
        if self.scenario == "MultiStream":
            args += ["--samples-per-query", str(self.samples_per_query)]
        for flag, value in (
            ("--target-qps", self.target_qps),
            ("--percentile", self.percentile),
            ("--min-queries", self.min_queries),
            ("--user-conf", self.user_conf),
            ("--audit-conf", self.audit_conf),
        ):
            if value is not None:
                args += [flag, value if isinstance(value, str) else repr(value)]
        if self.scenario == "Server":
            args += ["--find-peak", "--budget", repr(self.budget_s)]
            if self.start_qps is not None:
                args += ["--start-qps", repr(self.start_qps)]
        return args


@attrs.frozen
class ServingRow:
    """One cell's child: its scenario figure and what LoadGen said of the run behind it."""

    label: str
    backend: str
    threads: int
    result: str  # VALID / INVALID (LoadGen's), INTERRUPTED, FAILED (no figures at all)
    metric: float | None  # METRIC's figure: peak scheduled samples/s, samples/s or the latency percentile in ms
    latency_ms: float | None  # the latency percentile of the run behind the figure (Server: at the peak)
    percentile: float
    rtfx: float | None
    samples: int | None
    trials: int  # LoadGen tests the child ran (Server: the peak search's trials)
    unmet: tuple[str, ...]
    compliance: tuple[str, ...]
    complete: bool
    ok: bool
    pid: int | None
    exit_code: int | None
    reason: str | None
    json_path: str
    log_dir: str
    #: Server: no trial above the peak was INVALID (the budget ended the search first), so the peak is only a
    #: lower bound of the rate the backend serves
    lower_bound: bool = False
    rank: int | None = None
    vs_best: float | None = None  # how many times the best's figure this one's is behind (1.0: the best)
    #: every latency percentile LoadGen reported for the run behind the figure ("p50" -> ms), for the plot
    percentiles_ms: dict[str, float] = attrs.Factory(dict)
    target_qps: float | None = None  # Server: the rate the peak trial was asked for (its figure is LoadGen's)
    stopped: str | None = None  # Server: why the child's peak search ended ("no rate can pass: ...")


def child_command(cell: Cell, opts: ServingOptions, workdir: Path) -> list[str]:
    run_dir = run_dir_of(workdir, cell)
    logs = run_dir / "loadgen-logs" / time.strftime("%Y%m%d-%H%M%S")
    return [
        sys.executable,
        "-m",
        "speechperf",
        *cell.bench_args(workdir, command="loadgen"),
        *opts.loadgen_args(),
        "--log-dir",
        str(logs),
        "--output",
        str(run_dir / "run.json"),
    ]


def run_dir_of(workdir: Path, cell: Cell) -> Path:
    return Path(workdir) / cell.slug


def row_of(cell: Cell, opts: ServingOptions, result: RunResult) -> ServingRow:
    """The row of ``result`` from the JSON its child wrote (partial when the child was interrupted)."""
    pct = opts.latency_percentile
    key = f"p{pct:g}"
    data = _read(result.json_path)
    runs = (data or {}).get("runs") or []
    base: dict[str, Any] = dict(
        label=cell.label,
        backend=cell.backend,
        threads=cell.threads,
        percentile=pct,
        ok=result.ok,
        pid=result.pid,
        exit_code=result.exit_code,
        reason=result.reason,
        json_path=result.json_path,
        log_dir=str(Path(result.json_path).parent / "loadgen-logs"),
    )
    if data and data.get("loadgen_logs"):
        base["log_dir"] = data["loadgen_logs"]
    if data and isinstance(data.get("peak"), dict):
        base["stopped"] = data["peak"].get("stopped")
    if not runs:
        return ServingRow(
            result="INTERRUPTED" if result.exit_code == 130 else "NO VALID RATE" if base.get("stopped") else "FAILED",
            metric=None,
            latency_ms=None,
            rtfx=None,
            samples=None,
            trials=0,
            unmet=(),
            compliance=(),
            complete=bool(base.get("stopped")) and result.ok,
            **base,
        )
    measured = [r for r in runs if r.get("complete", True)]
    if opts.scenario == "Server":
        valid = [r for r in measured if r["summary"]["valid"]]
        chosen = max(valid, key=_scheduled) if valid else (measured or runs)[-1]
        metric = _scheduled(chosen) if valid else None
        status = "VALID" if valid else chosen["summary"]["result"]
        base["target_qps"] = chosen["target_qps"] if valid else None
        missed = [r for r in measured if r["summary"].get("latency_missed", not r["summary"]["valid"])]
        above = [r for r in missed if valid and r["target_qps"] > chosen["target_qps"]]
        base["lower_bound"] = bool(valid) and not above
    else:
        chosen = (measured or runs)[-1]
        status = chosen["summary"]["result"]
        metric = chosen["summary"]["samples_per_s"] if opts.scenario == "Offline" else None
    latency = chosen["summary"]["percentiles_ms"].get(key)
    if METRIC[opts.scenario][0] == "latency_ms":
        metric = latency
    complete = bool(data and data.get("complete")) and result.exit_code != 130
    return ServingRow(
        result=status,
        metric=metric,
        latency_ms=latency,
        rtfx=chosen.get("rtfx"),
        samples=chosen.get("samples"),
        trials=len(runs),
        unmet=tuple(chosen["summary"]["unmet"]),
        compliance=tuple(chosen.get("compliance") or ()),
        complete=complete,
        percentiles_ms=dict(chosen["summary"]["percentiles_ms"]),
        **base,
    )


def _scheduled(run: dict[str, Any]) -> float:
    """MLPerf's Server figure of one trial: LoadGen's scheduled samples per second (a version 1 file without it:
    the target rate)."""
    scheduled = run["summary"].get("scheduled_qps")
    return float(scheduled if scheduled is not None else run["target_qps"])


def _read(path: str) -> dict[str, Any] | None:
    """A child's loadgen document as the current schema, whichever version wrote it; None when unreadable."""
    try:
        return read_document(path, kinds=("loadgen",)).to_json()
    except DocumentError:
        return None


def ranked(rows: Sequence[ServingRow], scenario: str) -> list[ServingRow]:
    """Rows with a figure first, best first (ties keep the cells' order), numbered; the others after, unranked."""
    _, _, higher = METRIC[scenario]
    figures = {r.label: float(r.metric) for r in rows if r.metric is not None and r.metric > 0}
    measured = sorted(
        (r for r in rows if r.label in figures), key=lambda r: -figures[r.label] if higher else figures[r.label]
    )
    out = []
    for n, row in enumerate(measured, 1):
        best, mine = figures[measured[0].label], figures[row.label]
        out.append(attrs.evolve(row, rank=n, vs_best=best / mine if higher else mine / best))
    return out + [r for r in rows if r not in measured]


def run_serving(
    cells: Sequence[Cell],
    opts: ServingOptions,
    workdir: Path,
    *,
    timeout_s: float | None = None,
    on_row: Callable[[list[ServingRow]], None] | None = None,
) -> list[ServingRow]:
    """Run every cell's child, one at a time; ``on_row`` gets the ranked rows after each child. Ctrl-C: the running
    child is interrupted (SIGINT), its partial row is added and ``on_row`` called, then KeyboardInterrupt goes on."""
    rows: list[ServingRow] = []
    for n, cell in enumerate(cells, 1):
        run_dir = run_dir_of(workdir, cell)
        log.info("compare --scenario %s: %s (%d of %d)", opts.scenario, cell.label, n, len(cells))
        started: list[int] = []
        try:
            result = run_child(
                child_command(cell, opts, workdir),
                run_dir,
                cell.label,
                0,
                timeout_s,
                on_start=started.append,
                interrupt_grace_s=INTERRUPT_GRACE_S,
            )
        except KeyboardInterrupt:
            stopped = RunResult(
                cell.label,
                0,
                False,
                130,
                None,
                "interrupted",
                str(run_dir / "run.json"),
                "",
                str(run_dir / "stderr.txt"),
                pid=started[0] if started else None,
            )
            rows.append(row_of(cell, opts, stopped))
            if on_row is not None:
                on_row(ranked(rows, opts.scenario))
            raise
        row = row_of(cell, opts, result)
        rows.append(row)
        shown = "-" if row.metric is None else significant(row.metric)
        log.info(
            "compare --scenario %s: %s: %s %s %s",
            opts.scenario,
            cell.label,
            row.result,
            METRIC[opts.scenario][1],
            shown,
        )
        if on_row is not None:
            on_row(ranked(rows, opts.scenario))
    return ranked(rows, opts.scenario)
