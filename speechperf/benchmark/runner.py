"""One benchmark run from a merged config: data, backend, stages, measurement, reports, waveform dump.

The CLI's ``bench`` calls ``run_benchmark``; tests and notebooks can too. Its result is one document
(``Document(kind="bench")``, ``speechperf.benchmark.report``) written through ``speechperf.exports``: JSON, CSV and
Markdown are rewritten after each stage-meter pass, and on Ctrl-C the measurements so far are written (``"complete":
false``); the HTML page and the store come last.
"""

from __future__ import annotations

import logging
import sys
import tempfile
from pathlib import Path

import attrs

from speechperf.benchmark.validate import check_config, require_backend_name
from speechperf.config.schema import BenchConfig
from speechperf.errors import Interrupted, SpeechperfError
from speechperf.exports import Exports
from speechperf.outputs import check_output_folder, check_output_path, write_text_atomic
from speechperf.results import notes
from speechperf.results.environment import LoadProbe, busy_warning
from speechperf.store import html as html_report
from speechperf.store.keep import Keep

log = logging.getLogger(__name__)


def run_benchmark(
    cfg: BenchConfig,
    *,
    memory_method: str = "hwm",
    output: Path | None = None,
    csv_path: Path | None = None,
    md_path: Path | None = None,
    outputs_path: Path | None = None,
    text_path: Path | None = None,
    workdir: Path,
    keep: Keep | None = None,
    progress: bool = True,
    wide: bool = False,
    out=None,
    err=None,
) -> int:
    """Run ``cfg``; print the table to ``out`` (the key columns fitted to its width; ``wide``: every column);
    return the exit code (0 all measured, 1 a sample failed).

    Notes, warnings and the per-pass progress lines are logged (``speechperf.logs``) and the notes and warnings
    kept in the document; ``err`` is only where the live progress bar is drawn when it is a terminal."""
    from speechperf.benchmark import build, report
    from speechperf.benchmark.core import benchmark_for
    from speechperf.data import load_dataset, size_note
    from speechperf.meters.memory import rss_mib
    from speechperf.registry import require_backend

    out, err = out or sys.stdout, err or sys.stderr
    general = cfg.general
    backend_name = require_backend_name(cfg)
    check_config(cfg)  # everything `speechperf config check` checks, before anything is loaded
    from speechperf.benchmark.validate import require_pinned_backends

    # A stage pinned to a backend that is not installed costs nothing: refused before any data or model is loaded.
    pinned = require_pinned_backends(cfg, general.backend)
    # Every export, the store and --html: before anything is loaded, a bad path must not cost a whole run.
    exports = Exports(json=output, csv=csv_path, markdown=md_path, keep=keep or Keep(), columns=report.COLUMNS).check()
    if outputs_path is not None:
        outputs_path = check_output_path(outputs_path, "--save-outputs")
    if text_path is not None:
        text_path = check_output_path(text_path, "--save-text")
    dump_dir = (
        check_output_folder(general.dump_speech_waveforms_dir, "--dump-speech-waveforms-dir")
        if general.dump_speech_waveforms_dir
        else None
    )
    dataset = load_dataset(general, cfg.roles[0])
    if dump_dir:  # each file it may write, now that the samples are known (dump_final_speech_output names them)
        for i in range(len(dataset)):
            check_output_path(
                dump_dir / f"{general.dump_waveform_file_prefix}_{i}_pred.wav", "--dump-speech-waveforms-dir"
            )
    from speechperf.benchmark import quality as quality_pass
    from speechperf.benchmark import text_reference
    from speechperf.data.references import load_references
    from speechperf.meters import quality as quality_meter

    # Read (and checked) before anything is loaded: a reference file that does not fit the dataset costs nothing.
    references = load_references(general, dataset, cfg.roles)
    score_quality, quality_note = quality_pass.wanted(general, references, cfg.roles)
    if score_quality:
        quality_meter.check_references(references, general)
        try:  # the run's text output has references of its kind (a transcript's src_text, a translation's)
            text_reference.check(cfg, references)
        except SpeechperfError as exc:
            if "quality" in general.meters:
                raise SpeechperfError(f"{cfg.source}: quality: {exc}") from None
            score_quality, quality_note = False, f"quality not scored: {exc}"
    if text_path is not None and not score_quality:
        raise SpeechperfError(
            f"--save-text {text_path}: nothing is scored in this run ({quality_note or 'add quality to --meters'})"
        )
    from speechperf.benchmark.derive import config_for_backend

    # What the console says from here on is kept in the document (its notes and warnings).
    with notes.collect() as said:
        if cut := size_note(general, len(dataset)):
            log.info("note: %s", cut)
        # The file this backend runs of a stage with a file per backend; a derived file is exported and checked in
        # a child process (it imports the source framework, which must not sit in the measured one).
        cfg = config_for_backend(cfg, backend_name, workdir)
        backend = require_backend(backend_name)  # imports the framework
        preload: list[float] = []  # the RSS with the framework imported and no model loaded yet
        (stages,) = build.open_stages(
            cfg, backend, workdir, also=pinned.values(), before_load=lambda: preload.append(rss_mib())
        )

        env = report.environment(general.threads, general.device, backend.name, backend.availability().version)
        if pinned:  # the frameworks of the stages pinned elsewhere, and their versions
            env["pinned_backends"] = {name: each.availability().version for name, each in pinned.items()}
        config_dict = cfg.to_dict()
        show = _Progress(err) if progress else None

        def partial():
            return report.document(bench.snapshot(complete=False), config_dict, env, said)

        def on_progress(label, meter, done, total):
            if show:
                show(label, meter, done, total)
            if done == total and total:
                exports.write(partial())

        bench = benchmark_for(
            general.model_type,
            stages,
            backend,
            device=general.device,
            threads=general.threads,
            meters=tuple(m for m in general.meters if m != "quality"),
            warmup=general.warmup,
            repeat=general.repeat,
            warmup_per_shape=general.warmup_per_shape,
            memory_method=memory_method,
            preload_mib=preload[0],
            progress=on_progress,
            batch_size=general.batch_size,
        )
        probe = LoadProbe()
        try:
            with exports.interrupted(partial):
                probe.start()  # the load other processes put on the machine while it timed
                try:
                    result = bench.gather_all_metrics(dataset)
                finally:
                    env["load"] = probe.stop()
                busy = busy_warning(env["load"])
                if busy:  # logged inside notes.collect: the document's warnings mark the figures too
                    log.warning("%s", busy)
                if score_quality:  # its own pass, after every measured one: never weighs on a timing or memory figure
                    if show:
                        show("quality", "scoring the outputs (untimed)", 0, 0)
                    try:
                        quality = quality_pass.measure(bench, dataset, references, general, backend, workdir)
                        result = attrs.evolve(result, quality=quality)
                    except SpeechperfError as exc:  # what was measured is kept and written; the reason is said
                        quality_note = f"quality not scored: {exc}"
        except KeyboardInterrupt:
            if show:
                show.close()
            # The CLI prints "interrupted" and this note on one line; printing it here too would say it twice.
            written = [str(path) for _, path in exports.paths()]
            raise Interrupted(f"what was measured is in {', '.join(written)}" if written else "") from None
        if show:
            show.close()
        if "flops" in general.meters and "runtime" in general.meters:  # after every measurement: it runs GEMMs
            from speechperf.meters.roofs import roofs_for

            result = attrs.evolve(result, roofs=roofs_for(general.threads))
        exports.write(report.document(result, config_dict, env, said))
        if text_path is not None and result.quality is not None:
            write_text_atomic(text_path, quality_meter.save_text(result.quality), "--save-text")
        if outputs_path is not None:
            from speechperf.benchmark.saved_outputs import save_stage_outputs

            save_stage_outputs(outputs_path, bench.stage_outputs())
        from speechperf.benchmark import console

        console.print_table(result, file=out, wide=wide)
        _log_notes(result, env.get("load"))
        if dump_dir:
            written_waves = bench.dump_final_speech_output(
                dump_dir, general.dump_waveform_file_prefix, general.target_sr
            )
            if written_waves:
                log.info(
                    "wrote %d waveform(s) at %d Hz to %s",
                    len(written_waves),
                    general.target_sr,
                    general.dump_speech_waveforms_dir,
                )
            else:
                log.warning("note: model_type %s produced no waveform; nothing was dumped", general.model_type)
        if "flops" in general.meters and "runtime" in general.meters:
            from speechperf.meters import roofline

            log.info("note: %s", roofline.describe(result.roofs, general.threads))
        _log_quality(result.quality, quality_note)
        for message in result.failed.values():
            log.error("failed: %s", message)
        code = 1 if result.failed else 0
        with tempfile.TemporaryDirectory(prefix="speechperf-bench-") as folder:
            images = []
            if exports.keep.html is not None:  # the page's plots; nothing else shows them
                from speechperf.benchmark import plots

                images = plots.draw(result, Path(folder))
            doc = report.document(result, config_dict, env, said)
            # After the exports and the table: a store that cannot be written now costs nothing that was measured.
            name = f"{general.model_type} on {backend.name}"
            table = html_report.table_html(name, report.HTML_COLUMNS, report.shown_rows(doc.rows))
            exports.finish(doc, code, tables=[table], images=images, title=f"speechperf bench: {name}")
    return code


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
    log.info(
        "quality: %s; scored in an untimed pass after timing, %.2f s (not in the figures above)",
        f"references from {quality.references}" if quality.references else "no references (speech quality alone)",
        quality.seconds,
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
