"""A user's own model file as users have them: a third-party-shaped TorchScript vocoder taking [1, 80, frames],
its own mel settings, copy synthesis through `model_type: S2S`, and the one line that says why a wrong layout
fails. Real frameworks, real model files built here (tiny), real speech (the LibriVox clips)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
needs_librivox = pytest.mark.skipif(
    not LIBRIVOX.is_dir(), reason="the LibriVox clips are missing (apt-get install pocketsphinx-testdata)"
)
HOP = 160
UPSAMPLING = (10, 4, 4)  # 10 * 4 * 4 = 160 = the hop of the hifigan-16k features
CUT = 77  # samples cut off each clip, so that its length is no multiple of the hop


def build_vocoder(path: Path) -> Path:
    """A HiFi-GAN-shaped generator (jik876/hifi-gan's layout: conv_pre over 80 channels first, transposed-conv
    upsampling with kernel 2u and stride u, conv_post, tanh), random weights, saved as TorchScript."""
    import torch
    from torch import nn

    class Generator(nn.Module):
        def __init__(self, mels: int = 80, channels: int = 32):
            super().__init__()
            self.conv_pre = nn.Conv1d(mels, channels, 7, padding=3)
            self.ups = nn.ModuleList()
            for rate in UPSAMPLING:
                self.ups.append(nn.ConvTranspose1d(channels, channels // 2, 2 * rate, stride=rate, padding=rate // 2))
                channels //= 2
            self.conv_post = nn.Conv1d(channels, 1, 7, padding=3)

        def forward(self, mel):
            x = self.conv_pre(mel)
            for up in self.ups:
                x = up(nn.functional.leaky_relu(x, 0.1))
            return torch.tanh(self.conv_post(nn.functional.leaky_relu(x, 0.1)))

    torch.manual_seed(0)
    torch.jit.script(Generator().eval()).save(str(path))
    return path


@pytest.fixture(scope="module")
def speech(tmp_path_factory) -> tuple[Path, list[int]]:
    """Two LibriVox clips, each cut by CUT samples, as a raw manifest; and their lengths in samples."""
    if not LIBRIVOX.is_dir():
        pytest.skip("the LibriVox clips are missing (apt-get install pocketsphinx-testdata)")
    folder = tmp_path_factory.mktemp("librivox")
    lines, lengths = [str(folder)], []
    for clip in sorted(LIBRIVOX.glob("*.wav"))[:2]:
        audio, rate = sf.read(clip, dtype="float32")
        assert rate == 16000
        sf.write(folder / clip.name, audio[:-CUT], rate)
        lengths.append(len(audio) - CUT)
        lines.append(f"{clip.name}\t{lengths[-1]}")
    (folder / "manifest.tsv").write_text("\n".join(lines) + "\n")
    return folder / "manifest.tsv", lengths


def copy_synthesis_config(tmp_path: Path, vocoder: Path, manifest: Path, layout: str | None) -> Path:
    mel = "{name: mel, source: features" + (f", layout: {layout}" if layout else "") + "}"
    config = tmp_path / "copy.yaml"
    config.write_text(f"""
general: {{model_type: S2S, dataset_type: raw, dataset_path: {manifest}}}
stage1:
  path: {vocoder}
  features: {{preset: hifigan-16k, n_mels: 80}}
  inputs: [{mel}]
  outputs: [wave]
""")
    return config


def speechperf(*args: str) -> subprocess.CompletedProcess:
    """The real CLI in a child process: what a user sees on the console."""
    return subprocess.run(
        [sys.executable, "-m", "speechperf", *args], capture_output=True, text=True, timeout=300, check=False
    )


@needs_librivox
@pytest.mark.slow
def test_vocoder_resynthesises_real_speech_channels_first(tmp_path, speech):
    manifest, lengths = speech
    vocoder = build_vocoder(tmp_path / "vocoder.ts")  # .ts: TorchScript without `format:`
    config = copy_synthesis_config(tmp_path, vocoder, manifest, "channels_first")
    dump, out = tmp_path / "dump", tmp_path / "r.json"
    done = speechperf(
        "bench", "-b", "torch", "--config", str(config), "--warmup", "1", "--meters", "runtime",
        "--dump-speech-waveforms-dir", str(dump), "-o", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    print(done.stdout)
    data = json.loads(out.read_text())
    stage = data["result"]["stages"][0]
    assert stage["role"] == "s2s" and stage["rtf"]["audio"] == "output"
    assert data["config"]["stage1"]["features"]["hop_length"] == HOP
    assert data["config"]["stage1"]["inputs"][0]["layout"] == "BCT"
    for i, (sid, n) in enumerate(zip(data["result"]["samples"], lengths)):
        frames = n // HOP  # padding `same`: one frame per hop
        wave, rate = sf.read(dump / f"_{i}_pred.wav")
        assert (
            rate == 16000
            and len(wave) == frames * int(np.prod(UPSAMPLING)) == data["result"]["outputs"][sid]["waveform_samples"]
        )
        assert wave.std() > 1e-3 and np.abs(wave).max() < 1.0  # not silence, tanh-bounded
        # Frame by frame, the output's loudness follows the speech's (random weights: the sign is theirs).
        clip, _ = sf.read(manifest.parent / f"{sid}.wav")
        loudness = [
            np.log(np.square(x[: frames * HOP]).reshape(frames, HOP).mean(1) + 1e-10)
            for x in (clip, wave - wave.mean())
        ]
        assert abs(np.corrcoef(*loudness)[0, 1]) > 0.3
    # RTF divides the runtime by the seconds generated.
    rtf = stage["rtf"]
    assert rtf["total_audio_s"] == pytest.approx(sum((n // HOP) * HOP / 16000 for n in lengths))
    assert rtf["rtf"] == pytest.approx(rtf["total_runtime_s"] / rtf["total_audio_s"])


@needs_librivox
@pytest.mark.slow
def test_wrong_layout_fails_with_the_channel_message_on_one_console_line(tmp_path, speech):
    manifest, _ = speech
    vocoder = build_vocoder(tmp_path / "vocoder.jit")  # .jit: TorchScript without `format:`
    config = copy_synthesis_config(tmp_path, vocoder, manifest, None)  # features fed [1, frames, 80]
    out = tmp_path / "r.json"
    done = speechperf("bench", "-b", "torch", "--config", str(config), "--warmup", "0", "-o", str(out), "--quiet")
    assert done.returncode == 1, done.stderr
    failed = [line for line in done.stderr.splitlines() if line.startswith("failed:")]
    assert len(failed) == 2, done.stderr
    for line in failed:
        assert "RuntimeError: Given groups=1, weight of size [32, 80, 7], expected input[1, " in line
        assert "to have 80 channels, but got" in line and "TorchScript interpreter" not in line
    assert "Traceback" not in done.stderr
    failure = json.loads(out.read_text())["result"]["stages"][0]["failures"][0]
    assert failure["error"] in failed[0]
    assert failure["detail"].startswith("RuntimeError: The following operation failed in the TorchScript interpreter")
    assert failure["detail"].rstrip().endswith("channels instead")


@pytest.mark.slow
def test_a_pt_file_that_is_no_torchscript_names_the_suffix_and_the_format_key(tmp_path):
    import torch

    checkpoint = tmp_path / "generator.pt"
    torch.save({"conv_pre.weight": torch.zeros(4, 80, 7)}, checkpoint)  # a checkpoint, as vocoder repos ship
    config = tmp_path / "c.yaml"
    config.write_text(f"""
general: {{model_type: S2S, generated_seconds: [0.5, 0.5]}}
stage1: {{path: {checkpoint}, inputs: [{{name: mel, source: features}}], outputs: [wave]}}
""")
    done = speechperf("bench", "-b", "torch", "--config", str(config), "--dataset-size", "1", "--quiet")
    assert done.returncode == 2
    line = done.stderr.strip().splitlines()[-1]
    assert f"cannot load {checkpoint} as TorchScript" in line
    assert "format 'torchscript' was guessed from the suffix '.pt'" in line and "stage1.format: one of" in line
    other = tmp_path / "generator.bin"
    other.write_bytes(b"\0")
    config.write_text(config.read_text().replace(str(checkpoint), str(other)))
    done = speechperf("config", "check", str(config), "--backend", "torch")
    assert done.returncode == 2
    assert "from its suffix '.bin'; backend 'torch' loads: torchscript, export, module" in done.stderr
    assert ".jit = torchscript, .ts = torchscript" in done.stderr and "set the stage's `format:`" in done.stderr
