"""``speechperf data synth``: a small real-speech raw dataset made offline with espeak-ng or flite and sox.

Each sentence is spoken by the TTS engine into a temporary wav, then converted by ``sox -D`` (no dither, so the
files are byte-reproducible) to 16-bit mono at the requested rate. The folder gets ``wav/*.wav``, a wav2vec2-style
``manifest.tsv`` (its root line is ``wav``, relative to the manifest, so the folder can be moved), the transcripts
``manifest.wrd`` (one line per manifest entry) and ``sentences.txt`` (a text dataset for MT and TTS).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from speechperf.data.generated import SENTENCES
from speechperf.errors import SpeechperfError

ENGINES = {
    "espeak-ng": lambda text, wav: ["espeak-ng", "-v", "en-us", "-s", "160", "-w", str(wav), text],
    "flite": lambda text, wav: ["flite", "-t", text, "-o", str(wav)],
}


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


def synthesize(out_dir: Path, n: int = 8, engine: str = "espeak-ng", sample_rate: int = 16000) -> Path:
    """Write ``n`` spoken sentences into ``out_dir`` and return the manifest path."""
    if engine not in ENGINES:
        raise SpeechperfError(f"unknown TTS engine {engine!r}; allowed: {', '.join(ENGINES)}")
    if n < 1:
        raise SpeechperfError(f"number of sentences {n} must be >= 1")
    require_tool(engine)
    require_tool("sox")
    out_dir = Path(out_dir)
    wav_dir = out_dir / "wav"
    wav_dir.mkdir(parents=True, exist_ok=True)
    import soundfile as sf

    rows, texts = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(n):
            text = SENTENCES[i % len(SENTENCES)]
            raw = Path(tmp) / f"{i}.wav"
            name = f"utt{i:03d}.wav"
            _run(ENGINES[engine](text, raw), engine)
            _run(["sox", "-D", str(raw), "-r", str(sample_rate), "-c", "1", "-b", "16", str(wav_dir / name)], "sox")
            rows.append(f"{name}\t{sf.info(str(wav_dir / name)).frames}")
            texts.append(text)
    manifest = out_dir / "manifest.tsv"
    manifest.write_text("wav\n" + "".join(r + "\n" for r in rows), encoding="utf-8")
    (out_dir / "manifest.wrd").write_text("".join(t + "\n" for t in texts), encoding="utf-8")
    (out_dir / "sentences.txt").write_text("".join(t + "\n" for t in texts), encoding="utf-8")
    return manifest


def _run(cmd: list[str], tool: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        detail = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise SpeechperfError(f"{tool} failed (exit {done.returncode}): {detail}; command: {' '.join(cmd)}")
