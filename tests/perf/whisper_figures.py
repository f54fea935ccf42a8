"""Whisper tiny.en figures (not collected by pytest): WER/CER of every format on the pocketsphinx-testdata LibriVox
clips, and the time of each graph at 1 thread.

    SPEECHPERF_CACHE_DIR=/tmp/cache python tests/perf/whisper_figures.py [--repeats 5] [--ctranslate2]

Needs ``apt-get install pocketsphinx-testdata`` and ``pip install "speechperf[whisper]"``. Timings: one warm-up call,
then the median and min of ``--repeats`` calls of ``time.perf_counter_ns`` around the session call (host arrays in
and out): the encoder on one 30 s window, cross K/V once, and one decoder step (1 new token) at a 20-token cache.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import soundfile as sf
from zoo_figures import time_session  # tests/perf is on sys.path when this script runs

from speechperf.adapters.whisper import WhisperVocabulary, transcribe
from speechperf.data.audio import resample
from speechperf.meters.wer import score
from speechperf.zoo.build import FORMATS, ensure_built, load_session
from speechperf.zoo.catalog import get_model
from speechperf.zoo.whisper import model_dir

LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
MODEL = "whisper-tiny-en"


def librivox() -> tuple[list[np.ndarray], list[str]]:
    """The five clips (16 kHz) and their transcripts (``<s> words </s> (id)`` lines)."""
    texts = {}
    for line in (LIBRIVOX / "transcription").read_text().splitlines():
        words, _, utt = line.rpartition("(")
        texts[utt.strip(") ")] = words.replace("<s>", "").replace("</s>", "").strip()
    audio, refs = [], []
    for utt in (LIBRIVOX / "fileids").read_text().split():
        data, rate = sf.read(LIBRIVOX / f"{utt}.wav", dtype="float32")
        audio.append(resample(data, rate, 16000))
        refs.append(texts[utt])
    return audio, refs


def ctranslate2_texts(audio: list[np.ndarray], vocab: WhisperVocabulary) -> list[str]:
    """In a process of its own: ctranslate2 segfaults beside paddle."""
    done = subprocess.run([sys.executable, __file__, "--ctranslate2-only"], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"ctranslate2 failed: {done.stderr[-1000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _ctranslate2_here(audio: list[np.ndarray], vocab: WhisperVocabulary) -> list[str]:
    import ctranslate2

    from speechperf.adapters.whisper import log_mel

    model = ctranslate2.models.Whisper(str(model_dir()), device="cpu", compute_type="float32", intra_threads=1)
    features = ctranslate2.StorageView.from_array(np.stack([log_mel(a) for a in audio]))
    results = model.generate(features, [list(vocab.prompt)] * len(audio), beam_size=1, max_length=224)
    return [vocab.decode(r.sequences_ids[0]) for r in results]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--ctranslate2", action="store_true", help="also transcribe with ctranslate2")
    parser.add_argument("--ctranslate2-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.ctranslate2_only:
        print(json.dumps(_ctranslate2_here(librivox()[0], WhisperVocabulary.from_dir(model_dir()))))
        return
    folder = ensure_built(MODEL, "base")
    model, vocab = get_model(MODEL), WhisperVocabulary.from_dir(model_dir())
    audio, refs = librivox()
    rng = np.random.default_rng(0)
    enc_feeds = model.example_feeds("encoder", "base", 1, 3000, rng)
    kv_feeds = model.example_feeds("cross_kv", "base", 1, 1500, rng)
    step_feeds = model.example_feeds("decoder_step", "base", 1, 19, rng)  # 19 past + 1 slot, 1 new token
    print("| format | WER | CER | encoder ms (median/min) | cross_kv ms | decoder step ms |")
    print("|---|---|---|---|---|---|")
    texts = {}
    for fmt in FORMATS:
        sessions = {c: load_session(folder, c, fmt, threads=1) for c in model.component_names}
        texts[fmt] = transcribe(sessions, audio, vocab)
        result = score(refs, texts[fmt])
        cells = [
            time_session(sessions[c], f, 1, args.repeats)
            for c, f in (("encoder", enc_feeds), ("cross_kv", kv_feeds), ("decoder_step", step_feeds))
        ]
        print(
            f"| {fmt} | {result.wer:.4f} | {result.cer:.4f} | "
            + " | ".join(f"{med:.1f} / {low:.1f}" for med, low in cells)
            + " |",
            flush=True,
        )
    if args.ctranslate2:
        texts["ctranslate2"] = ctranslate2_texts(audio, vocab)
        result = score(refs, texts["ctranslate2"])
        print(f"| ctranslate2 (fp32) | {result.wer:.4f} | {result.cer:.4f} | | | |")
    same = all(t == texts["torch-eager"] for t in texts.values())
    print(f"\ntranscripts identical across {', '.join(texts)}: {same}")
    for ref, hyp in zip(refs, texts["torch-eager"]):
        print(f"  ref: {ref}\n  hyp: {hyp}")


if __name__ == "__main__":
    main()
