"""One benchmark run from a merged config: the plan, the stages, the measurement, the saved outputs.

The CLI's ``bench`` calls ``run_benchmark``; tests and notebooks can too. Everything before the measurement is the
plan's (``speechperf.benchmark.plan.resolve``), the run's sequence the lifecycle's (``speechperf.lifecycle``): the
exports are checked first, JSON, CSV and Markdown rewritten after each stage-meter pass, and on Ctrl-C the
measurements so far are written (``"complete": false``); the table, the HTML page and the store come from the
document through its view (``speechperf.views.bench``), so ``speechperf show`` gives the same again.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import IO, Any

import attrs

from speechperf.benchmark.plan import Plan, resolve
from speechperf.config.schema import BenchConfig
from speechperf.errors import SpeechperfError
from speechperf.exports import Exports
from speechperf.lifecycle import Lifecycle, lifecycle
from speechperf.outputs import check_output_folder, check_output_path, write_text_atomic
from speechperf.results import Document
from speechperf.results.environment import LoadProbe, busy_warning

log = logging.getLogger(__name__)


@attrs.frozen
class BenchOptions:
    """How one bench run is measured and where it goes (the config says what runs)."""

    #: Where reference models are built and derived files exported (``speechperf.cache.cache_dir``).
    workdir: Path
    exports: Exports = Exports()
    #: ``hwm``: the exact per-call RSS peak (Linux); ``memory_profiler``: fairseq's sampling.
    memory_method: str = "hwm"
    #: ``--save-outputs``: every stage's output per sample, as .npz.
    outputs_path: Path | None = None
    #: ``--save-text``: the scored texts as TSV (needs the quality meter).
    text_path: Path | None = None
    #: A live bar on a terminal, a line per finished pass otherwise; False: nothing (``--quiet``).
    progress: bool = True
    #: Every column of the table, not only the key ones fitted to the terminal.
    wide: bool = False


@attrs.define
class Measured:
    """What the measurement left: the benchmark (its kept outputs), its result, and what the document needs."""

    bench: Any  # speechperf.benchmark.core.Benchmark
    result: Any  # speechperf.benchmark.results.BenchResult
    env: dict[str, Any]
    config: dict[str, Any]
    quality_note: str | None

    def document(self) -> Document:
        from speechperf.benchmark import report

        return report.document(self.result, self.config, self.env)


def run_benchmark(
    cfg: BenchConfig, options: BenchOptions, out: IO[str] | None = None, err: IO[str] | None = None
) -> int:
    """Run ``cfg``; print the table to ``out`` (the key columns fitted to its width; ``options.wide``: every column);
    return the exit code (0 all measured, 1 a sample failed).

    Notes, warnings and the per-pass progress lines are logged (``speechperf.logs``) and the notes and warnings
    kept in the document; ``err`` is only where the live progress bar is drawn when it is a terminal."""
    with lifecycle(options.exports, out=out, wide=options.wide) as run:
        options = _checked(options)
        dump_dir = _dump_folder(cfg)
        plan = resolve(cfg, workdir=options.workdir)
        _check_saves(plan, options, dump_dir)
        if plan.size_note:
            log.info("note: %s", plan.size_note)
        measured = _measure(plan, options, run, err or sys.stderr)
        doc = measured.document()
        _save(options, measured)
        run.show(doc)  # the table first, then what it leaves out (logged: it reaches the document's notes)
        _log_notes(measured.result, measured.env.get("load"))
        _log_untimed(measured.bench.stages)
        _dump(plan, measured, dump_dir)
        _log_roofs(plan, measured.result)
        _log_quality(measured.result.quality, measured.quality_note)
        for message in measured.result.failed.values():
            log.error("failed: %s", message)
        return run.finish(doc, 1 if measured.result.failed else 0, show=False)


def _checked(options: BenchOptions) -> BenchOptions:
    """The files a run saves besides its exports, refused before anything is loaded."""
    return attrs.evolve(
        options,
        outputs_path=options.outputs_path and check_output_path(options.outputs_path, "--save-outputs"),
        text_path=options.text_path and check_output_path(options.text_path, "--save-text"),
    )


def _dump_folder(cfg: BenchConfig) -> Path | None:
    folder = cfg.general.dump_speech_waveforms_dir
    return check_output_folder(folder, "--dump-speech-waveforms-dir") if folder else None


def _check_saves(plan: Plan, options: BenchOptions, dump_dir: Path | None) -> None:
    """Now that the samples are known and what is scored is decided: each waveform file the dump may write
    (``dump_final_speech_output`` names them), and a --save-text that has something to save."""
    general = plan.cfg.general
    if dump_dir:
        for i in range(len(plan.dataset)):
            check_output_path(
                dump_dir / f"{general.dump_waveform_file_prefix}_{i}_pred.wav", "--dump-speech-waveforms-dir"
            )
    if options.text_path is not None and not plan.score_quality:
        raise SpeechperfError(
            f"--save-text {options.text_path}: nothing is scored in this run "
            f"({plan.quality_note or 'add quality to --meters'})"
        )


def _environment(plan: Plan) -> dict[str, Any]:
    from speechperf.benchmark import report

    general, backend = plan.cfg.general, plan.backend
    env = report.environment(general.threads, general.device, backend.name, backend.availability().version)
    if plan.pinned:  # the frameworks of the stages pinned elsewhere, and their versions
        env["pinned_backends"] = {name: each.availability().version for name, each in plan.pinned.items()}
    return env


def _measure(plan: Plan, options: BenchOptions, run: Lifecycle, err: IO[str]) -> Measured:
    """The stages opened and measured, every measured pass written as it ends; then quality, untimed, and the
    roofs."""
    from speechperf.benchmark import build, report
    from speechperf.benchmark.core import benchmark_for
    from speechperf.meters.memory import rss_mib

    general = plan.cfg.general
    preload: list[float] = []  # the RSS with the framework imported and no model loaded yet
    (stages,) = build.open_stages(
        plan.cfg,
        plan.backend,
        options.workdir,
        also=plan.pinned.values(),
        before_load=lambda: preload.append(rss_mib()),
    )
    env, config = _environment(plan), plan.cfg.to_dict()
    show = _Progress(err) if options.progress else None

    def partial() -> Document:
        return report.document(bench.snapshot(complete=False), config, env)

    def on_progress(label, meter, done, total):
        if show:
            show(label, meter, done, total)
        if done == total and total:
            run.write(partial())

    bench = benchmark_for(
        general.model_type,
        stages,
        plan.backend,
        device=general.device,
        threads=general.threads,
        meters=tuple(m for m in general.meters if m != "quality"),
        warmup=general.warmup,
        repeat=general.repeat,
        warmup_per_shape=general.warmup_per_shape,
        memory_method=options.memory_method,
        preload_mib=preload[0],
        progress=on_progress,
        batch_size=general.batch_size,
    )
    try:
        result = _timed(bench, plan, env, run, partial)
        measured = Measured(bench, result, env, config, plan.quality_note)
        if plan.score_quality:  # its own pass, after every measured one: never weighs on a timing or memory figure
            if show:
                show("quality", "scoring the outputs (untimed)", 0, 0)
            _score(measured, plan, options.workdir)
    finally:
        if show:
            show.close()
    if "flops" in general.meters and "runtime" in general.meters:  # after every measurement: it runs GEMMs
        from speechperf.meters.roofs import roofs_for

        measured.result = attrs.evolve(measured.result, roofs=roofs_for(general.threads))
    return measured


def _timed(bench, plan: Plan, env: dict[str, Any], run: Lifecycle, partial) -> Any:
    """Every measured pass, with the load other processes put on the machine meanwhile; on Ctrl-C the samples
    measured so far are written, not only the passes finished."""
    probe = LoadProbe().start()
    try:
        try:
            result = bench.gather_all_metrics(plan.dataset)
        finally:
            env["load"] = probe.stop()
    except KeyboardInterrupt:
        run.write(partial())
        raise
    if busy := busy_warning(env["load"]):  # logged inside the lifecycle: the document's warnings mark it too
        log.warning("%s", busy)
    return result


def _score(measured: Measured, plan: Plan, workdir: Path) -> None:
    """Quality scored on the kept outputs; a failure is said in a note, and what was measured is kept."""
    from speechperf.benchmark import quality as quality_pass

    try:
        quality = quality_pass.measure(
            measured.bench, plan.dataset, plan.references, plan.cfg.general, plan.backend, workdir
        )
        measured.result = attrs.evolve(measured.result, quality=quality)
    except SpeechperfError as exc:
        measured.quality_note = f"quality not scored: {exc}"


def _save(options: BenchOptions, measured: Measured) -> None:
    """--save-text and --save-outputs."""
    from speechperf.meters import quality as quality_meter

    quality = measured.result.quality
    if options.text_path is not None and quality is not None:
        write_text_atomic(options.text_path, quality_meter.save_text(quality), "--save-text")
    if options.outputs_path is not None:
        from speechperf.benchmark.saved_outputs import save_stage_outputs

        save_stage_outputs(options.outputs_path, measured.bench.stage_outputs())


def _dump(plan: Plan, measured: Measured, dump_dir: Path | None) -> None:
    """--dump-speech-waveforms-dir: each final waveform, resampled to --target-sr."""
    if not dump_dir:
        return
    general = plan.cfg.general
    written = measured.bench.dump_final_speech_output(dump_dir, general.dump_waveform_file_prefix, general.target_sr)
    if written:
        log.info(
            "wrote %d waveform(s) at %d Hz to %s", len(written), general.target_sr, general.dump_speech_waveforms_dir
        )
    else:
        log.warning("note: model_type %s produced no waveform; nothing was dumped", general.model_type)


def _log_roofs(plan: Plan, result) -> None:
    general = plan.cfg.general
    if "flops" in general.meters and "runtime" in general.meters:
        from speechperf.meters import roofline

        log.info("note: %s", roofline.describe(result.roofs, general.threads))


def _log_notes(result, load: dict | None = None) -> None:
    """What the table leaves out, below it: the length fits, cold starts, noisy timings (with the load other
    processes put on the machine meanwhile, ``LoadProbe``), uncounted FLOPs."""
    from speechperf.benchmark import report

    for name, found in report.length_fits(result).items():
        log.info("note: cost against input length, %s: %s", name, found.text())
    for stage in result.stages:
        if stage.first_call_s is not None:
            log.info(
                "cold start: stage%d %s: load %.2f s, first call %.3f s (not in the figures above)",
                stage.index,
                stage.label,
                stage.load_s,
                stage.first_call_s,
            )
        if stage.runtime is not None and stage.runtime.shape_note:
            log.warning("note: stage%d %s: %s", stage.index, stage.label, stage.runtime.shape_note)
        if stage.runtime is not None and stage.runtime.noise_warning:
            log.warning("note: stage%d %s: %s%s", stage.index, stage.label, stage.runtime.noise_warning, _busy(load))
        flops_failures = [f for f in stage.failures if f.meter == "flops"]
        if flops_failures:
            log.warning(
                "note: stage%d FLOPs not counted for %d sample(s): %s",
                stage.index,
                len(flops_failures),
                flops_failures[0].error,
            )
        if stage.flops is not None and stage.flops.uncounted:
            log.info(
                "note: stage%d FLOPs (%s) leave out: %s",
                stage.index,
                stage.flops.source,
                ", ".join(stage.flops.uncounted),
            )


def _log_untimed(stages) -> None:
    """Each stage's work outside its timed forward (a linear STFT front-end, a mask's resynthesis), apart from the
    figures, as the hand-off between stages is."""
    for index, stage in enumerate(stages, 1):
        steps = {name: seconds for name, seconds in stage.untimed_s.items() if seconds > 0}
        if steps:
            log.info(
                "note: stage%d %s: %s, untimed, over every pass (not in the figures above)",
                index,
                stage.label,
                ", ".join(f"{name} {seconds * 1e3:.1f} ms" for name, seconds in steps.items()),
            )


def _busy(load: dict | None) -> str:
    """The load while it timed, as a clause of the noise note: the measured figure that says whether the machine
    was shared."""
    if not load or load.get("busy_cores_others") is None:
        return ""
    return f" (while it timed, other processes kept {load['busy_cores_others']:.2f} of {load['cpu_count']} cores busy)"


def _log_quality(quality, note: str | None) -> None:
    """What the quality figures were scored after, and what they cost, apart from the measured figures."""
    if note:
        log.info("note: %s", note)
    if quality is None:
        return
    for line in quality.notes:
        log.info("note: %s", line)
    for score in quality.scores:
        how = [f"{score.samples} sample(s)"]  # the headline names the normalizer
        if score.asr:
            how.append(f"transcribed by {score.asr}")
        log.info("quality: %s: %s (%s)", score.stage, score.described(), ", ".join(how))
        if score.signature:
            log.info("quality: %s: sacrebleu signature: %s", score.stage, score.signature)
    if quality.references:
        used = f"references: {quality.references}"
    elif quality.scores:
        used = (
            "no references (DNSMOS needs none)"
            if all(s.metric == "speech" for s in quality.scores)
            else ("no references")
        )
    else:
        log.info("quality: nothing scored (the notes above say why)")
        return
    log.info(
        "quality: %s; scored in an untimed pass after timing, %.2f s (not in the figures above)", used, quality.seconds
    )


class _Progress:
    """A rich progress bar on a terminal; one line per finished pass otherwise (logs, CI)."""

    def __init__(self, err):
        self.err = err
        self.live = err.isatty() if hasattr(err, "isatty") else False
        self.task = None
        self.key = None
        if self.live:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(file=err),
                transient=True,
            )
            self.bar.start()

    def __call__(self, label, meter, done, total):
        if self.live:
            if self.key != (label, meter) or self.task is None:  # None before the first pass's task
                self.key = (label, meter)
                self.task = self.bar.add_task(f"{label}: {meter}", total=total or 1)
            self.bar.update(self.task, completed=done)
        elif total and done == total:
            log.info("%s: %s done (%d samples)", label, meter, total)
        elif not total:
            log.info("%s: %s", label, meter)

    def close(self):
        if self.live:
            self.bar.stop()
