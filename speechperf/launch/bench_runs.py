"""``speechperf bench --runs N``: one config measured by N fresh ``speechperf bench`` processes, one after the other,
through the launcher (``speechperf.launch.launcher``), kept as one bench document.

The process run is the unit of every significance statement (docs/compare.md, "Regression gate"): the samples of
one process share its allocator, its thread pools and the load the machine had while it ran, so only the spread
between processes says how far a figure moves from one run to the next. The document is run 1's (its ``result``,
FLOPs, quality, notes), with:

- ``process_runs``: N, and ``runs``: per run how it ended, the load while it timed (the child's
  ``environment.load``, marked ``busy`` on a busy machine), ``wait_share`` (the share of its timed wall time its
  thread waited runnable for a CPU, ``speechperf.results.load.wait_share``) and ``per_sample_s``: each stage's and the total's
  per-sample runtimes (seconds), which ``speechperf diff`` tests over;
- in the rows, ``mean_ms``, ``stdev_ms``, ``median_ms`` and ``p90_ms`` over every sample of every finished run and
  ``peak_rss_mib`` the largest of the runs'; the other columns are run 1's;
- ``environment.load``: this process's probe over all the runs.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import attrs

from speechperf import stats
from speechperf.benchmark.report import unit_seconds
from speechperf.config.schema import BenchConfig
from speechperf.errors import SpeechperfError
from speechperf.exports import Exports
from speechperf.launch.cell import Cell
from speechperf.launch.result import RunResult
from speechperf.lifecycle import lifecycle
from speechperf.results import Document, DocumentError, read
from speechperf.results.environment import LoadProbe, busy_warning
from speechperf.results.load import wait_share

log = logging.getLogger(__name__)

#: What a run keeps of its process record (the child's files are in a temporary folder, gone afterwards).
RUN_FIELDS = ("run", "ok", "exit_code", "signal", "reason", "wall_s", "cpu_s", "max_rss_mib")


@attrs.define
class Finished:
    """One child run: how its process ended and the document it wrote (None when it wrote none)."""

    process: RunResult
    doc: Document | None

    @property
    def ok(self) -> bool:
        return self.process.ok and self.doc is not None

    def record(self) -> dict[str, Any]:
        kept = {name: getattr(self.process, name) for name in RUN_FIELDS}
        if self.doc is None:
            return {**kept, "load": None, "per_sample_s": None, "wait_share": None}
        result = self.doc["result"]
        waited = wait_share(result)
        return {
            **kept,
            "load": self.doc.environment.get("load"),
            "per_sample_s": unit_seconds(result),
            # the run's own contention: what diff reads to tell a side that waited for a CPU (docs/compare.md)
            "wait_share": None if waited is None else round(waited, 5),
        }


def run_bench(
    cfg: BenchConfig,
    runs: int,
    exports: Exports,
    *,
    memory_method: str = "hwm",
    out: IO[str] | None = None,
) -> int:
    """Measure ``cfg`` in ``runs`` fresh processes; write the exports after each run; print the runs' table.
    Returns 0 when every run finished, 1 when one failed; a run refused its input stops the rest (exit 2)."""
    from speechperf.benchmark import plan
    from speechperf.launch import launcher

    backend = plan.backend_name(cfg)
    plan.check(cfg, backend)  # as the children will, before the first one starts
    args = ("--quiet", "--memory-method", memory_method)
    cell = Cell("bench", backend, cfg.general.threads, cfg.to_dict(), args=args)
    finished: list[Finished] = []
    with lifecycle(exports, out=out) as run:
        probe = LoadProbe().start()

        def on_result(result: RunResult) -> None:
            finished.append(Finished(result, _read(Path(result.json_path))))
            now = document(finished, runs, probe.stop(), len(finished) == runs)
            if now is not None:
                run.write(now)

        with tempfile.TemporaryDirectory(prefix="speechperf-bench-runs-") as folder:
            launcher.run_cells([cell], runs, Path(folder), on_result=on_result, bad_input_stops="all")
        refused = next((f.process for f in finished if f.process.exit_code == 2 and f.process.signal is None), None)
        if refused is not None:
            raise SpeechperfError(f"bench --runs {runs}: run {refused.run + 1} was refused its input: {refused.reason}")
        finished.sort(key=lambda f: f.process.run)
        doc = document(finished, runs, probe.stop(), True)
        if doc is None:
            raise SpeechperfError(f"bench --runs {runs}: no run finished, so there is nothing to report")
        run.show(doc)  # the runs' table: the bench view of a document of N process runs (speechperf.views.bench)
        for f in finished:  # each child's own warning, already among the document's warnings
            line = busy_warning(f.doc.environment.get("load") if f.doc else None)
            if line:
                log.warning("run %d: %s", f.process.run + 1, line)
        failed = [f for f in finished if not f.ok]
        for f in failed:
            log.error("failed: run %d: %s", f.process.run + 1, f.process.reason or "no result document")
        return run.finish(doc, 1 if failed or any(r.get("failed") for r in doc.rows) else 0, show=False)


def _read(path: Path) -> Document | None:
    if not path.is_file():
        return None
    try:
        return read(path, kinds=("bench",))
    except DocumentError:
        return None


def document(finished: Sequence[Finished], runs: int, load: dict[str, Any], complete: bool) -> Document | None:
    """The runs so far as one bench document (see the module's doc); None until a run has finished."""
    done = sorted((f for f in finished if f.ok), key=lambda f: f.process.run)
    if not done:
        return None
    first = done[0].doc
    assert first is not None  # Finished.ok
    docs = [f.doc for f in done if f.doc is not None]
    warnings = list(first.warnings)
    for f in done[1:]:
        warnings += [f"run {f.process.run + 1}: {w}" for w in f.doc.warnings] if f.doc else []
    body = {**first.body, "process_runs": runs, "runs": [f.record() for f in finished]}
    return Document(
        kind="bench",
        config=first.config,
        environment={**first.environment, "load": load},
        rows=pooled_rows(docs),
        notes=list(first.notes),
        warnings=warnings,
        complete=complete and all(d.complete for d in docs),
        body=body,
    )


def pooled_rows(docs: Sequence[Document]) -> list[dict[str, Any]]:
    """Run 1's rows with the runtime figures over every sample of every run and the largest peak RSS."""
    seconds = [unit_seconds(d["result"]) for d in docs]
    rows = [dict(row) for row in docs[0].rows]
    for row in rows:
        name = str(row.get("stage"))
        summary = stats.Stats.of([v for each in seconds for v in (each.get(name) or {}).values()])
        if summary is not None:
            row.update(
                mean_ms=round(summary.mean * 1e3, 3),
                stdev_ms=None if summary.stdev is None else round(summary.stdev * 1e3, 3),
                median_ms=round(summary.median * 1e3, 3),
                p90_ms=round(summary.p90 * 1e3, 3),
            )
        peaks = [r["peak_rss_mib"] for d in docs for r in d.rows if r.get("stage") == name and r.get("peak_rss_mib")]
        if peaks:
            row["peak_rss_mib"] = max(peaks)
    return rows
