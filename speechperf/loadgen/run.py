"""One ``speechperf loadgen`` run: build the stages bench builds (once per instance), prepare the inputs untimed,
warm up, then hand the SUT to LoadGen for the scenario, or for a Server peak search; score accuracy mode.

LoadGen's own logs (``mlperf_log_summary.txt``, ``mlperf_log_detail.txt``, ...) stay in the log folder, one
sub-folder per test: a fresh folder per run (``fresh_log_dir``), or a given one that is empty, so that an earlier
run's JSON never points at logs a later run replaced. The exports are written after each test, so Ctrl-C keeps what was measured.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from pathlib import Path

import attrs

from speechperf.benchmark.validate import check_config
from speechperf.config.schema import BenchConfig
from speechperf.errors import Interrupted, SpeechperfError
from speechperf.exports import Exports
from speechperf.extras import require
from speechperf.loadgen import report
from speechperf.loadgen.settings import ScenarioOptions, check_options, test_settings, user_conf_settings
from speechperf.loadgen.summary import accuracy_summary, interrupted_summary, read_summary
from speechperf.outputs import check_output_folder
from speechperf.results import Document, loadgen_table
from speechperf.results.environment import LoadProbe, machine
from speechperf.results.notes import collect
from speechperf.store.html import table_html
from speechperf.tables import significant

log = logging.getLogger(__name__)
LOADGEN_THREAD = "speechperf-loadgen-test"
ESTIMATE_S = 3.0  # the warm-up's timed pass over the dataset, at most (one sample at least)


def run_loadgen(
    cfg: BenchConfig,
    opts: ScenarioOptions,
    exports: Exports,
    *,
    log_dir: Path,
    workdir: Path,
    force: bool = False,
    find_peak: bool = False,
    budget_s: float = 300.0,
    reference_quality: float | None = None,
    out=None,
) -> int:
    """Check everything, measure, print; the document goes through ``exports`` (written after each test, on
    Ctrl-C, and at the end with --html and the store); returns the exit code (1: some sample failed, or
    accuracy mode's FAIL against --reference-quality)."""
    with collect() as got:
        return _run(
            cfg, opts, exports, got, log_dir, workdir, force, find_peak, budget_s, reference_quality, out or sys.stdout
        )


def fresh_log_dir(parent: Path) -> Path:
    """A folder of its own for one run's LoadGen logs, under ``parent``: its start time and process id."""
    return Path(parent) / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"


def check_log_dir(log_dir: Path, force: bool) -> None:
    """Refuse a --log-dir that holds something already, unless --force: LoadGen would replace the earlier logs
    under the earlier run's JSON."""
    if force or not Path(log_dir).is_dir():
        return
    held = sorted(p.name for p in Path(log_dir).iterdir())
    if held:
        raise SpeechperfError(
            f"--log-dir {log_dir}: not empty ({len(held)} entries, e.g. {held[0]}); an earlier run's logs would be "
            "replaced: give a new folder, leave --log-dir out (a fresh folder per run), or pass --force"
        )


def _run(cfg, opts, exports, got, log_dir, workdir, force, find_peak, budget_s, reference_quality, out) -> int:
    check_options(opts)
    lg = require("mlperf_loadgen", "speechperf loadgen")
    general = cfg.general
    if not general.backend:
        raise SpeechperfError("no backend given: pass --backend NAME (or general.backend)")
    check_config(cfg)
    model = cfg.stages[0].model or "*"  # the name a user.conf's `model.Scenario.key` lines are looked up under
    user_conf = user_conf_settings(opts, model)
    check_log_dir(log_dir, force)
    if opts.audit_conf is None and Path("audit.config").is_file():
        log.warning("note: ./audit.config is not applied unless passed: --audit-conf audit.config")
    folder = check_output_folder(log_dir, "--log-dir")
    exports.check()
    from speechperf.benchmark import build
    from speechperf.benchmark.derive import config_for_backend
    from speechperf.data import load_dataset
    from speechperf.registry import require_backend

    dataset = load_dataset(general, cfg.roles[0])
    references, score_quality = None, False
    if opts.mode == "accuracy":
        from speechperf.benchmark import quality as quality_pass
        from speechperf.data.references import load_references
        from speechperf.meters import quality as quality_meter

        references = load_references(general, dataset, cfg.roles)
        general_q = attrs.evolve(general, meters=(*general.meters, "quality"))
        score_quality, note = quality_pass.wanted(general_q, references, cfg.roles)
        if score_quality:
            from speechperf.benchmark import text_reference

            quality_meter.check_references(references, general)
            text_reference.check(cfg, references)  # the output's reference of its kind, before any timing
        elif note:
            log.warning("note: %s", note)
    cfg = config_for_backend(cfg, general.backend, workdir)
    backend = require_backend(general.backend)
    instances = build.open_stages(cfg, backend, workdir, threads=opts.threads, instances=opts.instances)
    inputs = [instances[0][0].from_sample(sample) for sample in dataset]  # untimed, up front, as bench does
    from speechperf.loadgen.sut import SystemUnderTest

    sut = SystemUnderTest(lg, instances, inputs, backend, general.device)
    service_s, fastest_s = _warm_up(sut, general.warmup)
    capacity = opts.instances / service_s
    log.info(
        "warm-up: %.1f ms a sample on one instance; about %.1f samples/s on %d instance(s)",
        service_s * 1000,
        capacity,
        opts.instances,
    )
    qsl = lg.ConstructQSL(len(inputs), len(inputs), lambda _: None, lambda _: None)
    runs: list[report.LoadgenRun] = []
    extra: dict = {"backend": backend.name, "pid": os.getpid(), "loadgen_logs": str(folder)}
    env = {**machine(), "backend": backend.name, "device": general.device, "threads": opts.threads}
    env["instances"] = opts.instances
    probe = LoadProbe().start()
    labels = [stage.label for stage in instances[0]]
    lg_started = False

    def one_test(name: str, qps: float | None, run_opts: ScenarioOptions) -> report.LoadgenRun:
        test_dir = folder / name
        test_dir.mkdir(parents=True, exist_ok=True)
        settings = test_settings(
            lg, run_opts, qps, expected_qps=capacity, expected_latency_s=service_s, user_conf=user_conf
        )
        logging_ = lg.LogSettings()
        logging_.log_output.outdir = str(test_dir)
        logging_.log_output.copy_summary_to_stdout = False
        sut.reset()
        sut.keep_outputs = run_opts.mode == "accuracy"
        nonlocal lg_started
        lg_started = True
        try:
            _start(lg, sut, qsl, settings, logging_, run_opts.audit_conf or str(test_dir / "audit.config"))
        except KeyboardInterrupt:  # what this test measured so far is kept, marked incomplete
            runs.append(
                attrs.evolve(_result(run_opts, backend.name, qps, capacity, sut, labels, test_dir), complete=False)
            )
            raise
        return _result(run_opts, backend.name, qps, capacity, sut, labels, test_dir)

    def document(complete: bool = False) -> Document:
        done = list(runs)
        doc = Document(
            kind="loadgen",
            config=cfg.to_dict(),
            environment={**env, "load": probe.result or probe.stop()},
            rows=report.rows(done, extra.get("peak")),
            notes=[*got.notes, *report.run_notes(done, _peak_index(extra))],
            warnings=list(got.warnings),
            complete=complete and all(r.complete for r in done),
            body={**extra, "scenario_options": attrs.asdict(opts), "runs": report.runs_json(done)},
        )
        probe.result = None  # the load is measured again at the next write, over the whole run so far
        return doc

    def write(partial: bool = False) -> None:
        exports.write(document(complete=False))

    try:
        if find_peak:
            from speechperf.loadgen.peak import search_peak

            peak = search_peak(
                lambda qps, queries: one_test(
                    f"peak-{len(runs) + 1:02d}-{significant(qps)}qps", qps, attrs.evolve(opts, min_queries=queries)
                ),
                capacity,
                budget_s,
                runs,
                write,
                lambda qps, queries: max(opts.duration_s, queries / qps),
                bound_ms=opts.target_latency_ms,
                queries=opts.query_count,
                fastest_s=fastest_s,
            )
            extra["peak"] = peak
        else:
            runs.append(one_test(f"{opts.scenario}-{opts.mode}", opts.target_qps, opts))
            if score_quality:
                extra["quality"] = _score(sut, dataset, references, general, backend, workdir, reference_quality)
    except KeyboardInterrupt:
        sut.draining = True
        write(partial=True)
        note = f"LoadGen's logs are in {folder}; what was measured is in the exports"
        if lg_started:
            # LoadGen's test cannot be stopped, and a process that exits after it ran crashes in its C++ threads
            # at shutdown (SIGSEGV): everything is written, so leave at once with the CLI's interrupted exit code.
            sys.stderr.write(f"interrupted; {note}\n")
            sys.stderr.flush()
            sys.stdout.flush()
            os._exit(130)
        raise Interrupted(note) from None
    finally:
        lg.DestroyQSL(qsl)
    probe.stop()
    doc = document(complete=True)
    report.print_runs(doc.rows, report.run_notes(runs, _peak_index(extra)), out)
    lines = []
    if find_peak:
        lines.append(_peak_line(extra["peak"], opts))
    lines += extra.get("quality", {}).get("lines", [])
    for line in lines:
        out.write(line + "\n")
    doc.notes += lines
    log.info("LoadGen's logs: %s", folder)
    failed = sum(len(r.failed) for r in runs)
    if failed:
        first = next(iter(runs[-1].failed.values()), "")
        log.error("failed: %d sample(s); first: %s", failed, first)
        doc.warnings.append(f"failed: {failed} sample(s); first: {first}")
    code = 1 if failed else 0
    if extra.get("quality", {}).get("verdict") == "FAIL":  # MLPerf's accuracy rule missed: the run fails
        doc.warnings.append("accuracy: FAIL: below 99% of the fp32 reference")
        code = 1
    title = f"speechperf loadgen: {opts.scenario} on {backend.name}"
    table = table_html(title, loadgen_table.COLUMNS, doc.rows, key=report.TABLE)  # the console's columns first
    exports.finish(doc, code, tables=[table], title=title)
    return code


def _start(lg, sut, qsl, settings, logging_, audit_conf: str) -> None:
    """LoadGen's test in a thread of its own: the main thread stays in Python, so Ctrl-C reaches it.
    ``audit_conf``: --audit-conf, or a path that does not exist, so that an audit.config left in the working
    folder is not applied unasked (LoadGen's default is ./audit.config)."""
    errors: list[BaseException] = []

    def target():
        try:
            lg.StartTestWithLogSettings(sut.handle, qsl, settings, logging_, audit_conf)
        except BaseException as exc:  # noqa: BLE001  (re-raised in the caller's thread)
            errors.append(exc)

    thread = threading.Thread(target=target, name=LOADGEN_THREAD, daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.2)
    except KeyboardInterrupt:
        sut.draining = True  # every sample still queued is answered at once; LoadGen writes its logs
        thread.join(5.0)
        raise
    if errors:
        raise errors[0]


def _warm_up(sut, warmup: int) -> tuple[float, float]:
    """Untimed chains on the first input of every instance, then the mean service time over the dataset's inputs
    in order, on one instance, for up to ``ESTIMATE_S`` seconds (at least one sample): LoadGen's expected rates and
    latencies, and the peak search's start, come from it.

    One sample's time is a poor estimate when the clips differ in length: an Offline query sized from a long first
    clip ends before its minimum duration, and LoadGen calls the run INVALID. Returns that mean and the fastest
    sample's time (above a Server bound, no rate can pass)."""
    for stages in sut.instances:
        for _ in range(max(1, warmup)):
            sut.run_chain(stages, sut.inputs[0])
    stages = sut.instances[0]
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < len(sut.inputs) and (not times or time.perf_counter() - start < ESTIMATE_S):
        began = time.perf_counter()
        sut.run_chain(stages, sut.inputs[len(times)])
        times.append(time.perf_counter() - began)
    return max((time.perf_counter() - start) / len(times), 1e-6), min(times)


def _result(opts, backend_name, qps, capacity, sut, labels, test_dir, interrupted=False) -> report.LoadgenRun:
    path = test_dir / "mlperf_log_summary.txt"
    if path.is_file() and "Result is" in path.read_text(errors="replace"):
        summary = read_summary(path, opts.scenario, opts.target_latency_ms, opts.latency_percentile)
    elif opts.mode == "accuracy" and not interrupted:  # AccuracyOnly: LoadGen judges no performance
        summary = accuracy_summary()
    else:  # interrupted before LoadGen wrote its summary: its detail log and the SUT's figures are what there is
        summary = interrupted_summary()
    served = sut.served
    applied = effective_options(opts, summary.fields)
    rate = qps if qps is not None else opts.target_qps
    if rate is None and opts.scenario in ("Server", "Offline"):
        rate = capacity
    return report.LoadgenRun(
        scenario=opts.scenario,
        mode=opts.mode,
        backend=backend_name,
        instances=opts.instances,
        threads=opts.threads,
        target_qps=rate if opts.scenario in ("Server", "Offline") else None,
        target_latency_ms=opts.target_latency_ms if opts.scenario == "Server" else None,
        percentile=opts.latency_percentile,
        summary=summary,
        rtfx=served.audio_seconds / served.span_s if served.audio_seconds and served.span_s else None,
        audio_seconds=served.audio_seconds,
        samples=served.samples,
        stages=report.stage_times(labels, served.stage_seconds),
        failed=dict(served.failed),
        compliance=tuple(applied.compliance()),
        log_dir=str(test_dir),
        user_conf=opts.user_conf,
        audit_conf=opts.audit_conf if _audit_applied(test_dir) else None,
    )


def effective_options(opts: ScenarioOptions, fields: dict[str, str]) -> ScenarioOptions:
    """``opts`` with the duration and query count LoadGen ran with (its summary's "Test Parameters Used"), which a
    --user-conf may have changed: the compliance notes judge what ran."""
    try:
        duration_s = int(fields["min_duration (ms)"]) / 1000
        queries = int(fields["min_query_count"])
    except (KeyError, ValueError):
        return opts
    return attrs.evolve(opts, duration_s=duration_s, min_queries=queries)


def _audit_applied(test_dir: Path) -> bool:
    """LoadGen's detail log says when it found and applied an audit.config."""
    detail = test_dir / "mlperf_log_detail.txt"
    return detail.is_file() and "Found Audit Config file" in detail.read_text(errors="replace")


def _score(sut, dataset, references, general, backend, workdir, reference_quality) -> dict:
    """Accuracy mode: the outputs LoadGen's AccuracyOnly run collected, scored by bench's quality pass."""
    from speechperf.benchmark import quality as quality_pass
    from speechperf.benchmark.report import SPEECH_COLUMNS

    kept = _Kept(sut, dataset)
    result = quality_pass.measure(kept, dataset, references, general, backend, workdir)
    lines = []
    scores = []
    verdicts: list[bool] = []
    for score in result.scores:
        lines.append(f"accuracy: {score.stage}: {score.described()} ({score.samples} sample(s))")
        primary = score.primary
        speech = score.speech  # DNSMOS, MCD, PESQ / STOI of speech output, as bench's row holds them
        figures = {k: getattr(speech, k) for k in SPEECH_COLUMNS if speech and getattr(speech, k) is not None}
        scores.append({"stage": score.stage, "headline": score.headline(), "primary": primary, **figures})
        if reference_quality is not None and primary is not None:
            name, value = primary  # in points: WER %, BLEU, agreement %
            # MLPerf's rule on word accuracy (100 - WER), and on the figure itself where higher is better.
            lower_is_better = name == "WER"
            accuracy = 100 - value if lower_is_better else value
            ref_accuracy = 100 - reference_quality if lower_is_better else reference_quality
            ok = accuracy >= 0.99 * ref_accuracy
            verdicts.append(ok)
            lines.append(
                f"accuracy: {'PASS' if ok else 'FAIL'}: >= 99% of the fp32 reference "
                f"({name} {value:.2f} vs the reference's {reference_quality:.2f})"
            )
    lines += [f"accuracy: note: {n}" for n in result.notes]
    verdict = None if not verdicts else "PASS" if all(verdicts) else "FAIL"
    return {"lines": lines, "scores": scores, "verdict": verdict}


class _Kept:
    """The benchmark's face the quality pass reads (stages, sample ids, every stage's outputs, and the inputs: the
    first stage's, which a speech stage's MCD against its input recording reads), from the SUT."""

    def __init__(self, sut, dataset):
        self.stages = tuple(sut.instances[0])
        self.sample_ids = tuple(s.id for s in dataset)
        self._outputs = [{dataset[i].id: outs[n] for i, outs in sut.outputs.items()} for n in range(len(self.stages))]
        first = {dataset[i].id: sut.inputs[i] for i in sut.outputs}
        self.inputs = [first] + [{} for _ in self.stages[1:]]  # later stages' inputs are not kept by the SUT

    def stage_outputs(self):
        return self._outputs


def _peak_index(extra: dict) -> int | None:
    """The index of a peak search's best VALID trial, whose compliance notes the run's are."""
    trial = (extra.get("peak") or {}).get("peak_trial")
    return trial - 1 if trial else None


def _peak_line(peak: dict, opts: ScenarioOptions) -> str:
    pct = f"p{opts.latency_percentile:g}"
    spent = f"{peak['trials']} trial(s) in {peak['seconds']:.0f} s"
    if peak["peak_qps"] is None:
        return f"Server peak: no VALID rate found ({pct} <= {opts.target_latency_ms:g} ms; {spent}): {peak['stopped']}"
    bound = " (a lower bound: no faster trial missed the bound)" if peak.get("lower_bound") else ""
    return (
        f"Server peak{bound}: {significant(peak['peak_qps'])} scheduled samples/s (LoadGen's; target "
        f"{significant(peak['target_qps'])} QPS, trial {peak['peak_trial']}) VALID at {pct} <= "
        f"{opts.target_latency_ms:g} ms ({pct} {peak['peak_latency_ms']:.1f} ms; {spent}; {peak['stopped']})"
    )
