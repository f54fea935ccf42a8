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
import tempfile
import time
from pathlib import Path
from typing import Any

import attrs

from speechperf.config.schema import BenchConfig
from speechperf.errors import SpeechperfError, first_line
from speechperf.exports import Exports
from speechperf.optimize import fidelity as fid
from speechperf.optimize.table import COLUMNS, Row, print_table, to_csv, to_markdown
from speechperf.outputs import check_output_folder
from speechperf.results import Document
from speechperf.results.environment import LoadProbe, machine
from speechperf.results.notes import Collected, collect
from speechperf.stats import SIGNIFICANCE

log = logging.getLogger(__name__)

FP32 = "fp32"
#: Recorded calls kept per graph for calibration (a decoder step is called once per token).
FEEDS_PER_GRAPH = 64
#: Calls per graph on the held-out sample for the graph difference.
CHECK_CALLS = 8
#: The statuses of a row whose figures are not known yet.
UNFINISHED = ("quantizing", "measuring")


def exports(output=None, csv=None, markdown=None, keep=None) -> Exports:
    """optimize's exports: the JSON document, its own CSV columns and Markdown table (speechperf.optimize.table)."""
    from speechperf.store.keep import Keep

    return Exports(
        json=output,
        csv=csv,
        markdown=markdown,
        keep=keep or Keep(),
        columns=COLUMNS,
        csv_text=to_csv,
        markdown_text=to_markdown,
    )


@attrs.frozen
class OptimizeOptions:
    backend: str
    methods: tuple[str, ...]
    out_dir: Path
    runs: int = 5
    calibration_size: int = 4
    timeout_s: float | None = None
    executor: str = "local"  #: where the bench processes run (speechperf.launch.executors)
    jobs: int = 1
    budget: fid.QualityBudget = fid.QualityBudget()
    exports: Exports = attrs.Factory(exports)  #: -o, --csv, --markdown, --html and the store
    plot: Path | None = None  #: --plot: the quality / speed-up / size trade-off (speechperf.optimize.plot)


def check_methods(backend, methods) -> tuple[str, ...]:
    from speechperf.backend import check_method

    if not methods:
        raise SpeechperfError(
            f"no --method given; backend {backend.name!r} offers: "
            f"{', '.join(backend.capabilities.quantization) or 'none'}"
        )
    for m in methods:
        check_method(backend, m)
    if len(set(methods)) != len(methods):
        raise SpeechperfError(f"--method lists a method twice: {','.join(methods)}")
    return tuple(methods)


class _Study:
    """The table's rows, every run and the result document, written through the exports each time something new
    is known."""

    def __init__(self, opts: OptimizeOptions, cfg: BenchConfig, env: dict, collected: Collected):
        self.opts = opts
        self.collected = collected
        self.rows: dict[str, Row] = {}
        self.runs: list[dict[str, Any]] = []
        self.labels = ""  #: the stages, for the titles ("s2t/tiny")
        self.doc = Document(
            kind="optimize",
            config=json.loads(json.dumps(cfg.to_dict())),
            environment=env,
            body={
                "backend": opts.backend,
                "methods": list(opts.methods),
                "runs_per_variant": opts.runs,
                "calibration_size": opts.calibration_size,
                "quality_budget": attrs.asdict(opts.budget),
                "variant_notes": {},
                "runs": self.runs,
            },
        )

    def document(self, complete: bool = False) -> Document:
        doc = self.doc
        doc.complete = complete
        doc.rows = [r.plain() for r in self.rows.values()]
        doc.body["variant_notes"] = {name: r.notes for name, r in self.rows.items() if r.notes}
        doc.notes, doc.warnings = list(self.collected.notes), list(self.collected.warnings)
        return doc

    def write(self, complete: bool = False) -> None:
        self.opts.exports.write(self.document(complete))

    def interrupted(self) -> Document:
        """Ctrl-C: the finished variants as they are, the others marked (the exports then write this)."""
        for row in self.rows.values():
            if row.status in UNFINISHED:
                row.status = "interrupted"
        return self.document(complete=False)


def run_optimize(cfg: BenchConfig, opts: OptimizeOptions, workdir: Path, out=None) -> int:
    from speechperf.benchmark.derive import config_for_backend
    from speechperf.benchmark.validate import check_config
    from speechperf.launch.executors import get_executor
    from speechperf.registry import require_backend

    out = out or sys.stdout
    opts.exports.check()  # before quantizing: a bad path must not cost the whole study
    get_executor(opts.executor, opts.jobs)  # ray installed, jobs the executor can run
    if opts.plot is not None:
        from speechperf.optimize.plot import check_plot_path

        check_plot_path(opts.plot)
    check_output_folder(opts.out_dir, "--out-dir")
    check_config(cfg, opts.backend)  # as bench would, before the first quantization
    cfg = config_for_backend(cfg, opts.backend, workdir)  # the stage's file of this backend
    backend = require_backend(opts.backend)
    check_methods(backend, opts.methods)
    with collect() as collected:
        env = {
            **machine(),
            "threads": cfg.general.threads,
            "device": cfg.general.device,
            "backend": backend.name,
            "backend_version": backend.availability().version,
        }
        study = _Study(opts, cfg, env, collected)
        with opts.exports.interrupted(study.interrupted):
            code = _run(study, cfg, backend, workdir)
            title, tables = _report(study, cfg, out)
            with tempfile.TemporaryDirectory(prefix="speechperf-optimize-") as folder:  # --html's plot, drawn for it
                images = _plots(study, title, Path(folder))
                opts.exports.finish(study.document(complete=True), code, tables=tables, images=images, title=title)
    return code


def calibrate(cfg: BenchConfig, backend, workdir: Path, calibration_size: int):
    """The fp32 stages opened on ``backend``, each stage's graphs, and the feeds they were called with on the
    first ``calibration_size`` samples (calibration) and on the next one (the held-out graph check); returns
    (dataset, stages, plans, calibration, held_out)."""
    from speechperf.benchmark import build
    from speechperf.data import load_dataset
    from speechperf.data.references import load_references
    from speechperf.optimize.calibration import record_feeds
    from speechperf.optimize.variants import plan_stage

    general = cfg.general
    dataset = load_dataset(general, cfg.roles[0])
    if len(dataset) < 2:
        raise SpeechperfError(
            f"the dataset has {len(dataset)} sample(s); quantizing needs at least 2 (one is left out "
            "of calibration to check each graph on)"
        )
    calibration_size = min(calibration_size, len(dataset) - 1)
    load_references(general, dataset, cfg.roles)  # a reference file that does not fit fails here, before quantizing
    (stages,) = build.open_stages(cfg, backend, workdir)
    with build.stdout_to_stderr():
        plans = [plan_stage(i, s, role, backend.name) for i, (s, role) in enumerate(zip(cfg.stages, cfg.roles), 1)]
        log.info("recording calibration feeds on %d sample(s) ...", calibration_size)
        calibration = record_feeds(stages, dataset[:calibration_size], FEEDS_PER_GRAPH)
        held_out = record_feeds(stages, dataset[calibration_size : calibration_size + 1], CHECK_CALLS)
    return dataset, stages, plans, calibration, held_out


def _run(study: _Study, cfg: BenchConfig, backend, workdir: Path) -> int:
    """Quantize, then measure; the rows filled. Returns the exit code."""
    from speechperf.benchmark import build
    from speechperf.config import write_config
    from speechperf.optimize.variants import config_dict

    opts, general = study.opts, cfg.general
    out_dir = check_output_folder(opts.out_dir, "--out-dir")
    base = config_dict(cfg, backend.name)
    dataset, stages, plans, calibration, held_out = calibrate(cfg, backend, workdir, opts.calibration_size)
    study.labels = " + ".join(p.label for p in plans)

    speech_out = cfg.stages[-1].output_kind_as(cfg.roles[-1]) == "waveform"  # a mask is no audio to dump
    fp32_size = sum(p.stat().st_size for plan in plans for p in plan.fp32_files)
    configs = {FP32: _with_dumps(base, out_dir, FP32, speech_out)}
    study.rows[FP32] = Row(FP32, "baseline", fp32_size, fp32_size)
    shown_notes: set[str] = set()
    for method in opts.methods:
        row = study.rows[method] = Row(method, "quantizing", fp32_bytes=fp32_size)
        study.write()
        start = time.perf_counter()
        try:
            with build.stdout_to_stderr():
                data, size, diff, notes, op_shares = make_variant(
                    backend, method, plans, stages, calibration, held_out, base, out_dir, general
                )
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
        log.info("%s: quantized in %.1f s, %.2f MB", method, time.perf_counter() - start, size / 1e6)
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
    rows = _Rows(study, cfg, dataset, out_dir, speech_out)
    probe = LoadProbe().start()
    try:
        results = measure(cells, opts.runs, out_dir / "runs", opts.timeout_s, rows.on_result, opts.executor, opts.jobs)
    finally:  # on Ctrl-C too: the load seen while timing is part of what was measured
        study.doc.environment["load"] = probe.stop()
    rows.finish_rest(results)
    failed = [r for r in study.rows.values() if r.status.startswith("failed")]
    return 1 if failed else 0


def _report(study: _Study, cfg: BenchConfig, out) -> tuple[str, list[str]]:
    """The console's table; returns the title and the HTML table."""
    from speechperf.store.html import table_html

    opts, general = study.opts, cfg.general
    title = f"speechperf optimize: {general.model_type} {study.labels} on {opts.backend}"
    rows = study.document().rows
    print_table(rows, f"{title}, {general.threads} thread(s), {opts.runs} run(s) per variant", file=out)
    log.info("variants and their bench configs are in %s", opts.out_dir)
    return title, [table_html(title, COLUMNS, rows)]


def _plots(study: _Study, title: str, folder: Path) -> list[Path]:
    """--plot FILE, and the same figure for --html (drawn into ``folder`` when --plot is not given)."""
    opts = study.opts
    path = opts.plot or (folder / "optimize.png" if opts.exports.keep.html is not None else None)
    if path is None:
        return []
    from speechperf.extras import MissingExtraError, require
    from speechperf.optimize.plot import plot_tradeoff

    if opts.plot is None:  # --html alone: the page goes without its plot rather than fail at the end
        try:
            require("matplotlib", "the --html page's trade-off plot")
        except MissingExtraError as exc:
            log.warning("%s", exc)
            return []
    doc = study.document(complete=True)
    drawn = plot_tradeoff(doc.rows, doc["quality_budget"], path, title)
    if drawn is None:
        log.warning("--plot: no variant has a quality figure (WER, BLEU, agreement, SNR); nothing drawn")
        return []
    if opts.plot is not None:
        log.info("trade-off plot %s", drawn)
    return [drawn]


def _with_dumps(data: dict, out_dir: Path, name: str, speech_out: bool) -> dict:
    if not speech_out:
        return data
    data = json.loads(json.dumps(data))
    data["general"]["dump_speech_waveforms_dir"] = str((out_dir / "waveforms" / name).resolve())
    return data


def make_variant(backend, method, plans, stages, calibration, held_out, base, out_dir, general):
    """Quantize every graph of every stage with ``method``; returns (variant config, bytes, graph diff, notes)."""
    from speechperf.optimize.hook import QuantizeSource
    from speechperf.optimize.variants import write_variant

    data = json.loads(json.dumps(base))
    size, diffs, notes, op_shares = 0, [], [], []
    scratch = out_dir / ".scratch" / method
    for plan, stage, feeds, check in zip(plans, stages, calibration, held_out):
        quantized = {}
        for graph in plan.graphs:
            source = QuantizeSource(
                graph.session, graph.specs, tuple(feeds[graph.session]), graph.example, graph.dynamic_axes
            )
            quantized[graph.session] = backend.quantize(method, source, scratch / f"stage{plan.index}")
            notes += [n for q in [quantized[graph.session]] for n in q.notes if n not in notes]
        keys, files = write_variant(plan, backend.name, method, quantized, out_dir / method / f"stage{plan.index}")
        data[f"stage{plan.index}"].update(keys)
        size += sum(f.stat().st_size for f in files)
        diff, shares = _graph_diff(backend, plan, stage, keys, check, general, scratch / f"stage{plan.index}")
        diffs.append(diff)
        op_shares.append((plan.index, shares))
    return data, size, max(diffs), notes, op_shares


def _graph_diff(backend, plan, stage, keys, check, general, scratch: Path):
    """Load the stage's int8 graphs back and compare them with fp32 on the held-out sample's feeds; then profile
    them on those feeds for the ops that stayed fp32 (speechperf.optimize.fp32_ops). Returns (the worst relative
    difference, the op shares or the one-line reason they are missing)."""
    from speechperf.optimize.fidelity import graph_difference

    worst, sessions = 0.0, {}
    for graph in plan.graphs:
        if "model_dir" in keys and plan.folder is not None:
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

    def __init__(self, study: _Study, cfg: BenchConfig, dataset, out_dir: Path, speech_out: bool):
        from speechperf.data.references import load_references

        self.study, self.cfg, self.out_dir, self.speech_out = study, cfg, out_dir, speech_out
        self.by_cell: dict[str, list] = {}
        self.references = load_references(cfg.general, dataset, cfg.roles)
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
        from speechperf.compare.parity import compare_outputs

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
