"""Read audio files: soundfile to read, channels averaged to mono, soxr to resample to the rate a model takes."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from speechperf.data.files import file_problem
from speechperf.errors import SpeechperfError

#: Input rates speechperf resamples from. Below 4 kHz a file carries no usable speech band; above 384 kHz it is
#: not audio meant for speech models. Either way it is almost certainly a wrong header, not something to resample.
MIN_RATE, MAX_RATE = 4000, 384000


class AudioError(SpeechperfError):
    """An audio file that is missing, unreadable, or at a rate that cannot be resampled."""


def read_audio(path: Path, target_rate: int, where: str = "") -> np.ndarray:
    """``path`` as float32 mono at ``target_rate``. ``where`` (e.g. ``manifest.tsv:3``) prefixes errors."""
    import soundfile as sf

    prefix = f"{where}: " if where else ""
    problem = file_problem(path)
    if problem is not None:
        raise AudioError(f"{prefix}audio file {problem}: {path}")
    try:
        data, rate = sf.read(str(path), dtype="float32", always_2d=True)
    except Exception as exc:  # soundfile raises LibsndfileError / RuntimeError / TypeError on corrupt files
        raise AudioError(f"{prefix}cannot read audio file {path}: {_first_line(exc)}") from None
    mono = data.mean(axis=1, dtype=np.float32)
    return resample(mono, rate, target_rate, f"{prefix}{path}")


def resample(audio: np.ndarray, rate: int, target_rate: int, what: str = "audio") -> np.ndarray:
    """Resample mono float32 ``audio`` from ``rate`` to ``target_rate`` with soxr (high quality)."""
    if not (MIN_RATE <= rate <= MAX_RATE):
        raise AudioError(
            f"{what} has sample rate {rate} Hz, which cannot be resampled to {target_rate} Hz; "
            f"rates from {MIN_RATE} to {MAX_RATE} Hz are allowed"
        )
    if rate == target_rate:
        return np.ascontiguousarray(audio, dtype=np.float32)
    import soxr

    return soxr.resample(np.asarray(audio, dtype=np.float32), rate, target_rate, quality="HQ").astype(np.float32)


def write_wav(path: Path, audio: np.ndarray, rate: int, target_rate: int | None = None) -> Path:
    """Write mono ``audio`` at ``rate`` as 16-bit PCM, resampled to ``target_rate`` first when given."""
    import soundfile as sf

    audio = np.asarray(audio, dtype=np.float32).reshape(-1)
    if target_rate is not None and target_rate != rate:
        import soxr

        audio = soxr.resample(audio, rate, target_rate, quality="HQ").astype(np.float32)
        rate = target_rate
    from speechperf.outputs import atomic_path

    with atomic_path(path, "waveform") as tmp:  # never into a FIFO, never replacing a symlink (speechperf.outputs)
        sf.write(str(tmp), np.clip(audio, -1.0, 1.0), rate, subtype="PCM_16", format="WAV")
    return path


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
