"""The pieces of ``speechperf compare`` that need no child process: the cells of a plan, the output parity check
on known arrays, and a child that ran with another thread count than its column."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from speechperf.compare.plan import build_cells, parse_sweep
from speechperf.compare.summary import check_threads
from speechperf.launch.cell import Cell
from speechperf.launch.child import run_child
from speechperf.launch.lists import PlanError
from speechperf.launch.result import RunResult
from speechperf.meters.parity import compare_outputs


def test_cells_are_sweep_then_threads_then_backends_with_the_sets_that_make_them():
    cells = build_cells(
        ["torch", "onnxruntime"],
        [1, 2],
        [parse_sweep("beam=1,4")],
        config=Path("c.yaml"),
        sets=["general.dataset_size=2"],
        stage_count=2,
    )
    assert [c.label for c in cells][:4] == [
        "torch t=1 beam=1",
        "onnxruntime t=1 beam=1",
        "torch t=2 beam=1",
        "onnxruntime t=2 beam=1",
    ]
    assert len(cells) == 8
    last = cells[-1]
    assert last.sets == ("general.dataset_size=2", "stage1.beam=4", "stage2.beam=4")
    assert last.group == (2, (("beam", "4"),))
    args = last.bench_args(Path("/tmp"))
    assert args[:5] == ["bench", "--backend", "onnxruntime", "--threads", "2"]
    assert args[args.index("--config") + 1] == str(Path("c.yaml").resolve())


def test_preset_and_general_keys_sweep_through_the_right_option(tmp_path):
    preset_cells = build_cells(["torch"], [1], [parse_sweep("preset=tiny,base")])
    assert [(c.label, c.preset, c.sets) for c in preset_cells] == [
        ("torch preset=tiny", "tiny", ()),
        ("torch preset=base", "base", ()),
    ]
    size = build_cells(["torch"], [1], [parse_sweep("dataset_size=1")])[0]
    assert size.sets == ("general.dataset_size=1",)
    with pytest.raises(PlanError, match="swept twice"):
        build_cells(["torch"], [1], [parse_sweep("beam=1"), parse_sweep("beam=2")])


def test_a_merged_config_dict_is_written_for_the_child(tmp_path):
    cell = Cell("mine", "torch", config={"general": {"model_type": "S2T"}, "stage1": {"model": "s2t"}})
    cell.write_config(tmp_path)
    args = cell.bench_args(tmp_path)
    written = Path(args[args.index("--config") + 1])
    import yaml

    assert yaml.safe_load(written.read_text()) == {"general": {"model_type": "S2T"}, "stage1": {"model": "s2t"}}


def test_a_merged_config_is_written_once_however_many_runs_read_it(tmp_path, monkeypatch):
    """The children of every run (``--jobs N``: at once) read the cell's config file: it is written once, atomically,
    before the first child, never rewritten while one may be reading it."""
    from speechperf import outputs
    from speechperf.launch.launcher import run_cells

    writes = []
    atomic = outputs.write_text_atomic

    def counted(path, text, what):
        writes.append(Path(path).name)
        return atomic(path, text, what)

    monkeypatch.setattr(outputs, "write_text_atomic", counted)
    # A config every child refuses at once (exit 2): the runs after the first are recorded without launching.
    cell = Cell("mine", "onnxruntime", config={"general": {"model_type": "S2T", "nosuch": 1}})
    results = run_cells([cell], 3, tmp_path, jobs=1)
    assert [r.exit_code for r in results] == [2, 2, 2] and "unknown key general.nosuch" in results[0].reason
    assert writes.count("mine.config.yaml") == 1


def _out(stage, sid, name, value):
    return {(stage, sid, name): np.asarray(value)}


def test_parity_counts_differing_token_samples_and_float_deltas():
    ref = {
        **_out("stage1", "a", "tokens", [1, 2, 3]),
        **_out("stage1", "b", "tokens", [4, 5]),
        **_out("stage2", "a", "waveform", [0.5, -0.5]),
        **_out("stage2", "b", "waveform", [1.0, 1.0]),
    }
    got = {
        **_out("stage1", "a", "tokens", [1, 2, 3]),
        **_out("stage1", "b", "tokens", [4, 6]),
        **_out("stage2", "a", "waveform", [0.5, -0.4999]),
        **_out("stage2", "b", "waveform", [1.0, 1.0, 1.0]),
    }
    tokens, wave = compare_outputs(ref, got)
    assert (tokens.name, tokens.exact, tokens.samples, tokens.differing) == ("tokens", True, 2, 1)
    assert tokens.describe() == "stage1 tokens DIFFER in 1/2 samples"
    # sample b's waveform has another length: it differs, and no max |Δ| can be given
    assert (wave.exact, wave.differing, wave.max_abs) == (False, 1, None)
    same_shape = compare_outputs(_out("s", "a", "waveform", [0.5, -0.5]), _out("s", "a", "waveform", [0.5, -0.4999]))
    assert same_shape[0].max_abs == pytest.approx(1e-4) and same_shape[0].differing == 0
    # rel = 1e-4 / 0.5; SNR = 10 log10(0.5 / 1e-8); cosine of two almost equal vectors
    assert same_shape[0].max_rel == pytest.approx(2e-4) and same_shape[0].snr_db == pytest.approx(76.99, abs=0.01)
    assert same_shape[0].describe() == "s waveform max |Δ| 0.0001 rel 0.0002 SNR 77.0 dB cos 1.000000"


def test_float_tolerance_is_the_default_unless_the_stage_overrides_it_per_output():
    """An int8-sized difference (5% of the magnitude, SNR 26 dB) differs by the fp32 defaults, and is within a
    stage's `tolerance` for that output; a flipped sign is caught by the cosine as well."""
    ref, got = _out("stage1", "a", "outputs.mask", [1.0, 1.0]), _out("stage1", "a", "outputs.mask", [1.05, 0.95])
    (strict,) = compare_outputs(ref, got)
    assert strict.differing == 1 and strict.snr_db == pytest.approx(10 * np.log10(2 / 0.005))
    (loose,) = compare_outputs(ref, got, {"stage1": {"mask": {"max_rel": 0.1, "snr_db": 20, "cosine": 0.99}}})
    assert loose.differing == 0 and loose.max_rel == pytest.approx(0.05)
    (flipped,) = compare_outputs(
        ref, _out("stage1", "a", "outputs.mask", [-1.0, -1.0]), {"stage1": {"*": {"max_rel": 9}}}
    )
    assert flipped.differing == 1 and flipped.cosine == pytest.approx(-1.0)


def test_vad_segments_must_be_equal_and_a_missing_output_differs():
    ref = {**_out("stage1", "a", "segments", [[0.1, 0.5]]), **_out("stage1", "b", "segments", [[0.0, 1.0]])}
    got = {**_out("stage1", "a", "segments", [[0.1, 0.5001]])}
    (segments,) = compare_outputs(ref, got)
    assert segments.exact and segments.differing == 2 and segments.samples == 2


def test_a_child_that_recorded_other_threads_fails_its_run():
    result = RunResult("torch", 0, True, 0, None, None, "r.json", "o.npz", "e.txt")
    data = {"result": {"threads": 2}, "environment": {"threads": 2}}
    checked = check_threads(result, Cell("torch", "torch", threads=1), data)
    assert checked.ok is False and checked.reason == "the child ran with [2] threads, not 1 as every cell of its column"
    assert check_threads(result, Cell("torch", "torch", threads=2), data) is result


# -- how a real child process ended -----------------------------------------------------------------------------------


def _child(tmp_path, code: str, timeout_s=None) -> RunResult:
    return run_child([sys.executable, "-c", code], tmp_path, "x", 0, timeout_s)


def test_a_segfault_is_named_with_the_shell_exit_code(tmp_path):
    result = _child(tmp_path, "import ctypes; ctypes.string_at(0)")
    assert (result.ok, result.signal, result.exit_code, result.reason) == (False, "SIGSEGV", 139, "segmentation fault")


def test_a_non_zero_exit_gives_the_last_stderr_line(tmp_path):
    result = _child(tmp_path, "import sys; print('loading', file=sys.stderr); sys.exit('Error: no such model m.onnx')")
    assert (result.ok, result.exit_code, result.signal) == (False, 1, None)
    assert result.reason == "exit 1: Error: no such model m.onnx"


def test_exit_0_without_a_complete_json_is_a_failure(tmp_path):
    result = _child(tmp_path, "pass")
    assert result.ok is False and result.reason == "exit 0 but no complete result JSON was written"
    assert result.cpu_s is not None and result.max_rss_mib > 1


def test_the_timeout_kills_what_the_child_started_too(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    code = (
        "import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']);"
        f" open({str(pid_file)!r}, 'w').write(str(p.pid)); time.sleep(60)"
    )
    result = _child(tmp_path, code, timeout_s=1.5)
    assert result.reason == "timed out after 1.5 s" and result.exit_code == 137 and result.wall_s < 10
    time.sleep(0.2)
    state = subprocess.run(["ps", "-o", "stat=", "-p", pid_file.read_text()], capture_output=True, text=True).stdout
    # ps's first letter is the state (Z: a zombie, dead); a niced test run adds N after it
    assert state.strip()[:1] in ("", "Z"), f"the grandchild is still running: {state}"


def test_group_parity_reads_saved_outputs_and_names_an_unreadable_file(tmp_path):
    from speechperf.benchmark.saved_outputs import save_stage_outputs
    from speechperf.compare.parity import group_parity

    def run(label, tokens):
        path = tmp_path / f"{label}.npz"
        if tokens is not None:
            save_stage_outputs(path, [{"s0": {"tokens": np.asarray(tokens), "text": "not numeric"}}])
        return RunResult(label, 0, True, 0, None, None, "r.json", str(path), "e.txt")

    results = [run("torch", [5, 6, 7]), run("paddle", [5, 6, 8]), run("onnxruntime", None)]
    parity = group_parity(["torch", "paddle", "onnxruntime"], results)
    assert parity["torch"].describe() == "reference"
    assert parity["paddle"].mismatch and parity["paddle"].describe() == "stage1 tokens DIFFER in 1/1 samples"
    assert parity["onnxruntime"].describe() == f"outputs unreadable: {tmp_path / 'onnxruntime.npz'}"


# -- executors ------------------------------------------------------------------------------------------------------


def test_an_unknown_executor_or_jobs_it_cannot_run_is_one_line(tmp_path):
    from speechperf.errors import SpeechperfError
    from speechperf.launch.launcher import run_cells

    with pytest.raises(SpeechperfError, match=r"^--executor 'threads': allowed: local, ray, inprocess$"):
        run_cells([Cell("torch", "torch")], 1, tmp_path, executor="threads")
    with pytest.raises(SpeechperfError, match="^--executor inprocess runs one child at a time; got --jobs 2$"):
        run_cells([Cell("torch", "torch")], 1, tmp_path, executor="inprocess", jobs=2)
    assert not (tmp_path / "runs.json").exists()  # refused before any child ran


@pytest.mark.slow
def test_inprocess_runs_each_child_command_here_and_records_how_it_ended(tmp_path):
    import json
    import os

    from speechperf.launch.launcher import run_cells

    repo = Path(__file__).resolve().parents[1]
    fast = ["general.dataset_size=1", "general.repeat=1", "general.warmup=1", "general.meters=[runtime]"]
    good = build_cells(["onnxruntime"], [1], [], config=repo / "configs" / "S2T.yaml", preset="tiny", sets=fast)[0]
    bad = Cell("broken", "onnxruntime", config=tmp_path / "absent.yaml")
    results = run_cells([good, bad], 1, tmp_path / "w", executor="inprocess")
    by_label = {r.label: r for r in results}
    assert by_label["onnxruntime"].ok, by_label["onnxruntime"].reason
    assert by_label["onnxruntime"].pid == os.getpid()  # ran here, not in a child process
    bench = json.loads(Path(by_label["onnxruntime"].json_path).read_text())
    assert bench["complete"] is True and bench["result"]["backend"] == "onnxruntime"
    broken = by_label["broken"]
    assert (broken.ok, broken.exit_code) == (False, 2)
    assert broken.reason.startswith("exit 2: ") and "absent.yaml" in broken.reason, broken.reason
    assert sys.argv[0] != "speechperf"  # the process's own argv is restored


# -- what the report prints -------------------------------------------------------------------------------------------


def _summary(label: str, run_values: tuple[float, ...]):
    from speechperf.compare.summary import CellSummary

    runs = tuple({"run": i, "per_sample_s": {"s0": v}} for i, v in enumerate(run_values))
    return CellSummary(Cell(label, label), run_values, run_values, None, None, None, None, None, None, (), (), runs)


def _document(run_values: dict[str, tuple[float, ...]], **body):
    """A compare document as the JSON keeps it: one sample per run, the ranking of ``run_values``."""
    from speechperf import stats
    from speechperf.results import Document

    ranking = stats.rank(run_values)
    comparisons = [
        {"fast": c.fast, "slow": c.slow, "ratio": c.ratio.value, "sigma": c.ratio.sigma, "sentence": c.sentence()}
        for c in ranking
    ]
    runs = [
        {"label": label, "run": i, "ok": True, "environment": {}, "timings": {"run": i, "per_sample_s": {"s0": v}}}
        for label, values in run_values.items()
        for i, v in enumerate(values)
    ]
    rows = [{"cell": label, "runs_ok": len(values), "runs_failed": 0} for label, values in run_values.items()]
    cells = [{"label": label, "backend": label, "threads": 1, "params": {}} for label in run_values]
    return Document(
        kind="compare", rows=rows, body={"cells": cells, "runs": runs, "comparisons": [comparisons], **body}
    )


def test_the_table_and_the_summary_sentence_write_one_ratio_the_same_way():
    from speechperf.views import Shown, view_of

    # ratio 0.016949 / 0.010 = 1.6949: "1.69" at 2 decimals; the old table rounded to 1.695 first and showed "1.70".
    # Both sides have s = 0.001 * sqrt(2): sigma = 1.6949 * sqrt((0.0014142 / 0.010)**2 + (0.0014142 / 0.016949)**2)
    # = 1.6949 * sqrt(0.02 + 0.0069619) = 0.2783.
    text = view_of("compare").console(_document({"a": (0.009, 0.011), "b": (0.015949, 0.017949)}), Shown())
    assert "a ran 1.69 ± 0.28 times faster than b" in text
    table_row = next(line for line in text.splitlines() if line.strip().startswith("│ b "))
    assert "1.69 ± 0.28x" in table_row and "16.95 ± 1.41" in table_row
    assert "Time (mean ± σ):     10.00 ms ± 1.41 ms" in text


@pytest.mark.parametrize("executor", ["local", "inprocess"])
@pytest.mark.parametrize("stops, launched", [("cell", {"bad": 1, "good": 1}), ("all", {"bad": 1, "good": 0})])
@pytest.mark.slow
def test_after_a_child_exits_2_its_remaining_runs_are_not_launched(tmp_path, caplog, capsys, executor, stops, launched):
    """A bad input (exit 2: here a config with an unknown key, refused by the real `speechperf bench` child) would
    be refused on every later run too: those runs are recorded, not launched, with the child's line."""
    import logging

    from speechperf.launch.launcher import run_cells

    bad = tmp_path / "bad.yaml"
    bad.write_text("general: {model_type: S2T, warmpu: 1}\n")
    good = tmp_path / "good.yaml"
    good.write_text("general: {model_type: S2T}\n")  # refused too (no stage1), but only after `bad` in order
    cells = [Cell("bad", "onnxruntime", config=bad), Cell("good", "onnxruntime", config=good)]
    with caplog.at_level(logging.INFO, logger="speechperf"):
        results = run_cells(cells, 2, tmp_path / "work", executor=executor, bad_input_stops=stops)
    # An inprocess child runs the CLI here, which points the speechperf logger at stderr (past caplog) from then on.
    said = "\n".join(r.getMessage() for r in caplog.records) + capsys.readouterr().err
    ran = {label: sum(not r.reason.startswith("not run") for r in results if r.label == label) for label in launched}
    assert ran == launched
    assert all(r.exit_code == 2 and not r.ok for r in results)
    skipped = [r for r in results if r.reason.startswith("not run")]
    assert skipped and all("warmpu" in r.reason or "stage1" in r.reason for r in skipped)
    assert "bad: bad input, no further run" in said and "unknown key general.warmpu" in said


def test_the_json_keeps_every_warning_the_console_printed():
    from speechperf.views import Shown, compare

    doc = _document(
        {"torch": (0.010, 0.011), "paddle": (0.012, 0.013)},
        parity={"torch": {"reference": "torch", "mismatch": False}, "paddle": {"reference": "torch", "mismatch": True}},
    )
    doc.rows[1]["parity"] = "stage1 outputs.mask max |Δ| 0.5 (DIFFER in 1/2 samples)"
    doc["runs"][3]["environment"] = {"packages": {"numpy": "2.1"}}  # one run of paddle under another numpy
    console = compare.console(doc, Shown())
    warnings = compare.warnings(doc)
    assert len(warnings) == 2 and all(line in console.splitlines() for line in warnings)
    assert warnings[0] == f"parity MISMATCH: paddle against torch: {doc.rows[1]['parity']}"
    assert warnings[1].startswith("warning: the children's environments differ: packages differs between runs: ")
