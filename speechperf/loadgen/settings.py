"""The options of a LoadGen run, MLPerf's rules as their defaults, and what a shorter run is marked with.

MLPerf Inference's rules: a performance run lasts at least 600 s; SingleStream reports the p90 latency and needs
1024 queries, MultiStream 8 samples a query and the p99 over 270336 queries, Server a p99 within the task's bound
(RNN-T: 1000 ms) over 270336 queries, Offline one query. A shorter run is allowed and marked as not compliant.
"""

from __future__ import annotations

import math

import attrs

from speechperf.errors import SpeechperfError
from speechperf.values import usable_cores

SCENARIOS = ("SingleStream", "MultiStream", "Server", "Offline")
MODES = ("performance", "accuracy")
MLPERF_DURATION_S = 600.0
MLPERF_MIN_QUERIES = {"SingleStream": 1024, "MultiStream": 270336, "Server": 270336, "Offline": 1}
MLPERF_PERCENTILE = {"SingleStream": 90.0, "MultiStream": 99.0, "Server": 99.0, "Offline": 90.0}
MLPERF_SAMPLES_PER_QUERY = 8  # MultiStream
MLPERF_LATENCY_MS = 1000.0  # RNN-T's Server bound, MLPerf's speech task
#: Far above any rate a CPU model serves; above it LoadGen would schedule more queries than it can hold.
MAX_QPS = 1e6
MAX_DURATION_S = 7 * 24 * 3600.0
OFFLINE_MARGIN = 1.25  # the Offline query is sized for a rate this much above the warm-up's estimate


class LoadgenOptionError(SpeechperfError):
    pass


@attrs.frozen
class ScenarioOptions:
    scenario: str
    mode: str = "performance"
    target_qps: float | None = None  # Server's Poisson rate; Offline's expected rate
    target_latency_ms: float = MLPERF_LATENCY_MS
    percentile: float | None = None  # None: the scenario's MLPerf percentile
    duration_s: float = MLPERF_DURATION_S
    min_queries: int | None = None  # None: MLPerf's count, or 1 where a shorter --duration was given
    samples_per_query: int = MLPERF_SAMPLES_PER_QUERY
    instances: int = 1
    threads: int = 1
    #: MLPerf's own files, passed to LoadGen as they are: user.conf (TestSettings.FromConfig, applied over these
    #: options) and audit.config (StartTest's audit file); None: not given
    user_conf: str | None = None
    audit_conf: str | None = None

    @property
    def latency_percentile(self) -> float:
        return self.percentile if self.percentile is not None else MLPERF_PERCENTILE[self.scenario]

    @property
    def query_count(self) -> int:
        """The minimum query count LoadGen is given: MLPerf's by default; a run shortened with --duration alone
        ends at that duration (1), so that --duration 2 does not wait for 270336 queries."""
        if self.min_queries is not None:
            return self.min_queries
        return MLPERF_MIN_QUERIES[self.scenario] if self.duration_s >= MLPERF_DURATION_S else 1

    def compliance(self) -> list[str]:
        """Each way this run departs from MLPerf's rules, as "not MLPerf-compliant: ..." (empty: compliant)."""
        notes = []
        if self.mode == "performance" and self.duration_s < MLPERF_DURATION_S:
            notes.append(f"duration {self.duration_s:g} s < {MLPERF_DURATION_S:g} s")
        rule = MLPERF_MIN_QUERIES[self.scenario]
        if self.mode == "performance" and self.query_count < rule:
            notes.append(f"min queries {self.query_count} < {rule}")
        if self.scenario == "MultiStream" and self.samples_per_query != MLPERF_SAMPLES_PER_QUERY:
            notes.append(f"samples per query {self.samples_per_query} != {MLPERF_SAMPLES_PER_QUERY}")
        if self.latency_percentile != MLPERF_PERCENTILE[self.scenario] and self.scenario != "Offline":
            notes.append(f"percentile p{self.latency_percentile:g} != p{MLPERF_PERCENTILE[self.scenario]:g}")
        return [f"not MLPerf-compliant: {note}" for note in notes]


def check_options(opts: ScenarioOptions) -> None:
    """One line naming the option, the value and what is allowed, for what click's types do not catch."""
    if opts.scenario is None:
        raise LoadgenOptionError(f"--scenario is required; allowed: {', '.join(SCENARIOS)}")
    if opts.scenario not in SCENARIOS:
        raise LoadgenOptionError(f"--scenario {opts.scenario!r}: unknown; allowed: {', '.join(SCENARIOS)}")
    if opts.target_qps is not None and not (0 < opts.target_qps <= MAX_QPS and math.isfinite(opts.target_qps)):
        raise LoadgenOptionError(f"--target-qps {opts.target_qps!r}: allowed: a number > 0 and <= {MAX_QPS:g}")
    cores = usable_cores()
    if opts.instances * opts.threads > cores:
        raise LoadgenOptionError(
            f"--instances {opts.instances}: {opts.instances} instance(s) x {opts.threads} thread(s) need "
            f"{opts.instances * opts.threads} cores; this process may use {cores} "
            f"(allowed: 1 to {max(1, cores // opts.threads)} instance(s) at --threads {opts.threads})"
        )


#: Run in a process of its own: what a user.conf sets, as the TestSettings fields it changes. LoadGen's FromConfig
#: loads its built-in mlperf.conf on a process's first call only (MLPerf's rules for the model: for a model it does
#: not know, a 10 ms Server bound and 600 s runs), and logs "Multiple conf files are used" as an error into the next
#: test's summary on every later call; so the first call here takes an empty file, the second reads the user.conf
#: into fresh settings, and the process that runs the tests never calls FromConfig. Mode and scenario stay the
#: command's (--accuracy, --scenario).
_READ_USER_CONF = """
import json, sys, tempfile
import mlperf_loadgen as lg
path, model, scenario = sys.argv[1:4]
with tempfile.NamedTemporaryFile("w", suffix=".conf") as empty:
    lg.TestSettings().FromConfig(empty.name, model, scenario, 1)
loaded, default = lg.TestSettings(), lg.TestSettings()
code = loaded.FromConfig(path, model, scenario, 1)
names = [n for n in dir(default) if not n.startswith("_") and n not in ("FromConfig", "mode", "scenario")]
changed = {n: getattr(loaded, n) for n in names if getattr(loaded, n) != getattr(default, n)}
sys.stdout.write(json.dumps({"code": code, "set": changed}))
"""


def user_conf_settings(opts: ScenarioOptions, model: str) -> dict[str, object]:
    """Check --user-conf / --audit-conf (readable files; the user.conf one LoadGen parses) and return what the
    user.conf sets: the TestSettings fields LoadGen's FromConfig changes ({} without one), for ``model``."""
    import json
    import subprocess
    import sys

    from speechperf.outputs import file_problem

    for flag, path in (("--user-conf", opts.user_conf), ("--audit-conf", opts.audit_conf)):
        problem = file_problem(path) if path is not None else None
        if problem:
            raise LoadgenOptionError(f"{flag} {path}: {problem}")
    if opts.user_conf is None:
        return {}
    command = [sys.executable, "-c", _READ_USER_CONF, opts.user_conf, model, opts.scenario]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise LoadgenOptionError(f"--user-conf {opts.user_conf}: LoadGen could not read it ({done.stderr.strip()})")
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    if answer["code"]:
        raise LoadgenOptionError(
            f"--user-conf {opts.user_conf}: LoadGen cannot parse it (error {answer['code']}): lines are "
            "`model.Scenario.key = number`"
        )
    return answer["set"]


def test_settings(
    lg,
    opts: ScenarioOptions,
    qps: float | None,
    *,
    expected_qps: float,
    expected_latency_s: float,
    user_conf: dict[str, object] | None = None,
):
    """LoadGen's TestSettings for ``opts``, then what the user.conf set over them (``user_conf_settings``);
    ``qps`` is a peak search trial's rate: it, and its query count, win over the user.conf's."""
    settings = lg.TestSettings()
    settings.scenario = getattr(lg.TestScenario, opts.scenario)
    settings.mode = lg.TestMode.AccuracyOnly if opts.mode == "accuracy" else lg.TestMode.PerformanceOnly
    settings.min_duration_ms = int(opts.duration_s * 1000)
    settings.min_query_count = opts.query_count
    fraction = opts.latency_percentile / 100
    latency_ns = int(opts.target_latency_ms * 1e6)
    if opts.scenario == "Server":
        settings.server_target_qps = float(qps if qps is not None else opts.target_qps or expected_qps)
        settings.server_target_latency_ns = latency_ns
        settings.server_target_latency_percentile = fraction
    elif opts.scenario == "Offline":
        # LoadGen sizes the one query as expected rate x minimum duration (x 1.1): an estimate a little low makes a
        # run that ends early and is INVALID, one a little high only runs a little longer.
        settings.offline_expected_qps = float(opts.target_qps or expected_qps * OFFLINE_MARGIN)
    elif opts.scenario == "SingleStream":
        settings.single_stream_expected_latency_ns = max(1, int(expected_latency_s * 1e9))
        settings.single_stream_target_latency_percentile = fraction
    else:
        settings.multi_stream_samples_per_query = opts.samples_per_query
        settings.multi_stream_expected_latency_ns = max(1, int(expected_latency_s * opts.samples_per_query * 1e9))
        settings.multi_stream_target_latency_percentile = fraction
    if user_conf:
        for name, value in user_conf.items():
            setattr(settings, name, value)
        if qps is not None:
            settings.server_target_qps = float(qps)
            settings.min_query_count = max(settings.min_query_count, opts.query_count)
    return settings
