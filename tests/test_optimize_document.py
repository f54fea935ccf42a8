"""optimize's result document (``kind: optimize``): its envelope and own fields, its CSV and Markdown from the
rows, and a version 1 file (the code before the envelope) read as one."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from types import SimpleNamespace

from speechperf.exports import Exports
from speechperf.lifecycle import Lifecycle
from speechperf.optimize.fidelity import Fidelity, QualityBudget
from speechperf.optimize.run import OptimizeOptions, _Study
from speechperf.optimize.table import Row
from speechperf.results import loads
from speechperf.results.notes import Collected


def study(tmp_path) -> _Study:
    opts = OptimizeOptions(
        backend="onnxruntime",
        methods=("ort-dynamic", "ort-static-qdq"),
        out_dir=tmp_path / "v",
        runs=3,
        calibration_size=2,
        budget=QualityBudget(1.0, 1.0, 0.98),
        exports=Exports(tmp_path / "o.json", tmp_path / "o.csv", tmp_path / "o.md"),
    )
    # all the document takes of a plan: its config (as a dict, and its threads and device) and its backend
    config = SimpleNamespace(
        to_dict=lambda: {"general": {"threads": 1, "device": "cpu"}}, general=SimpleNamespace(threads=1, device="cpu")
    )
    backend = SimpleNamespace(name="onnxruntime", availability=lambda: SimpleNamespace(version="1.2.3"))
    plan = SimpleNamespace(cfg=config, backend=backend)
    said = Collected(notes=["a note"], warnings=["a warning"])  # what the lifecycle collected from the log
    got = _Study(opts, plan, Lifecycle(opts.exports, said, io.StringIO(), wide=False))
    got.rows["fp32"] = Row("fp32", "baseline", 2_000_000, 2_000_000, [10.0, 12.0], fidelity=Fidelity("tokens", 1.0))
    got.rows["ort-dynamic"] = Row(
        "ort-dynamic", "ok", 1_000_000, 2_000_000, [5.0, 6.0], 2.0, 0.2, 0.01, 150.0, Fidelity("tokens", 0.97),
        notes=["upgraded from opset 11"],
    )  # fmt: skip
    got.rows["ort-static-qdq"] = Row("ort-static-qdq", "measuring", 500_000, 2_000_000)
    return got


def test_the_document_has_the_envelope_and_optimize_fields(tmp_path):
    s = study(tmp_path)
    s.write()
    doc = loads((tmp_path / "o.json").read_text())
    assert (doc.kind, doc.schema_version, doc.complete) == ("optimize", 4, False)
    assert doc.config == {"general": {"threads": 1, "device": "cpu"}}
    env = doc.environment
    assert (env["backend"], env["backend_version"], env["threads"], env["device"]) == ("onnxruntime", "1.2.3", 1, "cpu")
    assert env["cpu_count"] >= 1 and doc.notes == ["a note"] and doc.warnings == ["a warning"]
    assert doc["backend"] == "onnxruntime" and doc["methods"] == ["ort-dynamic", "ort-static-qdq"]
    assert (doc["runs_per_variant"], doc["calibration_size"]) == (3, 2)
    assert doc["quality_budget"] == {
        "max_wer_increase": 1.0,
        "max_bleu_drop": 1.0,
        "min_agreement": 0.98,
        "max_mos_drop": 0.2,
        "max_mcd": None,
        "min_snr_db": 20.0,
    }
    assert doc["variant_notes"] == {"ort-dynamic": ["upgraded from opset 11"]} and doc["runs"] == []
    dyn = doc.rows[1]
    assert (dyn["mean_ms"], dyn["stdev_ms"], dyn["speedup"], dyn["size_mb"], dyn["size_ratio"]) == (
        5.5,
        0.707,
        2.0,
        1.0,
        0.5,
    )
    assert (dyn["fidelity_kind"], dyn["agreement_or_snr"], dyn["peak_rss_mib"]) == ("tokens", 0.97, 150.0)
    assert "latency_ms" not in dyn and "table" not in json.loads((tmp_path / "o.json").read_text())


def test_csv_and_markdown_hold_the_rows_and_ctrl_c_marks_the_unfinished(tmp_path):
    s = study(tmp_path)
    s.run.write(s.interrupted())
    doc = loads((tmp_path / "o.json").read_text())
    assert doc.complete is False
    assert [r["status"] for r in doc.rows] == ["baseline", "ok", "interrupted"]
    table = list(csv.DictReader(io.StringIO((tmp_path / "o.csv").read_text())))
    assert [(r["variant"], r["mean_ms"], r["status"]) for r in table] == [
        ("fp32", "11.0", "baseline"),
        ("ort-dynamic", "5.5", "ok"),
        ("ort-static-qdq", "", "interrupted"),
    ]
    md = (tmp_path / "o.md").read_text().splitlines()
    assert md[0].startswith("| variant | status | size MB (x fp32) | latency ms mean ± σ | speed-up vs fp32 |")
    assert md[3].startswith("| ort-dynamic | ok | 1.00 (0.50x) | 5.50 ± 0.71 | 2.00 ± 0.20 (p = 0.01) | 150.0 |")
    assert md[4].startswith("| ort-static-qdq | interrupted | 0.50 (0.25x) | - | - |")


def test_version_1_optimize_json_reads_as_an_optimize_document():
    """tests/data/v1/optimize.json: written by the code before the envelope (tests/data/README.md)."""
    from speechperf.results import read
    from speechperf.results.figures import BY_NAME

    doc = read(Path(__file__).parent / "data" / "v1" / "optimize.json")
    assert (doc.kind, doc.schema_version, doc.complete) == ("optimize", 4, True)
    fp32, int8 = doc.rows
    assert (fp32["variant"], int8["variant"]) == ("fp32", "ort-dynamic")
    # version 1's latency_ms / latency_sigma_ms are mean_ms / stdev_ms, the other figures kept their names
    assert "latency_ms" not in int8 and "latency_sigma_ms" not in int8
    assert (int8["mean_ms"], int8["stdev_ms"]) == (7.198, 0.601)
    shared = {k for k in int8 if k in BY_NAME}
    assert shared == {
        "mean_ms",
        "stdev_ms",
        "speedup",
        "peak_rss_mib",
        "size_mb",
        "size_ratio",
        "p_value",
        "wer",
        "cer",
        "bleu",
    }
    assert int8["size_mb"] == 0.512 and int8["speedup"] == 1.234 and int8["peak_rss_mib"] == 147.0
    # the per-variant notes moved beside the envelope's list; each run's latency is mean_ms too
    assert doc.notes == [] and doc["variant_notes"]["ort-dynamic"][0].startswith("quant_pre_process")
    assert [(r["variant"], r["run"]) for r in doc["runs"]] == [
        ("fp32", 1),
        ("ort-dynamic", 1),
        ("fp32", 2),
        ("ort-dynamic", 2),
    ]
    assert all(r["mean_ms"] > 0 and "latency_ms" not in r for r in doc["runs"])
    assert doc["quality_budget"] == {"max_wer_increase": 1.0, "max_bleu_drop": 1.0, "min_agreement": None}


def test_ctrl_c_gives_an_unfinished_variant_the_runs_it_finished(tmp_path):
    """The runs interleave: a stop leaves variants some of their runs, kept in the document's ``runs``; their rows,
    CSV and Markdown carry them (runs, mean, speed-up against fp32) and say how many of how many finished."""
    s = study(tmp_path)
    s.runs += [
        {"variant": "ort-static-qdq", "run": 1, "returncode": 0, "error": None, "mean_ms": 4.0, "peak_rss_mib": 90.0},
        {"variant": "ort-static-qdq", "run": 2, "returncode": 0, "error": None, "mean_ms": 5.0, "peak_rss_mib": 92.0},
        {
            "variant": "ort-static-qdq",
            "run": 3,
            "returncode": 1,
            "error": "boom",
            "mean_ms": None,
            "peak_rss_mib": None,
        },
    ]
    s.run.write(s.interrupted())
    row = next(r for r in loads((tmp_path / "o.json").read_text()).rows if r["variant"] == "ort-static-qdq")
    assert row["status"] == "interrupted: 2 of 3 runs finished"
    assert (row["runs"], row["mean_ms"], row["peak_rss_mib"]) == (2, 4.5, 91.0)
    assert row["speedup"] == round(11.0 / 4.5, 3) and row["p_value"] is not None
    written = next(
        r for r in csv.DictReader(io.StringIO((tmp_path / "o.csv").read_text())) if r["variant"] == row["variant"]
    )
    assert (written["runs"], written["mean_ms"]) == ("2", "4.5")
    md = (tmp_path / "o.md").read_text().splitlines()
    assert any(
        line.startswith("| ort-static-qdq | interrupted: 2 of 3 runs finished |") and "4.50 ±" in line for line in md
    )


def test_ctrl_c_gives_fp32_the_runs_it_finished_and_the_variants_their_speed_up_against_them(tmp_path):
    """fp32's row says "baseline" from the start: a stop before its last run leaves it without figures unless its
    finished runs fill it, as a variant's."""
    s = study(tmp_path)
    s.rows["fp32"].latencies_ms = []
    s.rows["ort-dynamic"].status, s.rows["ort-dynamic"].latencies_ms = "measuring", []
    s.runs += [
        {"variant": v, "run": n, "returncode": 0, "error": None, "mean_ms": ms, "peak_rss_mib": None}
        for v, n, ms in (("fp32", 1, 10.0), ("ort-dynamic", 1, 5.0), ("fp32", 2, 12.0), ("ort-dynamic", 2, 6.0))
    ]
    rows = {r["variant"]: r for r in s.interrupted().rows}
    assert rows["fp32"]["status"] == "baseline (interrupted: 2 of 3 runs finished)"
    assert (rows["fp32"]["runs"], rows["fp32"]["mean_ms"]) == (2, 11.0)
    assert rows["ort-dynamic"]["status"] == "interrupted: 2 of 3 runs finished"
    assert (rows["ort-dynamic"]["runs"], rows["ort-dynamic"]["speedup"]) == (2, 2.0)
