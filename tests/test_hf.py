"""``model: hf``: Hugging Face save_pretrained folders (tiny ones built with ``from_config``, tests/hf_folders.py) on
torch (the Transformers modules) and onnxruntime (their ONNX export behind derive's gate), paddle's one-line
refusal, the numpy front-ends and decoding against the folder's own processor, compare's parity and optimize's int8
variants, on two real LibriVox clips."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.librivox import librivox
from tests.needs import LIBRIVOX, needs, require

CLIPS = ["sense_and_sensibility_01_austen_64kb-0880", "sense_and_sensibility_01_austen_64kb-0930"]
CONFIG = (
    "general: {{model_type: S2T, dataset_type: raw, dataset_path: test.tsv, warmup: 0, repeat: 1}}\nstage1: {stage}\n"
)


def speechperf(*args: str, cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    exe = shutil.which("speechperf", path=str(Path(sys.executable).parent))
    assert exe is not None
    return subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def folders(tmp_path_factory):
    """Both folders, a raw manifest of two LibriVox clips with their transcripts, and a config per folder."""
    pytest.importorskip("transformers")
    require("librivox")
    import soundfile as sf

    from tests.hf_folders import build_ctc, build_whisper

    root = tmp_path_factory.mktemp("hf")
    build_ctc(root / "ctc")
    build_whisper(root / "whisper")
    _, refs = librivox(CLIPS)
    lines = [str(LIBRIVOX), *(f"{c}.wav\t{sf.info(LIBRIVOX / f'{c}.wav').frames}" for c in CLIPS)]
    (root / "test.tsv").write_text("\n".join(lines) + "\n")
    (root / "test.wrd").write_text("\n".join(refs) + "\n")
    (root / "ctc.yaml").write_text(CONFIG.format(stage="{model: hf, path: ctc}"))
    (root / "whisper.yaml").write_text(CONFIG.format(stage="{model: hf, path: whisper, max_len_b: 6}"))
    return root


# -- the numpy front-ends and decoding against the folder's own processor -------------------------------------------


@pytest.mark.slow
def test_ctc_input_values_and_greedy_text_are_the_processors(folders):
    import torch
    from transformers import Wav2Vec2ForCTC, Wav2Vec2Processor

    from speechperf.adapters.hf import CtcText, HfFolder

    ours = CtcText.from_folder(HfFolder.read(folders / "ctc"))
    processor = Wav2Vec2Processor.from_pretrained(folders / "ctc", local_files_only=True)
    model = Wav2Vec2ForCTC.from_pretrained(folders / "ctc", local_files_only=True).eval()
    audio, _ = librivox(CLIPS)
    for clip in audio:
        theirs = processor(clip, sampling_rate=16000, return_tensors="np").input_values
        np.testing.assert_allclose(ours.input_values(clip), theirs, atol=1e-5)
        with torch.no_grad():
            logits = model(torch.from_numpy(theirs)).logits.numpy()
        # the processor's recipe: batch_decode of the argmax ids
        expected = processor.batch_decode(logits.argmax(-1))[0]
        assert ours.text(ours.ids(logits)) == expected and len(expected) > 5


@pytest.mark.slow
def test_whisper_features_generation_and_text_are_transformers(folders):
    """The numpy loop over the torch backend's two graphs gives generate()'s greedy tokens (the folder's generation
    config: prompt, suppression, end of text) and the processor's features and text."""
    import torch
    from transformers import WhisperForConditionalGeneration, WhisperProcessor

    from speechperf.adapters.hf import HfFolder, WhisperText
    from speechperf.backend import ModelSpec, TensorInfo
    from speechperf.benchmark.hf_stage import GRAPHS
    from speechperf.registry import require_backend

    folder = folders / "whisper"
    ours = WhisperText.from_folder(HfFolder.read(folder))
    processor = WhisperProcessor.from_pretrained(folder, local_files_only=True)
    model = WhisperForConditionalGeneration.from_pretrained(folder, local_files_only=True).eval()
    backend = require_backend("torch")
    sessions = {
        g.name: backend.load(
            ModelSpec(
                factory=f"speechperf.backends.torch.hf:{g.factory}",
                factory_kwargs={"folder": str(folder)},
                inputs=g.inputs,
                outputs=tuple(TensorInfo(n) for n in g.outputs),
            )
        )
        for g in GRAPHS["whisper"]
    }
    audio, _ = librivox(CLIPS[:1])
    features = processor(audio[0], sampling_rate=16000, return_tensors="np").input_features
    np.testing.assert_allclose(ours.features(audio[0]), features[0], atol=2e-4)
    ids = ours.generate(sessions["encoder"], sessions["decoder"], features[0], 8)
    with torch.no_grad():
        generated = model.generate(torch.from_numpy(features), max_new_tokens=8, do_sample=False, num_beams=1)
    expected = [int(t) for t in generated[0] if int(t) < 50256]  # the text tokens, prompt and end of text dropped
    assert ids.tolist() == expected and len(expected) > 0
    assert ours.text(ids) == processor.batch_decode(generated, skip_special_tokens=True)[0].strip()


def test_ctc_decoding_merges_repeats_drops_blanks_and_spaces_words(tmp_path):
    """Greedy CTC on hand-made logits: a repeat separated by a blank is two letters, the delimiter a space."""
    from speechperf.adapters.hf import CtcText, HfFolder

    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["HubertForCTC"]}))
    (tmp_path / "preprocessor_config.json").write_text(json.dumps({"sampling_rate": 16000, "do_normalize": False}))
    (tmp_path / "vocab.json").write_text(json.dumps({"<pad>": 0, "|": 1, "a": 2, "b": 3}))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"pad_token": "<pad>", "word_delimiter_token": "|"}))
    folder = HfFolder.read(tmp_path)
    assert folder.kind == "ctc"
    text = CtcText.from_folder(folder)
    frames = [2, 2, 0, 2, 1, 1, 3, 0, 0, 3, 1]
    logits = np.eye(4, dtype=np.float32)[frames][None]
    assert text.ids(logits).tolist() == [2, 2, 1, 3, 3, 1]
    assert text.text(text.ids(logits)) == "aa bb"
    assert text.input_values(np.array([0.5, -0.5], dtype=np.float32)).tolist() == [[0.5, -0.5]]  # no normalize


# -- config checks, one line each ------------------------------------------------------------------------------


def _folder_of(tmp_path: Path, architecture: str, processor: bool = False) -> Path:
    """A folder as config check reads it (no weights): config.json, and with ``processor`` a CTC processor's files."""
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"architectures": [architecture]}))
    if processor:
        (folder / "preprocessor_config.json").write_text(json.dumps({"sampling_rate": 16000}))
        (folder / "vocab.json").write_text(json.dumps({"<pad>": 0, "|": 1, "a": 2}))
    return folder


def test_paddle_says_in_one_line_why_it_has_no_route(tmp_path):
    from speechperf.benchmark.hf_stage import NO_CONVERTER

    _folder_of(tmp_path, "Wav2Vec2ForCTC", processor=True)
    (tmp_path / "c.yaml").write_text("general: {model_type: S2T}\nstage1: {model: hf, path: model}\n")
    from click.testing import CliRunner

    from speechperf.cli import main

    result = CliRunner().invoke(main, ["config", "check", "-b", "paddle", str(tmp_path / "c.yaml")])
    assert result.exit_code == 2
    (line,) = result.output.strip().splitlines()
    assert "backend 'paddle' has no route for it" in line and "Wav2Vec2ForCTC" in line and NO_CONVERTER in line


@pytest.mark.parametrize(
    ("stage", "model_type", "architecture", "message"),
    [
        ("{model: hf}", "S2T", None, "model: hf needs `path`: one save_pretrained folder"),
        (
            "{model: hf, path: model, inputs: [{name: x, source: audio}]}",
            "S2T",
            "Wav2Vec2ForCTC",
            "stage1.inputs does not apply to model: hf",
        ),
        ("{model: hf, path: model}", "MT", "Wav2Vec2ForCTC", "model: hf runs speech recognition"),
        ("{model: hf, path: model}", "S2T", "BertForMaskedLM", "has none speechperf runs; allowed: Wav2Vec2ForCTC"),
        ("{model: hf, path: nowhere}", "S2T", None, "nowhere not found"),
        ("{model: hf, path: model}", "S2T", "HubertForCTC", "no feature extractor (preprocessor_config.json"),
    ],
)
def test_a_bad_hf_stage_is_one_line(tmp_path, stage, model_type, architecture, message):
    if architecture:
        _folder_of(tmp_path, architecture)
    from click.testing import CliRunner

    from speechperf.cli import main

    (tmp_path / "c.yaml").write_text(f"general: {{model_type: {model_type}}}\nstage1: {stage}\n")
    result = CliRunner().invoke(main, ["config", "check", str(tmp_path / "c.yaml")])
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert message in line


# -- bench on torch and onnxruntime, compare's parity, optimize's int8 variants --------------------------------------


@pytest.mark.slow
@needs("librivox")
@pytest.mark.parametrize("name", ["ctc", "whisper"])
def test_compare_runs_the_folder_on_torch_and_onnxruntime_with_parity(folders, name):
    done = speechperf(
        "compare", "--config", f"{name}.yaml", "--backends", "torch,onnxruntime", "--runs", "1",
        "--meters", "runtime,quality", "-o", f"compare-{name}.json", "--no-store", cwd=folders,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "parity with torch on 2 sample(s)" in done.stderr  # derive's gate passed, its figures said
    data = json.loads((folders / f"compare-{name}.json").read_text())
    outputs = {o["name"]: o for o in data["parity"]["onnxruntime"]["outputs"]}
    assert data["parity"]["onnxruntime"]["mismatch"] is False
    assert outputs["tokens"]["exact"] and outputs["tokens"]["differing"] == 0 and outputs["tokens"]["samples"] == 2
    if name == "ctc":  # the logits too, as float outputs
        assert outputs["outputs.logits"]["max_rel"] < 1e-3 and outputs["outputs.logits"]["snr_db"] > 40
    assert "stage1 tokens identical" in done.stdout
    # WER against the transcripts, as every ASR stage is scored, the same on both (the same tokens)
    quality = data["quality"]
    assert quality["torch"]["metric"] == "WER" and quality["onnxruntime"]["headline"] == quality["torch"]["headline"]


@pytest.mark.slow
@needs("librivox")
def test_onnxruntime_runs_the_folder_without_importing_torch(folders):
    """The measured process of onnxruntime loads the derived files and decodes with numpy and tokenizers only."""
    code = (
        "import sys; from pathlib import Path; from speechperf.benchmark import plan, build; "
        "from speechperf.config import load_config; cfg = load_config('whisper.yaml'); "
        "p = plan.resolve(cfg, 'onnxruntime', workdir=Path('work')); "
        "(stages,) = build.open_stages(p.cfg, p.backend, Path('work')); s = stages[0]; "
        "out = s.forward(s.from_sample(p.dataset[0])); "
        "print('torch' in sys.modules, 'transformers' in sys.modules, len(out['tokens']))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=folders, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-3:][:2] == ["False", "False"] and int(done.stdout.split()[-1]) > 0


@pytest.mark.slow
@needs("librivox")
@pytest.mark.parametrize(
    ("name", "backend", "method"),
    [
        ("ctc", "torch", "legacy-dynamic"),
        ("whisper", "onnxruntime", "ort-dynamic"),
    ],
)
def test_optimize_writes_int8_variants_of_the_folder(folders, name, backend, method):
    out = f"opt-{name}-{backend}"
    done = speechperf(
        "optimize", "-b", backend, "--config", f"{name}.yaml", "--method", method, "--runs", "1",
        "--out-dir", out, "-o", f"{out}.json", "--no-store", cwd=folders,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {r["variant"]: r for r in json.loads((folders / f"{out}.json").read_text())["rows"]}
    row = rows[method]
    assert row["status"].startswith("ok") or "budget" in row["status"], row["status"]
    assert row["agreement_or_snr"] is not None and row["graph_max_rel_diff"] is not None
    assert 0 < row["graph_max_rel_diff"] < 0.5  # int8: changed, and close
    import yaml

    stage = yaml.safe_load((folders / out / f"{method}.yaml").read_text())["stage1"]
    assert stage["model"] == "hf" and Path(stage["model_dir"]).is_dir()


def tampered_ctc(folder: str):
    """The CTC module of ``folder`` with its output layer's bias moved by 0.5: an export gone wrong."""
    import copy

    import torch

    from speechperf.backends.torch.hf import ctc

    module = copy.deepcopy(ctc(folder))  # the process's loaded model stays as it is
    with torch.no_grad():
        module.model.lm_head.bias.add_(0.5)
    return module


@pytest.mark.slow
@needs("librivox")
def test_an_export_that_fails_parity_is_refused_with_the_measured_difference(folders):
    """The exporter is handed the tampered module: the gate measures the difference and refuses the files, and bench
    says so in one line (exit 2) from the cached verdict."""
    import attrs

    from speechperf.benchmark import hf_derive
    from speechperf.cache import cache_dir
    from speechperf.config import load_config

    def export_tampered(backend, spec, feeds, outputs, axes, out):
        tampered = attrs.evolve(spec, factory="tests.test_hf:tampered_ctc")
        return hf_derive._backend_export(backend, tampered, feeds, outputs, axes, out)

    # a copy with one more file: its own cache entry, apart from the good export of the same weights
    shutil.copytree(folders / "ctc", folders / "ctc-tampered")
    (folders / "ctc-tampered" / "README.md").write_text("tampered export\n")
    (folders / "tampered.yaml").write_text(CONFIG.format(stage="{model: hf, path: ctc-tampered}"))
    cfg = load_config(str(folders / "tampered.yaml"))
    folder = cache_dir() / "derived" / hf_derive.export_key(cfg.stages[0])
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*"):  # a stale entry of an earlier run of this test
        old.unlink()
    verdict = hf_derive.derive(cfg, 1, folder, export_tampered)
    assert verdict["ok"] is False
    logits = verdict["outputs"]["ctc"]["logits"]
    assert logits["differing"] == 2 and logits["max_abs"] > 0.1
    config = str(folders / "tampered.yaml")
    done = speechperf("bench", "-b", "onnxruntime", "--config", config, "--meters", "runtime", cwd=folders)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    (line,) = [line for line in done.stderr.splitlines() if "differs" in line]
    assert line.startswith(
        f"Error: {config}: stage1: model: hf: the ONNX export differs from the Transformers modules on its first "
        "2 sample(s): ctc: output 'logits'"
    )
    assert f"max |Δ| {logits['max_abs']:.2g}" in line


def test_an_english_only_whisper_refuses_another_language_in_one_line(tmp_path):
    from click.testing import CliRunner

    from speechperf.cli import main

    folder = _folder_of(tmp_path, "WhisperForConditionalGeneration")
    (folder / "preprocessor_config.json").write_text(json.dumps({"feature_size": 80, "sampling_rate": 16000}))
    (folder / "generation_config.json").write_text(json.dumps({"decoder_start_token_id": 50257, "eos_token_id": 50256}))
    (folder / "tokenizer.json").write_text("{}")
    (tmp_path / "c.yaml").write_text("general: {model_type: S2T}\nstage1: {model: hf, path: model, src_lang: pt}\n")
    result = CliRunner().invoke(main, ["config", "check", str(tmp_path / "c.yaml")])
    assert result.exit_code == 2
    (line,) = result.output.strip().splitlines()
    assert "an English-only Whisper" in line and "src_lang 'pt'" in line and "allowed: src_lang en or unset" in line


@pytest.mark.slow
@needs("librivox")
@pytest.mark.parametrize(
    ("architecture", "extra"), [("Hubert", {}), ("Wav2Vec2Conformer", {"position_embeddings_type": "rotary"})]
)
def test_other_ctc_architectures_run_by_config_json_and_pass_the_gate(folders, tmp_path, architecture, extra):
    """HuBERT and Wav2Vec2-Conformer share the CTC head: read by their architectures, exported and gated the same."""
    import torch
    import transformers

    from speechperf.benchmark import hf_derive
    from speechperf.config import load_config

    folder = folders / architecture.lower()
    if not folder.is_dir():
        config = getattr(transformers, f"{architecture}Config")(
            vocab_size=32, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
            conv_dim=(16, 16, 16), conv_stride=(5, 4, 4), conv_kernel=(10, 4, 4), num_conv_pos_embeddings=16,
            num_conv_pos_embedding_groups=4, pad_token_id=0, **extra,
        )  # fmt: skip
        torch.manual_seed(0)
        getattr(transformers, f"{architecture}ForCTC")(config).eval().save_pretrained(folder)
        for name in ("processor_config.json", "tokenizer_config.json", "vocab.json"):
            shutil.copy(folders / "ctc" / name, folder / name)
    (folders / f"{architecture}.yaml").write_text(CONFIG.format(stage=f"{{model: hf, path: {folder.name}}}"))
    cfg = load_config(str(folders / f"{architecture}.yaml"))
    verdict = hf_derive.derive(cfg, 1, tmp_path)
    assert verdict["ok"], verdict["line"]
    assert f"{architecture}ForCTC" in json.loads((folder / "config.json").read_text())["architectures"]
    assert verdict["outputs"]["ctc"]["logits"]["max_rel"] < 1e-4
