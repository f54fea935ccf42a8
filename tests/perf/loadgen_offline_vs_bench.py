"""LoadGen's Offline samples/s on one instance against 1 / bench's mean per-sample time (by hand, not collected by
pytest): the two measure the same forwards, so the ratio should sit near 1 (below it by LoadGen's and the queue's
overhead, and by the hand-offs a cascade's request holds, which bench does not time).

    python tests/perf/loadgen_offline_vs_bench.py [--backends torch,paddle,onnxruntime] [--config configs/VAD.yaml]
        [--dataset-path M --dataset-type raw] [--duration 5]

Prints, per backend: bench's mean per-sample seconds (sum over stages), LoadGen's Offline samples/s, and the ratio.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path


def run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed: {done.stderr.strip().splitlines()[-1:]}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backends", default="torch,paddle,onnxruntime")
    parser.add_argument("--config", default=None)
    parser.add_argument("--dataset-path", default=None)
    parser.add_argument("--dataset-type", default=None)
    parser.add_argument("--duration", default="5")
    args = parser.parse_args()
    exe = str(Path(sys.executable).parent / "speechperf")
    data = [*(["--config", args.config] if args.config else [])]
    data += [*(["--dataset-path", args.dataset_path] if args.dataset_path else [])]
    data += [*(["--dataset-type", args.dataset_type] if args.dataset_type else [])]
    with tempfile.TemporaryDirectory() as tmp:
        for backend in args.backends.split(","):
            bench_json, lg_json = Path(tmp) / f"b-{backend}.json", Path(tmp) / f"l-{backend}.json"
            run(
                [
                    exe,
                    "bench",
                    "-b",
                    backend,
                    *data,
                    "--meters",
                    "runtime",
                    "--repeat",
                    "3",
                    "-q",
                    "-o",
                    str(bench_json),
                ]
            )
            run([exe, "loadgen", "-b", backend, *data, "--scenario", "Offline", "--duration", args.duration,
                 "--log-dir", str(Path(tmp) / f"logs-{backend}"), "-o", str(lg_json)])  # fmt: skip
            bench = json.loads(bench_json.read_text())
            total = next(row for row in bench["rows"] if row["stage"] == "total")
            per_sample = total["mean_ms"] / 1000
            served = json.loads(lg_json.read_text())["runs"][0]["summary"]["samples_per_s"]
            print(
                f"{backend}: bench mean {per_sample * 1000:.2f} ms/sample -> {1 / per_sample:.2f} samples/s; "
                f"LoadGen Offline {served:.2f} samples/s; ratio {served * per_sample:.3f}"
            )


if __name__ == "__main__":
    main()
