"""Fidelity measures of speechperf optimize (framework-free), and VAD agreement on real speech through the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from click.testing import CliRunner

from speechperf.cli import main
from speechperf.optimize import fidelity
from speechperf.optimize.calibration import read_feeds, spread, write_feeds

VAD = Path(__file__).resolve().parents[1] / "configs" / "VAD.yaml"  # absolute: the tests run from any folder

SPEECH = Path(__file__).parent / "data" / "speech_16k.wav"


def test_token_agreement_counts_edits_against_fp32():
    ref = {"a": [5, 6, 7, 8], "b": [9, 10]}
    assert fidelity.token_agreement(ref, ref) == 1.0
    # one substitution in six reference tokens
    assert fidelity.token_agreement(ref, {"a": [5, 6, 7, 8], "b": [9, 11]}) == pytest.approx(5 / 6)
    assert fidelity.token_agreement(ref, {"a": [], "b": []}) == 0.0


def test_vad_agreement_per_window():
    seconds = {"x": 1.024}  # 32 windows of 32 ms
    ref = {"x": [[0.0, 0.512]]}  # the first 16 windows are speech
    assert fidelity.vad_agreement(ref, ref, seconds) == 1.0
    assert fidelity.vad_agreement(ref, {"x": [[0.0, 0.256]]}, seconds) == pytest.approx(24 / 32)
    assert fidelity.vad_agreement(ref, {"x": []}, seconds) == pytest.approx(16 / 32)


def test_snr_and_graph_difference():
    rng = np.random.default_rng(0)
    ref = rng.standard_normal(16000)
    noisy = ref + 0.01 * rng.standard_normal(16000)
    assert fidelity.snr_db(ref, noisy) == pytest.approx(40, abs=0.5)
    assert fidelity.snr_db(ref, ref) == math.inf
    a = {"y": np.array([1.0, -4.0]), "n": np.array([3])}
    assert fidelity.graph_difference([a], [{"y": np.array([1.0, -3.0]), "n": np.array([3])}]) == pytest.approx(0.25)


def test_waveform_snr_over_dumped_files(tmp_path):
    rng = np.random.default_rng(1)
    for name, noise in (("fp32", 0.0), ("int8", 0.001)):
        (tmp_path / name).mkdir()
        for i in range(2):
            wav = 0.3 * np.sin(np.arange(8000) / 7 + i) + noise * rng.standard_normal(8000)
            sf.write(tmp_path / name / f"_{i}_pred.wav", wav, 16000, subtype="FLOAT")
    value, note = fidelity.waveform_snr(tmp_path / "fp32", tmp_path / "int8")
    # signal power 0.3**2 / 2 = 0.045 against noise power 1e-6: 10 log10(45000) = 46.5 dB
    assert value == pytest.approx(46.5, abs=0.5) and note == ""


def test_spread_keeps_first_and_last():
    assert spread(list(range(10)), 3) == [0, 4, 9]
    assert spread([1, 2], 5) == [1, 2]


def test_kept_feeds_read_back_as_recorded_and_a_new_recording_replaces_them(tmp_path):
    rng = np.random.default_rng(0)
    encoder = {"features": rng.standard_normal((1, 7, 80), dtype=np.float32), "lengths": np.array([7], np.int64)}
    step = {"tokens": np.array([[2, 5, 9]], np.int64)}
    calibration = [{"encoder": [encoder], "decoder": [step, step]}, {"vocoder": []}]
    held_out = [{"encoder": [encoder], "decoder": []}, {"vocoder": [{"units": np.arange(4, dtype=np.int64)}]}]
    assert read_feeds(tmp_path / "feeds") is None
    write_feeds(tmp_path / "feeds", calibration=calibration, held_out=held_out)
    kept = read_feeds(tmp_path / "feeds")
    assert kept is not None and list(kept) == ["calibration", "held_out"]
    for got, recorded in ((kept["calibration"], calibration), (kept["held_out"], held_out)):
        assert [{s: len(calls) for s, calls in stage.items()} for stage in got] == [
            {s: len(calls) for s, calls in stage.items()} for stage in recorded
        ]
        for stage, want in zip(got, recorded):
            for session, calls in want.items():
                for call, want_call in zip(stage[session], calls):
                    assert list(call) == list(want_call)
                    for name, value in want_call.items():
                        assert call[name].dtype == value.dtype and np.array_equal(call[name], value)
    write_feeds(tmp_path / "feeds", calibration=[{"encoder": []}], held_out=[{"encoder": []}])
    assert read_feeds(tmp_path / "feeds") == {"calibration": [{"encoder": []}], "held_out": [{"encoder": []}]}


@pytest.mark.slow
def test_vad_on_real_speech_agrees_with_fp32(tmp_path):
    """The silero VAD (real weights) on real speech: ort-dynamic quantizes its LSTMs (inside If branches) and its
    speech/silence decisions stay those of fp32 (measured: 100% of windows on these clips)."""
    audio, rate = sf.read(SPEECH, dtype="float32")
    clips = {"speech.wav": audio, "first_half.wav": audio[: len(audio) // 2]}
    lines = [str(tmp_path)]
    for name, clip in clips.items():
        sf.write(tmp_path / name, clip, rate)
        lines.append(f"{name}\t{len(clip)}")
    (tmp_path / "manifest.tsv").write_text("\n".join(lines) + "\n")
    out = tmp_path / "vad.json"
    result = CliRunner().invoke(
        main,
        [
            "optimize",
            "-b",
            "onnxruntime",
            "--config",
            str(VAD),
            "--dataset-path",
            str(tmp_path / "manifest.tsv"),
            "--calibration-size",
            "1",
            "--method",
            "ort-dynamic",
            "--runs",
            "1",
            "--out-dir",
            str(tmp_path / "variants"),
            "-o",
            str(out),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    table = {r["variant"]: r for r in json.loads(out.read_text())["rows"]}
    assert table["ort-dynamic"]["size_ratio"] < 0.9  # measured 0.75: the LSTM weights are int8
    assert table["ort-dynamic"]["agreement_or_snr"] >= 0.95
    assert "VAD agreement" in table["ort-dynamic"]["fidelity"]
