"""Speech enhancement scored against clean speech (``general.clean_reference_dir``, speechperf.data.clean): clean
files matched by name as VoiceBank-DEMAND and the DNS Challenge lay them out, a missing one refused before any
timing, and PESQ / STOI of a denoiser file on a noisy LibriVox clip in bench and loadgen's accuracy mode, equal to
the packages' own calls."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from click.testing import CliRunner

from speechperf.cli import main
from speechperf.config import load_config
from speechperf.data.clean import clean_file, load_clean
from speechperf.errors import SpeechperfError

LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
CLIP = LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0890.wav"  # 5.3 s, 16 kHz
needs_librivox = pytest.mark.skipif(
    not CLIP.exists(), reason="the LibriVox clips are missing (apt-get install pocketsphinx-testdata)"
)


def identity_s2s(path: Path) -> Path:
    """A speech-to-speech ONNX file that gives back its input waveform (the enhancement stage of these tests)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [helper.make_node("Mul", ["wave", "one"], ["out"])],
        "s2s",
        [helper.make_tensor_value_info("wave", TensorProto.FLOAT, [1, "N"])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, "N"])],
        [numpy_helper.from_array(np.array(1.0, np.float32), "one")],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def enhancement_set(folder: Path, noisy: np.ndarray, clean: np.ndarray | None, name: str = "p232_001.wav") -> Path:
    """VoiceBank-DEMAND's layout: noisy_testset_wav/NAME and clean_testset_wav/NAME, a raw manifest of the noisy
    files, and a config of the identity model with clean_reference_dir; returns the config."""
    (folder / "noisy_testset_wav").mkdir()
    (folder / "clean_testset_wav").mkdir()
    sf.write(folder / "noisy_testset_wav" / name, noisy, 16000, subtype="PCM_16")
    if clean is not None:
        sf.write(folder / "clean_testset_wav" / name, clean, 16000, subtype="PCM_16")
    (folder / "noisy.tsv").write_text(f"noisy_testset_wav\n{name}\t{noisy.size}\n")
    model = identity_s2s(folder / "denoiser.onnx")
    config = folder / "denoiser.yaml"
    config.write_text(
        "general: {model_type: S2S, dataset_type: raw, dataset_path: noisy.tsv, "
        "clean_reference_dir: clean_testset_wav}\n"
        f"stage1: {{path: {model.name}, inputs: [{{name: wave, source: audio}}], outputs: [out]}}\n"
    )
    return config


def test_clean_files_are_found_by_the_noisy_name_or_the_dns_file_id(tmp_path):
    (tmp_path / "p232_001.wav").touch()
    (tmp_path / "clean_fileid_12.wav").touch()
    assert clean_file(tmp_path, "p232_001.wav") == tmp_path / "p232_001.wav"  # VoiceBank-DEMAND: the same name
    assert clean_file(tmp_path, "book_00012_chp_0009_reader_06709_8_snr10_fileid_12.wav") == (
        tmp_path / "clean_fileid_12.wav"
    )  # the DNS Challenge test set: noisy/..._fileid_12.wav is clean/clean_fileid_12.wav
    assert clean_file(tmp_path, "/abs/elsewhere/p232_001.wav") == tmp_path / "p232_001.wav"
    assert clean_file(tmp_path, "p232_002.wav") is None
    assert clean_file(tmp_path, "x_fileid_13.wav") is None


def test_a_missing_clean_file_is_one_line_before_any_timing(tmp_path):
    config = enhancement_set(tmp_path, np.full(1600, 0.1, np.float32), None)
    done = CliRunner().invoke(main, ["bench", "-b", "onnxruntime", "--config", str(config), "--meters", "runtime"])
    assert done.exit_code == 2, done.output
    (line,) = [line for line in done.output.splitlines() if line.strip()]
    assert "general.clean_reference_dir: no clean file for sample 'p232_001' (p232_001.wav)" in line, line
    assert str(tmp_path / "clean_testset_wav" / "p232_001.wav") in line
    assert "warm" not in done.output and "ms" not in done.output  # nothing was timed


def test_clean_references_need_an_audio_manifest_and_a_waveform_output(tmp_path):
    from speechperf.config.schema import GeneralConfig

    config = tmp_path / "c.yaml"
    config.write_text("general: {model_type: TTS, clean_reference_dir: clean}\nstage1: {model: tts}\n")
    with pytest.raises(SpeechperfError, match="applies to an S2S model whose output is a waveform") as info:
        load_config(config)
    assert "model_type is TTS" in str(info.value) and "\n" not in str(info.value)
    general = GeneralConfig(dataset_type="npz", clean_reference_dir=str(tmp_path))
    with pytest.raises(SpeechperfError, match="needs a raw or fairseq_s2t manifest; dataset_type is 'npz'"):
        load_clean(general, [])


def test_naming_clean_references_turns_the_quality_pass_on():
    from speechperf.benchmark.quality import wanted
    from speechperf.config.schema import DEFAULT_METERS, GeneralConfig
    from speechperf.data.references import References

    refs = References("general.clean_reference_dir clean", clean={"a": (np.zeros(4, np.float32), 16000)})
    assert wanted(GeneralConfig(meters=DEFAULT_METERS), refs, ("s2s",)) == (True, None)
    assert wanted(GeneralConfig(meters=("runtime",)), refs, ("s2s",)) == (False, None)  # meters named without it


def test_optimize_shows_fp32s_pesq_and_stoi_beside_a_variants():
    from speechperf.meters.speech_quality import SpeechQuality
    from speechperf.optimize.fidelity import Fidelity
    from speechperf.optimize.table import Row

    speech = SpeechQuality(1, pesq=1.91, stoi=0.874, clean_reference="clean reference")
    row = Row("int8", "ok", fidelity=Fidelity("snr", 31.2, speech=speech), fp32_pesq_stoi=(2.05, 0.881))
    plain = row.plain()
    assert plain["pesq"] == 1.91 and plain["stoi"] == 0.874
    assert plain["fidelity"].endswith("PESQ 1.91 STOI 0.874 vs clean reference (fp32 PESQ 2.05 STOI 0.881)")


@needs_librivox
@pytest.mark.slow
def test_a_denoiser_on_noisy_speech_scores_pesq_and_stoi_as_the_packages_do(tmp_path):
    """A noisy LibriVox clip (white noise at 10 dB SNR) through the identity enhancement file: bench's PESQ
    and STOI (and MCD) are against the clean recording, and are ``pesq.pesq(16000, clean, out, 'wb')`` and ``pystoi.stoi(clean, out, 16000)`` on the clean and
    noisy files as read; loadgen's accuracy mode prints the same figures."""
    import pesq
    import pystoi

    clean, rate = sf.read(CLIP, dtype="float32")
    clean = clean[: 2 * rate]
    noise = np.random.default_rng(0).normal(0, 1, clean.size).astype(np.float32)
    noisy = clean + noise * np.sqrt(np.mean(clean**2) / 10 / np.mean(noise**2))
    config = enhancement_set(tmp_path, noisy, clean)
    ref, deg = (sf.read(tmp_path / f / "p232_001.wav", dtype="float32")[0] for f in ("clean_testset_wav", "noisy_testset_wav"))  # fmt: skip
    theirs_pesq, theirs_stoi = pesq.pesq(16000, ref, deg, "wb"), pystoi.stoi(ref, deg, 16000)

    out = tmp_path / "r.json"
    done = CliRunner().invoke(
        main,
        ["bench", "-b", "onnxruntime", "--config", str(config), "--meters", "runtime,quality", "--warmup", "0",
         "--repeat", "1", "-o", str(out)],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    total = next(r for r in json.loads(out.read_text())["rows"] if r["stage"] == "total")
    print(f"bench: PESQ {total['pesq']} STOI {total['stoi']}; pesq/pystoi: {theirs_pesq:.4f} {theirs_stoi:.4f}")
    assert total["pesq"] == pytest.approx(theirs_pesq, abs=1e-3) and total["stoi"] == pytest.approx(
        theirs_stoi, abs=1e-3
    )
    assert 1.0 <= total["pesq"] < 3.5 and 0.5 < total["stoi"] < 0.99  # noisy speech: well below clean's 4.64 / 1.0
    assert total["mcd_db"] > 0.5 and f"MCD {total['mcd_db']:.2f} dB vs clean reference, PESQ" in total["quality"]

    logs = tmp_path / "lg"
    done = CliRunner().invoke(
        main,
        ["loadgen", "-b", "onnxruntime", "--config", str(config), "--scenario", "Offline", "--accuracy",
         "--log-dir", str(logs), "-o", str(tmp_path / "lg.json")],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    line = next(line for line in done.output.splitlines() if line.startswith("accuracy: total:"))
    assert f"PESQ {total['pesq']:.2f} STOI {total['stoi']:.3f} vs clean reference" in line, line
