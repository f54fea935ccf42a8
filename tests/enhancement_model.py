"""An NSNet2-style mask-based enhancer and the noisy / clean speech it is scored on, built here (issue 44).

The model has NSNet2's interface: the log10-power linear spectrogram of 16 kHz speech, [1, frames, 161] (20 ms Hann
windows every 10 ms, n_fft 320: the ``nsnet2`` feature preset), in; a sigmoid gain per frame and bin, [1, frames,
161], out. Its weights are set, not trained: a per-bin gate ``sigmoid(SLOPE * (x - floor - MARGIN))`` that passes
the bins above the white noise's known level (a soft spectral gate, which really does raise PESQ) plus a GRU branch
with small seeded weights, so the graph holds the recurrent layer such models have. The speech is the LibriVox clips
of pocketsphinx-testdata with white noise added at NOISE_RMS, laid out as VoiceBank-DEMAND is
(noisy_testset_wav / clean_testset_wav, the same file names).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

BINS = 161  # n_fft 320
HIDDEN = 16
NOISE_RMS = 0.01
SLOPE = 4.6  # per log10 unit (10 dB)
MARGIN = 0.6  # log10 units above the noise's level where the gate is half open
#: The noise's expected power per bin: its variance times the energy of the 320-sample periodic Hann window
#: (sum w^2 = 3 / 8 * 320), as scipy's ShortTimeFFT leaves it unscaled.
NOISE_FLOOR = math.log10(NOISE_RMS**2 * 320 * 3 / 8)
CLIPS = ("sense_and_sensibility_01_austen_64kb-0880", "sense_and_sensibility_01_austen_64kb-0930")  # 3.0, 3.3 s


def torch_model():
    import torch
    from torch import nn

    class NsnetStyle(nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = nn.GRU(BINS, HIDDEN, batch_first=True)
            self.gate = nn.Linear(BINS, BINS)
            self.out = nn.Linear(HIDDEN, BINS)

        def forward(self, feats):
            hidden, _ = self.gru(feats)
            return torch.sigmoid(self.gate(feats) + self.out(hidden))

    torch.manual_seed(0)
    model = NsnetStyle().eval()
    with torch.no_grad():
        model.gate.weight.copy_(torch.eye(BINS) * SLOPE)
        model.gate.bias.fill_(-SLOPE * (NOISE_FLOOR + MARGIN))
        model.out.weight.mul_(0.05)
        model.out.bias.zero_()
    return model


def save_onnx(path: Path) -> Path:
    import torch

    with torch.no_grad():
        torch.onnx.export(
            torch_model(),
            (torch.randn(1, 7, BINS),),
            str(path),
            input_names=["features"],
            output_names=["mask"],
            dynamic_axes={"features": {1: "frames"}, "mask": {1: "frames"}},
            opset_version=17,
            dynamo=False,
        )
    return path


def save_torchscript(path: Path) -> Path:
    import torch

    torch.jit.script(torch_model()).save(str(path))
    return path


def save_paddle(prefix: Path) -> Path:
    """The same network in paddle inference format, the torch weights copied in (paddle's Linear keeps [in, out];
    its GRU has torch's gate order and names its weights per cell)."""
    import paddle

    state = {k: v.detach().numpy() for k, v in torch_model().state_dict().items()}

    class NsnetStyle(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.gru = paddle.nn.GRU(BINS, HIDDEN)
            self.gate = paddle.nn.Linear(BINS, BINS)
            self.out = paddle.nn.Linear(HIDDEN, BINS)

        def forward(self, features):
            hidden, _ = self.gru(features)
            return paddle.nn.functional.sigmoid(self.gate(features) + self.out(hidden))

    layer = NsnetStyle()
    own = layer.state_dict()
    for name, value in state.items():
        target = name.replace("gru.", "gru.0.cell.").replace("_l0", "") if name.startswith("gru.") else name
        own[target].set_value(np.ascontiguousarray(value.T if name in ("gate.weight", "out.weight") else value))
    layer.eval()
    spec = [paddle.static.InputSpec([1, None, BINS], "float32", "features")]
    paddle.jit.save(paddle.jit.to_static(layer, input_spec=spec, full_graph=True), str(prefix))
    return prefix.with_suffix(".json")


def noisy_clean_set(folder: Path, librivox: Path) -> Path:
    """noisy_testset_wav / clean_testset_wav (16-bit wav, the same names) and a raw manifest of the noisy files;
    returns the manifest."""
    import soundfile as sf

    rng = np.random.default_rng(0)
    (folder / "noisy_testset_wav").mkdir(parents=True)
    (folder / "clean_testset_wav").mkdir()
    lines = ["noisy_testset_wav"]
    for clip in CLIPS:
        clean, rate = sf.read(librivox / f"{clip}.wav", dtype="float32")
        noisy = np.clip(clean + rng.normal(0, NOISE_RMS, clean.size), -1, 1).astype(np.float32)
        sf.write(folder / "clean_testset_wav" / f"{clip}.wav", clean, rate, subtype="PCM_16")
        sf.write(folder / "noisy_testset_wav" / f"{clip}.wav", noisy, rate, subtype="PCM_16")
        lines.append(f"{clip}.wav\t{clean.size}")
    manifest = folder / "noisy.tsv"
    manifest.write_text("\n".join(lines) + "\n")
    return manifest


def config_text(model: str, output_kind: str | None = "mask", backend_paths: str | None = None) -> str:
    """The enhancement config over ``model`` (in the set's folder), scored against the clean recordings."""
    kind = f", output_kind: {output_kind}" if output_kind else ""
    path = backend_paths or model
    return (
        "general: {model_type: S2S, dataset_type: raw, dataset_path: noisy.tsv, "
        "clean_reference_dir: clean_testset_wav}\n"
        f"stage1: {{path: {path}, features: nsnet2, inputs: [{{name: features, source: features}}], "
        f"outputs: [mask]{kind}}}\n"
    )
