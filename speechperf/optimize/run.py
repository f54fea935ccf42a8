"""``speechperf optimize``: int8 variants of every stage of a config, measured against fp32 in one table.

1. The fp32 stages are built on the backend and run over the first ``calibration_size`` samples of the dataset;
   the feeds of every graph are recorded (speechperf.optimize.calibration).
2. Each method quantizes every graph through the backend's ``quantize`` hook; the int8 graphs go into a variant
   folder with a bench config that loads them (speechperf.optimize.variants). Each quantized graph is loaded back
   and compared with fp32 on feeds of a sample left out of calibration. A method that raises is kept as a row with
   its one-line reason.
3. fp32 and the variants run ``runs`` times each, every run a fresh ``speechperf bench`` process, interleaved
   (speechperf.optimize.measure).
4. Fidelity per stage type against fp32, and quality against the references where the dataset has them (the
   quality meter of ``speechperf bench``: WER / CER after Whisper's normalizer, BLEU / chrF; DNSMOS of speech and
   its MCD against fp32's), then the table. A variant that is faster but loses more quality than the budget allows
   (``--max-wer-increase``, default 1 point; ``--max-bleu-drop``, default 1 point; ``--min-agreement``;
   ``--max-mos-drop``, default 0.2 DNSMOS OVRL; ``--max-mcd`` dB; ``--min-snr``, default 20 dB, for every float
   output but the speech waveform) is "over quality budget (WER +19.1 points)", never "ok".

The result document (``kind: optimize``, docs/results.md) is rewritten through the exports (``-o``, ``--csv``,
``--markdown``) each time a variant's row is known: after its quantization, and after its last run. Ctrl-C keeps
them, marked ``complete: false``, with the finished variants (the rest say ``interrupted``) and exits 130.

Exit code: 0 when every method produced a measured variant (whether or not it is faster or within its quality
budget: "no speed-up" and "over quality budget" are results); 1 when a method failed to quantize or its runs
failed, or fp32 itself could not be measured (the table still shows every row); 2 for bad input, before anything
runs.
"""

from __future__ import annotations

import json
import logging
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import attrs

from speechperf.benchmark import plan as run_plan
from speechperf.cache import cache_dir
from speechperf.config.schema import BenchConfig
from speechperf.errors import SpeechperfError, first_line
from speechperf.exports import Exports
from speechperf.lifecycle import Lifecycle, lifecycle
from speechperf.optimize import fidelity as fid
from speechperf.optimize import pruning
from speechperf.optimize.table import Row
from speechperf.outputs import check_output_folder
from speechperf.results import Document
from speechperf.results.environment import LoadProbe, machine
from speechperf.stats import SIGNIFICANCE, speed_ratio, welch_p_value

log = logging.getLogger(__name__)

FP32 = "fp32"
BASELINE = "baseline"  # fp32's status
#: Recorded calls kept per graph for calibration (a decoder step is called once per token).
FEEDS_PER_GRAPH = 64
#: Calls per graph on the held-out sample for the graph difference.
CHECK_CALLS = 8
#: The statuses of a row whose figures are not known yet.
UNFINISHED = ("quantizing", "measuring")


@attrs.frozen
class OptimizeOptions:
    backend: str
    methods: tuple[str, ...]
    out_dir: Path
    #: --sparsity: the levels each pruning method runs at (speechperf.optimize.pruning); () with none asked
    sparsity: tuple[float, ...] = ()
    runs: int = 5
    calibration_size: int = 4
    timeout_s: float | None = None
    executor: str = "local"  #: where the bench processes run (speechperf.launch.executors)
    jobs: int = 1
    budget: fid.QualityBudget = fid.QualityBudget()
    exports: Exports = Exports()  #: -o, --csv, --markdown, --html and the store
    plot: Path | None = None  #: --plot: the quality / speed-up / size trade-off (speechperf.views.optimize_plot)
    workdir: Path = attrs.Factory(cache_dir)  #: where a backend's derived files and the reference models are made


class _Study:
    """The table's rows, every run and the result document, written through the run's lifecycle each time
    something new is known."""

    def __init__(self, opts: OptimizeOptions, plan: run_plan.Plan, run: Lifecycle):
        self.opts = opts
        self.run = run
        self.rows: dict[str, Row] = {}
        self.runs: list[dict[str, Any]] = []
        self.doc = Document(
            kind="optimize",
            environment=_environment(plan),
            config=json.loads(json.dumps(plan.cfg.to_dict())),
            body={
                "backend": opts.backend,
                "methods": list(opts.methods),
                #: the levels the pruning methods ran at (the default when none was given)
                "sparsity": list(opts.sparsity or pruning.levels_for(opts.methods)),
                "runs_per_variant": opts.runs,
                "calibration_size": opts.calibration_size,
                "quality_budget": attrs.asdict(opts.budget),
                "stage_labels": "",  #: the stages, for the titles ("s2t/tiny")
                "variant_notes": {},
                "runs": self.runs,
            },
        )

    def document(self) -> Document:
        doc = self.doc
        doc.rows = [r.plain() for r in self.rows.values()]
        doc.body["variant_notes"] = {name: r.notes for name, r in self.rows.items() if r.notes}
        return doc

    def write(self) -> None:
        self.run.write(self.document())

    def interrupted(self) -> Document:
        """Ctrl-C: the finished variants as they are; the others marked, with what their finished runs measured
        (the runs interleave, so a stop after 11 runs leaves every variant some but none all of its runs)."""
        for name, row in self.rows.items():
            # fp32's row says "baseline" from the start: unfinished while it has no latencies
            if row.status in UNFINISHED or (name == FP32 and row.status == BASELINE and not row.latencies_ms):
                self._partial(name, row)
        fp32 = self.rows.get(FP32)
        for name, row in self.rows.items():
            if name != FP32 and row.status.startswith("interrupted") and fp32 is not None and fp32.latencies_ms:
                # against fp32's finished runs, as the row's figures are over its own
                if row.latencies_ms:
                    ratio = speed_ratio(row.latencies_ms, fp32.latencies_ms)
                    row.speedup, row.speedup_sigma = ratio.value, ratio.sigma
                    row.p_value = welch_p_value(row.latencies_ms, fp32.latencies_ms)
        return self.document()

    def _partial(self, name: str, row: Row) -> None:
        """An unfinished variant's row from its finished runs (the document's ``runs``): their mean per-sample
        runtimes and peak RSS, and a status that says how many of its runs finished."""
        done = [r for r in self.runs if r["variant"] == name and r["returncode"] == 0 and r["mean_ms"] is not None]
        row.latencies_ms = [r["mean_ms"] for r in done]
        peaks = [r["peak_rss_mib"] for r in done if r.get("peak_rss_mib") is not None]
        row.peak_mib = statistics.median(peaks) if peaks else None
        status = f"interrupted: {len(done)} of {self.opts.runs} runs finished" if done else "interrupted"
        row.status = f"{BASELINE} ({status})" if row.status == BASELINE else status


def run_optimize(cfg: BenchConfig, opts: OptimizeOptions, out=None) -> int:
    """The whole study through the command lifecycle; returns the exit code."""
    from speechperf.launch.executors import get_executor

    with lifecycle(opts.exports, out=out or sys.stdout) as run:  # the exports checked before quantizing
        get_executor(opts.executor, opts.jobs)  # ray installed, jobs the executor can run
        if opts.plot is not None:
            from speechperf.views.optimize_plot import check_plot_path

            check_plot_path(opts.plot)
        out_dir = check_output_folder(opts.out_dir, "--out-dir")
        # as bench would: the config checked, the references read against the dataset, the stage's file of this
        # backend, before the first quantization
        plan = run_plan.resolve(cfg, opts.backend, workdir=opts.workdir, quality="asked")
        pruning.check_methods(plan.backend, opts.methods, opts.sparsity)
        if plan.size_note:
            log.info("note: %s", plan.size_note)
        study = _Study(opts, plan, run)
        try:
            code = _run(study, plan, out_dir)
        except KeyboardInterrupt:
            run.write(study.interrupted())  # the unfinished variants say so; the lifecycle marks it incomplete
            raise
        doc = study.document()
        if opts.plot is not None:
            from speechperf.views.optimize import draw

            if draw(doc, opts.plot) is not None:
                log.info("trade-off plot %s", opts.plot)
        log.info("variants and their bench configs are in %s", opts.out_dir)
        return run.finish(doc, code)


def _environment(plan: run_plan.Plan) -> dict[str, Any]:
    general, backend = plan.cfg.general, plan.backend
    return {
        **machine(),
        "threads": general.threads,
        "device": general.device,
        "backend": backend.name,
        "backend_version": backend.availability().version,
    }


def calibrate(
    cfg: BenchConfig, backend, dataset: list, workdir: Path, calibration_size: int, feeds: Path | None = None
):
    """The fp32 stages opened on ``backend``, each stage's graphs, and the feeds they were called with on the
    first ``calibration_size`` samples of ``dataset`` (calibration) and on the next one (the held-out graph check);
    returns (stages, plans, calibration, held_out). With ``feeds``, a folder: the feeds kept there are used, or
    those recorded now are kept there (speechperf.optimize.calibration.write_feeds)."""
    from speechperf.benchmark import build
    from speechperf.optimize.calibration import read_feeds, record_feeds, write_feeds
    from speechperf.optimize.variants import plan_stage

    if len(dataset) < 2:
        raise SpeechperfError(
            f"the dataset has {len(dataset)} sample(s); quantizing needs at least 2 (one is left out "
            "of calibration to check each graph on)"
        )
    calibration_size = min(calibration_size, len(dataset) - 1)
    (stages,) = build.open_stages(cfg, backend, workdir)
    with build.stdout_to_stderr():
        plans = [plan_stage(i, s, role, backend.name) for i, (s, role) in enumerate(zip(cfg.stages, cfg.roles), 1)]
        kept = read_feeds(feeds) if feeds is not None else None
        if kept is not None:
            log.info("calibration feeds: the %d sample(s) recorded earlier, from %s", calibration_size, feeds)
            return stages, plans, kept["calibration"], kept["held_out"]
        log.info("recording calibration feeds on %d sample(s) ...", calibration_size)
        calibration = record_feeds(stages, dataset[:calibration_size], FEEDS_PER_GRAPH)
        held_out = record_feeds(stages, dataset[calibration_size : calibration_size + 1], CHECK_CALLS)
    if feeds is not None:
        try:
            write_feeds(feeds, calibration=calibration, held_out=held_out)
        except (OSError, SpeechperfError) as exc:  # a full disk, or a tune beside this one kept them first
            log.warning("calibration feeds not kept in %s: %s", feeds, first_line(exc))
    return stages, plans, calibration, held_out


def _run(study: _Study, plan: run_plan.Plan, out_dir: Path) -> int:
    """Quantize, then measure; the rows filled. Returns the exit code."""
    from speechperf.benchmark import build
    from speechperf.config import write_config
    from speechperf.optimize.variants import variant_config

    opts = study.opts
    cfg, backend = plan.cfg, plan.backend
    general = cfg.general
    base = variant_config(study.doc.config or {}, backend.name)  # the document's copy: the config made plain once
    stages, plans, calibration, held_out = calibrate(cfg, backend, plan.dataset, opts.workdir, opts.calibration_size)
    study.doc.body["stage_labels"] = " + ".join(p.label for p in plans)

    speech_out = stages[-1].puts_out_speech  # a mask is no audio to dump, unless it is resynthesized
    fp32_files = [p for stage_plan in plans for p in stage_plan.fp32_files]
    fp32_size = sum(p.stat().st_size for p in fp32_files)
    fp32_zip = pruning.compressed_size(fp32_files)
    configs = {FP32: _with_dumps(base, out_dir, FP32, speech_out)}
    study.rows[FP32] = Row(FP32, BASELINE, fp32_size, fp32_size, compressed_bytes=fp32_zip, fp32_compressed=fp32_zip)
    shown_notes: set[str] = set()
    for method in pruning.variant_names(opts.methods, opts.sparsity):
        row = study.rows[method] = Row(method, "quantizing", fp32_bytes=fp32_size, fp32_compressed=fp32_zip)
        study.write()
        start = time.perf_counter()
        try:
            with build.stdout_to_stderr():
                made = make_variant(backend, method, plans, stages, calibration, held_out, base, out_dir, general)
                data, size, diff, notes, op_shares, files, pruned = made
                if pruned is not None:
                    row.sparsity, row.parity, row.parity_text = pruned.sparsity, pruned.parity, pruned.parity_text
                row.compressed_bytes = pruning.compressed_size(files)
        except Exception as exc:  # any failure of a method is a row with its reason, never a crash of the others
            reason = first_line(exc) if isinstance(exc, SpeechperfError) else f"{type(exc).__name__}: {first_line(exc)}"
            row.status = f"failed: {reason}"
            log.warning("%s: %s", method, row.status)
            continue
        row.size_bytes, row.graph_rel_diff, row.notes = size, diff, notes
        row.fp32_ops = op_shares
        for index, shares in op_shares:
            text = shares if isinstance(shares, str) else shares.text()
            log.info("%s: stage%d ops after quantization: %s", method, index, text)
        row.status = "measuring"
        for note in notes:
            if note not in shown_notes:
                shown_notes.add(note)
                log.info("note: %s", note)
        configs[method] = _with_dumps(data, out_dir, method, speech_out)
        log.info(
            "%s: made in %.1f s, %.2f MB (%.2f MB compressed)%s",
            method,
            time.perf_counter() - start,
            size / 1e6,
            (row.compressed_bytes or 0) / 1e6,
            f", sparsity {row.sparsity.layers:.1%} of the pruned layers" if row.sparsity else "",
        )
    study.write()
    del stages  # the frameworks' sessions are not needed while the children run

    from speechperf.optimize.measure import measure, variant_cell

    cells = [
        variant_cell(name, write_config(data, out_dir / f"{name}.yaml"), backend.name, general.threads)
        for name, data in configs.items()
    ]
    log.info(
        "measuring %s: %d interleaved run(s) each, every run a fresh `speechperf bench` process ...",
        ", ".join(c.label for c in cells),
        opts.runs,
    )
    rows = _Rows(study, plan, out_dir, speech_out)
    probe = LoadProbe().start()
    try:
        results = measure(cells, opts.runs, out_dir / "runs", opts.timeout_s, rows.on_result, opts.executor, opts.jobs)
    finally:  # on Ctrl-C too: the load seen while timing is part of what was measured
        study.doc.environment["load"] = probe.stop()
    rows.finish_rest(results)
    failed = [r for r in study.rows.values() if r.status.startswith("failed")]
    return 1 if failed else 0


def _with_dumps(data: dict, out_dir: Path, name: str, speech_out: bool) -> dict:
    if not speech_out:
        return data
    data = json.loads(json.dumps(data))
    data["general"]["dump_speech_waveforms_dir"] = str((out_dir / "waveforms" / name).resolve())
    return data


def make_variant(backend, method, plans, stages, calibration, held_out, base, out_dir, general, name=None):
    """Quantize every graph of every stage with ``method`` into ``out_dir/<name>`` (default: the method's name), or
    prune it where ``method`` is a pruned variant's name (``prune-l1-global@0.3``, then quantized where it says
    ``+ort-dynamic``: speechperf.optimize.pruning); returns (variant config, bytes, graph diff, notes, op shares, the
    files the stages load, the pruning.Pruned or None)."""
    from speechperf.optimize.hook import QuantizeSource
    from speechperf.optimize.variants import write_variant

    if pruning.is_pruning(method):
        pruned, pruned_plans = pruning.make_pruned(backend, method, plans, stages, held_out, base, out_dir, general)
        int8 = pruning.parse_variant(method)[2]
        if int8 is None:
            return (*pruned.made(), pruned)
        made = make_variant(
            backend, int8, pruned_plans, stages, calibration, held_out, pruned.data, out_dir, general, method
        )
        return (*made[:6], pruned)
    name = name or method
    data = json.loads(json.dumps(base))
    size, diffs, notes, op_shares, all_files = 0, [], [], [], []
    scratch = out_dir / ".scratch" / name
    for plan, stage, feeds, check in zip(plans, stages, calibration, held_out):
        quantized = {}
        for graph in plan.graphs:
            source = QuantizeSource(
                graph.session, graph.specs, tuple(feeds[graph.session]), graph.example, graph.dynamic_axes
            )
            quantized[graph.session] = backend.quantize(method, source, scratch / f"stage{plan.index}")
            notes += [n for q in [quantized[graph.session]] for n in q.notes if n not in notes]
        keys, files = write_variant(plan, backend.name, method, quantized, out_dir / name / f"stage{plan.index}")
        data[f"stage{plan.index}"].update(keys)
        size += sum(f.stat().st_size for f in files)
        all_files += files
        diff, shares = _graph_diff(backend, plan, stage, keys, check, general, scratch / f"stage{plan.index}")
        diffs.append(diff)
        op_shares.append((plan.index, shares))
    return data, size, max(diffs), notes, op_shares, all_files, None


def _graph_diff(backend, plan, stage, keys, check, general, scratch: Path):
    """Load the stage's int8 graphs back and compare them with fp32 on the held-out sample's feeds; then profile
    them on those feeds for the ops that stayed fp32 (speechperf.optimize.fp32_ops). Returns (the worst relative
    difference, the op shares or the one-line reason they are missing)."""
    from speechperf.optimize.fidelity import graph_difference

    worst, sessions = 0.0, {}
    for graph in plan.graphs:
        if plan.hf:
            from speechperf.optimize.variants import hf_variant_spec

            spec = hf_variant_spec(plan, graph, Path(keys["model_dir"]))
        elif "model_dir" in keys and plan.folder is not None:
            from speechperf.zoo.build import model_spec

            spec = model_spec(Path(keys["model_dir"]), graph.session, keys["format"])
        elif "model_dir" in keys:
            spec = attrs.evolve(graph.specs[0], path=Path(keys["model_dir"]) / graph.specs[0].path.name)
        else:
            spec = attrs.evolve(graph.specs[0], path=Path(keys["path"]), format=None)
        session = backend.load(spec, device=general.device, threads=general.threads)
        session.inputs = stage.sessions[graph.session].inputs
        calls = check[graph.session]
        fp32 = [stage.sessions[graph.session](c) for c in calls]
        variant = [session(c) for c in calls]
        worst = max(worst, graph_difference(fp32, variant))
        sessions[graph.session] = session
    from speechperf.optimize.fp32_ops import profile_op_shares

    calls = [(name, c) for name in sessions for c in check[name]]
    try:
        shares = profile_op_shares(backend, sessions, calls, scratch)
    except Exception as exc:  # a profiler that cannot run here costs the list, never the variant
        shares = f"fp32 ops not listed: the {backend.name} profiler failed ({type(exc).__name__}: {first_line(exc)})"
    return worst, shares


class _Rows:
    """Each variant's row, filled as soon as its last run is in (fp32's first: it leads every round), so that the
    exports hold every finished variant while the others still run, and after a Ctrl-C."""

    def __init__(self, study: _Study, plan: run_plan.Plan, out_dir: Path, speech_out: bool):
        cfg, dataset = plan.cfg, plan.dataset
        self.study, self.cfg, self.out_dir, self.speech_out = study, cfg, out_dir, speech_out
        self.by_cell: dict[str, list] = {}
        self.references = plan.references
        self.seconds = {s.id: len(s.audio) / s.sample_rate for s in dataset if s.audio is not None}
        # The clean recordings (enhancement) by the name each run dumps the sample's speech as
        clean = self.references.clean if self.references is not None else {}
        prefix = cfg.general.dump_waveform_file_prefix
        self.clean = {f"{prefix}_{i}_pred.wav": clean[s.id] for i, s in enumerate(dataset) if s.id in clean}
        self.finished: set[str] = set()
        self._fp32_outputs: Any = None

    def on_result(self, result) -> None:
        """One child finished: its run in the document, and its variant's row once all its runs are in."""
        total = result.total
        self.study.runs.append(
            {
                "variant": result.cell,
                "run": result.index + 1,
                "returncode": result.returncode,
                "error": result.error,
                "mean_ms": total and total.get("mean_ms"),
                "peak_rss_mib": total and total.get("peak_rss_mib"),
            }
        )
        runs = self.by_cell.setdefault(result.cell, [])
        runs.append(result)
        if len(runs) >= self.study.opts.runs:
            self.finish(result.cell)
        self.study.write()

    def finish_rest(self, results) -> None:
        """After the last run: the rows of variants that got fewer runs (a child refused its input, every later
        run was stopped), then the statuses of the rows never measured."""
        for r in results:
            if r not in self.by_cell.get(r.cell, []):
                self.by_cell.setdefault(r.cell, []).append(r)
        for name in [FP32, *self.study.rows]:
            if name not in self.finished and name in self.by_cell:
                self.finish(name)
        for row in self.study.rows.values():
            if row.status in UNFINISHED:
                row.status = "failed: not measured"

    def finish(self, name: str) -> None:
        from speechperf.stats import speed_ratio, welch_p_value

        self.finished.add(name)
        row, runs = self.study.rows[name], self.by_cell.get(name, [])
        ok = [r for r in runs if r.ok and r.total and r.total.get("mean_ms") is not None]
        row.latencies_ms = [r.total["mean_ms"] for r in ok]
        peaks = [r.total["peak_rss_mib"] for r in ok if r.total.get("peak_rss_mib") is not None]
        row.peak_mib = statistics.median(peaks) if peaks else None
        if not ok:
            row.status = f"failed: every run failed ({runs[0].error})" if runs else "failed: not run"
            return
        if len(ok) < len(runs):
            bad = next(r for r in runs if r not in ok)
            row.notes.append(f"{len(runs) - len(ok)} of {len(runs)} runs failed: {bad.error}")
        fp32 = self.study.rows[FP32]
        fp32_run, variant_run = self._first_data(FP32), self._first_data(name)
        if name == FP32:
            if fp32_run:
                fp32.fidelity = self._fidelity(FP32, fp32_run, fp32_run)
            return
        if fp32_run and variant_run:
            row.fidelity = self._fidelity(name, fp32_run, variant_run)
        row.float_outputs = self._float_outputs(name)
        row.mos_drop = fid.mos_drop(fp32.fidelity, row.fidelity)
        if fp32.fidelity is not None and fp32.fidelity.pesq is not None:
            row.fp32_pesq_stoi = (fp32.fidelity.pesq, fp32.fidelity.stoi or 0.0)
        row.min_snr_db = fid.min_snr(row.float_outputs)
        if not fp32.latencies_ms:
            row.status = "measured; fp32 failed, no speed-up figure"
            return
        ratio = speed_ratio(row.latencies_ms, fp32.latencies_ms)
        row.speedup, row.speedup_sigma = ratio.value, ratio.sigma
        row.p_value = welch_p_value(row.latencies_ms, fp32.latencies_ms)
        row.status = _speed_status(ratio.value, row.p_value)
        final = f"stage{len(self.cfg.stages)}"
        over = fid.over_budget(fp32.fidelity, row.fidelity, self.study.opts.budget)
        over += fid.floats_over_budget(row.float_outputs, final, self.speech_out)
        if over:  # faster or not, a variant that lost this much is not "ok"
            speed = "" if row.status.startswith("ok") else f"; {row.status}"
            row.status = f"over quality budget ({', '.join(over)}){speed}"

    def _first_data(self, name: str) -> dict | None:
        return next((r.data for r in self.by_cell.get(name, []) if r.ok and r.data), None)

    def _fidelity(self, name: str, fp32_run: dict, variant_run: dict):
        from speechperf.benchmark.text_reference import config_task

        waves = self.out_dir / "waveforms"
        fp32_waves = waves / FP32 if self.speech_out else None
        variant_waves = waves / name if self.speech_out else None
        diff = 0.0 if name == FP32 else self.study.rows[name].graph_rel_diff
        found = fid.stage_fidelity(
            self.cfg.roles[-1],
            fp32_run,
            variant_run,
            self.references,
            self.seconds,
            fp32_waves,
            variant_waves,
            diff,
            self.cfg.general.language,
            config_task(self.cfg.stages[-1]),
            self.cfg.stages[-1].src_lang,
        )
        if fp32_waves is None or variant_waves is None:
            return found
        from speechperf.extras import MissingExtraError

        try:
            speech = fid.speech_fidelity(fp32_waves, variant_waves, name != FP32, self.clean)
            return attrs.evolve(found, speech=speech)
        except MissingExtraError as exc:
            if name == FP32:  # said once, for the run
                log.warning("speech quality not scored: %s", exc)
            return found

    def _float_outputs(self, name: str) -> list:
        """Every float output of every stage (a mask, a waveform, a user file's outputs) against fp32 over the
        whole dataset, from the outputs their first finished runs saved (speechperf.meters.fidelity)."""
        from speechperf.meters.parity import compare_outputs

        if self._fp32_outputs is None:
            self._fp32_outputs = self._saved(FP32) or False
        other = self._saved(name)
        if not self._fp32_outputs or other is None:
            return []
        floor = self.study.opts.budget.float_tolerance()  # a stage's own tolerance wins, output by output
        tolerances = {f"stage{i}": {"*": floor, **(s.tolerance or {})} for i, s in enumerate(self.cfg.stages, 1)}
        if self.speech_out:  # the speech is judged by MCD and DNSMOS: a shift in time is no loss of quality
            last = tolerances[f"stage{len(self.cfg.stages)}"]
            last.setdefault("waveform", {"max_rel": math.inf, "cosine": -1.0, "snr_db": -math.inf})
        return [d for d in compare_outputs(self._fp32_outputs, other, tolerances) if not d.exact]

    def _saved(self, name: str):
        from speechperf.benchmark.saved_outputs import load_stage_outputs

        path = next((r.outputs_path for r in self.by_cell.get(name, []) if r.ok and r.outputs_path), None)
        try:
            return load_stage_outputs(path) if path else None
        except (OSError, ValueError, KeyError):
            return None


def _speed_status(ratio: float, p_value: float | None) -> str:
    if p_value is None:
        return f"ok ({ratio:.2f}x; no significance test with fewer than 2 runs)"
    if p_value < SIGNIFICANCE and ratio > 1:
        return "ok"
    if p_value < SIGNIFICANCE:
        return f"no speed-up: {1 / ratio:.2f}x slower than fp32"
    return f"no speed-up: not significant (p = {p_value:.2g})"
