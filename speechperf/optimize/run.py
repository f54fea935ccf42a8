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
   quality meter of ``speechperf bench``: WER / CER after Whisper's normalizer, BLEU / chrF), then the table. A
   variant that is faster but loses more quality than the budget allows (``--max-wer-increase``, default 1 point;
   ``--max-bleu-drop``, default 1 point; ``--min-agreement``) is "over quality budget (WER +19.1 points)", never
   "ok".

Exit code: 0 when every method produced a measured variant (whether or not it is faster or within its quality
budget: "no speed-up" and "over quality budget" are results); 1 when a method failed to quantize or its runs
failed, or fp32 itself could not be measured (the table still shows every row); 2 for bad input, before anything
runs.
"""

from __future__ import annotations

import json
import logging
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import attrs

from speechperf.config.schema import BenchConfig
from speechperf.errors import SpeechperfError, first_line
from speechperf.optimize import fidelity as fid
from speechperf.optimize.table import Row, print_table, to_csv, to_markdown
from speechperf.outputs import check_output_folder, check_output_path, write_text_atomic
from speechperf.stats import SIGNIFICANCE
from speechperf.store.keep import Keep

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
FP32 = "fp32"
#: Recorded calls kept per graph for calibration (a decoder step is called once per token).
FEEDS_PER_GRAPH = 64
#: Calls per graph on the held-out sample for the graph difference.
CHECK_CALLS = 8


@attrs.frozen
class OptimizeOptions:
    backend: str
    methods: tuple[str, ...]
    out_dir: Path
    runs: int = 5
    calibration_size: int = 4
    output: Path | None = None
    csv_path: Path | None = None
    md_path: Path | None = None
    timeout_s: float | None = None
    budget: fid.QualityBudget = fid.QualityBudget()
    keep: Keep = Keep()  #: the store and --html (speechperf.store.keep)


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


class _Report:
    """The table's rows and the JSON document, rewritten atomically each time something new is known."""

    def __init__(self, opts: OptimizeOptions, cfg: BenchConfig, env: dict):
        self.opts = opts
        self.rows: dict[str, Row] = {}
        self.runs: list[dict[str, Any]] = []
        self.doc = {
            "schema_version": SCHEMA_VERSION,
            "complete": False,
            "backend": opts.backend,
            "methods": list(opts.methods),
            "runs_per_variant": opts.runs,
            "calibration_size": opts.calibration_size,
            "quality_budget": attrs.asdict(opts.budget),
            "config": json.loads(json.dumps(cfg.to_dict())),
            "environment": env,
        }

    def write(self, complete: bool = False) -> None:
        self.doc.update(  # also without --output: the store and --html keep this document
            complete=complete,
            table=[r.plain() for r in self.rows.values()],
            notes={name: r.notes for name, r in self.rows.items() if r.notes},
            runs=self.runs,
        )
        if self.opts.output is None:
            return
        from speechperf.benchmark.report import write_json_atomic

        write_json_atomic(self.opts.output, self.doc)


def run_optimize(cfg: BenchConfig, opts: OptimizeOptions, workdir: Path, out=None) -> int:
    from speechperf.benchmark import build, report
    from speechperf.config import write_config
    from speechperf.data import load_dataset
    from speechperf.optimize.calibration import record_feeds
    from speechperf.optimize.variants import config_dict, plan_stage
    from speechperf.registry import require_backend

    out = out or sys.stdout
    for what, path in (("--output", opts.output), ("--csv", opts.csv_path), ("--markdown", opts.md_path)):
        if path is not None:  # before quantizing: a bad path must not cost the whole study
            check_output_path(path, what)
    out_dir = check_output_folder(opts.out_dir, "--out-dir")
    opts.keep.check()
    from speechperf.benchmark.derive import config_for_backend
    from speechperf.benchmark.validate import check_config

    check_config(cfg, opts.backend)  # as bench would, before the first quantization
    cfg = config_for_backend(cfg, opts.backend, workdir)  # the stage's file of this backend
    backend = require_backend(opts.backend)
    check_methods(backend, opts.methods)
    general = cfg.general
    dataset = load_dataset(general, cfg.roles[0])
    if len(dataset) < 2:
        raise SpeechperfError(
            f"the dataset has {len(dataset)} sample(s); optimize needs at least 2 (one is left out "
            "of calibration to check each graph on)"
        )
    calibration_size = min(opts.calibration_size, len(dataset) - 1)
    from speechperf.data.references import load_references

    load_references(general, dataset, cfg.roles)  # a reference file that does not fit fails here, before quantizing
    env = report.environment(general.threads, general.device, backend.name, backend.availability().version)
    rep = _Report(opts, cfg, env)
    base = config_dict(cfg, backend.name)

    with build.stdout_to_stderr():
        build.prepare_stages(cfg, backend.name, workdir)
        plans = [plan_stage(i, s, role, backend.name) for i, (s, role) in enumerate(zip(cfg.stages, cfg.roles), 1)]
        backend.set_threads(general.threads)
        backend.seed(general.seed)
        stages = build.build_stages(cfg, backend, general.device, general.threads, workdir)
        log.info("recording calibration feeds on %d sample(s) ...", calibration_size)
        calibration = record_feeds(stages, dataset[:calibration_size], FEEDS_PER_GRAPH)
        held_out = record_feeds(stages, dataset[calibration_size : calibration_size + 1], CHECK_CALLS)

    speech_out = cfg.roles[-1] in fid.SPEECH_ROLES
    fp32_size = sum(p.stat().st_size for plan in plans for p in plan.fp32_files)
    configs = {FP32: _with_dumps(base, out_dir, FP32, speech_out)}
    rep.rows[FP32] = Row(FP32, "baseline", fp32_size, fp32_size)
    shown_notes: set[str] = set()
    for method in opts.methods:
        row = rep.rows[method] = Row(method, "quantizing", fp32_bytes=fp32_size)
        rep.write()
        start = time.perf_counter()
        try:
            with build.stdout_to_stderr():
                data, size, diff, notes, op_shares = _make_variant(
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
    rep.write()
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

    def on_result(result):
        total = result.total
        rep.runs.append(
            {
                "variant": result.cell,
                "run": result.index + 1,
                "returncode": result.returncode,
                "error": result.error,
                "latency_ms": total and total.get("runtime_mean_ms"),
                "peak_rss_mib": total and total.get("peak_rss_mib"),
            }
        )
        rep.write()

    results = measure(cells, opts.runs, out_dir / "runs", opts.timeout_s, on_result)
    _fill_rows(rep, cfg, plans, results, dataset, out_dir, speech_out, opts.budget)
    rep.write(complete=True)
    if opts.csv_path is not None:
        write_text_atomic(opts.csv_path, to_csv(list(rep.rows.values())))
    if opts.md_path is not None:
        write_text_atomic(opts.md_path, to_markdown(list(rep.rows.values())))
    labels = " + ".join(p.label for p in plans)
    print_table(
        list(rep.rows.values()),
        f"speechperf optimize: {cfg.general.model_type} {labels} on {backend.name}, "
        f"{general.threads} thread(s), {opts.runs} run(s) per variant",
        file=out,
    )
    log.info("variants and their bench configs are in %s", out_dir)
    failed = [r for r in rep.rows.values() if r.status.startswith("failed")]
    code = 1 if failed else 0
    from speechperf.optimize.table import COLUMNS
    from speechperf.store.html import table_html

    title = f"speechperf optimize: {cfg.general.model_type} {labels} on {backend.name}"
    table = table_html(title, COLUMNS, [r.plain() for r in rep.rows.values()])
    opts.keep.finish("optimize", rep.doc, code, tables=[table], title=title)
    return code


def _with_dumps(data: dict, out_dir: Path, name: str, speech_out: bool) -> dict:
    if not speech_out:
        return data
    data = json.loads(json.dumps(data))
    data["general"]["dump_speech_waveforms_dir"] = str((out_dir / "waveforms" / name).resolve())
    return data


def _make_variant(backend, method, plans, stages, calibration, held_out, base, out_dir, general):
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


def _fill_rows(rep: _Report, cfg, plans, results, dataset, out_dir: Path, speech_out: bool, budget) -> None:
    from speechperf.data.references import load_references
    from speechperf.stats import speed_ratio, welch_p_value

    by_cell: dict[str, list] = {}
    for r in results:
        by_cell.setdefault(r.cell, []).append(r)
    references = load_references(cfg.general, dataset, cfg.roles)
    seconds = {s.id: len(s.audio) / s.sample_rate for s in dataset if s.audio is not None}
    role = cfg.roles[-1]
    first_ok = {name: next((r.data for r in runs if r.ok and r.data), None) for name, runs in by_cell.items()}
    for name, runs in by_cell.items():
        row = rep.rows[name]
        ok = [r for r in runs if r.ok and r.total and r.total.get("runtime_mean_ms") is not None]
        row.latencies_ms = [r.total["runtime_mean_ms"] for r in ok]
        peaks = [r.total["peak_rss_mib"] for r in ok if r.total.get("peak_rss_mib") is not None]
        row.peak_mib = statistics.median(peaks) if peaks else None
        if not ok:
            row.status = f"failed: every run failed ({runs[0].error})" if runs else "failed: not run"
            continue
        if len(ok) < len(runs):
            bad = next(r for r in runs if r not in ok)
            row.notes.append(f"{len(runs) - len(ok)} of {len(runs)} runs failed: {bad.error}")
    fp32 = rep.rows[FP32]
    language = cfg.general.language

    def fidelity_of(name: str, fp32_run: dict, variant_run: dict):
        fp32_waves = out_dir / "waveforms" / FP32 if speech_out else None
        variant_waves = out_dir / "waveforms" / name if speech_out else None
        diff = 0.0 if name == FP32 else rep.rows[name].graph_rel_diff
        return fid.stage_fidelity(
            role, fp32_run, variant_run, references, seconds, fp32_waves, variant_waves, diff, language
        )

    fp32_run = first_ok.get(FP32)
    if fp32_run:
        fp32.fidelity = fidelity_of(FP32, fp32_run, fp32_run)
    for name, row in rep.rows.items():
        if name == FP32 or row.status.startswith("failed") or not row.latencies_ms:
            continue
        variant_run = first_ok.get(name)
        if fp32_run and variant_run:
            row.fidelity = fidelity_of(name, fp32_run, variant_run)
        if not fp32.latencies_ms:
            row.status = "measured; fp32 failed, no speed-up figure"
            continue
        ratio = speed_ratio(row.latencies_ms, fp32.latencies_ms)
        row.speedup, row.speedup_sigma = ratio.value, ratio.sigma
        row.p_value = welch_p_value(row.latencies_ms, fp32.latencies_ms)
        row.status = _speed_status(ratio.value, row.p_value)
        over = fid.over_budget(fp32.fidelity, row.fidelity, budget)
        if over:  # faster or not, a variant that lost this much is not "ok"
            speed = "" if row.status.startswith("ok") else f"; {row.status}"
            row.status = f"over quality budget ({', '.join(over)}){speed}"
    _float_outputs(rep, cfg, by_cell)
    for row in rep.rows.values():
        if row.status in ("quantizing", "measuring"):
            row.status = "failed: not measured"


def _float_outputs(rep: _Report, cfg, by_cell) -> None:
    """Every float output of every stage (a mask, a waveform, a user file's outputs), each variant against fp32
    over the whole dataset, from the outputs their first finished runs saved (speechperf.meters.fidelity)."""
    from speechperf.benchmark.saved_outputs import load_stage_outputs
    from speechperf.compare.parity import compare_outputs

    def saved(name):
        path = next((r.outputs_path for r in by_cell.get(name, []) if r.ok and r.outputs_path), None)
        try:
            return load_stage_outputs(path) if path else None
        except (OSError, ValueError, KeyError):
            return None

    reference = saved(FP32)
    if reference is None:
        return
    tolerances = {f"stage{i}": s.tolerance for i, s in enumerate(cfg.stages, 1) if s.tolerance}
    for name, row in rep.rows.items():
        other = saved(name) if name != FP32 else None
        if other is not None:
            row.float_outputs = [d for d in compare_outputs(reference, other, tolerances) if not d.exact]


def _speed_status(ratio: float, p_value: float | None) -> str:
    if p_value is None:
        return f"ok ({ratio:.2f}x; no significance test with fewer than 2 runs)"
    if p_value < SIGNIFICANCE and ratio > 1:
        return "ok"
    if p_value < SIGNIFICANCE:
        return f"no speed-up: {1 / ratio:.2f}x slower than fp32"
    return f"no speed-up: not significant (p = {p_value:.2g})"
