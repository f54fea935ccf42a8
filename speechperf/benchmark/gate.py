"""The parity gate of a derived file (``derive: onnx``, and a ``model: hf`` folder's ONNX export): what its verdict
is cached by, and each output of the derived file against the source's under the stage's tolerance."""

from __future__ import annotations

import hashlib
import json

import attrs
import numpy as np

from speechperf.config.schema import BenchConfig, StageConfig

#: The dataset's first samples the gate runs.
GATE_SAMPLES = 2
VERDICT = "verdict-{key}.json"


def gate_key(cfg: BenchConfig, stage: StageConfig) -> str:
    """What the parity verdict depends on besides the file: the samples it ran and the tolerance it applied."""
    general = attrs.asdict(cfg.general)
    keys = ("dataset_type", "dataset_path", "generated_seconds", "sample_rate", "feat_dim", "seed")
    data = {k: general[k] for k in keys}
    data.update(features=attrs.asdict(stage.features), tolerance=stage.tolerance)
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:12]


def gate(outputs: list[str], expected: list, got: list, tolerance) -> tuple[dict, list[str]]:
    """Each output of the derived file (``got``, one dict per call) against the source's (``expected``): integer
    outputs exactly, float ones under the stage's tolerance. Returns the figures per output and what is refused."""
    from speechperf.meters.fidelity import FloatMeter, past_tolerance, tolerance_for

    figures: dict = {}
    refused: list[str] = []
    for name in outputs:
        pairs = [(np.asarray(e[name]), np.asarray(g[name])) for e, g in zip(expected, got)]
        if pairs[0][0].dtype.kind in "biu":
            differing = sum(not np.array_equal(a, b) for a, b in pairs)
            figures[name] = {"samples": len(pairs), "differing": differing, "exact": True}
            if differing:
                refused.append(f"output {name!r} differs in {differing}/{len(pairs)} samples")
            continue
        meter = FloatMeter(tolerance_for(tolerance, name))
        for a, b in pairs:
            meter.add(a, b)
        fid = meter.result()
        figures[name] = fid.plain()
        if fid.differing:
            refused.append(f"output {name!r} {fid.describe()}: {past_tolerance(fid)}")
    return figures, refused


def short(figures: dict) -> str:
    return f"max |Δ| {figures['max_abs']:.2g}, rel {figures['max_rel']:.2g}"
