"""The Server peak search's decisions on fixed LoadGen outcomes, the Server figure read from LoadGen's real summary
and detail logs (tests/data/loadgen: two trials of the silero VAD on onnxruntime over the LibriVox clips), and the
options that reach LoadGen: --user-conf, --audit-conf, the --log-dir refusal. All fast: no model runs here; the real
LoadGen runs are in tests/test_loadgen.py."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
from click.testing import CliRunner

from speechperf.cli import main
from speechperf.loadgen.peak import Search, Step, search_peak
from speechperf.loadgen.summary import read_summary
from speechperf.tables import significant

DATA = Path(__file__).parent / "data" / "loadgen"


def summary(name: str):
    return read_summary(DATA / name / "mlperf_log_summary.txt", "Server", 1000.0, 99.0)


def test_the_server_figure_is_loadgens_scheduled_rate_from_the_detail_log_rounding_to_the_summarys():
    for name in ("too-few", "bound-missed"):
        got = summary(name)
        text = (DATA / name / "mlperf_log_summary.txt").read_text()
        shown = next(line for line in text.splitlines() if line.startswith("Scheduled samples per second"))
        assert shown.split(":")[1].strip() == f"{got.scheduled_qps:.2f}"
        assert got.scheduled_qps != round(got.scheduled_qps, 2)  # the detail log's, at full precision


def test_too_few_queries_and_a_missed_bound_are_told_apart():
    few, missed = summary("too-few"), summary("bound-missed")
    assert few.too_few_queries and not few.latency_missed and few.queries_needed == (103, 356)
    assert missed.latency_missed and not missed.too_few_queries
    assert few.min_latency_ms == pytest.approx(13.338545)


def test_too_few_queries_runs_the_same_rate_again_with_early_stoppings_count():
    search = Search(bound_ms=1000.0, queries=1)
    step = search.record(0, 21.6, summary("too-few"))
    assert step == Step(21.6, 505)  # (103 processed + 356 more) x 1.1, not a lower rate
    assert search.high is None and search.best is None


def test_a_missed_bound_lowers_the_rate_then_bisects():
    search = Search(bound_ms=1000.0, queries=500)
    assert search.record(0, 21.6, summary("bound-missed")) == Step(10.8, 500)
    valid = attrs.evolve(summary("too-few"), valid=True, result="VALID", unmet=())
    step = search.record(1, 10.8, valid)
    assert step == Step((10.8 + 21.6) / 2, 500)
    assert search.best == 1 and search.best_qps == valid.scheduled_qps  # LoadGen's figure, not the target rate
    assert not search.lower_bound  # a faster trial missed the bound


def test_valid_doubles_and_the_best_is_a_lower_bound_until_a_faster_trial_misses():
    search = Search(bound_ms=1000.0, queries=500)
    valid = attrs.evolve(summary("too-few"), valid=True, result="VALID", unmet=())
    assert search.record(0, 5.0, valid) == Step(10.0, 500)
    assert search.lower_bound


def test_one_query_over_the_bound_stops_with_one_line():
    search = Search(bound_ms=1000.0, queries=1)
    slow = attrs.evolve(summary("bound-missed"), min_latency_ms=1534.0)
    step = search.record(0, 2.0, slow)
    assert step.stop == "no rate can pass: one query takes 1.53 s, bound 1000 ms"


@attrs.frozen
class _Run:
    summary: object
    target_qps: float
    percentile: float = 99.0


def test_search_peak_runs_no_trial_when_the_warm_ups_fastest_sample_is_over_the_bound():
    ran: list = []
    peak = search_peak(
        lambda qps, n: ran.append(qps),
        capacity=0.5,
        budget_s=240,
        runs=[],
        write=lambda: None,
        least_s=lambda qps, n: 1.0,
        bound_ms=1000.0,
        queries=1,
        fastest_s=2.1,
    )
    assert ran == [] and peak["trials"] == 0 and peak["peak_qps"] is None
    assert peak["stopped"].startswith("no rate can pass: one query takes 2.10 s, bound 1000 ms")


def test_search_peak_reports_the_budget_as_spent_and_the_best_trials_figure():
    valid = attrs.evolve(summary("too-few"), valid=True, result="VALID", unmet=())
    runs: list = []
    peak = search_peak(
        lambda qps, n: _Run(valid, qps),
        capacity=20.0,
        budget_s=100,
        runs=runs,
        write=lambda: None,
        least_s=lambda qps, n: 60.0 if qps <= 10 else 200.0,  # the second trial, at 20 QPS, would overrun
        bound_ms=1000.0,
        queries=500,
    )
    assert peak["trials"] == 1 and peak["peak_trial"] == 1 and peak["lower_bound"]
    assert peak["peak_qps"] == valid.scheduled_qps and peak["target_qps"] == 10.0
    assert peak["stopped"].startswith("the next trial (20.0 QPS, 500 queries, about 200 s) would overrun the budget")
    assert "s spent of 100 s)" in peak["stopped"]


def test_significant_figures_keep_small_rates():
    assert [significant(v) for v in (0.0551, 15.9, 16.68, 1234.5)] == ["0.0551", "15.9", "16.7", "1234"]


# --user-conf, --audit-conf and --log-dir: through the real mlperf_loadgen, refused before any model loads


def test_user_conf_is_read_by_loadgen_for_the_model_and_a_trials_rate_wins(tmp_path):
    lg = pytest.importorskip("mlperf_loadgen")
    from speechperf.loadgen.settings import ScenarioOptions, test_settings, user_conf_settings

    conf = tmp_path / "user.conf"
    conf.write_text("*.Server.target_qps = 7\n*.Server.min_duration = 1234\nsilero_vad.*.min_query_count = 99\n")
    opts = ScenarioOptions("Server", duration_s=5, user_conf=str(conf), min_queries=10)
    read = user_conf_settings(opts, "silero_vad")
    # only what the file says: not the mlperf.conf LoadGen loads on its first call (a 10 ms bound, 600 s runs)
    assert read == {"server_target_qps": 7.0, "min_duration_ms": 1234, "min_query_count": 99}
    plain = test_settings(lg, opts, None, expected_qps=3.0, expected_latency_s=0.1, user_conf=read)
    assert (plain.server_target_qps, plain.min_duration_ms, plain.min_query_count) == (7.0, 1234, 99)
    assert plain.server_target_latency_ns == 1_000_000_000  # the options' bound, which the file leaves
    trial = test_settings(lg, opts, 2.5, expected_qps=3.0, expected_latency_s=0.1, user_conf=read)
    assert trial.server_target_qps == 2.5 and trial.min_duration_ms == 1234
    assert "min_query_count" not in user_conf_settings(opts, "whisper")  # silero_vad's line is not another model's


def _loadgen(tmp_path, *args):
    base = ["loadgen", "-b", "onnxruntime", "--scenario", "Server", "--dataset-size", "1"]
    return CliRunner().invoke(main, [*base, *args])


@pytest.mark.parametrize(
    ("conf", "flag", "expected"),
    [
        ("missing", "--user-conf", "--user-conf {}: not found"),
        ("bad", "--user-conf", "--user-conf {}: LoadGen cannot parse it (error -22)"),
        ("missing", "--audit-conf", "--audit-conf {}: not found"),
    ],
)
def test_a_conf_file_loadgen_cannot_read_is_one_line(tmp_path, conf, flag, expected):
    pytest.importorskip("mlperf_loadgen")
    path = tmp_path / conf
    if conf == "bad":
        path.write_text("not a key value line\n")
    result = _loadgen(tmp_path, flag, str(path), "--log-dir", str(tmp_path / "logs"))
    assert result.exit_code == 2, result.output
    assert expected.format(path) in result.output and "Traceback" not in result.output


def test_a_log_dir_holding_an_earlier_run_is_refused_without_force(tmp_path):
    pytest.importorskip("mlperf_loadgen")
    logs = tmp_path / "logs"
    (logs / "Server-performance").mkdir(parents=True)
    result = _loadgen(tmp_path, "--log-dir", str(logs))
    assert result.exit_code == 2, result.output
    assert f"--log-dir {logs}: not empty (1 entries, e.g. Server-performance)" in result.output
    assert "pass --force" in result.output and "Traceback" not in result.output
    assert [p.name for p in logs.iterdir()] == ["Server-performance"]


def test_without_log_dir_each_run_gets_a_fresh_folder():
    from speechperf.loadgen.run import fresh_log_dir

    folder = fresh_log_dir(Path("loadgen-logs"))
    assert folder.parent == Path("loadgen-logs") and folder.name.endswith(f"-{__import__('os').getpid()}")


def test_a_search_given_a_start_rate_runs_its_first_trial_there():
    """--start-qps: a rate known from an earlier search, instead of half the warm-up's capacity estimate."""
    ran: list[float] = []
    search_peak(
        lambda qps, n: (
            ran.append(qps) or _Run(attrs.evolve(summary("too-few"), valid=True, result="VALID", unmet=()), qps)
        ),
        capacity=20.0,
        budget_s=100,
        runs=[],
        write=lambda: None,
        least_s=lambda qps, n: 60.0 if qps <= 7.5 else 200.0,  # the second trial would overrun
        bound_ms=1000.0,
        queries=1,
        start_qps=7.5,
    )
    assert ran == [7.5]
