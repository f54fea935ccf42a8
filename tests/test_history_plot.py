"""``speechperf history --plot`` on fixed stored runs: one line per config and backend (the total unless --stage),
each run's spread as its error bar, ``--model`` matching a stage's model name, the plot's styles and axis units;
and plain compare's note of the last ``--best`` result in the store. The end-to-end plots over real runs are in
tests/test_store.py."""

from __future__ import annotations

import pytest

from speechperf.compare.best import default_paths_note
from speechperf.errors import SpeechperfError
from speechperf.results import Document
from speechperf.store import db
from speechperf.store import history as stored
from speechperf.store.plot import axis_label, styles
from speechperf.store.record import config_hash, metric_rows, record

WHISPER = {"general": {"model_type": "S2T"}, "stage1": {"model": "whisper-tiny-en", "preset": "base"}}
TINY = {"general": {"model_type": "S2T"}, "stage1": {"model": "s2t", "preset": "tiny"}}
ENV = {"cpu": "x", "cpu_count": 2, "python": "3.11"}


def store_bench(store, tmp_path, config, backend: str, mean: float, stdev: float) -> None:
    rows = [{"stage": stage, "mean_ms": mean, "stdev_ms": stdev} for stage in ("stage1 s2t", "total")]
    doc = Document(kind="bench", rows=rows, config=config, environment={**ENV, "backend": backend}, complete=True)
    db.append(store, record(doc, 0, cwd=tmp_path), metric_rows(doc))


@pytest.fixture
def filled(tmp_path):
    store = tmp_path / "s.sqlite"
    for mean in (10.0, 11.0, 12.0):
        store_bench(store, tmp_path, WHISPER, "onnxruntime", mean, 1.0)
    for mean in (20.0, 21.0):
        store_bench(store, tmp_path, WHISPER, "paddle", mean, 2.0)
    store_bench(store, tmp_path, TINY, "onnxruntime", 5.0, 0.5)
    return store


def test_one_line_per_config_and_backend_of_the_total_with_each_runs_spread(filled):
    lines = stored.series(filled, "mean_ms", stored.Filters(), None)
    whisper, tiny = config_hash(WHISPER)[:6], config_hash(TINY)[:6]
    assert {name: [(p.value, p.error) for p in points] for name, points in lines.items()} == {
        f"S2T {whisper}: onnxruntime": [(10.0, 1.0), (11.0, 1.0), (12.0, 1.0)],
        f"S2T {whisper}: paddle": [(20.0, 2.0), (21.0, 2.0)],
        f"S2T {tiny}: onnxruntime": [(5.0, 0.5)],
    }  # the total only: a one-stage run's stage1 would draw every line twice
    assert stored.plotted_stage(filled, "mean_ms", None) == "total"
    staged = stored.series(filled, "mean_ms", stored.Filters(backend="paddle"), "stage1 s2t")
    assert {n: [p.value for p in points] for n, points in staged.items()} == {"paddle": [20.0, 21.0]}  # one config
    spread = stored.series(filled, "stdev_ms", stored.Filters(), None)  # a figure with no spread of its own
    assert {p.error for points in spread.values() for p in points} == {None}


def test_model_matches_a_stages_model_name_as_well_as_the_model_type(filled):
    assert len(stored.runs(filled, stored.Filters(model="whisper-tiny-en"))) == 5
    assert len(stored.runs(filled, stored.Filters(model="S2T"))) == 6
    lines = stored.series(filled, "mean_ms", stored.Filters(model="s2t"), None)
    assert [p.value for points in lines.values() for p in points] == [5.0]
    with pytest.raises(SpeechperfError, match=r"--model 'whisper-base': no stored run has it; .*whisper-tiny-en"):
        stored.runs(filled, stored.Filters(model="whisper-base"))


def test_no_two_lines_share_colour_and_marker_and_the_axis_names_its_unit():
    drawn = styles(40)
    assert len(set(drawn)) == 40 and len({c for c, _ in drawn[:10]}) == 10
    assert axis_label("mean_ms") == axis_label("runtime") == "mean_ms (ms)"
    assert axis_label("samples_per_s") == "samples_per_s (1/s)"


def test_a_plain_compare_names_the_last_best_result_for_its_config_on_this_machine(tmp_path):
    store = tmp_path / "s.sqlite"
    none_yet = default_paths_note(store, WHISPER)
    assert "compares each backend's default path" in none_yet and "--best" in none_yet
    assert "no --best result for this config on this machine" in none_yet
    rows = [{"cell": "torch compile-frozen", "backend": "torch", "mean_ms": 818.0}]
    rows.append({"cell": "onnxruntime", "backend": "onnxruntime", "mean_ms": 810.0})
    best = Document(kind="compare-best", rows=rows, config=WHISPER, environment=ENV, complete=True)
    db.append(store, record(best, 0, cwd=tmp_path), metric_rows(best))
    note = default_paths_note(store, WHISPER)
    assert "the last --best for this config on this machine (run 1, " in note
    assert "onnxruntime 810.000, torch compile-frozen 818.000 (mean_ms)" in note
    assert "no --best result" in default_paths_note(store, TINY)  # another config's search says nothing of this one


def test_over_commits_the_runs_of_one_commit_stand_side_by_side_within_its_place():
    from speechperf.store.history import Point
    from speechperf.store.plot import _spread_at

    points = [Point("t1", "aaa", 1.0), Point("t2", "aaa", 2.0), Point("t3", "bbb", 3.0)]
    xs = _spread_at(points, ["aaa", "bbb"], line=1, lines=2)
    assert xs[0] < xs[1] and len(set(xs)) == 3  # no run hides another
    assert all(-0.3 <= x <= 0.3 for x in xs[:2]) and 0.7 <= xs[2] <= 1.3  # each within its commit's place
    other = _spread_at(points, ["aaa", "bbb"], line=0, lines=2)
    assert max(other[:2]) < min(xs[:2])  # the other line's runs of that commit beside them, not on them
