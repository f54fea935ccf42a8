"""Per-frame time of the silero VAD on torch, onnxruntime and paddle at one thread, in one run. Run by hand:

    python tests/perf/silero_frame_time.py [--passes 5] [--warmup 20] [--wav tests/data/speech_16k.wav]

Every backend gets the same audio, the same framing and state handling (speechperf.adapters.vad.SileroStream) and
one thread. Each timed value is one ``SileroStream.step``: building the feeds, one ``Session`` call (host arrays in
and out) and keeping the state. The warm-up frames are run first and left out. Passes over the audio alternate
between the backends, so a slow spell of this shared machine falls on all of them. Percentiles are numpy's default
(linear interpolation). CPU/wall is the process CPU time over the wall time of the timed steps: ~1 means one core.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import click
import numpy as np
import soundfile as sf

from speechperf.adapters.vad import FRAME_SECONDS, SileroStream, chunks, silero_model_spec
from speechperf.registry import require_backend

BACKENDS = ("onnxruntime", "torch", "paddle")  # onnxruntime first: the others are given as a ratio to it
DEFAULT_WAV = Path(__file__).resolve().parents[1] / "data" / "speech_16k.wav"


def timed_pass(stream: SileroStream, frames: np.ndarray) -> tuple[list[int], float, float]:
    stream.reset()
    times = []
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for chunk in frames:
        t0 = time.perf_counter_ns()
        stream.step(chunk)
        times.append(time.perf_counter_ns() - t0)
    return times, time.process_time() - cpu0, time.perf_counter() - wall0


@click.command()
@click.option("--wav", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=DEFAULT_WAV)
@click.option("--passes", type=click.IntRange(1), default=5, show_default=True, help="timed passes over the audio")
@click.option("--warmup", type=click.IntRange(0), default=20, show_default=True, help="untimed frames first")
@click.option("--threads", type=click.IntRange(1), default=1, show_default=True)
def main(wav: Path, passes: int, warmup: int, threads: int) -> None:
    audio, rate = sf.read(wav, dtype="float32")
    frames = chunks(audio, rate)
    streams, versions = {}, {}
    with tempfile.TemporaryDirectory() as workdir:
        for name in BACKENDS:
            backend = require_backend(name)
            versions[name] = backend.availability().version
            streams[name] = SileroStream(backend.load(silero_model_spec(name, Path(workdir)), threads=threads))
    for stream in streams.values():
        for chunk in np.resize(frames, (warmup, frames.shape[1])):
            stream.step(chunk)

    times = {name: [] for name in BACKENDS}
    cpu = {name: 0.0 for name in BACKENDS}
    wall = {name: 0.0 for name in BACKENDS}
    for _ in range(passes):
        for name, stream in streams.items():
            t, c, w = timed_pass(stream, frames)
            times[name] += t
            cpu[name] += c
            wall[name] += w

    print(
        f"silero VAD 16 kHz, {wav.name}: {len(frames)} frames of {FRAME_SECONDS * 1e3:.0f} ms x {passes} passes, "
        f"{warmup} warm-up frames excluded, threads={threads}"
    )
    print(
        f"{'backend':<12} {'version':<10} {'median us':>10} {'p90 us':>9} {'RTF':>8} {'CPU/wall':>8} "
        f"{'median / onnxruntime':>21}"
    )
    base = float(np.median(times["onnxruntime"]))
    for name in BACKENDS:
        t = np.asarray(times[name], dtype=np.float64)
        median, p90 = np.median(t), np.percentile(t, 90)
        print(
            f"{name:<12} {versions[name]:<10} {median / 1e3:>10.1f} {p90 / 1e3:>9.1f} "
            f"{median / 1e9 / FRAME_SECONDS:>8.4f} {cpu[name] / wall[name]:>8.2f} {median / base:>21.2f}"
        )
    print("command: python " + " ".join(sys.argv))


if __name__ == "__main__":
    main()
