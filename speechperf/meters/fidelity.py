"""How close a float output stays to a reference output: max absolute and relative difference, SNR and cosine
similarity, each with a tolerance (``Tolerance``; a stage's ``tolerance`` key overrides it per output).

One meter for every float output of every stage kind: compare's parity (a backend against the reference backend),
optimize (a variant against fp32) and the parity gate of a derived file (speechperf.benchmark.derive) all use it.

- max |Δ|: the largest absolute difference over every element of every sample.
- max rel: per sample, max |Δ| / max |reference| (the reference's largest magnitude, so a near-zero element does
  not blow it up); the worst sample.
- SNR dB: 10 log10(Σ ref² / Σ (ref - other)²) over every sample together, as for waveforms and masks; inf when
  equal; None when the reference is all zeros.
- cosine: per sample, ref · other / (|ref| |other|) of the flattened arrays; the worst sample; None when a norm is 0.

A sample differs when its shapes differ or one of its figures is past the tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import attrs
import numpy as np


@attrs.frozen
class Tolerance:
    """Limits past which a sample's float output differs. The defaults are for fp32 against fp32 (another
    framework, or an exported file): 1e-3 of the reference's magnitude is far above float rounding, far below a
    wrong weight. An int8 variant typically needs ``max_rel: 0.1, snr_db: 20``."""

    max_rel: float = 1e-3
    snr_db: float = 40.0
    cosine: float = 0.999
    max_abs: float | None = None  # no absolute limit unless one is given

    @classmethod
    def fields_help(cls) -> dict[str, str]:
        return {
            "max_rel": "largest max |Δ| / max |reference| of a sample (default 1e-3)",
            "snr_db": "smallest SNR in dB of a sample (default 40)",
            "cosine": "smallest cosine similarity of a sample (default 0.999)",
            "max_abs": "largest |Δ| of any element (default: no limit)",
        }


DEFAULT_TOLERANCE = Tolerance()


def tolerance_for(overrides: Mapping[str, Mapping[str, float]] | None, name: str) -> Tolerance:
    """The tolerance of output ``name`` (``outputs.mask`` or ``mask``, ``waveform``): the stage's override for it,
    else the defaults."""
    if not overrides:
        return DEFAULT_TOLERANCE
    given = overrides.get(name) or overrides.get(name.removeprefix("outputs.")) or overrides.get("*")
    return attrs.evolve(DEFAULT_TOLERANCE, **dict(given)) if given else DEFAULT_TOLERANCE


@attrs.frozen
class FloatFidelity:
    """The figures of one float output over the samples compared (see the module's doc)."""

    samples: int
    differing: int
    max_abs: float | None
    max_rel: float | None
    snr_db: float | None
    cosine: float | None
    shapes_differ: int = 0
    tolerance: Tolerance = DEFAULT_TOLERANCE

    def describe(self) -> str:
        if self.max_abs is None:
            return "shapes differ"
        parts = [f"max |Δ| {self.max_abs:.2g}", f"rel {self.max_rel:.2g}"]
        if self.snr_db is not None:
            parts.append("SNR inf dB" if math.isinf(self.snr_db) else f"SNR {self.snr_db:.1f} dB")
        if self.cosine is not None:
            parts.append(f"cos {self.cosine:.6f}")
        return " ".join(parts)

    def plain(self) -> dict:
        return {
            "samples": self.samples,
            "differing": self.differing,
            "max_abs": self.max_abs,
            "max_rel": self.max_rel,
            "snr_db": json_number(self.snr_db),
            "cosine": self.cosine,
            "shapes_differ": self.shapes_differ,
            "tolerance": attrs.asdict(self.tolerance),
        }


def json_number(value: float | None):
    """A figure as strict JSON takes it: an infinite SNR (equal outputs) as the string "inf"."""
    if value is not None and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


class FloatMeter:
    """Collects reference / other pairs of one output, sample by sample; ``result()`` gives the figures."""

    def __init__(self, tolerance: Tolerance = DEFAULT_TOLERANCE):
        self.tolerance = tolerance
        self.samples = self.differing = self.shapes_differ = 0
        self.max_abs = self.max_rel = 0.0
        self.signal = self.noise = 0.0
        self.cosine: float | None = None

    def add(self, reference, other) -> bool:
        """One sample; returns whether it differs."""
        self.samples += 1
        if reference is None or other is None or np.shape(reference) != np.shape(other):
            self.shapes_differ += 1
            self.differing += 1
            return True
        ref = np.asarray(reference, dtype=np.float64).reshape(-1)
        got = np.asarray(other, dtype=np.float64).reshape(-1)
        if not ref.size:
            return False
        delta = np.abs(ref - got)
        abs_diff = float(delta.max())
        rel = abs_diff / max(float(np.abs(ref).max()), 1e-12)
        signal, noise = float(ref @ ref), float(delta @ delta)
        norms = float(np.linalg.norm(ref) * np.linalg.norm(got))
        cosine = float(ref @ got) / norms if norms > 0 else None
        self.max_abs, self.max_rel = max(self.max_abs, abs_diff), max(self.max_rel, rel)
        self.signal, self.noise = self.signal + signal, self.noise + noise
        if cosine is not None:
            self.cosine = cosine if self.cosine is None else min(self.cosine, cosine)
        tol = self.tolerance
        snr = snr_db_of(signal, noise)
        bad = (
            rel > tol.max_rel
            or (tol.max_abs is not None and abs_diff > tol.max_abs)
            or (snr is not None and snr < tol.snr_db)
            or (cosine is not None and cosine < tol.cosine)
        )
        self.differing += int(bad)
        return bad

    def result(self) -> FloatFidelity:
        compared = self.samples - self.shapes_differ
        if not compared:
            return FloatFidelity(
                self.samples, self.differing, None, None, None, None, self.shapes_differ, self.tolerance
            )
        return FloatFidelity(
            self.samples,
            self.differing,
            self.max_abs,
            self.max_rel,
            snr_db_of(self.signal, self.noise),
            self.cosine,
            self.shapes_differ,
            self.tolerance,
        )


def snr_db_of(signal: float, noise: float) -> float | None:
    """10 log10(signal / noise) in dB from the summed energies Σ ref² and Σ (ref − other)²: inf when the outputs are
    equal, None when the reference is silent (there is nothing to compare against). The one SNR formula: compare's
    parity, optimize's float outputs and its waveform SNR all use it."""
    if signal <= 0:
        return None
    return math.inf if noise == 0 else 10 * math.log10(signal / noise)


def float_fidelity(pairs, tolerance: Tolerance = DEFAULT_TOLERANCE) -> FloatFidelity:
    """The figures over (reference, other) array pairs, one pair per sample."""
    meter = FloatMeter(tolerance)
    for reference, other in pairs:
        meter.add(reference, other)
    return meter.result()


def past_tolerance(fid: FloatFidelity) -> str | None:
    """Which figure is past its limit, as a phrase (``rel 0.12 > 0.001``); None when within every limit."""
    tol = fid.tolerance
    if fid.max_abs is None or fid.max_rel is None:
        return "shapes differ"
    checks = [
        (fid.max_rel > tol.max_rel, f"max rel {fid.max_rel:.2g} > {tol.max_rel:g}"),
        (tol.max_abs is not None and fid.max_abs > tol.max_abs, f"max |Δ| {fid.max_abs:.2g} > {tol.max_abs}"),
        (fid.snr_db is not None and fid.snr_db < tol.snr_db, f"SNR {fid.snr_db:.1f} dB < {tol.snr_db:g}"),
        (fid.cosine is not None and fid.cosine < tol.cosine, f"cosine {fid.cosine:.6f} < {tol.cosine:g}"),
    ]
    bad = [text for failed, text in checks if failed]
    return "; ".join(bad) or None
