"""Mask-based speech enhancement scored as the field scores it (issue 44): the linear STFT front-end and the mask's
resynthesis against an independent numpy STFT / overlap-add, the output kind decided from the model's declared
shapes, and an NSNet2-style model (tests/enhancement_model.py) run from noisy LibriVox speech on onnxruntime, torch and paddle,
its enhanced wavs dumped and scored with PESQ / STOI / DNSMOS against the clean recordings, equal to the packages'
own calls on an independent computation; the same model without ``output_kind`` never scored as speech."""

from __future__ import annotations

import json
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from click.testing import CliRunner

from speechperf.adapters import spectrogram
from speechperf.backend import TensorInfo
from speechperf.benchmark.output_kinds import decide
from speechperf.benchmark.stage import StageError
from speechperf.cli import main
from speechperf.config.schema import InputConfig, StageConfig
from tests import enhancement_model as nsnet
from tests.needs import LIBRIVOX, needs

N_FFT, HOP = 320, 160  # the nsnet2 preset's


def numpy_stft(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(frames, 161) complex STFT written out: frame k is x[k * hop - 160 : k * hop + 160] (zeros outside x) times a
    periodic Hann window, for every k whose window's non-zero part (w[0] is 0) reaches into x; and the window."""
    w = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(N_FFT) / N_FFT)
    frames = -(-(x.size + N_FFT // 2 - 1) // HOP)
    padded = np.pad(x.astype(np.float64), (N_FFT // 2, frames * HOP + N_FFT))
    segments = np.stack([padded[k * HOP : k * HOP + N_FFT] for k in range(frames)]) * w
    return np.fft.rfft(segments, axis=1), w


def numpy_istft(spectrum: np.ndarray, w: np.ndarray, samples: int) -> np.ndarray:
    """Weighted overlap-add, the least-squares inverse: sum of w * frame over sum of w^2."""
    segments = np.fft.irfft(spectrum, n=N_FFT, axis=1) * w
    size = len(segments) * HOP + N_FFT
    out, norm = np.zeros(size), np.zeros(size)
    for k, segment in enumerate(segments):
        out[k * HOP : k * HOP + N_FFT] += segment
        norm[k * HOP : k * HOP + N_FFT] += w**2
    return (out / np.maximum(norm, 1e-12))[N_FFT // 2 : N_FFT // 2 + samples]


def test_the_linear_front_end_and_the_resynthesis_are_the_numpy_stft_and_overlap_add():
    x = np.random.default_rng(1).normal(0, 0.1, 16_159).astype(np.float32)
    spectrum, w = numpy_stft(x)
    features = spectrogram.linear_spectrogram(x)  # the nsnet2 preset's settings are the defaults
    assert features.shape == spectrum.shape == (102, 161)
    np.testing.assert_allclose(features, np.log10(np.maximum(np.abs(spectrum) ** 2, 1e-12)), atol=1e-4)
    magnitude = spectrogram.linear_spectrogram(x, power=1.0, log="none")
    np.testing.assert_allclose(magnitude, np.abs(spectrum), rtol=1e-5, atol=1e-6)
    mask = np.random.default_rng(2).uniform(0, 1, spectrum.shape)
    enhanced = spectrogram.apply_mask(x, mask)
    np.testing.assert_allclose(enhanced, numpy_istft(spectrum * mask, w, x.size), atol=1e-5)
    np.testing.assert_allclose(spectrogram.apply_mask(x, np.ones_like(mask)), x, atol=1e-5)  # all-pass: x again
    assert np.abs(enhanced - x).max() > 0.01  # the mask did something
    with pytest.raises(Exception, match=r"mask has shape \[102, 160\]; the noisy STFT it applies to has \[102, 161\]"):
        spectrogram.apply_mask(x, mask[:, :160])


def _stage(kind=None, inputs=("features",)) -> StageConfig:
    return StageConfig(
        path="m.onnx", inputs=tuple(InputConfig(name=s, source=s) for s in inputs), outputs=("y",), output_kind=kind
    )


FEATS = TensorInfo("features", "float32", (1, "frames", 161))


@pytest.mark.parametrize(
    ("shape", "kind", "note"),
    [
        ((1, "frames", 161), "features", "shaped like its features input 'features', not audio: taken as output_kind "
         "features (never dumped as wav or scored as speech); declare output_kind: mask"),
        ((1, 80, "frames"), "spectrogram", "frames of bins, not audio: taken as output_kind spectrogram"),
        ((1, "samples"), "waveform", None),
        (("batch", 1, "samples"), "waveform", None),
        (("samples",), "waveform", None),
        ((1, 16000), "waveform", None),
        (None, "waveform", "declares no shape for output 'y'; taken as a waveform (the s2s role's output), each one "
         "checked to be one axis of samples"),
        ((1, "a", "b"), "waveform", "declares [1, a, b] for output 'y'; taken as a waveform"),
    ],
)  # fmt: skip
def test_an_undeclared_output_is_audio_only_when_shaped_as_one_axis_of_samples(shape, kind, note):
    got, said = decide(_stage(), "s2s", TensorInfo("y", "float32", shape), (FEATS,), "c.yaml: stage1")
    assert got == kind
    assert (said is None) == (note is None) and (note is None or note in said), said
    assert said is None or ("\n" not in said and said.startswith("c.yaml: stage1"))


def test_a_declared_kind_wins_and_a_declared_waveform_is_checked():
    frames = TensorInfo("y", "float32", (1, "frames", 161))
    assert decide(_stage("mask"), "s2s", frames, (FEATS,), "w") == ("mask", None)
    assert decide(_stage(), "s2t", frames, (FEATS,), "w") == ("tokens", None)  # no speech role: the role's kind
    with pytest.raises(StageError) as info:
        decide(_stage("waveform"), "s2s", frames, (FEATS,), "c.yaml: stage1")
    assert str(info.value) == (
        "c.yaml: stage1.output_kind = waveform: the model declares output 'y' as [1, frames, 161], frames of bins, "
        "not a waveform (one axis of samples besides axes of size 1); declare what it is: output_kind mask, "
        "spectrogram or features"
    )
    assert decide(_stage("waveform"), "tts", TensorInfo("y", "float32", (1, "n")), (), "w") == ("waveform", None)


def test_a_declared_waveform_of_frames_by_bins_is_refused_by_config_check_as_by_bench(tmp_path):
    pytest.importorskip("onnxruntime")
    from tests.test_output_kinds import mask_model

    mask_model(tmp_path / "m.onnx", 161)
    config = tmp_path / "c.yaml"
    config.write_text(
        "general: {model_type: S2S, generated_seconds: [0.5, 0.5], dataset_size: 1}\n"
        "stage1: {path: m.onnx, inputs: [{name: feats, source: features}], outputs: [mask], output_kind: waveform}\n"
    )
    lines = []
    for args in (["config", "check", "-b", "onnxruntime", str(config)],
                 ["bench", "-b", "onnxruntime", "--config", str(config), "--meters", "runtime", "--no-store"]):  # fmt: skip
        done = CliRunner().invoke(main, args)
        assert done.exit_code == 2, done.output
        lines.append(done.stderr.strip())
    assert lines[0] == lines[1] and "\n" not in lines[0]
    assert "stage1.output_kind = waveform: the model declares output 'mask' as [1, frames, 161]" in lines[0]


# -- the NSNet2-style model on real speech ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def enhancement(tmp_path_factory) -> Path:
    """The noisy / clean set, the model as ONNX and TorchScript, and the configs with and without output_kind."""
    pytest.importorskip("torch")
    folder = tmp_path_factory.mktemp("enhancement")
    nsnet.noisy_clean_set(folder, LIBRIVOX)
    nsnet.save_onnx(folder / "nsnet.onnx")
    nsnet.save_torchscript(folder / "nsnet.pt")
    files = "{onnxruntime: nsnet.onnx, torch: nsnet.pt}"
    if find_spec("paddle") is not None:
        nsnet.save_paddle(folder / "nsnet_paddle")
        files = "{onnxruntime: nsnet.onnx, torch: nsnet.pt, paddle: nsnet_paddle.json}"
    (folder / "enhance.yaml").write_text(nsnet.config_text("nsnet.onnx", "mask", files))
    (folder / "plain.yaml").write_text(nsnet.config_text("nsnet.onnx", None))
    return folder


def independent(folder: Path, clip: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(clean, noisy, enhanced) of one clip without speechperf: the files read with soundfile, the features and
    the resynthesis by the numpy STFT above, the model run by onnxruntime itself."""
    import onnxruntime as ort

    clean, _ = sf.read(folder / "clean_testset_wav" / f"{clip}.wav", dtype="float32")
    noisy, _ = sf.read(folder / "noisy_testset_wav" / f"{clip}.wav", dtype="float32")
    spectrum, w = numpy_stft(noisy)
    features = np.log10(np.maximum(np.abs(spectrum) ** 2, 1e-12)).astype(np.float32)[None]
    session = ort.InferenceSession(str(folder / "nsnet.onnx"), providers=["CPUExecutionProvider"])
    (mask,) = session.run(None, {"features": features})
    return clean, noisy, numpy_istft(spectrum * mask[0], w, noisy.size).astype(np.float32)


def bench(folder: Path, *args: str):
    return CliRunner().invoke(main, ["bench", "--warmup", "0", "--repeat", "1", "--no-store", "--quiet", *args])


@needs("librivox")
@pytest.mark.slow
def test_an_nsnet2_style_mask_model_enhances_from_audio_and_is_scored_against_the_clean_recordings(enhancement):
    pesq, pystoi, dnsmos = (pytest.importorskip(m) for m in ("pesq", "pystoi", "speechmos.dnsmos"))
    out, dump = enhancement / "enhance.json", enhancement / "dump"
    config = str(enhancement / "enhance.yaml")
    done = bench(enhancement, "-b", "onnxruntime", "--config", config, "--meters", "runtime,quality",
                 "--dump-speech-waveforms-dir", str(dump), "-o", str(out))  # fmt: skip
    assert done.exit_code == 0, done.output
    data = json.loads(out.read_text())
    speech = data["result"]["quality"]["scores"][0]["speech"]
    assert data["result"]["quality"]["references"] == (
        f"PESQ, STOI and MCD against the clean recordings of general.clean_reference_dir "
        f"{enhancement / 'clean_testset_wav'}"
    )
    assert any("front-end" in n and "resynthesis" in n and "untimed" in n for n in data["notes"]), data["notes"]
    noisy_pesq = []
    for i, row in enumerate(speech["per_sample"]):
        clean, noisy, enhanced = independent(enhancement, row["id"])
        dumped, rate = sf.read(dump / f"_{i}_pred.wav", dtype="float32")
        assert rate == 16000 and dumped.size == noisy.size
        np.testing.assert_allclose(dumped, enhanced, atol=2 / 32768)  # the wav's 16-bit steps
        assert row["pesq"] == pytest.approx(pesq.pesq(16000, clean, enhanced, "wb"), abs=0.005)
        assert row["stoi"] == pytest.approx(pystoi.stoi(clean, enhanced, 16000), abs=0.001)
        assert row["dnsmos"]["ovrl"] == pytest.approx(dnsmos.run(enhanced, sr=16000)["ovrl_mos"], abs=0.01)
        noisy_pesq.append(pesq.pesq(16000, clean, noisy, "wb"))
    # The gate really enhances: PESQ well above the noisy input's (1.73 against 1.13 when written).
    assert speech["pesq"] > np.mean(noisy_pesq) + 0.3, (speech["pesq"], noisy_pesq)
    stage = data["result"]["stages"][0]
    assert stage["rtf"]["audio"] == "input"  # timed per second of the noisy input; the resynthesis is not timed

    # torch runs the TorchScript file (it declares no shapes: the mask is the declared kind), paddle its inference
    # program with the same weights, each to the same speech.
    for backend in ("torch", "paddle") if (enhancement / "nsnet_paddle.json").exists() else ("torch",):
        dump = enhancement / f"dump-{backend}"
        done = bench(enhancement, "-b", backend, "--config", config, "--meters", "runtime",
                     "--dump-speech-waveforms-dir", str(dump))  # fmt: skip
        assert done.exit_code == 0, done.output
        for i, row in enumerate(speech["per_sample"]):
            _, _, enhanced = independent(enhancement, row["id"])
            dumped, _ = sf.read(dump / f"_{i}_pred.wav", dtype="float32")
            np.testing.assert_allclose(dumped, enhanced, atol=3 / 32768)


@needs("librivox")
@pytest.mark.slow
def test_the_same_model_without_output_kind_is_never_scored_as_speech(enhancement):
    out, dump = enhancement / "plain.json", enhancement / "dump-plain"
    done = bench(enhancement, "-b", "onnxruntime", "--config", str(enhancement / "plain.yaml"), "--meters",
                 "runtime,quality", "--dump-speech-waveforms-dir", str(dump), "-o", str(out))  # fmt: skip
    assert done.exit_code == 0, done.output
    data = json.loads(out.read_text())
    assert not dump.exists() or not list(dump.glob("*.wav"))  # a features array is no audio
    assert data["result"]["quality"]["scores"] == []
    assert all("waveform_samples" not in o for o in data["result"]["outputs"].values())
    said = " ".join(data["notes"] + data["warnings"])
    assert "shaped like its features input 'features', not audio: taken as output_kind features" in said
    assert "puts out features, not speech" in said


@pytest.mark.parametrize(
    ("role", "runtime", "reason"),
    [
        ("unit_vocoder", None, "its runtime was not measured"),
        ("unit_vocoder", "failed", "no sample of this stage was timed (every one failed; see the failures)"),
        ("mt", "failed", "no sample of this stage was timed"),
        ("mt", "timed", "this stage's role has no audio side (neither input nor output speech)"),
    ],
)
def test_a_missing_length_fit_says_why_as_it_is(role, runtime, reason):
    """A vocoder whose samples all failed has an audio side; its missing fit says that they failed (issue 44)."""
    from speechperf.benchmark.report import length_fits
    from speechperf.benchmark.results import StageResult
    from speechperf.meters.runtime import RuntimeResult, SampleTiming

    timed = () if runtime == "failed" else (SampleTiming("a", (1_000_000,)),)
    result = RuntimeResult(timed, (), 0, 1) if runtime else None
    stage = StageResult(1, role, "m", result, None, None, None, (), 0.0, None)

    class Run:
        stages = (stage,)

    (fit,) = length_fits(Run()).values()  # type: ignore[arg-type]
    assert fit.text().startswith(f"no length fit: {reason}"), fit.text()


@needs("librivox")
@pytest.mark.slow
def test_a_torchscript_mask_without_output_kind_fails_as_no_waveform_and_is_never_flattened(enhancement):
    """TorchScript declares no shapes: the s2s role's waveform is assumed (said in one line), and each output is
    checked when it comes: a [1, frames, 161] mask fails its sample, never dumped or scored; the missing length fit
    says that every sample failed, not that the stage has no audio side."""
    config = enhancement / "plain-torch.yaml"
    config.write_text(nsnet.config_text("nsnet.pt", None))
    out, dump = enhancement / "plain-torch.json", enhancement / "dump-plain-torch"
    done = bench(enhancement, "-b", "torch", "--config", str(config), "--meters", "runtime,quality",
                 "--dump-speech-waveforms-dir", str(dump), "-o", str(out))  # fmt: skip
    assert done.exit_code == 1, done.output
    data = json.loads(out.read_text())
    assert set(data["result"]["failed"]) == set(nsnet.CLIPS)
    message = next(iter(data["result"]["failed"].values()))
    assert "output 'mask' came out [1, " in message and ", 161], not a waveform" in message, message
    assert not dump.exists() or not list(dump.glob("*.wav"))
    said = " ".join(data["notes"] + data["warnings"])
    assert "declares no shape for output 'mask'; taken as a waveform (the s2s role's output)" in said, said
    fit = data["length_fit"]["stage1 s2s"]
    assert fit["reason"].startswith("no sample of this stage was timed (every one failed"), fit
