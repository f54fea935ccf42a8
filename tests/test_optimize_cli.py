"""``speechperf optimize`` as a user runs it: real frameworks, the tiny reference S2T, fresh bench processes.

Exit codes (speechperf.optimize.run): 0 every method measured, faster or not; 1 a method failed to quantize or to
run, its row naming why; 2 bad input, one line, before anything runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from speechperf.cli import main
from tests.show_again import assert_shown_again, stored_id

VAD = Path(__file__).resolve().parents[1] / "configs" / "VAD.yaml"  # absolute: the tests run from any folder

TINY = [
    "--preset",
    "tiny",
    "--dataset-size",
    "3",
    "--calibration-size",
    "2",
    "--set",
    "general.repeat=1",
    "--set",
    "general.warmup=1",
]


def optimize(tmp_path: Path, *args: str):
    out = tmp_path / "optimize.json"
    result = CliRunner().invoke(
        main,
        [
            "optimize",
            *args,
            "--out-dir",
            str(tmp_path / "variants"),
            "-o",
            str(out),
            "--csv",
            str(tmp_path / "t.csv"),
            "--markdown",
            str(tmp_path / "t.md"),
        ],
        catch_exceptions=False,
    )
    return result, json.loads(out.read_text()) if out.exists() else None


def rows(doc: dict) -> dict[str, dict]:
    return {r["variant"]: r for r in doc["rows"]}


@pytest.mark.slow
@pytest.mark.parametrize("backend,method", [("onnxruntime", "ort-dynamic"), ("torch", "legacy-dynamic")])
def test_table_on_the_tiny_s2t_and_show_gives_it_again(tmp_path, backend, method):
    store = tmp_path / "store.sqlite"
    result, doc = optimize(tmp_path, "-b", backend, "--method", method, "--runs", "2", *TINY, "--store", str(store))
    assert result.exit_code == 0, result.output
    table = rows(doc)
    assert (doc["kind"], doc["schema_version"]) == ("optimize", 4)
    assert list(table) == ["fp32", method] and doc["complete"] is True
    fp32, int8 = table["fp32"], table[method]
    assert fp32["status"] == "baseline" and fp32["runs"] == 2 and int8["runs"] == 2
    # Linear weights as int8: the files shrink (measured 0.51x on onnxruntime, 0.47x on torch).
    assert int8["size_ratio"] < 0.7
    assert int8["mean_ms"] > 0 and int8["speedup"] > 0 and int8["speedup_sigma"] is not None
    assert int8["status"] == "ok" or int8["status"].startswith("no speed-up")
    assert fp32["peak_rss_mib"] > 0 and int8["peak_rss_mib"] > 0
    # The reference model decodes the same tokens (measured 100% on this data; 0.9 leaves room for one flip).
    assert fp32["agreement_or_snr"] == 1.0 and int8["agreement_or_snr"] >= 0.9
    assert int8["graph_max_rel_diff"] < 0.05
    # Every run of every variant, interleaved, in the JSON; the exports carry the same rows.
    assert [(r["variant"], r["run"]) for r in doc["runs"]] == [("fp32", 1), (method, 1), ("fp32", 2), (method, 2)]
    assert (tmp_path / "t.csv").read_text().splitlines()[2].startswith(f"{method},")
    assert f"| {method} |" in (tmp_path / "t.md").read_text()
    assert method in result.output and "speed-up vs fp32" in result.output
    # The variant is a config that bench runs like any other.
    assert (tmp_path / "variants" / f"{method}.yaml").is_file()
    # show, from the JSON and from the stored id, prints what the run printed and writes its Markdown and CSV again
    # (the show test of optimize documents: it ran an optimize of its own)
    assert "speechperf optimize: " in result.stdout
    assert_shown_again(
        result.stdout, tmp_path / "t", [tmp_path / "optimize.json", stored_id(result, "optimize")], "--store", store
    )


@pytest.mark.slow
def test_a_method_that_fails_is_a_row_with_its_reason_and_exit_1(tmp_path):
    """torchao quantizes an nn.Module; the silero VAD on torch is TorchScript, which it cannot read. The fp32
    baseline is still measured, the failed method is a row saying why, and the exit code is 1."""
    result, doc = optimize(
        tmp_path,
        "-b",
        "torch",
        "--config",
        str(VAD),
        "--method",
        "torchao-dynamic,legacy-dynamic",
        "--runs",
        "1",
        "--dataset-size",
        "2",
        "--calibration-size",
        "1",
        "--set",
        "general.repeat=1",
    )
    assert result.exit_code == 1
    table = rows(doc)
    assert table["fp32"]["runs"] == 1 and table["fp32"]["mean_ms"] > 0
    assert table["torchao-dynamic"]["status"] == (
        "failed: method 'torchao-dynamic' reads a model in format module; vad is at hand in: torchscript"
    )
    assert table["legacy-dynamic"]["status"].startswith("failed: ")
    assert "failed: method 'torchao-dynamic' reads a model in format module" in result.output


def test_an_unknown_method_is_one_line_exit_2(tmp_path):
    result = CliRunner().invoke(
        main, ["optimize", "-b", "onnxruntime", "--method", "ort-dynamic,int4", "--out-dir", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "Error: unknown quantization method 'int4' for backend 'onnxruntime'; its methods: ort-dynamic, ort-static-qdq"
    ]
    assert not any(tmp_path.iterdir())  # nothing ran


def test_method_list_shows_every_backend(tmp_path):
    result = CliRunner().invoke(main, ["optimize", "--method", "list"])
    assert result.exit_code == 0
    pruning = "prune-l1-global, prune-l1-layer, prune-ffn-l1, prune-ffn-l2"
    assert result.output.splitlines() == [
        f"onnxruntime: ort-dynamic, ort-static-qdq, {pruning}",
        f"paddle: paddle-ptq, {pruning}",
        f"torch: torchao-dynamic, pt2e-static, legacy-dynamic, fp32-export, {pruning}",
    ]


def test_an_unwritable_output_is_refused_before_any_quantization(tmp_path):
    config = Path(__file__).resolve().parent.parent / "configs" / "S2T.yaml"
    result = CliRunner().invoke(
        main,
        [
            "optimize",
            "-b",
            "onnxruntime",
            "--config",
            str(config),
            "--preset",
            "tiny",
            "--method",
            "ort-dynamic",
            "--out-dir",
            str(tmp_path / "o"),
            "--csv",
            "/dev/full",
        ],
    )
    assert result.exit_code == 2, result.output
    assert "--csv /dev/full is a character device" in result.output
    assert not (tmp_path / "o").exists()  # nothing was quantized


@pytest.mark.slow
def test_ctrl_c_keeps_json_csv_and_markdown_of_the_finished_variants(tmp_path):
    """SIGINT once fp32's row is in the JSON (its runs done, the variant's still going): exit 130, and the JSON
    (complete: false), the CSV and the Markdown all hold fp32's figures; the unfinished variant says so."""
    import csv
    import os
    import signal
    import subprocess
    import sys
    import time

    out, table, md = tmp_path / "o.json", tmp_path / "t.csv", tmp_path / "t.md"
    args = ["-b", "onnxruntime", "--method", "ort-dynamic", "--runs", "1", *TINY, "--no-store"]
    exports = ["-o", str(out), "--csv", str(table), "--markdown", str(md), "--out-dir", str(tmp_path / "v")]
    proc = subprocess.Popen(
        [sys.executable, "-m", "speechperf", "optimize", *args, *exports],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # the signal goes to this process alone, as a terminal's Ctrl-C to its group
    )

    def fp32_done() -> bool:
        try:
            doc = json.loads(out.read_text())
        except (OSError, ValueError):
            return False
        return any(r["variant"] == "fp32" and r["mean_ms"] is not None for r in doc["rows"])

    try:
        deadline = time.monotonic() + 300
        while not fp32_done():
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "fp32 never finished"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err[-3000:]
    assert "interrupted" in err
    doc = json.loads(out.read_text())
    assert doc["kind"] == "optimize" and doc["complete"] is False
    got = rows(doc)
    assert got["fp32"]["status"] == "baseline" and got["fp32"]["runs"] == 1 and got["fp32"]["mean_ms"] > 0
    assert got["ort-dynamic"]["status"] == "interrupted" and got["ort-dynamic"]["mean_ms"] is None
    assert [r["variant"] for r in doc["runs"]] == ["fp32"]  # the variant's run was stopped, not recorded
    written = {r["variant"]: r for r in csv.DictReader(table.open())}
    assert float(written["fp32"]["mean_ms"]) == got["fp32"]["mean_ms"]
    assert written["ort-dynamic"]["status"] == "interrupted"
    mean = f"{got['fp32']['mean_ms']:.2f}"
    lines = md.read_text().splitlines()
    assert any(line.startswith("| fp32 | baseline |") and mean in line for line in lines), lines
    assert any(line.startswith("| ort-dynamic | interrupted |") for line in lines), lines
