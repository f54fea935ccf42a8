"""What the meters cost and how exact they are, measured side by side in one run (by hand, not collected by pytest).

    python tests/perf/bench_meters.py [--backends torch,paddle,onnxruntime]

Prints:
1. the runtime meter versus a bare ``perf_counter_ns`` loop over the same ~1 ms numpy session (single-threaded):
   median ratio (target <= 1.02), measured in alternating blocks so that drift hits both;
2. the exact memory meter's error on a known allocation held 5 ms (target <= 5%), with memory_profiler's beside it;
3. wall time of runtime + memory + FLOPs meters over 100 samples versus 100 bare forwards, per backend, with the
   FLOPs meter's per-shape cache on (the default) and off.
"""

from __future__ import annotations

import argparse
import statistics
import time

from speechperf.meters import FlopsMeter, MemoryMeter, RuntimeMeter
from speechperf.meters.check import AllocSession, ComputeSession, bare_loop_ns, compute_feeds
from speechperf.meters.flops import KnownGraph
from speechperf.registry import get_backend


def runtime_overhead(blocks: int = 10, per_block: int = 100) -> None:
    session, feeds = ComputeSession(), compute_feeds(0.001)
    forward = lambda: session(feeds)  # noqa: E731
    bare, metered = [], []
    for _ in range(blocks):
        bare += bare_loop_ns(forward, per_block)
        meter = RuntimeMeter(warmup=0, repeat=per_block)
        metered += list(meter.measure("x", forward).ns)
    b, m = statistics.median(bare), statistics.median(metered)
    print(
        f"1. runtime meter vs bare loop, numpy tanh(x)*x over {feeds['x'].size} floats, "
        f"{blocks}x{per_block} calls each: "
        f"bare median {b / 1e6:.4f} ms, meter median {m / 1e6:.4f} ms, ratio {m / b:.4f} (target <= 1.02)"
    )


def memory_error(repeats: int = 5) -> None:
    for mib in (50, 200):
        cells = []
        for method, interval in (("hwm", 0.01), ("memory_profiler", 0.01), ("memory_profiler", 0.001)):
            meter = MemoryMeter(method=method, interval=interval)
            session = AllocSession(mib, hold_s=0.005)
            errors = []
            for i in range(repeats):
                sample = meter.measure(str(i), lambda session=session: session({}))
                errors.append(abs(sample.delta_mib - mib) / mib)
            label = "exact (hwm)" if method == "hwm" else f"memory_profiler@{interval}s"
            cells.append(f"{label}: max error {max(errors):.1%} (median {statistics.median(errors):.1%})")
        print(f"2. {mib} MiB held 5 ms, {repeats} calls: " + "; ".join(cells) + " (target <= 5%)")


def metering_cost(backend_name: str, size: int, cache: bool, samples: int = 100) -> None:
    backend = get_backend(backend_name)
    graph = KnownGraph("matmul", m=size, n=size, k=size)
    session = backend.known_session(graph, 1)
    feeds = graph.feeds()
    session(feeds)
    backend.count_flops(session, feeds)  # a first count may trace or load the graph; steady state is what is timed
    forward = lambda: session(feeds)  # noqa: E731
    start = time.perf_counter()
    for _ in range(samples):
        forward()
    bare = time.perf_counter() - start
    runtime = RuntimeMeter(backend, warmup=0, repeat=1)
    memory = MemoryMeter(backend, method="hwm")
    flops = FlopsMeter(backend, source="analytic", cache_by_shape=cache)
    spent = {"runtime": 0.0, "memory": 0.0, "flops": 0.0}
    for i in range(samples):
        t0 = time.perf_counter()
        runtime.measure(str(i), forward)
        t1 = time.perf_counter()
        memory.measure(str(i), forward)
        t2 = time.perf_counter()
        flops.measure(str(i), lambda s: s(feeds), session)
        t3 = time.perf_counter()
        spent["runtime"] += t1 - t0
        spent["memory"] += t2 - t1
        spent["flops"] += t3 - t2
    metered = sum(spent.values())
    parts = ", ".join(f"{k} {v / bare:.1f}" for k, v in spent.items())
    assert flops.result().total == samples * graph.expected
    print(
        f"3. {backend_name}, FLOPs cache_by_shape={cache}: {samples} samples of a {size}^3 matmul "
        f"({bare / samples * 1e3:.2f} ms each): bare "
        f"{bare * 1e3:.0f} ms, runtime+memory+FLOPs {metered * 1e3:.0f} ms = {metered / bare:.1f} bare passes "
        f"({parts})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="torch,paddle,onnxruntime")
    args = parser.parse_args()
    runtime_overhead()
    memory_error()
    for name in args.backends.split(","):
        for size in (128, 512):
            for cache in (True, False):
                metering_cost(name.strip(), size, cache)


if __name__ == "__main__":
    main()
