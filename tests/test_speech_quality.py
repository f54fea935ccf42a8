"""Speech quality as the field scores it (speechperf.meters.speech_quality): DNSMOS through speechmos, MCD with DTW
through mel-cepstral-distance, PESQ and STOI; on real speech (a LibriVox clip), checked against the packages' own
calls; and the bench quality pass over a real ONNX speech-to-speech file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from click.testing import CliRunner

from speechperf.extras import MissingExtraError
from speechperf.meters import speech_quality
from speechperf.meters.speech_quality import SpeechQuality

LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
CLIP = LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0890.wav"  # 5.3 s, 16 kHz
#: 4.6 s: speechmos repeats a clip shorter than its 9.01 s window until it fills one, here into one window (~1 s)
DNSMOS_SECONDS = 4.6
needs_librivox = pytest.mark.skipif(
    not CLIP.exists(), reason="the LibriVox clips are missing (apt-get install pocketsphinx-testdata)"
)


def clip(seconds: float) -> tuple[np.ndarray, int]:
    audio, rate = sf.read(CLIP, dtype="float32")
    return audio[: int(seconds * rate)], rate


def test_the_headline_names_each_figure_and_the_reference():
    quality = SpeechQuality(2, 3.61, 3.92, 3.24, 3.76, 1.234, 2.5, 0.912, "fp32", clean_reference="clean reference")
    assert quality.headline() == (
        "DNSMOS OVRL 3.24 SIG 3.61 BAK 3.92 P.808 3.76, MCD 1.23 dB vs fp32, PESQ 2.50 STOI 0.912 vs clean reference"
    )
    assert SpeechQuality(1, 3.0, 3.0, 3.0, 3.0).headline() == "DNSMOS OVRL 3.00 SIG 3.00 BAK 3.00 P.808 3.00"


def test_compare_shows_the_speech_figures_of_its_bench_children():
    """compare rebuilds each child's headline from its bench JSON (speechperf.compare.quality)."""
    import attrs

    from speechperf.compare.quality import _headline
    from speechperf.meters.quality import QualityScore

    speech = SpeechQuality(1, 3.5, 4.0, 3.2, 3.8, 0.5, reference="input recording")
    score = QualityScore("total", "speech", 1, speech=speech)
    as_json = json.loads(json.dumps(attrs.asdict(score)))
    assert (
        _headline(as_json)
        == score.headline()
        == "DNSMOS OVRL 3.20 SIG 3.50 BAK 4.00 P.808 3.80, MCD 0.50 dB vs input recording"
    )


def test_a_missing_package_is_one_line_with_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "mel_cepstral_distance", None)  # import of it fails as if not installed
    with pytest.raises(MissingExtraError) as info:
        speech_quality.mcd(np.zeros(1600), 16000, np.zeros(1600), 16000)
    assert str(info.value) == (
        'MCD needs the mel-cepstral-distance package, which is not installed: pip install "speechperf[speech-quality]"'
    )


@needs_librivox
@pytest.mark.slow
def test_mcd_is_zero_for_identical_speech_and_grows_with_noise():
    audio, rate = clip(0.5)
    noisy = audio + np.random.default_rng(0).normal(0, 0.02, audio.size).astype(np.float32)
    same = speech_quality.mcd(audio, rate, audio, rate)
    shifted = speech_quality.mcd(audio, rate, np.roll(audio, 400), rate)  # 25 ms later: DTW absorbs most of it
    worse = speech_quality.mcd(audio, rate, noisy, rate)
    print(f"MCD identical {same:.3f} dB, shifted 25 ms {shifted:.3f} dB, noise sigma 0.02 {worse:.3f} dB")
    assert same == 0.0 and 0 < shifted < worse


@needs_librivox
@pytest.mark.slow
def test_pesq_and_stoi_rank_a_noisy_copy_below_the_clean_one():
    audio, rate = clip(2.0)
    noisy = audio + np.random.default_rng(0).normal(0, 0.02, audio.size).astype(np.float32)
    clean_pesq, clean_stoi = speech_quality.pesq_stoi(audio, rate, audio, rate)
    noisy_pesq, noisy_stoi = speech_quality.pesq_stoi(audio, rate, noisy, rate)
    print(f"PESQ {clean_pesq:.2f} -> {noisy_pesq:.2f}, STOI {clean_stoi:.3f} -> {noisy_stoi:.3f}")
    assert clean_pesq > 4.5 and clean_stoi > 0.99
    assert 1.0 <= noisy_pesq < clean_pesq - 1 and noisy_stoi < clean_stoi


@needs_librivox
@pytest.mark.slow
def test_bench_scores_an_s2s_file_by_dnsmos_and_mcd_against_its_input_recording(tmp_path):
    """A speech-to-speech ONNX file (its input unchanged) on a real clip, with the quality meter and no references:
    DNSMOS of the output, in [1, 5] and equal to speechmos's own README call (``dnsmos.run(path, sr=16000)``) on
    the dumped wav (the clip's own 16-bit samples); MCD against the input recording, 0 for the same speech."""
    from speechmos import dnsmos

    from speechperf.cli import main
    from tests.test_clean_reference import identity_s2s

    model = identity_s2s(tmp_path / "s2s.onnx")
    audio, rate = clip(DNSMOS_SECONDS)
    sf.write(tmp_path / "clip.wav", audio, rate, subtype="PCM_16")
    (tmp_path / "test.tsv").write_text(f"{tmp_path}\nclip.wav\t{audio.size}\n")
    config = tmp_path / "s2s.yaml"
    config.write_text(
        f"general: {{model_type: S2S, dataset_type: raw, dataset_path: {tmp_path / 'test.tsv'}}}\n"
        f"stage1: {{path: {model}, inputs: [{{name: wave, source: audio}}], outputs: [out]}}\n"
    )
    out, dump = tmp_path / "r.json", tmp_path / "dump"
    done = CliRunner().invoke(
        main,
        ["bench", "-b", "onnxruntime", "--config", str(config), "--warmup", "0", "--meters", "runtime,quality",
         "--dump-speech-waveforms-dir", str(dump), "-o", str(out)],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    data = json.loads(out.read_text())
    total = next(r for r in data["rows"] if r["stage"] == "total")
    theirs = dnsmos.run(str(dump / "_0_pred.wav"), sr=16000)
    print(total["quality"], theirs)
    for name in ("sig", "bak", "ovrl", "p808"):
        assert 1.0 <= total[f"dnsmos_{name}"] <= 5.0
        assert total[f"dnsmos_{name}"] == pytest.approx(theirs[f"{name}_mos"], abs=1e-4)  # the JSON's 4 decimals
    assert total["mcd_db"] == 0.0
    assert "DNSMOS OVRL " in total["quality"] and "MCD 0.00 dB vs input recording" in total["quality"]
    score = data["result"]["quality"]["scores"][0]
    assert score["metric"] == "speech" and score["speech"]["per_sample"][0]["id"] == "clip"
    # What MCD was scored against is said (it said "no references (speech quality alone)"); DNSMOS needs none.
    used = "MCD against the input recordings (the speech the stage's input came from)"
    assert data["result"]["quality"]["references"] == used
    assert f"quality: references: {used}; scored in an untimed pass" in done.stderr, done.stderr
