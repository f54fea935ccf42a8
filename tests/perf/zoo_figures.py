"""Closing-note figures for the reference model zoo (not collected by pytest: no ``test_`` prefix).

Per model: parameter count, artifact size per format, export time per format, and the forward time of each
component on one 5-second utterance (or one 20-token sentence) at 1 thread on every backend/format, in one run.

    python tests/perf/zoo_figures.py --preset base --out /tmp/zoo_base [--repeats 5]

Builds the models into ``--out`` if they are not there yet. Timings: ``--warmup`` calls first (excluded), then the
median and min of ``--repeats`` calls of ``time.perf_counter_ns`` around the session call (host arrays in and out).
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from speechperf.zoo.build import FORMATS, ensure_built, load_session, read_manifest
from speechperf.zoo.catalog import MODEL_MODULES, get_model
from speechperf.zoo.s2t import decoder_step_feeds

#: Length on each component's time-like axis for one 5 s utterance or one 20-token sentence.
BENCH_LENGTHS = {
    ("s2t", "encoder"): 500,  # 100 frames/s
    ("s2ut", "encoder"): 500,
    ("unit_extractor", "encoder"): 80000,  # 16 kHz samples
    ("mt", "encoder"): 20,  # tokens
    ("tts", "encoder"): 20,  # tokens
    ("tts", "decoder"): 431,  # 5 s of 22.05 kHz at hop 256
    ("mel_vocoder", "generator"): 431,
    ("unit_vocoder", "duration"): 250,  # 50 units/s
    ("unit_vocoder", "generator"): 250,
}
#: Decoder steps: a 20-token prefix attending to the encoder output of the 5 s utterance (or 20-token sentence).
DECODER_MEMORY = {"s2t": 125, "s2ut": 125, "mt": 20}


def bench_feeds(model_name: str, component: str, preset: str) -> tuple[dict, str]:
    model = get_model(model_name)
    rng = np.random.default_rng(0)
    if component == "decoder_step":
        hp = model.hparams(preset)
        memory = DECODER_MEMORY[model_name]
        feeds = decoder_step_feeds(hp.d_model, hp.vocab_size, 1, 20, rng, memory=memory)
        return feeds, f"20-token prefix, memory {memory}"
    length = BENCH_LENGTHS[(model_name, component)]
    axis = next(t.shape[1] for t in model.component(component).inputs if t.shape and len(t.shape) > 1)
    return model.example_feeds(component, preset, 1, length, rng), f"{length} {axis}"


def time_session(session, feeds, warmup: int, repeats: int) -> tuple[float, float]:
    for _ in range(warmup):
        session(feeds)
    times = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        session(feeds)
        times.append((time.perf_counter_ns() - start) / 1e6)
    return float(np.median(times)), float(np.min(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="base", choices=("tiny", "base"))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--models", nargs="*", default=list(MODEL_MODULES))
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    print(
        f"# speechperf zoo figures, preset {args.preset}, 1 thread, warm-up {args.warmup}, "
        f"median/min of {args.repeats} calls (ms)"
    )
    for name in args.models:
        start = time.perf_counter()
        folder = ensure_built(name, args.preset, root=args.out / args.preset)
        waited = time.perf_counter() - start
        manifest = read_manifest(folder)
        sizes, seconds = defaultdict(int), defaultdict(float)
        for f in manifest["files"]:
            fmt = "paddle-inference" if f["format"] == "paddle-params" else f["format"]
            sizes[fmt] += f["bytes"]
            seconds[fmt] += f["export_seconds"]
        print(f"\n## {name}: {manifest['parameter_count']:,} parameters  (ensure_built took {waited:.1f} s)")
        print("artifact sizes (MB): " + ", ".join(f"{k} {v / 1e6:.2f}" for k, v in sizes.items()))
        print("export times (s):    " + ", ".join(f"{k} {v:.2f}" for k, v in seconds.items()))
        for comp in get_model(name).component_names:
            feeds, what = bench_feeds(name, comp, args.preset)
            cells = []
            for fmt in FORMATS:
                session = load_session(folder, comp, fmt, threads=1)
                median, best = time_session(session, feeds, args.warmup, args.repeats)
                cells.append(f"{fmt} {median:.1f}/{best:.1f}")
                del session
            print(f"forward {comp} ({what}): " + ", ".join(cells))


if __name__ == "__main__":
    main()
