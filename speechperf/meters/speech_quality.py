"""Speech quality as the field scores it, from maintained packages whose models ship in their wheels (extra
``speech-quality``; nothing is downloaded at run time):

- DNSMOS (``speechmos``): Microsoft's non-intrusive MOS estimates, P.835 SIG (speech), BAK (background), OVRL
  (overall) and P.808, each 1-5, of every speech output, resampled to 16 kHz; per clip as ``speechmos.dnsmos.run``
  gives them (9.01 s windows a second apart, a shorter clip repeated to fill one), then the mean over the clips.
  speechmos runs its ONNX files on onnxruntime itself, whatever backend the benchmark ran: it is a scorer, untimed.
- MCD (``mel-cepstral-distance``): mel-cepstral distortion in dB against a reference waveform (fp32's output for an
  optimized variant, the input recording for a vocoder in copy synthesis), with its defaults (32 ms Hann windows,
  8 ms hop, 20 mel bands, coefficients 1-15) at 16 kHz and DTW alignment, so a shift in time is not counted as
  distortion; 0 for identical waveforms. The package's own ``compare_audio_files`` on the two as wav files.
- PESQ (``pesq``, wide band, MOS-LQO 1-4.64) and STOI (``pystoi``, 0-1) against a clean reference (enhancement),
  at 16 kHz over the common length.

A missing package is one line naming it and the install command (speechperf.extras).
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path

import attrs
import numpy as np

from speechperf.extras import require

RATE = 16000  # DNSMOS, PESQ wide band and the MCD here all score 16 kHz speech
Wave = tuple[np.ndarray, int]  # samples, sample rate


@attrs.frozen
class Dnsmos:
    sig: float
    bak: float
    ovrl: float
    p808: float


@attrs.frozen
class SampleSpeech:
    """One sample's figures (None: not scored for it)."""

    id: str
    dnsmos: Dnsmos | None = None
    mcd_db: float | None = None
    pesq: float | None = None
    stoi: float | None = None


@attrs.frozen
class SpeechQuality:
    """The means over the samples scored; ``reference`` says what MCD was measured against, ``clean_reference``
    what PESQ and STOI were."""

    samples: int
    dnsmos_sig: float | None = None
    dnsmos_bak: float | None = None
    dnsmos_ovrl: float | None = None
    dnsmos_p808: float | None = None
    mcd_db: float | None = None
    pesq: float | None = None
    stoi: float | None = None
    reference: str | None = None
    per_sample: tuple[SampleSpeech, ...] = ()
    clean_reference: str | None = None  # what PESQ and STOI were measured against

    def headline(self) -> str:
        parts = []
        if self.dnsmos_ovrl is not None:
            parts.append(
                f"DNSMOS OVRL {self.dnsmos_ovrl:.2f} SIG {self.dnsmos_sig:.2f} BAK {self.dnsmos_bak:.2f} "
                f"P.808 {self.dnsmos_p808:.2f}"
            )
        against = f" vs {self.reference}" if self.reference else ""
        if self.mcd_db is not None:
            parts.append(f"MCD {self.mcd_db:.2f} dB{against}")
        if self.pesq is not None:
            clean = f" vs {self.clean_reference}" if self.clean_reference else ""
            parts.append(f"PESQ {self.pesq:.2f} STOI {self.stoi:.3f}{clean}")
        return ", ".join(parts)


def _mono16k(wave: np.ndarray, rate: int) -> np.ndarray:
    """As speechperf.data.audio.resample does it (soxr, high quality); meters sit beside data, not above it."""
    audio = np.ascontiguousarray(np.asarray(wave, dtype=np.float32).reshape(-1))
    if rate == RATE:
        return audio
    import soxr

    return soxr.resample(audio, rate, RATE, quality="HQ").astype(np.float32)


def dnsmos(wave: np.ndarray, rate: int) -> Dnsmos:
    """DNSMOS of one waveform (any rate; resampled to 16 kHz). speechmos refuses values outside [-1, 1], which a
    wav file could not hold either: they are clipped, as writing the output to a 16-bit wav would."""
    require("librosa", "DNSMOS")  # speechmos imports it without declaring it
    scorer = require("speechmos.dnsmos", "DNSMOS")
    scores = scorer.run(np.clip(_mono16k(wave, rate), -1.0, 1.0), sr=RATE)
    return Dnsmos(
        float(scores["sig_mos"]), float(scores["bak_mos"]), float(scores["ovrl_mos"]), float(scores["p808_mos"])
    )


def mcd(reference: np.ndarray, reference_rate: int, other: np.ndarray, other_rate: int) -> float:
    """Mel-cepstral distortion (dB) of ``other`` against ``reference``, DTW-aligned, at 16 kHz."""
    package = require("mel_cepstral_distance", "MCD")
    from scipy.io import wavfile  # what the package reads them with: float32 wav, no chunk it would warn about

    with tempfile.TemporaryDirectory(prefix="speechperf-mcd-") as folder:
        a, b = Path(folder) / "reference.wav", Path(folder) / "other.wav"
        wavfile.write(a, RATE, _mono16k(reference, reference_rate))
        wavfile.write(b, RATE, _mono16k(other, other_rate))
        value, _penalty = package.compare_audio_files(a, b, sample_rate=RATE, aligning="dtw")
    return float(value)


def pesq_stoi(clean: np.ndarray, clean_rate: int, other: np.ndarray, other_rate: int) -> tuple[float, float]:
    """Wide-band PESQ and STOI of ``other`` against the clean ``clean``, at 16 kHz over their common length."""
    pesq = require("pesq", "PESQ")
    pystoi = require("pystoi", "STOI")
    ref, deg = _mono16k(clean, clean_rate), _mono16k(other, other_rate)
    n = min(ref.size, deg.size)
    return float(pesq.pesq(RATE, ref[:n], deg[:n], "wb")), float(pystoi.stoi(ref[:n], deg[:n], RATE))


def score(
    waves: Mapping[str, Wave],
    references: Mapping[str, Wave] | None = None,
    reference: str | None = None,
    clean: Mapping[str, Wave] | None = None,
    clean_reference: str | None = None,
) -> SpeechQuality:
    """DNSMOS of every waveform in ``waves``; MCD against ``references`` (named ``reference``) where a sample has one;
    PESQ and STOI against ``clean`` (named ``clean_reference``) where a sample has a clean recording."""
    rows = []
    for sid, (wave, rate) in waves.items():
        mcd_db = pesq = stoi = None
        if references and sid in references:
            mcd_db = mcd(*references[sid], wave, rate)
        if clean and sid in clean:
            pesq, stoi = pesq_stoi(*clean[sid], wave, rate)
        rows.append(SampleSpeech(sid, dnsmos(wave, rate), mcd_db, pesq, stoi))

    def mean(values) -> float | None:
        kept = [v for v in values if v is not None]
        return float(np.mean(kept)) if kept else None

    scored = [r.dnsmos for r in rows if r.dnsmos is not None]
    return SpeechQuality(
        len(rows),
        mean(d.sig for d in scored),
        mean(d.bak for d in scored),
        mean(d.ovrl for d in scored),
        mean(d.p808 for d in scored),
        mean(r.mcd_db for r in rows),
        mean(r.pesq for r in rows),
        mean(r.stoi for r in rows),
        reference if references else None,
        tuple(rows),
        clean_reference if clean else None,
    )
