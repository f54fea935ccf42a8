"""One benchmark run from a merged config: data, backend, stages, measurement, reports, waveform dump.

The CLI's ``bench`` calls ``run_benchmark``; tests and notebooks can too. The JSON output is rewritten after each
stage-meter pass, and on Ctrl-C the measurements so far are written (JSON with ``"complete": false``, CSV,
Markdown).
"""

from __future__ import annotations

import sys
from pathlib import Path

from speechperf.benchmark.validate import check_config
from speechperf.config.schema import BenchConfig
from speechperf.errors import Interrupted, SpeechperfError
from speechperf.outputs import check_output_path, write_text_atomic


def run_benchmark(
    cfg: BenchConfig,
    *,
    memory_method: str = "hwm",
    output: Path | None = None,
    csv_path: Path | None = None,
    md_path: Path | None = None,
    outputs_path: Path | None = None,
    workdir: Path,
    progress: bool = True,
    out=None,
    err=None,
) -> int:
    """Run ``cfg``; print the table to ``out``; return the exit code (0 all measured, 1 a sample failed)."""
    from speechperf.benchmark import build, report
    from speechperf.benchmark.core import benchmark_for
    from speechperf.data import load_dataset
    from speechperf.meters.memory import rss_mib
    from speechperf.registry import known_backends, require_backend

    out, err = out or sys.stdout, err or sys.stderr
    general = cfg.general
    if not general.backend:
        raise SpeechperfError(
            f"no backend given: pass --backend NAME (or general.backend); known backends: {', '.join(known_backends())}"
        )
    check_config(cfg)  # everything `speechperf config check` checks, before anything is loaded
    exports = {
        what: path
        for what, path in (("--output", output), ("--csv", csv_path), ("--markdown", md_path))
        if path is not None
    }
    for what, path in exports.items():  # before anything is loaded: a bad path must not cost a whole run
        check_output_path(path, what)
    if outputs_path is not None:
        outputs_path = check_output_path(outputs_path, "--save-outputs")
    dataset = load_dataset(general, cfg.roles[0])
    from speechperf.benchmark.backend_files import config_for_backend

    # The file this backend runs of a stage with a file per backend; a derived file is exported and checked in a
    # child process (it imports the source framework, which must not sit in the measured one).
    cfg = config_for_backend(cfg, general.backend, workdir, err)
    backend = require_backend(general.backend)  # imports the framework
    with build.stdout_to_stderr():
        build.prepare_stages(cfg, backend.name, workdir, err)
        backend.set_threads(general.threads)
        backend.seed(general.seed)
        preload = rss_mib()  # the framework is imported, no model is loaded yet
        stages = build.build_stages(cfg, backend, general.device, general.threads, workdir)

    env = report.environment(general.threads, general.device, backend.name, backend.availability().version)
    config_dict = cfg.to_dict()
    show = _Progress(err) if progress else None

    def on_progress(label, meter, done, total):
        if show:
            show(label, meter, done, total)
        if output is not None and done == total and total:
            report.write_json_atomic(output, report.to_json(bench.snapshot(complete=False), config_dict, env))

    bench = benchmark_for(
        general.model_type,
        stages,
        backend,
        device=general.device,
        threads=general.threads,
        meters=general.meters,
        warmup=general.warmup,
        repeat=general.repeat,
        memory_method=memory_method,
        preload_mib=preload,
        progress=on_progress,
    )
    try:
        result = bench.gather_all_metrics(dataset)
    except KeyboardInterrupt:
        if show:
            show.close()
        _write_exports(bench.snapshot(complete=False), config_dict, env, output, csv_path, md_path)
        # The CLI prints "interrupted" and this note on one line; printing it here too would say it twice.
        raise Interrupted(
            f"what was measured is in {', '.join(map(str, exports.values()))}" if exports else ""
        ) from None
    if show:
        show.close()
    _write_exports(result, config_dict, env, output, csv_path, md_path)
    if outputs_path is not None:
        from speechperf.benchmark.saved_outputs import save_stage_outputs

        save_stage_outputs(outputs_path, bench.stage_outputs())
    report.print_table(result, file=out)
    for stage in result.stages:
        if stage.first_call_s is not None:
            print(
                f"cold start: stage{stage.index} {stage.label}: load {stage.load_s:.2f} s, first call "
                f"{stage.first_call_s:.3f} s (not in the figures above)",
                file=err,
            )
        if stage.runtime is not None and stage.runtime.noise_warning:
            print(f"note: stage{stage.index} {stage.label}: {stage.runtime.noise_warning}", file=err)
        flops_failures = [f for f in stage.failures if f.meter == "flops"]
        if flops_failures:
            print(
                f"note: stage{stage.index} FLOPs not counted for {len(flops_failures)} sample(s): "
                f"{flops_failures[0].error}",
                file=err,
            )
        if stage.flops is not None and stage.flops.uncounted:
            print(
                f"note: stage{stage.index} FLOPs ({stage.flops.source}) leave out: {', '.join(stage.flops.uncounted)}",
                file=err,
            )
    if general.dump_speech_waveforms_dir:
        written = bench.dump_final_speech_output(
            general.dump_speech_waveforms_dir, general.dump_waveform_file_prefix, general.target_sr
        )
        if written:
            print(
                f"wrote {len(written)} waveform(s) at {general.target_sr} Hz to {general.dump_speech_waveforms_dir}",
                file=err,
            )
        else:
            print(f"note: model_type {general.model_type} produced no waveform; nothing was dumped", file=err)
    for message in result.failed.values():
        print(f"failed: {message}", file=err)
    return 1 if result.failed else 0


def _write_exports(result, config_dict, env, output, csv_path, md_path) -> None:
    from speechperf.benchmark import report

    if output is not None:
        report.write_json_atomic(output, report.to_json(result, config_dict, env))
    if csv_path is not None:
        write_text_atomic(csv_path, report.to_csv(result), "--csv")
    if md_path is not None:
        write_text_atomic(md_path, report.to_markdown(result), "--markdown")


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
            if self.key != (label, meter):
                self.key = (label, meter)
                self.task = self.bar.add_task(f"{label}: {meter}", total=total or 1)
            self.bar.update(self.task, completed=done)
        elif total and done == total:
            print(f"{label}: {meter} done ({total} samples)", file=self.err)
        elif not total:
            print(f"{label}: {meter}", file=self.err)

    def close(self):
        if self.live:
            self.bar.stop()
