"""The silero VAD's cost against input length on this machine: ``speechperf bench`` over the five LibriVox clips of
pocketsphinx-testdata (2 to 8 s), and the length fit it computes (ms per audio-second, fixed ms, log-log exponent).
Run by hand:

    python tests/perf/vad_length_cost.py [--repeat 5] [--backend onnxruntime]

Silero streams 32 ms chunks, so its cost is linear in the audio: an exponent near 1 (a fixed cost bends it below
1). On a busy machine the figure wanders (0.67 was seen on a shared 2-core VM), which is why no test asserts it:
tests/test_length_cost.py checks the fit's computation on fixed timings and on the timings a run wrote.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import click
import soundfile as sf

LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
CONFIG = Path(__file__).resolve().parents[2] / "configs" / "VAD.yaml"


@click.command()
@click.option("--repeat", default=5, show_default=True)
@click.option("--backend", default="onnxruntime", show_default=True)
def main(repeat: int, backend: str) -> None:
    clips = sorted(LIBRIVOX.glob("*.wav"))
    if not clips:
        sys.exit("the LibriVox clips are missing: apt-get install pocketsphinx-testdata")
    with tempfile.TemporaryDirectory() as tmp:
        manifest, out = Path(tmp) / "manifest.tsv", Path(tmp) / "vad.json"
        manifest.write_text("\n".join([str(LIBRIVOX), *(f"{c.name}\t{sf.info(c).frames}" for c in clips)]) + "\n")
        command = [sys.executable, "-m", "speechperf", "bench", "-b", backend, "--config", str(CONFIG)]
        command += ["--dataset-path", str(manifest), "--dataset-type", "raw", "--repeat", str(repeat)]
        command += ["--warmup", "1", "--threads", "1", "--meters", "runtime", "--no-store", "-o", str(out)]
        subprocess.run(command, check=True, capture_output=True)
        fit = json.loads(out.read_text())["length_fit"]["stage1 vad"]
    sigma = f" ± {fit['exponent_sigma']:.3f}" if fit.get("exponent_sigma") is not None else ""
    print(f"silero VAD on {backend}, 1 thread, {fit['points']} clips, {repeat} repeats")
    print(f"  {fit['ms_per_audio_s']:.3f} ms per audio-second, fixed {fit['fixed_ms']:.3f} ms")
    print(f"  log-log exponent {fit['exponent']:.3f}{sigma}")


if __name__ == "__main__":
    main()
