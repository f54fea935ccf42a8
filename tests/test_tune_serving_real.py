"""The serving phases of ``speechperf tune --objective server`` on a real pipeline: the tiny S2T reference on
onnxruntime, each configuration a real ``speechperf loadgen --find-peak`` child under the real LoadGen (short
searches: the constants are lowered so the test takes about a minute). The winner's config runs in loadgen
unchanged; a rerun with the same folder runs no child again."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

pytest.importorskip("mlperf_loadgen", reason='needs the loadgen extra: pip install "speechperf[loadgen]"')
pytest.importorskip("onnxruntime")


@pytest.mark.slow
def test_the_serving_phases_screen_confirm_write_the_winner_and_compare_it(tmp_path, monkeypatch, caplog):
    from speechperf.config.load import load_config
    from speechperf.launch.cell import Cell
    from speechperf.loadgen.stages import StageServing
    from speechperf.tune import serving
    from speechperf.tune.runs import Budget

    for name, value in (("MIN_SEARCH_S", 6.0), ("MIN_START_S", 2.0), ("SCREEN_DURATION_S", 1.0),
                        ("CONFIRM_DURATION_S", 1.0), ("SCREEN_SHARE", 0.15), ("CONFIRM_SHARE", 0.15)):  # fmt: skip
        monkeypatch.setattr(serving, name, value)
    pipeline = tmp_path / "pipeline.yaml"
    pipeline.write_text(
        "general: {model_type: S2T, backend: onnxruntime, dataset_type: generated, dataset_size: 4, preset: tiny,"
        " warmup: 1}\nstage1: {model: s2t, max_len_b: 20}\n"
    )
    cands = [
        serving.ServingCandidate(1, (StageServing(),)),
        serving.ServingCandidate(1, (StageServing(1, 1, 4, 10.0),)),
    ]
    tune = serving.ServingTune(90.0, 500.0, tmp_path / "out", Budget(160.0), rounds=2, start_s=2.0)
    base = Cell("serving", "onnxruntime", 1, pipeline)
    tune.search(base, cands, lambda: None)
    screened = [m for m in tune.measured if m.phase == "screen"]
    assert [m.name for m in screened] == [c.name for c in cands]
    assert all(m.result == "VALID" and m.completed_qps > 0 and m.latency_ms <= 500 for m in screened)
    assert tune.winner in cands and tune.finalists and tune.winner.name in tune.finalists
    confirm = [m for m in tune.measured if m.phase == "confirm"]
    assert confirm and all(json.loads(Path(m.json_path).read_text())["peak"]["trials"] >= 1 for m in confirm)

    written = serving.write_serving_config(pipeline, tune.winner, tmp_path / "out" / "serving.yaml")
    cfg = load_config(written)  # what loadgen reads, checked as it checks it
    assert cfg.general.serving == "stages"
    assert (cfg.stages[0].max_batch, cfg.stages[0].instances) == (tune.winner.stages[0].max_batch, 1)

    tune.winner_config = written
    cells = [Cell("winner", "onnxruntime", 1, written), Cell("default scheduling", "onnxruntime", 1, pipeline)]
    tune.compare(cells, lambda: None, tune.winner_rate)
    final = tune.final
    assert final["rounds"] == 2 and all(len(v) == 2 for v in final["completed_qps"].values())
    needed = min(m.queries for m in tune.measured if m.phase in ("screen", "confirm") and m.completed_qps)
    for m in (m for m in tune.measured if m.phase.startswith("final")):  # each search starts at what was needed
        assert json.loads(Path(m.json_path).read_text())["scenario_options"]["min_queries"] == needed
    (line,) = final["comparisons"]
    assert line["ratio"] == pytest.approx(line["winner_mean"] / line["other_mean"])
    assert line["sentence"].startswith(f"winner served {line['ratio']:.2f} ± ")
    assert any("serving: winner t=1" in text for text in tune.lines())

    # the same searches again, from the ledger: no child runs, the figures are the ones measured
    caplog.set_level(logging.INFO, logger="speechperf.tune.serving")
    caplog.clear()  # the searches above logged theirs
    again = serving.ServingTune(90.0, 500.0, tmp_path / "out", Budget(160.0), rounds=2, start_s=2.0)
    again.search(base, cands, lambda: None)
    assert [m.completed_qps for m in again.measured] == [m.completed_qps for m in tune.measured[: len(again.measured)]]
    assert "a peak search of" not in caplog.text and "reused" in caplog.text
