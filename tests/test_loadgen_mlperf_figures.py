"""MLPerf's figures as the current submission checker reads them (``RESULT_FIELD_NEW``, v4.1 to v6.0): Server
``result_completed_samples_per_sec``, SingleStream ``early_stopping_latency_ss``, MultiStream
``early_stopping_latency_ms``, each read from LoadGen's own detail log; a peak search's bracket and whether it
converged; accuracy mode with nothing to score.

The fast tests read LoadGen's real logs kept in tests/data/loadgen (``single-stream``: the tiny S2T on onnxruntime,
100 queries, so early stopping made its estimate; ``single-stream-few``: the silero VAD, 11 queries, none); the
slow ones run LoadGen on the tiny S2T (about 2 s of queries each).
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

from speechperf.loadgen.peak import Search, search_peak
from speechperf.loadgen.summary import read_summary
from speechperf.results import loadgen_table
from speechperf.views.loadgen import peak_line

DATA = Path(__file__).parent / "data" / "loadgen"


def detail(folder: Path, key: str):
    """LoadGen's own figure: the value of ``key`` in its detail log, read here without speechperf's reader."""
    for line in (folder / "mlperf_log_detail.txt").read_text().splitlines():
        record = json.loads(line.removeprefix(":::MLLOG "))
        if record["key"] == key:
            return record["value"]
    raise KeyError(key)


def test_single_stream_figure_is_loadgens_early_stopping_estimate_beside_the_plain_p90():
    folder = DATA / "single-stream"
    got = read_summary(folder / "mlperf_log_summary.txt", "SingleStream", 0.0, 90.0)
    assert got.early_stopping_ms == detail(folder, "early_stopping_latency_ss") / 1e6
    assert got.early_stopping_ms > got.percentiles_ms["p90"]  # the estimate bounds the percentile from above
    assert got.headline == f"early-stopping p90 latency {got.early_stopping_ms:.2f} ms"
    row = loadgen_table.run_row({"scenario": "SingleStream", "summary": attrs.asdict(got)})
    assert row["early_stopping_ms"] == pytest.approx(got.early_stopping_ms, abs=0.005) and row["p90_ms"] > 0


def test_single_stream_without_an_estimate_says_so_and_keeps_the_plain_p90():
    folder = DATA / "single-stream-few"
    assert detail(folder, "early_stopping_latency_ss") == 0  # 11 queries: LoadGen made no estimate
    got = read_summary(folder / "mlperf_log_summary.txt", "SingleStream", 0.0, 90.0)
    assert got.early_stopping_ms is None
    assert got.headline == f"p90 latency {got.percentiles_ms['p90']:.2f} ms (no early-stopping estimate)"


def test_server_figure_is_loadgens_completed_rate_at_full_precision_beside_the_scheduled():
    for name in ("too-few", "bound-missed"):
        folder = DATA / name
        got = read_summary(folder / "mlperf_log_summary.txt", "Server", 1000.0, 99.0)
        assert got.completed_qps == detail(folder, "result_completed_samples_per_sec")
        assert got.scheduled_qps == detail(folder, "result_scheduled_samples_per_sec")
        assert got.headline == f"completed {got.completed_qps:.2f} samples/s"


def _valid(completed: float):
    base = read_summary(DATA / "too-few" / "mlperf_log_summary.txt", "Server", 1000.0, 99.0)
    return attrs.evolve(base, valid=True, result="VALID", unmet=(), completed_qps=completed)


@attrs.frozen
class _Run:
    summary: object
    target_qps: float
    percentile: float = 99.0


def _search(least_s, outcome) -> dict:
    return search_peak(
        lambda qps, n: _Run(outcome(qps), qps),
        capacity=20.0,
        budget_s=100,
        runs=[],
        write=lambda: None,
        least_s=least_s,
        bound_ms=1000.0,
        queries=500,
    )


def test_a_peak_search_cut_by_the_budget_between_valid_and_invalid_is_a_bracket_not_a_figure():
    missed = read_summary(DATA / "bound-missed" / "mlperf_log_summary.txt", "Server", 1000.0, 99.0)
    # 10 QPS VALID, 20 QPS misses the bound, then 15 QPS would overrun the budget
    peak = _search(lambda qps, n: 40.0 if qps != 15.0 else 200.0, lambda qps: _valid(9.5) if qps < 12 else missed)
    assert peak["bracket"] == [10.0, 20.0] and peak["converged"] is False and not peak["lower_bound"]
    assert peak["completed_qps"] == 9.5  # MLPerf's figure: the best VALID trial's completed rate
    row = loadgen_table.rows([], peak)[-1]
    assert row["headline"] == "peak 9.50 completed samples/s (not converged: between 10.0 VALID and 20.0 INVALID QPS)"
    assert (row["bracket_low_qps"], row["bracket_high_qps"], row["converged"]) == (10.0, 20.0, False)
    line = peak_line(peak, 99.0, 1000.0)
    assert line.startswith("Server peak (not converged: between 10.0 VALID and 20.0 INVALID QPS): 9.50 completed ")


def test_a_converged_peak_search_gives_the_figure_alone():
    search = Search(bound_ms=1000.0, queries=500)
    search.record(0, 10.0, _valid(9.9))
    missed = read_summary(DATA / "bound-missed" / "mlperf_log_summary.txt", "Server", 1000.0, 99.0)
    search.record(1, 10.4, missed)
    assert search.converged and not search.lower_bound
    peak = {"peak_qps": 10.1, "completed_qps": 9.9, "converged": True, "bracket": [10.0, 10.4], "trials": 2}
    assert loadgen_table.rows([], peak)[-1]["headline"] == "peak 9.90 completed samples/s"


@pytest.mark.slow
def test_accuracy_mode_with_nothing_to_score_says_so_and_claims_no_pass(tmp_path):
    pytest.importorskip("mlperf_loadgen")
    pytest.importorskip("onnxruntime")
    from tests.test_loadgen import loadgen

    # the built-in dataset has no references: nothing to score the outputs against
    args = ["-b", "onnxruntime", "--dataset-size", "2", "--scenario", "Offline", "--accuracy"]
    done, data = loadgen(tmp_path, *args, "--reference-quality", "100")
    assert done.returncode == 1, done.stderr  # a verdict was asked for and none can be given
    assert data["quality"]["verdict"] == "NOT SCORED" and data["quality"]["scores"] == []
    assert data["runs"][0]["summary"]["headline"] == "every sample once, NOT scored"
    assert "accuracy: NOT SCORED: nothing to score against, so no PASS (exit 1)" in data["warnings"]
    assert "accuracy: not scored: the dataset has no references" in done.stdout
    assert "accuracy: PASS" not in done.stdout and "NOT SCORED, no PASS" in done.stdout


def test_multistream_reads_its_own_key_not_single_streams(tmp_path):
    """MultiStream's figure is ``early_stopping_latency_ms``; LoadGen logs both keys in every test, the other one 0
    (the SingleStream log here with its two keys' values swapped, as a MultiStream test logs them)."""
    source = DATA / "single-stream"
    estimate = detail(source, "early_stopping_latency_ss")
    text = (source / "mlperf_log_detail.txt").read_text()
    text = text.replace(f'"early_stopping_latency_ss", "value": {estimate}', '"early_stopping_latency_ss", "value": 0')
    text = text.replace('"early_stopping_latency_ms", "value": 0', f'"early_stopping_latency_ms", "value": {estimate}')
    (tmp_path / "mlperf_log_detail.txt").write_text(text)
    (tmp_path / "mlperf_log_summary.txt").write_text((source / "mlperf_log_summary.txt").read_text())
    assert detail(tmp_path, "early_stopping_latency_ms") == estimate
    got = read_summary(tmp_path / "mlperf_log_summary.txt", "MultiStream", 0.0, 99.0)
    assert got.early_stopping_ms == estimate / 1e6
    single = read_summary(tmp_path / "mlperf_log_summary.txt", "SingleStream", 0.0, 90.0)
    assert single.early_stopping_ms is None  # its key says 0 here: no estimate
