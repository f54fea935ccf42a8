"""``speechperf tune --objective server`` (speechperf.tune.serving): the latency bound read as MLPerf states it, the
serving configurations searched within the cores, the front, the final compare's figures, and the command's
refusals. A real tune end to end: tests/test_tune_serving_real.py."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from speechperf.cli import main
from speechperf.errors import SpeechperfError
from speechperf.loadgen.stages import StageServing
from speechperf.tune.runs import Budget
from speechperf.tune.serving import (
    DEFAULT_LATENCY,
    MAX_BATCH,
    Measured,
    ServingCandidate,
    ServingTune,
    candidates,
    parse_latency,
    stats_line,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("p99=500ms", (99.0, 500.0)),
        ("p90=1.5s", (90.0, 1500.0)),
        (" p99.9 = 250 ms ", (99.9, 250.0)),
        (None, DEFAULT_LATENCY),
    ],
)
def test_the_latency_bound_is_read_as_mlperf_states_it(text, expected):
    assert parse_latency(text) == expected


@pytest.mark.parametrize(
    "text", ["99=500ms", "p99=500", "p100=1s", "p40=1s", "p99=0ms", "p99=-5ms", "p99=1h", "p99=nanms", "p99=3601s", ""]
)
def test_a_latency_bound_that_is_not_one_is_refused_in_one_line(text):
    with pytest.raises(SpeechperfError, match=rf"--latency {text}: allowed: pNN=BOUND"):
        parse_latency(text)


def test_the_configurations_fit_the_cores_and_widen_the_slowest_stage():
    found = candidates([1, 2], [5.0, 40.0, 10.0], [True, True, False], cores=2)
    assert all(s.instances * s.threads <= 2 for c in found for s in c.stages)
    first = found[0]
    assert first.stages == (StageServing(), StageServing(), StageServing())  # one instance each, no batching
    widened = [c for c in found if [s.instances for s in c.stages] == [1, 2, 1]]
    assert widened and all(c.threads == 1 for c in widened)  # the slowest (stage 2) widened, at 1 thread
    assert any([s.instances for s in c.stages] == [2, 2, 2] for c in found)  # the replicated chain
    batched = [c for c in found if any(s.max_batch > 1 for s in c.stages)]
    assert batched and all(c.stages[2].max_batch == 1 for c in batched)  # the stage that cannot batch never does
    assert all(c.stages[0].max_batch == MAX_BATCH and c.stages[0].max_queue_delay_ms > 0 for c in batched)
    assert {c.threads for c in found} == {1, 2} and len({c.name for c in found}) == len(found)
    assert candidates([4], [1.0], [True], cores=2) == []  # no thread count fits: nothing to search


def test_a_configuration_is_the_sets_its_config_takes():
    cand = ServingCandidate(1, (StageServing(2, 1, 4, 10.0), StageServing(1, 1)))
    assert cand.name == "t=1 s1:2x b4 s2:1x"
    assert "general.serving=stages" in cand.sets and "stage1.max_batch=4" in cand.sets
    assert "stage1.max_queue_delay_ms=10" in cand.sets and "stage2.instances=1" in cand.sets


def test_the_front_and_the_final_figures(tmp_path):
    tune = ServingTune(99.0, 500.0, tmp_path, Budget(100.0))
    tune.measured = [
        Measured("a", 10.0, 300.0, "VALID"),
        Measured("b", 12.0, 450.0, "VALID"),
        Measured("c", 9.0, 400.0, "VALID"),  # slower and later than a: not on the front
        Measured("d", None, None, "NO VALID RATE"),
        Measured("winner", 50.0, 10.0, "VALID", phase="final-1"),  # the final compare's searches are no points
    ]
    assert tune.front() == ["a", "b"]
    tune.measured.append(Measured("c", 13.0, 300.0, "VALID", phase="confirm"))  # its longer search counts
    assert tune.front() == ["c"]
    line = stats_line("winner", [12.0, 12.5, 11.5], "torch only", [6.0, 6.2, 5.8])
    assert line["ratio"] == pytest.approx(2.0) and line["p_value"] < 0.05
    assert (
        line["sentence"].startswith("winner served 2.00 ± 0.") and "times the completed samples/s" in line["sentence"]
    )
    missing = stats_line("winner", [], "paddle only", [])
    assert missing["ratio"] is None and "not compared" in missing["sentence"]


def test_a_measured_peak_search_is_reused_by_a_rerun_of_the_same_tune(tmp_path):
    """The ledger: a rerun with the same --out-dir finds each finished peak search and runs no child for it."""
    from speechperf.launch.cell import Cell

    first = ServingTune(99.0, 500.0, tmp_path, Budget(100.0))
    key_cell = Cell("t=1 s1:1x", "onnxruntime", 1, None, None, ("general.serving=stages",))
    done = Measured("t=1 s1:1x", 20.0, 100.0, "VALID", wall_s=30.0, search_s=20.0)
    import attrs

    from speechperf.tune.runs import state_digest

    key = state_digest("onnxruntime", 1, None, key_cell.sets, attrs.evolve(first.options(5.0, 0), budget_s=0), "screen")
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "serving.jsonl").write_text(
        __import__("json").dumps({"key": key, **attrs.asdict(done)}) + "\n"
    )
    again = ServingTune(99.0, 500.0, tmp_path, Budget(100.0))
    got = again.peak(key_cell, 5.0, 45.0, "screen", lambda: None)
    assert got == done and again.measured == [done]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--latency", "p99=500ms"], "--latency p99=500ms: only with --objective server"),
        (["--objective", "server", "--latency", "p99"], "--latency p99: allowed: pNN=BOUND"),
    ],
)
def test_the_serving_options_are_checked_in_one_line(args, expected):
    result = CliRunner().invoke(main, ["tune", *args])
    assert result.exit_code == 2 and expected in result.output and "Traceback" not in result.output


def test_the_serving_front_is_drawn_from_the_document(tmp_path):
    """--plot and --html with --objective server: the searches' completed samples/s against the latency at the
    peak (the pipelines' phases are plotted on latency, never on an axis named "server")."""
    pytest.importorskip("matplotlib")
    from speechperf.results import Document
    from speechperf.views.tune import draw, plots

    measured = [
        {"name": "t=1 s1:1x", "phase": "screen", "completed_qps": 1.7, "latency_ms": 1561.0},
        {"name": "t=1 s1:2x", "phase": "confirm", "completed_qps": 3.6, "latency_ms": 1287.0},
        {"name": "serving winner t=1 s1:2x", "phase": "final-1", "completed_qps": 3.5, "latency_ms": 1444.0},
    ]
    serving = {"latency": {"percentile": 90.0, "bound_ms": 2000.0}, "measured": measured, "front": ["t=1 s1:2x"],
               "winner": {"name": "t=1 s1:2x"}}  # fmt: skip
    end = {"phase": "end to end", "candidate": "x", "mean_ms": 417.0, "peak_rss_mib": 842.0, "status": "winner"}
    doc = Document("tune", rows=[end], body={"objective": "server", "serving": serving})
    path = draw(doc, tmp_path / "front.png")
    assert path is not None and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in plots(doc, tmp_path)] == ["tune.png", "pipelines.png"]
    nothing = Document("tune", rows=[], body={"objective": "server", "serving": {**serving, "measured": []}})
    assert draw(nothing, tmp_path / "none.png") is None and not (tmp_path / "none.png").exists()
