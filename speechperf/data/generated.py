"""A dataset made on the spot, so a benchmark runs with no files: seeded speech-like audio or sentences.

The audio is voiced-speech-like (a pitch contour with harmonics, syllable-rate amplitude modulation, a little
noise), not silence or white noise, so features and VAD see something speech-shaped. Lengths are spread evenly
between the shortest and longest duration so per-sample figures cover a range.
"""

from __future__ import annotations

import numpy as np

from speechperf.data.sample import Sample

SENTENCES = (
    "the quick brown fox jumps over the lazy dog",
    "a speech model turns sound into words",
    "please call stella and ask her to bring these things",
    "the birch canoe slid on the smooth planks",
    "glue the sheet to the dark blue background",
    "it is easy to tell the depth of a well",
    "these days a chicken leg is a rare dish",
    "rice is often served in round bowls",
    "the juice of lemons makes fine punch",
    "four hours of steady work faced us",
)


def generated_audio(n: int, sample_rate: int, seconds: tuple[float, float], seed: int) -> list[Sample]:
    rng = np.random.default_rng(seed)
    lo, hi = seconds
    durations = np.linspace(lo, hi, n) if n > 1 else np.array([lo])
    samples = []
    for i, duration in enumerate(durations):
        length = max(1, int(round(duration * sample_rate)))
        t = np.arange(length) / sample_rate
        pitch = 120 + 30 * np.sin(2 * np.pi * rng.uniform(0.5, 2.0) * t)
        phase = 2 * np.pi * np.cumsum(pitch) / sample_rate
        voiced = sum(np.sin(k * phase) / k for k in range(1, 8))
        envelope = 0.5 * (1 + np.sin(2 * np.pi * 4.0 * t + rng.uniform(0, np.pi)))
        audio = 0.2 * voiced * envelope + 0.01 * rng.standard_normal(length)
        samples.append(
            Sample(
                id=f"gen{i}",
                audio=audio.astype(np.float32),
                sample_rate=sample_rate,
                text=SENTENCES[i % len(SENTENCES)],
            )
        )
    return samples


def generated_text(n: int, seconds: tuple[float, float], seed: int) -> list[Sample]:
    """Sentences about as long as ``seconds`` of speech (~2.5 words a second), cut from the built-in list."""
    words = " ".join(SENTENCES).split()
    lo, hi = seconds
    counts = np.linspace(lo, hi, n) * 2.5 if n > 1 else np.array([lo * 2.5])
    rng = np.random.default_rng(seed)
    samples = []
    for i, count in enumerate(counts):
        k = max(1, int(round(count)))
        start = int(rng.integers(0, len(words) - k)) if len(words) > k else 0
        samples.append(Sample(id=f"gen{i}", text=" ".join(words[start : start + k])))
    return samples
