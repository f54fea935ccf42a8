"""What ``speechperf compare`` costs beyond the bench runs it launches. Run by hand:

    python tests/perf/compare_overhead.py [--repeats 2] [-- extra bench/compare options]

It times (wall clock and the CPU time of the whole process tree, best of ``--repeats``) ``speechperf compare`` on torch, paddle and onnxruntime with one run
each, against three bare ``speechperf bench`` processes of the same config one after another, and prints the
harness share: (compare - sum of benches) / compare. The harness is the parent's imports and config checks, the
children's ``--save-outputs``, reading their JSON back, the statistics, the parity check and the report. Both sides
use a warm cache (the reference models are built before timing). The machine is shared: run it twice and expect
a few percent of noise in wall time; CPU time is steadier.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BACKENDS = ("torch", "paddle", "onnxruntime")
CONFIG = ["--config", str(REPO / "configs" / "S2T.yaml"), "--preset", "tiny", "--dataset-size", "2"]


def speechperf(*args: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the whole process tree) of one ``speechperf`` command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "speechperf", *args], capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"speechperf {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip().splitlines()[-1]}")
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def _sum(pairs):
    return tuple(sum(p[i] for p in pairs) for i in (0, 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("extra", nargs="*", help="more options for both sides, after --")
    opts = parser.parse_args()
    config = CONFIG + opts.extra
    with tempfile.TemporaryDirectory(prefix="speechperf-compare-overhead-") as tmp:
        for backend in BACKENDS:  # build the reference models once, untimed
            speechperf("bench", "-b", backend, *config, "--meters", "runtime", "-q")
        bare, harness = [], []
        for i in range(opts.repeats):  # alternate the two sides so drift hits both
            bare.append(
                _sum([speechperf("bench", "-b", b, *config, "-q", "-o", f"{tmp}/b{i}{b}.json") for b in BACKENDS])
            )
            harness.append(
                speechperf(
                    "compare",
                    "--backends",
                    ",".join(BACKENDS),
                    "--runs",
                    "1",
                    *config,
                    "--workdir",
                    f"{tmp}/w{i}",
                    "-o",
                    f"{tmp}/c{i}.json",
                )
            )
    print(f"config: {' '.join(config)}")
    for index, what in ((0, "wall"), (1, "CPU (whole process tree)")):
        best_bare, best_compare = min(v[index] for v in bare), min(v[index] for v in harness)
        print(
            f"{what}: three bare bench runs {best_bare:7.2f} s, speechperf compare (1 run each) {best_compare:7.2f} s"
            f"; harness {best_compare - best_bare:+.2f} s = {100 * (best_compare - best_bare) / best_compare:+.1f} %"
            f" of compare (best of {len(bare)}; each: bare {', '.join(f'{v[index]:.2f}' for v in bare)}; "
            f"compare {', '.join(f'{v[index]:.2f}' for v in harness)})"
        )


if __name__ == "__main__":
    main()
