"""pt2e-static int8 as exported against through torch.compile (Inductor freezing), with fp32 eager and fp32
``compile-frozen`` beside it, on the zoo's S2T encoder (one utterance of 300 frames, 1 thread). Run by hand:

    python tests/perf/pt2e_inductor.py [tiny|base]

Quantizes the encoder with the torch backend's ``pt2e-static`` hook (``speechperf optimize``'s), loads it as
exported and with the load options the hook now returns (``compile: default, compile_freezing: true``), and prints
per path: the first call (where Inductor compiles; cold start), the median of 10 later calls, and the max relative
difference of ``encoder_out`` against fp32 eager. One process, paths one after another: a shared machine's load
moves the medians, so read the ratios, twice.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import attrs
import numpy as np

from speechperf.backend import ModelSpec
from speechperf.optimize.hook import QuantizeSource
from speechperf.registry import get_backend
from speechperf.zoo.build import ensure_built, model_spec
from speechperf.zoo.catalog import get_model


def main() -> None:
    preset = sys.argv[1] if len(sys.argv) > 1 else "tiny"
    model, folder = get_model("s2t"), ensure_built("s2t", preset, formats=["torch-eager"])
    comp = model.component("encoder")
    rng = np.random.default_rng(0)
    calibration = tuple(model.example_feeds("encoder", preset, 1, n, rng) for n in comp.test_lengths)
    spec = model_spec(folder, "encoder", "torch-eager")
    source = QuantizeSource(
        "encoder", (spec,), calibration, model.example_feeds("encoder", preset, 2, 60, rng), comp.dynamic_axes()
    )
    backend = get_backend("torch")
    backend.set_threads(1)
    with tempfile.TemporaryDirectory(prefix="speechperf-pt2e-") as tmp:
        int8 = backend.quantize("pt2e-static", source, Path(tmp))
        print(f"pt2e-static load options: {dict(int8.options)}")
        program = ModelSpec(path=int8.path, inputs=comp.inputs, outputs=comp.outputs)
        sessions = {
            "fp32 eager": backend.load(spec, threads=1),
            "fp32 compile-frozen": backend.load(
                attrs.evolve(spec, options={"compile": "default", "compile_freezing": True}), threads=1
            ),
            "pt2e as exported": backend.load(program, threads=1),
            "pt2e through Inductor": backend.load(attrs.evolve(program, options=int8.options), threads=1),
        }
        feeds = model.example_feeds("encoder", preset, 1, 300, np.random.default_rng(1))
        reference = None
        for name, session in sessions.items():
            start = time.perf_counter()
            out = session(feeds)
            first = time.perf_counter() - start
            for _ in range(2):
                session(feeds)
            times = []
            for _ in range(10):
                start = time.perf_counter()
                session(feeds)
                times.append(time.perf_counter() - start)
            reference = reference or out
            rel = np.abs(out["encoder_out"] - reference["encoder_out"]).max() / np.abs(reference["encoder_out"]).max()
            print(f"{name:22} first call {first:7.1f} s, median {1e3 * sorted(times)[5]:9.2f} ms, max rel {rel:.4f}")


if __name__ == "__main__":
    main()
