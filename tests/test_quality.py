"""The quality meter's scoring against hand-computed numbers, and the references it reads (no framework needed)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from click.testing import CliRunner

from speechperf.benchmark.quality import wanted
from speechperf.cli import main
from speechperf.config.schema import GeneralConfig
from speechperf.data import DatasetError, load_dataset
from speechperf.data.references import References, load_references
from speechperf.errors import SpeechperfError
from speechperf.meters import bleu, vad_score, wer
from speechperf.meters.normalize import SIMPLE, WHISPER_BASIC, WHISPER_ENGLISH, for_language, normalize
from speechperf.meters.quality import QualityResult, QualityScore, save_text, score_texts
from speechperf.optimize.fidelity import Fidelity, QualityBudget, over_budget


def test_whisper_normalizer_scores_digits_against_number_words_as_equal():
    # The case: Whisper tiny.en writes "10 of clubs." for "ten of clubs".
    assert wer.score(["ten of clubs"], ["10 of clubs."]).wer == 0.0
    assert wer.score(["ten of clubs"], ["10 of clubs."], SIMPLE).wer == pytest.approx(1 / 3)
    # Spelling, abbreviations and contractions too (the LibriVox reference spells "mister").
    assert normalize("Mr. Smith's colour isn't grey.") == normalize("mister smith's color is not gray")
    assert for_language("en") == for_language("en-US") == WHISPER_ENGLISH
    assert for_language("de") == WHISPER_BASIC
    assert normalize("Grüße, Welt!", WHISPER_BASIC) == "grüße welt"


def test_corpus_wer_is_not_the_mean_of_per_sample_wer():
    # 1 substitution in 4 words, 1 deletion in 2 words: corpus 2/6, per sample 1/4 and 1/2 (mean 3/8).
    result = wer.score(["the cat sat down", "go forward"], ["the dog sat down", "go"])
    assert result.wer == pytest.approx(2 / 6)
    assert [(u.errors, u.words) for u in result.per_sample] == [(1, 4), (1, 2)]
    assert [u.wer for u in result.per_sample] == [0.25, 0.5]
    assert result.normalizer == WHISPER_ENGLISH
    # one insertion counts as an error of its sample
    assert [u.errors for u in wer.score(["a b"], ["a x b"]).per_sample] == [1]


def test_sacrebleu_on_known_pairs():
    same = bleu.score(["the cat sat on the mat"], ["the cat sat on the mat"])
    assert same.bleu == pytest.approx(100.0) and same.chrf == pytest.approx(100.0)
    assert "tok:13a" in same.bleu_signature and "version:2.6.0" in same.bleu_signature
    assert same.chrf_signature.startswith("nrefs:1|case:mixed|eff:yes|nc:6|nw:0")
    # hyp "the cat sat on the mat" against "the cat is on the mat": n-gram precisions 5/6, 3/5, 1/4 and 0/3, the
    # last smoothed (exp) to 1/(2*3); equal lengths, so no brevity penalty.
    got = bleu.score(["the cat is on the mat"], ["the cat sat on the mat"])
    want = 100 * math.exp((math.log(5 / 6) + math.log(3 / 5) + math.log(1 / 4) + math.log(1 / 6)) / 4)
    assert got.bleu == pytest.approx(want, abs=0.01)  # 37.99
    assert 0 < got.chrf < 100
    # ASR-BLEU normalizes both sides first: casing and punctuation of a transcript do not count
    assert bleu.score(["The cat sat on the mat."], ["the cat sat on the mat"], WHISPER_ENGLISH).bleu == pytest.approx(
        100.0
    )
    with pytest.raises(SpeechperfError, match="one hypothesis per reference"):
        bleu.score(["a"], [])


def test_vad_agreement_and_segment_f1():
    seconds = {"x": 1.024}  # 32 windows of 32 ms
    ref = {"x": [(0.0, 0.512)]}
    # the prediction covers 0-0.256 s: 8 of the 16 speech windows, so 24 of 32 windows agree; IoU 0.5 matches
    result = vad_score.score(ref, {"x": [(0.0, 0.256)]}, seconds)
    assert result.agreement == pytest.approx(24 / 32)
    assert result.segment_f1 == 1.0 and (result.precision, result.recall) == (1.0, 1.0)
    # a second, spurious segment: precision 1/2, recall 1, F1 2/3
    result = vad_score.score(ref, {"x": [(0.0, 0.5), (0.8, 0.9)]}, seconds)
    assert result.segment_f1 == pytest.approx(2 / 3)
    # overlap below IoU 0.5 is no match
    assert vad_score.score(ref, {"x": [(0.4, 0.9)]}, seconds).segment_f1 == 0.0
    assert vad_score.score({"x": []}, {"x": []}, seconds).segment_f1 == 1.0


def test_score_texts_keeps_every_sample_and_names_the_normalizer():
    q = score_texts(
        "total",
        "wer",
        ["a", "b"],
        {"a": "ten of clubs", "b": "go forward"},
        {"a": "10 of clubs.", "b": "go"},
        {"a": "en", "b": "en"},
        False,
        reference="test.wrd",
    )
    assert (q.wer, q.samples, q.normalizer, q.language) == (pytest.approx(1 / 5), 2, WHISPER_ENGLISH, "en")
    assert [(s.id, s.hypothesis, s.errors, s.words) for s in q.per_sample] == [
        ("a", "10 of clubs.", 0, 3),
        ("b", "go", 1, 2),
    ]
    # CER: "go" against "go forward" is 8 deleted characters of the 11 + 10 in "10 of clubs" and "go forward"
    assert q.cer == pytest.approx(8 / 21)
    assert q.headline() == "WER 20.0% CER 38.1% (whisper-english)"
    assert q.described() == "WER 20.0% CER 38.1% (whisper-english) against test.wrd (language en)"
    assert q.primary == ("WER", pytest.approx(20.0))
    tsv = save_text(QualityResult((q,), 0.0, "test"))
    assert tsv.splitlines() == [
        "id\tlanguage\treference\thypothesis\treference_normalized\thypothesis_normalized\terrors\twords",
        "a\ten\tten of clubs\t10 of clubs.\t10 of clubs\t10 of clubs\t0\t3",
        "b\ten\tgo forward\tgo\tgo forward\tgo\t1\t2",
    ]


def test_each_sample_is_normalized_in_its_own_language_and_shown_normalized():
    """The issue's "five five" against "5 5": the normalized texts say why it is 2 errors in 1 word (Whisper's
    English normalizer joins the spoken digits into one number), and a Spanish sample keeps its accents."""
    q = score_texts(
        "total",
        "wer",
        ["en1", "es1"],
        {"en1": "Five five.", "es1": "¿Dónde está el Sr. García?"},
        {"en1": "5 5", "es1": "donde esta el senor garcia"},
        {"en1": "en", "es1": "es"},
        False,
    )
    en, es = q.per_sample
    assert (en.reference_normalized, en.hypothesis_normalized, en.errors, en.words) == ("55", "5 5", 2, 1)
    assert (es.language, es.reference_normalized) == ("es", "dónde está el sr garcía")
    assert es.errors == 4  # diacritics and the abbreviation are kept by the basic normalizer: 4 of 5 words differ
    assert (q.normalizer, q.language) == (f"{WHISPER_ENGLISH}, {WHISPER_BASIC}", "en, es")


def test_translation_rows_have_a_bleu_column_not_errors():
    q = score_texts(
        "total", "bleu", ["a"], {"a": "the cat is on the mat"}, {"a": "the cat sat on the mat"}, {"a": "en"}, True
    )
    header, row = save_text(QualityResult((q,), 0.0, "test")).splitlines()
    assert header.split("\t")[-1] == "bleu" and "errors" not in header
    assert row.split("\t")[-1] == str(q.per_sample[0].bleu) and 0 < q.per_sample[0].bleu < 100
    assert row.split("\t")[4:6] == ["", ""]  # BLEU scores the texts as written (sacrebleu's tokenizer)


def _wav(path: Path, seconds: float = 0.2, rate: int = 16000) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (0.1 * np.sin(2 * np.pi * 220 * np.arange(int(seconds * rate)) / rate)).astype(np.float32)
    sf.write(path, data, rate)
    return len(data)


def test_fairseq_s2t_manifest_resolves_relative_audio_and_reads_translations(tmp_path):
    frames = _wav(tmp_path / "clips" / "a.wav")
    _wav(tmp_path / "b.wav", 0.1, 8000)
    (tmp_path / "dev.tsv").write_text(
        "id\taudio\tn_frames\ttgt_text\tsrc_text\tspeaker\ttgt_lang\n"
        f"utt1\tclips/a.wav\t{frames}\tHallo Welt\thello world\tspk1\tde\n"
        f"utt2\t{tmp_path / 'b.wav'}\t800\tGuten Tag\tgood day\tspk2\tde\n"
    )
    general = GeneralConfig(dataset_type="fairseq_s2t", dataset_path=str(tmp_path / "dev.tsv"))
    samples = load_dataset(general, "s2t")
    assert [(s.id, s.text, s.source_text, s.language, s.audio.size) for s in samples] == [
        ("utt1", "Hallo Welt", "hello world", "de", frames),
        ("utt2", "Guten Tag", "good day", "de", 1600),  # resampled 8 -> 16 kHz
    ]
    refs = load_references(general, samples, ("s2t",))
    assert refs.translation and refs.texts["utt1"] == "Hallo Welt" and refs.sources["utt2"] == "good day"
    assert refs.language("utt1", "en") == "de"
    (tmp_path / "bad.tsv").write_text("id\taudio\ttgt_text\nx\ta.wav\thi\n")
    with pytest.raises(DatasetError, match=r"bad.tsv:1: .* missing: n_frames"):
        load_dataset(GeneralConfig(dataset_type="fairseq_s2t", dataset_path=str(tmp_path / "bad.tsv")), "s2t")


def test_a_reference_count_that_differs_from_the_samples_is_one_line_exit_2(tmp_path):
    frames = _wav(tmp_path / "a.wav")
    _wav(tmp_path / "b.wav")
    (tmp_path / "m.tsv").write_text(f"{tmp_path}\na.wav\t{frames}\nb.wav\t{frames}\n")
    (tmp_path / "m.wrd").write_text("only one line\n")
    args = ["bench", "-b", "onnxruntime", "--dataset-type", "raw", "--dataset-path", str(tmp_path / "m.tsv")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert "m.wrd has 1 transcript line(s) for the 2 entries" in result.output
    (tmp_path / "m.wrd").write_text("hello there\nUm, uh!\n")  # nothing left after Whisper's normalizer
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert "the reference of sample 'b' ('Um, uh!', from m.wrd beside" in result.output
    assert "is empty after the whisper-english normalizer" in result.output
    (tmp_path / "m.wrd").unlink()
    (tmp_path / "refs.txt").write_text("one\ntwo\nthree\n")
    result = CliRunner().invoke(main, [*args, "--set", f"general.reference_path={tmp_path / 'refs.txt'}"])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert "has 3 line(s) for 2 sample(s)" in result.output


def test_references_of_text_datasets_vad_and_tts(tmp_path):
    (tmp_path / "src.txt").write_text("hello world\ngood day\n")
    (tmp_path / "src.ref").write_text("Hallo Welt\nGuten Tag\n")
    general = GeneralConfig(model_type="MT", dataset_type="text", dataset_path=str(tmp_path / "src.txt"))
    samples = load_dataset(general, "mt")
    refs = load_references(general, samples, ("mt",))
    assert refs.texts == {"1": "Hallo Welt", "2": "Guten Tag"} and refs.translation
    tts = GeneralConfig(model_type="TTS", dataset_type="text", dataset_path=str(tmp_path / "src.txt"))
    (tmp_path / "src.ref").unlink()
    refs = load_references(tts, load_dataset(tts, "tts"), ("tts",))
    assert refs.from_inputs and refs.texts == {"1": "hello world", "2": "good day"}
    frames = _wav(tmp_path / "a.wav")
    (tmp_path / "v.tsv").write_text(f"{tmp_path}\na.wav\t{frames}\n")
    (tmp_path / "v.seg").write_text("0.00-0.10 0.15-0.20\n")
    vad = GeneralConfig(model_type="VAD", dataset_type="raw", dataset_path=str(tmp_path / "v.tsv"))
    refs = load_references(vad, load_dataset(vad, "vad"), ("vad",))
    assert refs.segments == {"a": ((0.0, 0.1), (0.15, 0.2))}
    (tmp_path / "v.seg").write_text("0.3-0.1\n")
    with pytest.raises(DatasetError, match="v.seg:1: segment '0.3-0.1'"):
        load_references(vad, load_dataset(vad, "vad"), ("vad",))


def test_when_the_meter_runs():
    refs = References("a .wrd", texts={"s0": "hello"})  # transcripts, no clean recordings
    default, asked = GeneralConfig(dataset_type="raw"), GeneralConfig(meters=("runtime", "quality"))
    assert wanted(default, refs, ("s2t",)) == (True, None)
    assert wanted(GeneralConfig(meters=("runtime",)), refs, ("s2t",)) == (False, None)
    run, note = wanted(default, refs, ("tts",))
    assert not run and "add quality to --meters" in note  # speech output needs an ASR: only when asked
    assert wanted(asked, refs, ("tts",)) == (True, None)
    run, note = wanted(asked, None, ("s2t",))
    assert not run and "has no references" in note
    assert wanted(GeneralConfig(), None, ("s2t",)) == (False, None)  # generated audio: its sentences are no transcripts


def test_optimize_marks_a_variant_over_its_quality_budget():
    def fid(wer_value, agreement=0.99, bleu_value=None):
        return Fidelity("tokens", agreement, QualityScore("total", "wer", 5, wer=wer_value, cer=0.0, bleu=bleu_value))

    budget = QualityBudget()
    assert over_budget(fid(0.33), fid(0.52), budget) == ["WER +19.0 points"]
    assert over_budget(fid(0.33), fid(0.335), budget) == []  # +0.5 points is within the default 1.0
    assert over_budget(fid(0.1, bleu_value=30.0), fid(0.1, bleu_value=27.5), budget) == ["BLEU -2.5 points"]
    assert over_budget(fid(0.1), fid(0.1, agreement=0.9), QualityBudget(min_agreement=0.95)) == [
        "tokens agreement 90.0% < 95.0%"
    ]


def test_compare_flags_a_backend_whose_quality_differs(tmp_path):
    from speechperf.compare.quality import group_quality
    from speechperf.launch.result import RunResult

    def run(label, wer_value):
        path = tmp_path / f"{label}.json"
        score = {
            "stage": "total",
            "metric": "wer",
            "samples": 2,
            "wer": wer_value,
            "cer": 0.01,
            "normalizer": WHISPER_ENGLISH,
        }
        path.write_text(json.dumps({"result": {"quality": {"scores": [score]}}}))
        return RunResult(label, 0, True, 0, None, None, str(path), "", "")

    found = group_quality(
        ["onnxruntime", "torch", "paddle"], [run("onnxruntime", 0.05), run("torch", 0.05), run("paddle", 0.0625)]
    )
    assert found["torch"].differs is None and found["onnxruntime"].reference == "onnxruntime"
    assert found["paddle"].differs == "DIFFERS from onnxruntime: WER 6.25 vs 5.00 (+1.25 points)"
    assert found["paddle"].headline == "WER 6.2% CER 1.0% (whisper-english)"
