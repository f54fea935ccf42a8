"""One ``speechperf loadgen`` run: the options checked, the plan resolved (``speechperf.benchmark.plan``: the config,
the dataset, the references and whether quality is scored, the backend), the stages bench builds (once per
instance) with the inputs prepared untimed and warmed up, then the SUT handed to LoadGen for the scenario, or for a
Server peak search (``speechperf.loadgen.peak``); accuracy mode's outputs scored (``speechperf.loadgen.accuracy``).
The command's lifecycle (``speechperf.lifecycle``) checks the exports, collects the notes, rewrites the exports after
each test and shows the document through its view (``speechperf.views.loadgen``).

LoadGen's own logs (``mlperf_log_summary.txt``, ``mlperf_log_detail.txt``, ...) stay in the log folder, one
sub-folder per test: a fresh folder per run (``fresh_log_dir``), or a given one that is empty, so that an earlier
run's JSON never points at logs a later run replaced.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path
from typing import IO, Any

import attrs

from speechperf.config.schema import BenchConfig
from speechperf.errors import Interrupted, SpeechperfError
from speechperf.exports import Exports
from speechperf.lifecycle import Lifecycle, lifecycle
from speechperf.loadgen import report
from speechperf.loadgen.session import Session
from speechperf.loadgen.settings import ScenarioOptions, check_options, user_conf_settings
from speechperf.results import Document
from speechperf.results.environment import LoadProbe, machine
from speechperf.tables import significant

log = logging.getLogger(__name__)


@attrs.frozen
class LoadgenOptions:
    """One ``speechperf loadgen`` command line, parsed: the config, one LoadGen test's options (``scenario``), where
    the results go (``exports``) and LoadGen's logs (``log_dir``, empty unless ``force``), and the Server peak
    search (``find_peak`` within ``budget_s``) or accuracy mode's MLPerf line (``reference_quality``)."""

    cfg: BenchConfig
    scenario: ScenarioOptions
    exports: Exports
    log_dir: Path
    force: bool = False
    find_peak: bool = False
    budget_s: float = 300.0
    start_qps: float | None = None  # --start-qps: the peak search's first rate
    reference_quality: float | None = None  # the fp32 reference's figure: accuracy mode's PASS / FAIL
    wide: bool = False  # --wide: the console's every column

    def check(self) -> None:
        """One line for options that do not go together, before anything is loaded."""
        check_options(self.scenario)
        if self.find_peak and self.scenario.scenario != "Server":
            raise SpeechperfError(f"--find-peak: needs --scenario Server, not {self.scenario.scenario}")
        if self.start_qps is not None and not self.find_peak:
            raise SpeechperfError(f"--start-qps {self.start_qps:g}: the peak search's first rate; needs --find-peak")
        if self.find_peak and self.scenario.mode == "accuracy":
            raise SpeechperfError("--find-peak: a performance search; drop --accuracy")
        if self.cfg.general.serving == "stages":
            from speechperf.loadgen.stages import check_serving

            check_serving(self.cfg, self.scenario.instances, self.scenario.threads)


def run_loadgen(options: LoadgenOptions, *, workdir: Path, out: IO[str] | None = None) -> int:
    """Check everything, measure, show; the document goes through ``options.exports`` (written after each test, on
    Ctrl-C, and at the end with --html and the store); returns the exit code (1: some sample failed, or accuracy
    mode's FAIL against --reference-quality)."""
    from speechperf.benchmark import plan
    from speechperf.extras import require

    options.check()
    lg = require("mlperf_loadgen", "speechperf loadgen")
    opts = options.scenario
    user_conf = user_conf_settings(opts, options.cfg.stages[0].model or "*")  # a user.conf's `model.Scenario.key`
    check_log_dir(options.log_dir, options.force)
    with lifecycle(options.exports, out=out, wide=options.wide) as run:
        if opts.audit_conf is None and Path("audit.config").is_file():
            log.warning("note: ./audit.config is not applied unless passed: --audit-conf audit.config")
        # loadgen's accuracy mode asks for quality: a reference it cannot score is refused before any timing
        resolved = plan.resolve(options.cfg, workdir=workdir, quality="asked" if opts.mode == "accuracy" else "off")
        _say(resolved)
        measured = _Measured.open(options, resolved, lg, user_conf, workdir)
        try:
            _measure(run, measured)
        except KeyboardInterrupt:
            _interrupted(run, measured)
        finally:
            measured.session.close()
        return run.finish(*measured.finished())


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


def _say(resolved) -> None:
    """The plan's notes: the dataset's cut, and (a warning: accuracy mode asked for it) why quality is not scored."""
    if resolved.size_note:
        log.info("note: %s", resolved.size_note)
    if resolved.quality_note:
        log.warning("note: %s", resolved.quality_note)


@attrs.define
class _Measured:
    """What one run measured so far, and the document made of it at any moment."""

    options: LoadgenOptions
    plan: Any  # speechperf.benchmark.plan.Plan
    session: Session
    workdir: Path
    environment: dict[str, Any]
    probe: LoadProbe
    #: the document's own fields before ``scenario_options`` and ``runs``; the peak search's and accuracy mode's
    #: results join them
    body: dict[str, Any]

    @classmethod
    def open(cls, options: LoadgenOptions, resolved, lg, user_conf, workdir: Path) -> _Measured:
        """The stages built once per instance, the inputs prepared untimed (as bench does), the SUT warmed up."""
        from speechperf.benchmark import build
        from speechperf.loadgen.stages import serving_of
        from speechperf.outputs import check_output_folder

        opts, cfg, backend = options.scenario, resolved.cfg, resolved.backend
        folder = check_output_folder(options.log_dir, "--log-dir")
        device = cfg.general.device
        serving = serving_of(cfg, opts.threads)
        body: dict[str, Any] = {"backend": backend.name, "pid": os.getpid(), "loadgen_logs": str(folder)}
        if serving is None:  # one chain per instance
            from speechperf.loadgen.sut import SystemUnderTest

            instances = build.open_stages(cfg, backend, workdir, threads=opts.threads, instances=opts.instances)
            inputs = [instances[0][0].from_sample(sample) for sample in resolved.dataset]
            sut = SystemUnderTest(lg, instances, inputs, backend, device)
        else:  # a queue and a pool per stage
            from speechperf.loadgen.stages import StagedSystemUnderTest, check_batch_parity

            pools = build.open_stage_pools(cfg, backend, workdir, serving)
            inputs = [pools[0][0].from_sample(sample) for sample in resolved.dataset]
            parity = check_batch_parity(pools, serving, inputs, [s.tolerance for s in cfg.stages])
            for line in parity:
                log.info("%s", line)
            sut = StagedSystemUnderTest(lg, pools, inputs, backend, device, serving)
            body["serving"] = {"mode": "stages", "stages": [attrs.asdict(s) for s in serving], "batch_parity": parity}
        session = Session.open(lg, sut, folder, user_conf)
        session.scored = resolved.score_quality
        session.warm_up(cfg.general.warmup, opts.instances)
        environment = {**machine(), "backend": backend.name, "device": device, "threads": opts.threads}
        environment["instances"] = opts.instances
        environment["serving"] = (
            "chain" if serving is None else "; ".join(f"stage{n}: {s.describe()}" for n, s in enumerate(serving, 1))
        )
        return cls(options, resolved, session, workdir, environment, LoadProbe().start(), body)

    def document(self, complete: bool = False) -> Document:
        from speechperf.views.loadgen import lines

        runs = list(self.session.runs)
        doc = Document(
            kind="loadgen",
            config=self.plan.cfg.to_dict(),
            environment={**self.environment, "load": self.probe.result or self.probe.stop()},
            rows=report.rows(runs, self.body.get("peak")),
            complete=complete and all(r.complete for r in runs),
            body={
                **self.body,
                "scenario_options": attrs.asdict(self.options.scenario),
                "runs": report.runs_json(runs),
            },
        )
        doc.notes = lines(doc)  # what the console prints under the table; the logged notes join them (lifecycle)
        self.probe.result = None  # the load is measured again at the next write, over the whole run so far
        return doc

    def finished(self) -> tuple[Document, int]:
        """The finished document and the exit code: 1 when a sample failed or accuracy mode's verdict is FAIL."""
        self.probe.stop()
        doc = self.document(complete=True)
        log.info("LoadGen's logs: %s", self.session.folder)
        runs = self.session.runs
        failed = sum(len(r.failed) for r in runs)
        if failed:  # a warning of the document, collected from the log
            log.error("failed: %d sample(s); first: %s", failed, next(iter(runs[-1].failed.values()), ""))
        code = 1 if failed else 0
        verdict = self.body.get("quality", {}).get("verdict")
        if verdict == "FAIL":  # MLPerf's accuracy rule missed: the run fails
            doc.warnings.append("accuracy: FAIL: below 99% of the fp32 reference")
            code = 1
        elif verdict == NOT_SCORED:  # a verdict was asked for and none can be given: no pass is claimed
            doc.warnings.append(f"accuracy: {NOT_SCORED}: nothing to score against, so no PASS (exit 1)")
            code = 1
        return doc, code


def _measure(run: Lifecycle, measured: _Measured) -> None:
    """The scenario's one test (scored in accuracy mode), or the Server peak search's trials."""
    options, session = measured.options, measured.session
    opts = options.scenario
    if options.find_peak:
        from speechperf.loadgen.peak import search_peak

        measured.body["peak"] = search_peak(
            lambda qps, queries: session.one_test(
                f"peak-{len(session.runs) + 1:02d}-{significant(qps)}qps", qps, attrs.evolve(opts, min_queries=queries)
            ),
            session.capacity,
            options.budget_s,
            session.runs,
            lambda: run.write(measured.document()),
            lambda qps, queries: max(opts.duration_s, queries / qps),
            bound_ms=opts.target_latency_ms,
            queries=opts.query_count,
            fastest_s=session.fastest_s,
            start_qps=options.start_qps,
        )
        return
    session.runs.append(session.one_test(f"{opts.scenario}-{opts.mode}", opts.target_qps, opts))
    if opts.mode == "accuracy" and not measured.plan.score_quality:
        measured.body["quality"] = not_scored(measured.plan.quality_note, options.reference_quality)
    elif measured.plan.score_quality:
        from speechperf.loadgen.accuracy import score

        resolved = measured.plan
        measured.body["quality"] = score(
            session.sut,
            resolved.dataset,
            resolved.references,
            resolved.cfg.general,
            resolved.backend,
            measured.workdir,
            options.reference_quality,
        )


#: accuracy mode's verdict when --reference-quality asked for one and there were no references to score against
NOT_SCORED = "NOT SCORED"


def not_scored(why: str | None, reference_quality: float | None) -> dict[str, Any]:
    """Accuracy mode's ``quality`` with nothing to score: a line that says so, no scores, and the verdict
    ``NOT SCORED`` when --reference-quality asked for one (exit 1: no pass is claimed), else None."""
    why = (why or "the dataset has no references").removeprefix("quality not scored: ")
    line = f"accuracy: not scored: {why}"
    if reference_quality is not None:
        line += f"; --reference-quality {reference_quality:g} cannot be checked: {NOT_SCORED}, no PASS"
    return {"lines": [line], "scores": [], "verdict": NOT_SCORED if reference_quality is not None else None}


def _interrupted(run: Lifecycle, measured: _Measured) -> None:
    """Ctrl-C: what was measured written (``complete: false``), then exit 130."""
    session = measured.session
    session.sut.draining = True
    run.write(measured.document())
    note = f"LoadGen's logs are in {session.folder}; what was measured is in the exports"
    if session.started:
        # LoadGen's test cannot be stopped, and a process that exits after it ran crashes in its C++ threads at
        # shutdown (SIGSEGV): everything is written, so leave at once with the CLI's interrupted exit code.
        sys.stderr.write(f"interrupted; {note}\n")
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(130)
    raise Interrupted(note) from None
