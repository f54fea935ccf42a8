"""``speechperf compare --best``: each backend at its best, then the winners compared.

A comparison of one framework's deployment path against another's debug path measures our choice of path, not
the frameworks. So, per backend, every variant it declares (``variants()``: speechperf.backend.variants.Variant, a
zoo format and options) is measured on the config's data, in fresh processes as every compare run is (the same
launcher, ``speechperf.launch.launcher``); a variant whose outputs fail parity with the reference (the first
variant of the first backend, the compare's own rule) is dropped with the reason; each backend's fastest
remaining variant is its winner; and the command then runs the usual interleaved comparison of the winners.

The search is bounded by a budget in seconds: variants are tried round-robin over the backends (each backend's
first variant, then each one's second, ...), so a short budget still measures every backend's default path; a
variant not started when the budget is spent is "not tried", and a running child is killed when it runs past the
budget. The cold start of a variant is the median over its runs of the stages' load time plus their first call
(where ``torch.compile`` compiles): never part of the timings (docs/compare.md, "Each backend at its best").
"""

from __future__ import annotations

import json
import logging
import statistics
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from speechperf.backend import Variant, hooks
from speechperf.compare.parity import CellParity, group_parity
from speechperf.compare.summary import CellSummary, summarize
from speechperf.launch.cell import Cell
from speechperf.launch.launcher import run_cells
from speechperf.launch.lists import PlanError
from speechperf.launch.result import RunResult

log = logging.getLogger(__name__)

#: ``--best-budget``'s default, seconds: the whole search, every backend's variants together.
DEFAULT_BUDGET_S = 1800.0
#: Runs of each variant in the search (the winners then get ``--runs``): two give a σ.
DEFAULT_SEARCH_RUNS = 2
#: A backend that declares no variants is searched over its stage's own path, under this name.
DEFAULT_VARIANT = Variant("default", note="the stage's own format and options")


@attrs.frozen
class Candidate:
    """One variant of one backend, and the compare cell that measures it."""

    backend: str
    variant: Variant
    cell: Cell


@attrs.frozen
class SearchRow:
    """One variant in the search table: its time over its runs, cold start, parity and what became of it."""

    backend: str
    variant: str
    what: str
    mean_s: float | None
    stdev_s: float | None
    cold_start_s: float | None
    parity: str
    status: str  # "winner", "slower", "dropped: ...", "failed: ...", "not tried: ..."

    def record(self) -> dict[str, Any]:
        """The row in the JSON and Markdown: milliseconds and seconds rounded to 3 decimals."""
        out = attrs.asdict(self)
        out["mean_ms"] = _rounded(out.pop("mean_s"), 1e3)
        out["stdev_ms"] = _rounded(out.pop("stdev_s"), 1e3)
        out["cold_start_s"] = _rounded(self.cold_start_s, 1.0)
        return out


def _rounded(value: float | None, scale: float) -> float | None:
    return None if value is None else round(value * scale, 3)


@attrs.frozen
class BestSearch:
    """The search's rows (in the order tried), each backend's winning candidate, and what bounded it."""

    rows: tuple[SearchRow, ...]
    winners: dict[str, Candidate]
    reference: str | None
    budget_s: float
    elapsed_s: float
    runs: int

    def to_json(self) -> dict[str, Any]:
        return {
            "budget_s": self.budget_s,
            "elapsed_s": round(self.elapsed_s, 1),
            "runs_per_variant": self.runs,
            "reference": self.reference,
            "winners": {b: c.variant.name for b, c in self.winners.items()},
            "search": [r.record() for r in self.rows],
        }


def backend_variants(name: str, precision: str | None = "fp32") -> tuple[Variant, ...]:
    """The variants ``name`` declares (its ``variants()`` hook) of ``precision`` (None: all), or the stage's own
    path when it declares none. --best compares fp32 paths: a bf16 one would fail parity by design."""
    from speechperf.registry import get_backend

    declared = hooks(get_backend(name)).variants()
    return tuple(v for v in declared if precision is None or v.precision == precision) or (DEFAULT_VARIANT,)


def variant_sets(config, backend: str, variant: Variant) -> tuple[str, ...]:
    """The ``--set`` items that run ``config`` as ``variant`` on ``backend``: its format on every stage that runs a
    seeded reference model (a stage with a ``path``, Whisper or silero keeps its own format), its options merged over the stage's own."""
    from speechperf.zoo.catalog import MODEL_MODULES

    items = []
    for i, stage in enumerate(config.stages, 1):
        if variant.format is not None and stage.model in MODEL_MODULES:
            items.append(f"stage{i}.format={variant.format}")
        if variant.options:
            options = {k: dict(v or {}) for k, v in (stage.options or {}).items()}
            options.setdefault(backend, {}).update(variant.options_dict)
            items.append(f"stage{i}.options={json.dumps(options)}")
    return tuple(items)


def candidates(
    backends: Sequence[str], threads: int, config, *, config_path, preset, sets: Sequence[str], args: Sequence[str]
) -> list[Candidate]:
    """Every variant of every backend as a cell, round-robin: each backend's first variant, then the seconds, ..."""
    declared = {b: backend_variants(b) for b in backends}
    out = []
    for index in range(max(len(v) for v in declared.values())):
        for backend in backends:
            if index < len(declared[backend]):
                variant = declared[backend][index]
                extra = variant_sets(config, backend, variant)
                label = f"{backend}:{variant.name}"
                cell = Cell(label, backend, threads, config_path, preset, tuple(sets) + extra, tuple(args))
                out.append(Candidate(backend, variant, cell))
    return out


def cold_start_s(result: RunResult) -> float | None:
    """The stages' load time plus first call of one finished run (its result JSON), in seconds."""
    try:
        data = json.loads(Path(result.json_path).read_text())
        stages = data["result"]["stages"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    total = 0.0
    for stage in stages:
        total += float(stage.get("load_s") or 0.0) + float(stage.get("first_call_s") or 0.0)
    return total


def search(
    found: Sequence[Candidate],
    *,
    runs: int,
    budget_s: float,
    workdir: Path,
    executor: str = "local",
    timeout_s: float | None = None,
    tolerances: Mapping | None = None,
) -> BestSearch:
    """Measure each candidate (``runs`` fresh processes each, one candidate after another) until the budget is
    spent, then pick each backend's fastest variant among those that finished and passed parity."""
    start = time.monotonic()
    results: list[RunResult] = []
    tried: list[Candidate] = []
    for i, cand in enumerate(found, 1):
        left = budget_s - (time.monotonic() - start)
        if left <= 0:
            log.info("compare --best: %s not tried: the budget of %.0f s is spent", cand.cell.label, budget_s)
            continue
        log.info(
            "compare --best: trying %s (%d of %d), %.0f s of the budget left",
            cand.backend + " " + cand.variant.describe(),
            i,
            len(found),
            left,
        )
        results += _runs_within_budget(cand, runs, workdir, executor, timeout_s, budget_s, start)
        tried.append(cand)
    elapsed = time.monotonic() - start
    summaries = {s.label: s for s in summarize([c.cell for c in tried], results)}
    parity = group_parity([c.cell.label for c in tried], results, tolerances)
    reference = next((p.reference for p in parity.values()), None)
    colds = {}
    for cand in tried:
        values = [v for r in results if r.label == cand.cell.label and r.ok for v in [cold_start_s(r)] if v is not None]
        colds[cand.cell.label] = statistics.median(values) if values else None
    passing = [c for c in tried if summaries[c.cell.label].ok and _passes(parity.get(c.cell.label))]
    winners: dict[str, Candidate] = {}
    for cand in sorted(passing, key=lambda c: summaries[c.cell.label].mean or float("inf")):
        winners.setdefault(cand.backend, cand)  # the fastest of each backend comes first
    winners = {b: winners[b] for b in dict.fromkeys(c.backend for c in found) if b in winners}  # backends' order
    rows = [
        _row(c, summaries.get(c.cell.label), parity.get(c.cell.label), colds.get(c.cell.label), winners, tried)
        for c in found
    ]
    for row in rows:
        if row.status.startswith(("dropped", "failed")):
            log.warning("compare --best: %s %s %s", row.backend, row.variant, row.status)
    return BestSearch(tuple(rows), winners, reference, budget_s, elapsed, runs)


def _runs_within_budget(
    cand: Candidate, runs: int, workdir: Path, executor: str, timeout_s: float | None, budget_s: float, start: float
) -> list[RunResult]:
    """The candidate's runs, one child at a time, each killed at what is left of the budget; a run is not started
    once the budget is spent, nor after one that exited 2 (bad input: every later run would be refused too)."""
    results: list[RunResult] = []
    for run in range(runs):
        left = budget_s - (time.monotonic() - start)
        if left <= 0 or (results and results[-1].exit_code == 2):
            break
        limit = left if timeout_s is None else min(timeout_s, left)
        (got,) = run_cells([cand.cell], 1, Path(workdir) / f"pass{run + 1}", executor=executor, timeout_s=limit)
        got = attrs.evolve(got, run=run)
        results.append(_budget_cut(got, budget_s) if limit == left else got)  # killed at the budget: say so
    return results


def _budget_cut(result: RunResult, budget_s: float) -> RunResult:
    if result.ok or not (result.reason or "").startswith("timed out"):
        return result
    return attrs.evolve(result, reason=f"stopped: it ran past the --best-budget of {budget_s:.0f} s")


def _passes(parity: CellParity | None) -> bool:
    return parity is not None and not parity.mismatch and (parity.note is None or parity.label == parity.reference)


def _row(
    cand: Candidate,
    summary: CellSummary | None,
    parity: CellParity | None,
    cold: float | None,
    winners: Mapping[str, Candidate],
    tried: Sequence[Candidate],
) -> SearchRow:
    what = cand.variant.describe()
    if cand not in tried:
        return SearchRow(cand.backend, cand.variant.name, what, None, None, None, "-", "not tried: budget spent")
    assert summary is not None
    if not summary.ok:
        reason = "; ".join(f"run {f.run + 1}: {f.reason}" for f in summary.failures) or "no run finished"
        return SearchRow(cand.backend, cand.variant.name, what, None, None, None, "-", f"failed: {reason}")
    parity_text = parity.describe() if parity is not None else "not compared"
    if not _passes(parity):
        status = f"dropped: outputs fail parity with {parity.reference if parity else 'the reference'}"
    elif winners.get(cand.backend) == cand:
        status = "winner"
    else:
        status = "slower"
    return SearchRow(cand.backend, cand.variant.name, what, summary.mean, summary.stdev, cold, parity_text, status)


def winner_cells(found: BestSearch, threads: Sequence[int], *, config_path, preset, sets, args) -> list[Cell]:
    """The comparison of the winners: each backend's winning variant at every thread count, labelled
    ``torch (compile)`` so the table names the variant."""
    cells = []
    for n in threads:
        for backend, cand in found.winners.items():
            label = f"{backend} ({cand.variant.name})" + (f" t={n}" if len(threads) > 1 else "")
            extra = cand.cell.sets[len(tuple(sets)) :]
            cells.append(Cell(label, backend, n, config_path, preset, tuple(sets) + extra, tuple(args)))
    return cells


def check_best(sweeps: Sequence, warmup: int) -> None:
    """What --best cannot be combined with, before anything runs."""
    if sweeps:
        raise PlanError("--best takes no --sweep: it searches each backend's variants itself")
    if warmup < 1:
        raise PlanError(
            f"--best with warmup {warmup}: a compiled variant compiles on its first call, which would then be "
            "timed; allowed: --warmup 1 or more"
        )


def default_paths_note(store: Path | None, config: Mapping[str, Any]) -> str:
    """What a plain compare (no --best) ranks: each backend's default path, which --best may reorder; with the
    last --best result for the same config on this machine, where the store holds one."""
    import platform

    from speechperf.store import history, record

    line = (
        "note: this compares each backend's default path; compare --best measures every backend's variants and "
        "may change the ranking"
    )
    last = None if store is None else history.latest(store, "compare-best", record.config_hash(config), platform.node())
    if last is None:
        return line + " (no --best result for this config on this machine in the store yet)"
    return f"{line}; the last --best for this config on this machine (run {last['id']}, {last['time']}): {last['headline']}"
