"""The first call on a new input shape, on the reference S2T encoder, per backend (by hand, not collected by pytest).

    python tests/perf/first_call_per_shape.py [--backends paddle,torch,onnxruntime] [--presets tiny,base]

Each backend and preset runs in a fresh process, one thread. Session A is warmed on 300 frames, then runs 6 new
lengths 3 times each; session B, a second load of the same file in the same process, then runs the lengths A ran
and 3 lengths nobody ran. Prints, per backend and preset, the medians over lengths of first call / median of the
two later calls: on A's new lengths, on B's lengths seen by A, on B's new lengths, and the later calls' ms. A cost
on B's new lengths but less on its seen lengths is kept per process (a cache the sessions share); the same cost on
both is paid again by every session. What `speechperf bench` reports is the whole stage (encoder and every decoder
step), in docs/benchmark.md.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

import numpy as np

FORMATS = {"paddle": "paddle-inference", "torch": "torch-eager", "onnxruntime": "onnx-torch"}
WARM, NEW_A, NEW_B = 300, (200, 100, 250, 150, 275, 125), (120, 220, 180)


def ratios(backend_name: str, preset: str) -> str:
    from speechperf.registry import require_backend
    from speechperf.zoo.build import ensure_built, load_session

    backend = require_backend(backend_name)
    backend.set_threads(1)
    folder = ensure_built("s2t", preset)
    rng = np.random.default_rng(0)

    def calls(session, frames: int, n: int = 3) -> list[float]:
        feeds = {"features": rng.standard_normal((1, frames, 80)).astype(np.float32)}
        feeds["feature_lengths"] = np.array([frames], dtype=np.int64)
        feeds = {t.name: feeds[t.name] for t in session.inputs}
        out = []
        for _ in range(n):
            start = time.perf_counter()
            session(feeds)
            backend.synchronize("cpu")
            out.append(time.perf_counter() - start)
        return out

    def first_over_later(timings: list[list[float]]) -> float:
        return statistics.median(t[0] / statistics.median(t[1:]) for t in timings)

    a = load_session(folder, "encoder", FORMATS[backend_name], threads=1, backend=backend)
    calls(a, WARM, 4)
    on_a = [calls(a, n) for n in NEW_A]
    b = load_session(folder, "encoder", FORMATS[backend_name], threads=1, backend=backend)
    calls(b, WARM, 4)  # B's own first call (its cold start) is not a shape's
    seen = [calls(b, n) for n in NEW_A]
    on_b = [calls(b, n) for n in NEW_B]
    later_ms = statistics.median(statistics.median(t[1:]) for t in on_a) * 1e3
    return (
        f"{backend_name:12s} {preset:5s} first/later: A new {first_over_later(on_a):.2f}, "
        f"B seen by A {first_over_later(seen):.2f}, B new {first_over_later(on_b):.2f}; later calls {later_ms:.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backends", default="paddle,torch,onnxruntime")
    parser.add_argument("--presets", default="tiny,base")
    parser.add_argument("--child", nargs=2, metavar=("BACKEND", "PRESET"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(ratios(*args.child), flush=True)
        return
    for preset in args.presets.split(","):
        for name in args.backends.split(","):
            subprocess.run([sys.executable, __file__, "--child", name, preset], check=True)


if __name__ == "__main__":
    main()
