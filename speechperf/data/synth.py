"""``speechperf data synth``: a small real-speech raw dataset made offline with espeak-ng, flite or Kokoro, and sox.

Each sentence is spoken by the TTS engine into a temporary wav, then converted by ``sox -D`` (no dither, so the
files are byte-reproducible) to 16-bit mono at the requested rate. The folder gets ``wav/*.wav``, a wav2vec2-style
``manifest.tsv`` (its root line is ``wav``, relative to the manifest, so the folder can be moved), the transcripts
``manifest.wrd`` (one line per manifest entry) and ``sentences.txt`` (a text dataset for MT and TTS).

With ``language`` pt-br, or ``smoke_set`` in English, the sentences are one side of the en <-> pt smoke set
(``speechperf.data.smoke_en_pt``) and each utterance keeps its reference translation too: ``sentences.ref`` beside
the text dataset, and ``translation.tsv``, a fairseq speech_to_text manifest (``tgt_text`` the translation,
``src_text`` the transcript, ``tgt_lang``), which scores a speech translation or S2ST cascade (BLEU / ASR-BLEU) and
its ASR stage (WER against ``src_text``).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from speechperf.data import smoke_en_pt
from speechperf.data.generated import SENTENCES
from speechperf.errors import SpeechperfError
from speechperf.outputs import atomic_path, check_output_folder, check_output_path, write_text_atomic

#: The files besides ``wav/`` that a synthesized dataset folder holds.
SYNTH_FILES = ("manifest.tsv", "manifest.wrd", "sentences.txt")
#: And with translations (the smoke set): the references beside the text dataset, and the fairseq manifest.
TRANSLATION_FILES = ("sentences.ref", "translation.tsv")

#: The espeak-ng voice of each language ``synth`` speaks.
LANGUAGES = {"en": "en-us", "pt-br": "pt-br"}
ENGINES: dict[str, Callable[[str, Path, str], list[str]] | None] = {
    "espeak-ng": lambda text, wav, voice: ["espeak-ng", "-v", voice, "-s", "160", "-w", str(wav), text],
    "flite": lambda text, wav, voice: ["flite", "-t", text, "-o", str(wav)],
    "kokoro": None,  # in process: a ``speak`` callable (text -> audio, rate), Kokoro-82M on the ONNX backend
}
#: text -> (float32 mono audio, its sample rate), for an engine that speaks in this process.
Speak = Callable[[str], tuple[np.ndarray, int]]


class ToolMissingError(SpeechperfError):
    pass


def require_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise ToolMissingError(
            f"{name} is not installed (not on PATH); install it with: sudo apt-get install {name} "
            "(speechperf data synth needs sox and one of espeak-ng or flite)"
        )
    return path


def synthesize(
    out_dir: Path,
    n: int = 8,
    engine: str = "espeak-ng",
    sample_rate: int = 16000,
    language: str = "en",
    smoke_set: bool = False,
    speak: Speak | None = None,
) -> Path:
    """Write ``n`` spoken sentences into ``out_dir`` and return the manifest path. ``speak`` is the in-process
    engine (``kokoro``); the others are programs."""
    if engine not in ENGINES:
        raise SpeechperfError(f"unknown TTS engine {engine!r}; allowed: {', '.join(ENGINES)}")
    if language not in LANGUAGES:
        raise SpeechperfError(f"unknown synth language {language!r}; allowed: {', '.join(LANGUAGES)}")
    if n < 1:
        raise SpeechperfError(f"number of sentences {n} must be >= 1")
    if engine == "flite" and language != "en":
        raise SpeechperfError(f"flite speaks English only; for --language {language} use espeak-ng or kokoro")
    if ENGINES[engine] is None and speak is None:
        raise SpeechperfError(f"engine {engine!r} speaks in process and needs its speak function")
    if ENGINES[engine] is not None:
        require_tool(engine)
    require_tool("sox")
    side = "pt" if language == "pt-br" else "en"
    translated = smoke_set or side != "en"  # only the smoke set has translations (and Portuguese)
    pool = smoke_en_pt.sentences(side) if translated else SENTENCES
    out_dir = check_output_folder(out_dir, "data synth folder")
    wav_dir = check_output_folder(out_dir / "wav", "data synth folder")
    names = [f"utt{i:03d}.wav" for i in range(n)]
    texts = [pool[i % len(pool)] for i in range(n)]
    refs = [smoke_en_pt.translations(side)[i % len(pool)] for i in range(n)] if translated else []
    files = SYNTH_FILES + (TRANSLATION_FILES if translated else ())
    # every file it writes, before the first sentence is spoken: a FIFO or a folder in their place is refused now
    for path in [out_dir / f for f in files] + [wav_dir / name for name in names]:
        check_output_path(path, "data synth file")
    import soundfile as sf

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, text) in enumerate(zip(names, texts, strict=True)):
            raw = Path(tmp) / f"{i}.wav"
            command = ENGINES[engine]
            if command is None:
                audio, rate = speak(text)  # type: ignore[misc]  # checked above
                sf.write(str(raw), np.asarray(audio, dtype=np.float32), rate, subtype="PCM_16")
            else:
                _run(command(text, raw, LANGUAGES[language]), engine)
            with atomic_path(wav_dir / name, "data synth file") as wav:
                _run(["sox", "-D", str(raw), "-r", str(sample_rate), "-c", "1", "-b", "16", str(wav)], "sox")
                rows.append((name, sf.info(str(wav)).frames))
    manifest, transcripts, sentences = (out_dir / f for f in SYNTH_FILES)
    write_text_atomic(manifest, "wav\n" + "".join(f"{n}\t{f}\n" for n, f in rows), "data synth file")
    write_text_atomic(transcripts, "".join(t + "\n" for t in texts), "data synth file")
    write_text_atomic(sentences, "".join(t + "\n" for t in texts), "data synth file")
    if translated:
        target = "pt" if side == "en" else "en"
        references, table = (out_dir / f for f in TRANSLATION_FILES)
        write_text_atomic(references, "".join(r + "\n" for r in refs), "data synth file")
        header = "id\taudio\tn_frames\ttgt_text\tsrc_text\ttgt_lang\n"
        lines = [
            f"{Path(name).stem}\twav/{name}\t{frames}\t{ref}\t{text}\t{target}\n"
            for (name, frames), text, ref in zip(rows, texts, refs, strict=True)
        ]
        write_text_atomic(table, header + "".join(lines), "data synth file")
    return manifest


def _run(cmd: list[str], tool: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        detail = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise SpeechperfError(f"{tool} failed (exit {done.returncode}): {detail}; command: {' '.join(cmd)}")
