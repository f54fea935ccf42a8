"""The machine's roofs measured twice in one run, side by side, to show how much they move between measurements.

    python tests/perf/roofs_twice.py [--threads 1]

Prints each source's fp32 / int8 GEMM and the memory bandwidth of both measurements and their ratio. A benchmark
that prints figures, not a timed test: run it on a quiet machine.
"""

from __future__ import annotations

import argparse

from speechperf.meters import roofs
from speechperf.registry import get_backend, known_backends


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    backends = [b for b in (get_backend(n) for n in known_backends()) if b.availability().ok]
    first, _ = roofs.measure(args.threads, backends)
    second, skipped = roofs.measure(args.threads, backends)
    print(roofs.machine().describe())
    print(f"roofs at {args.threads} thread(s): first, second, second/first")
    for kind, a, b, unit in (
        ("fp32 GEMM", first.compute, second.compute, "GFLOP/s"),
        ("int8 GEMM", first.int8, second.int8, "GOP/s"),
    ):
        for source in sorted(a):
            print(
                f"  {kind} {source:12s} {a[source].value:9.1f} {b[source].value:9.1f} {unit}  x{b[source].value / a[source].value:.3f}"
            )
    m1, m2 = first.memory, second.memory
    print(f"  memory {'':17s} {m1.value:9.1f} {m2.value:9.1f} GB/s     x{m2.value / m1.value:.3f}")
    for line in skipped:
        print(f"  not measured: {line}")


if __name__ == "__main__":
    main()
