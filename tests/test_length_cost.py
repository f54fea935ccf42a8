"""Cost against input length: the fit against hand-computed numbers, and on a real VAD run over LibriVox clips."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from speechperf import length_cost

LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def test_a_line_through_three_lengths_gives_its_slope_intercept_and_exponent():
    # runtime = 1 ms + 2 ms per second at 1, 2 and 4 s
    found = length_cost.fit([1.0, 2.0, 4.0], [0.003, 0.005, 0.009])
    assert found.ms_per_audio_s == pytest.approx(2.0)
    assert found.fixed_ms == pytest.approx(1.0)
    # by hand: log-lengths 0, a, 2a (a = ln 2) are symmetric, so the slope is (ln 9 - ln 3) / 2a = ln 3 / ln 4, and
    # the residuals are d/6, -2d/6, d/6 with d = ln 3 - 2 ln 5 + ln 9 = ln(27/25): stderr = |d| / (a sqrt 12)
    assert found.exponent == pytest.approx(math.log(3) / math.log(4))
    assert found.exponent_sigma == pytest.approx(math.log(27 / 25) / (math.log(2) * math.sqrt(12)))
    assert found.note is None and found.reason is None
    assert "2.00 ms per input audio-second, fixed 1.00 ms, log-log exponent 0.79 ± 0.03" in found.text()


def test_an_exponent_clearly_above_one_is_noted():
    seconds = [1.0, 2.0, 3.0, 4.0, 6.0, 8.0]
    wobble = [1.01, 0.99, 1.02, 0.98, 1.01, 0.99]
    found = length_cost.fit(seconds, [0.001 * s**2 * w for s, w in zip(seconds, wobble)])
    assert found.exponent == pytest.approx(2.0, abs=0.03)
    assert found.note and "faster than the audio" in found.note
    linear = length_cost.fit(seconds, [0.001 * s**0.95 * w for s, w in zip(seconds, wobble)])
    assert linear.note is None


def test_a_linear_cost_over_the_librivox_clip_lengths_fits_an_exponent_near_one_without_a_note():
    # fixed timings of the shape a silero VAD run gives (32 ms chunks: a fixed cost plus a cost per audio-second),
    # at the five LibriVox clips' lengths, with a few percent of noise
    seconds = [2.35, 3.2, 4.1, 5.66, 7.3]
    runtime_s = [(0.4 + 1.1 * s) * w / 1000 for s, w in zip(seconds, [1.03, 0.98, 1.01, 0.97, 1.02])]
    found = length_cost.fit(seconds, runtime_s)
    slope, intercept = np.polyfit(seconds, [r * 1000 for r in runtime_s], 1)
    assert found.ms_per_audio_s == pytest.approx(slope) and found.fixed_ms == pytest.approx(intercept)
    assert found.exponent == pytest.approx(np.polyfit(np.log(seconds), np.log(runtime_s), 1)[0])
    assert 0.7 < found.exponent < 1.0 and found.note is None  # a fixed cost bends the log-log slope below 1
    assert found.points == found.distinct_lengths == 5


def test_fewer_than_three_distinct_lengths_make_no_fit_and_say_why():
    found = length_cost.fit([2.0, 2.0, 3.0, 3.0], [0.01, 0.011, 0.015, 0.014])
    assert found.ms_per_audio_s is None and found.exponent is None
    assert found.reason == "2 distinct audio length(s), a fit needs at least 3"
    assert found.text().startswith("no length fit: 2 distinct")


@pytest.fixture(scope="module")
def manifest(tmp_path_factory) -> tuple[Path, dict[str, float]]:
    clips = sorted(LIBRIVOX.glob("*.wav"))
    if not clips:
        pytest.skip("the LibriVox clips are missing (apt-get install pocketsphinx-testdata)")
    path = tmp_path_factory.mktemp("librivox") / "manifest.tsv"
    seconds = {c.name: sf.info(c).frames / sf.info(c).samplerate for c in clips}
    lines = [str(LIBRIVOX), *(f"{c.name}\t{sf.info(c).frames}" for c in clips)]
    path.write_text("\n".join(lines) + "\n")
    return path, seconds


@pytest.mark.slow
def test_bench_fits_vad_cost_against_the_librivox_clip_lengths(manifest, tmp_path):
    path, seconds = manifest
    out = tmp_path / "vad.json"
    done = subprocess.run(
        [sys.executable, "-m", "speechperf", "bench", "-b", "onnxruntime", "--config", str(CONFIGS / "VAD.yaml")]
        + ["--dataset-path", str(path), "--dataset-type", "raw", "--repeat", "5", "--warmup", "1", "--threads", "1"]
        + ["--meters", "runtime", "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text())
    fit = data["length_fit"]["stage1 vad"]
    assert fit["points"] == len(seconds) == fit["distinct_lengths"] == 5
    stage = data["result"]["stages"][0]
    audio = stage["rtf"]["audio_per_sample"]
    assert sorted(audio.values()) == pytest.approx(sorted(seconds.values()))  # the clips' own lengths
    # the JSON's fit is the least-squares line through the JSON's own per-sample runtimes
    ids = sorted(audio)
    runtimes = {s["sample_id"]: float(np.median(s["ns"])) / 1e6 for s in stage["runtime"]["samples"]}
    slope, intercept = np.polyfit([audio[i] for i in ids], [runtimes[i] for i in ids], 1)
    assert fit["ms_per_audio_s"] == pytest.approx(slope) and fit["fixed_ms"] == pytest.approx(intercept)
    # the exponent is the log-log slope of the same timings; what it measures on this machine (silero's cost is
    # linear in the audio, ~1) depends on the machine's load, so it is printed by tests/perf/vad_length_cost.py
    log_slope = np.polyfit(np.log([audio[i] for i in ids]), np.log([runtimes[i] for i in ids]), 1)[0]
    assert fit["exponent"] == pytest.approx(log_slope, rel=1e-6)
    assert f"note: cost against input length, stage1 vad: {fit['ms_per_audio_s']:.2f} ms per input audio-second" in (
        done.stderr
    )
