"""LoadGen's side of one ``speechperf loadgen`` run: the SUT over the built instances, warmed up and timed for
LoadGen's expected rates, LoadGen's QSL, and each LoadGen test run in a thread of its own, its logs in a folder of
its own under the run's log folder, its result read from LoadGen's summary (``speechperf.loadgen.summary``).
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

import attrs

from speechperf.loadgen import report
from speechperf.loadgen.settings import ScenarioOptions, test_settings
from speechperf.loadgen.summary import accuracy_summary, interrupted_summary, read_summary

log = logging.getLogger(__name__)
LOADGEN_THREAD = "speechperf-loadgen-test"
ESTIMATE_S = 3.0  # the warm-up's timed pass over the dataset, at most (one sample at least)


@attrs.define
class Session:
    """The SUT and LoadGen's QSL for one run; ``runs``: the tests so far (an interrupted one marked incomplete)."""

    lg: Any  # the mlperf_loadgen module
    sut: Any  # speechperf.loadgen.sut.SystemUnderTest
    qsl: Any
    folder: Path  # the run's log folder: one sub-folder per test
    user_conf: Any  # speechperf.loadgen.settings.user_conf_settings
    labels: list[str]
    service_s: float = 0.0  # the warm-up's mean time a sample, on one instance
    fastest_s: float = 0.0  # the warm-up's fastest sample
    capacity: float = 0.0  # samples a second over every instance, from ``service_s``
    runs: list[report.LoadgenRun] = attrs.Factory(list)
    started: bool = False  # LoadGen ran a test: a process that exits after one must leave at once (see run.py)
    scored: bool = True  # accuracy mode has references to score against (the plan's ``score_quality``)

    @classmethod
    def open(cls, lg, sut, folder: Path, user_conf) -> Session:
        """``sut``: speechperf.loadgen.sut's (one chain per instance) or speechperf.loadgen.stages' (a pool per
        stage)."""
        qsl = lg.ConstructQSL(len(sut.inputs), len(sut.inputs), lambda _: None, lambda _: None)
        return cls(lg, sut, qsl, folder, user_conf, [stage.label for stage in sut.instances[0]])

    def close(self) -> None:
        self.lg.DestroyQSL(self.qsl)

    def warm_up(self, warmup: int, instances: int) -> None:
        self.service_s, self.fastest_s, stage_s = _warm_up(self.sut, warmup)
        self.capacity = instances / self.service_s
        if hasattr(self.sut, "capacity"):  # a pool per stage: its stages overlap, the slowest pool sets the rate
            self.capacity = self.sut.capacity(stage_s)
        log.info(
            "warm-up: %.1f ms a sample on one instance; about %.1f samples/s on %d instance(s)",
            self.service_s * 1000,
            self.capacity,
            instances,
        )

    def one_test(self, name: str, qps: float | None, opts: ScenarioOptions) -> report.LoadgenRun:
        """One LoadGen test, its logs in ``folder/name``; Ctrl-C keeps what it measured, marked incomplete."""
        lg, sut = self.lg, self.sut
        test_dir = self.folder / name
        test_dir.mkdir(parents=True, exist_ok=True)
        settings = test_settings(
            lg, opts, qps, expected_qps=self.capacity, expected_latency_s=self.service_s, user_conf=self.user_conf
        )
        logging_ = lg.LogSettings()
        logging_.log_output.outdir = str(test_dir)
        logging_.log_output.copy_summary_to_stdout = False
        sut.reset()
        sut.keep_outputs = opts.mode == "accuracy"
        self.started = True
        try:
            _start(lg, sut, self.qsl, settings, logging_, opts.audit_conf or str(test_dir / "audit.config"))
        except KeyboardInterrupt:
            self.runs.append(attrs.evolve(self._result(opts, qps, test_dir, interrupted=True), complete=False))
            raise
        return self._result(opts, qps, test_dir)

    def _result(self, opts: ScenarioOptions, qps: float | None, test_dir: Path, interrupted=False) -> report.LoadgenRun:
        path = test_dir / "mlperf_log_summary.txt"
        if path.is_file() and "Result is" in path.read_text(errors="replace"):
            summary = read_summary(path, opts.scenario, opts.target_latency_ms, opts.latency_percentile)
        elif opts.mode == "accuracy" and not interrupted:  # AccuracyOnly: LoadGen judges no performance
            summary = accuracy_summary(self.scored)
        else:  # interrupted before LoadGen wrote its summary: its detail log and the SUT's figures are what there is
            summary = interrupted_summary()
        served = self.sut.served
        applied = effective_options(opts, summary.fields)
        rate = qps if qps is not None else opts.target_qps
        if rate is None and opts.scenario in ("Server", "Offline"):
            rate = self.capacity
        return report.LoadgenRun(
            scenario=opts.scenario,
            mode=opts.mode,
            backend=self.sut.backend.name,
            instances=opts.instances,
            threads=opts.threads,
            target_qps=rate if opts.scenario in ("Server", "Offline") else None,
            target_latency_ms=opts.target_latency_ms if opts.scenario == "Server" else None,
            percentile=opts.latency_percentile,
            summary=summary,
            rtfx=served.audio_seconds / served.span_s if served.audio_seconds and served.span_s else None,
            audio_seconds=served.audio_seconds,
            samples=served.samples,
            stages=report.stage_times(self.labels, served.stage_seconds, getattr(self.sut, "mean_batches", None)),
            failed=dict(served.failed),
            compliance=tuple(applied.compliance()),
            log_dir=str(test_dir),
            user_conf=opts.user_conf,
            audit_conf=opts.audit_conf if _audit_applied(test_dir) else None,
        )


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


def _warm_up(sut, warmup: int) -> tuple[float, float, list[float]]:
    """Untimed chains on the first input of every instance, then the mean service time over the dataset's inputs
    in order, on one instance, for up to ``ESTIMATE_S`` seconds (at least one sample): LoadGen's expected rates and
    latencies, and the peak search's start, come from it.

    One sample's time is a poor estimate when the clips differ in length: an Offline query sized from a long first
    clip ends before its minimum duration, and LoadGen calls the run INVALID. Returns that mean, the fastest
    sample's time (above a Server bound, no rate can pass) and each stage's mean seconds."""
    for stages in sut.instances:
        for _ in range(max(1, warmup)):
            sut.run_chain(stages, sut.inputs[0])
    stages = sut.instances[0]
    times: list[float] = []
    per_stage: list[list[float]] = [[] for _ in stages]
    start = time.perf_counter()
    while len(times) < len(sut.inputs) and (not times or time.perf_counter() - start < ESTIMATE_S):
        began = time.perf_counter()
        _, stage_times = sut.run_chain(stages, sut.inputs[len(times)])
        times.append(time.perf_counter() - began)
        for n, seconds in enumerate(stage_times):
            per_stage[n].append(seconds)
    stage_s = [max(sum(s) / len(s), 1e-6) for s in per_stage]
    return max((time.perf_counter() - start) / len(times), 1e-6), min(times), stage_s


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
