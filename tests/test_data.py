"""Datasets: raw manifests (mono, really resampled), npz, opt-in pickled npy, text, subsets, stats, synth."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from click.testing import CliRunner

from speechperf.cli import main
from speechperf.data import AudioError, DatasetError, load_npy, load_npz, load_raw, load_text
from speechperf.data.generated import generated_audio, generated_text
from speechperf.data.subsets import choose, index_dataset, stats
from tests.needs import missing

NO_SYNTH_REASON = missing("espeak-ng", "sox") or ""
HAVE_SYNTH_TOOLS = not NO_SYNTH_REASON


def tone(freq: float, seconds: float, rate: int) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.5 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def make_manifest(tmp_path: Path, files: dict[str, tuple[np.ndarray, int]], counts: dict[str, int] | None = None):
    (tmp_path / "audio").mkdir(exist_ok=True)
    lines = ["audio"]
    for name, (data, rate) in files.items():
        sf.write(tmp_path / "audio" / name, data, rate)
        lines.append(f"{name}\t{(counts or {}).get(name, len(data))}")
    manifest = tmp_path / "train.tsv"
    manifest.write_text("\n".join(lines) + "\n")
    return manifest


def peak_hz(audio: np.ndarray, rate: int) -> float:
    spectrum = np.abs(np.fft.rfft(audio))
    return float(np.fft.rfftfreq(len(audio), 1 / rate)[np.argmax(spectrum)])


def test_raw_stereo_is_averaged_and_really_resampled(tmp_path):
    left, right = tone(440, 1.0, 22050), tone(1000, 1.0, 22050)
    manifest = make_manifest(
        tmp_path, {"a.wav": (np.stack([left, right], axis=1), 22050), "b.wav": (tone(300, 0.5, 16000), 16000)}
    )
    a, b = load_raw(manifest, 16000)
    assert a.id == "a" and a.sample_rate == 16000 and a.audio.dtype == np.float32 and a.audio.ndim == 1
    assert len(a.audio) == 16000 and a.seconds == pytest.approx(1.0)
    # Both tones survive at their frequencies with half amplitude each: a mono average, resampled (not truncated
    # or sample-dropped: that would move the tones).
    spectrum = np.abs(np.fft.rfft(a.audio)) / (len(a.audio) / 2)
    freqs = np.fft.rfftfreq(len(a.audio), 1 / 16000)
    for f in (440, 1000):
        assert spectrum[np.argmin(np.abs(freqs - f))] == pytest.approx(0.25, abs=0.02)
    assert peak_hz(b.audio, 16000) == pytest.approx(300, abs=2)


def test_raw_errors_name_the_manifest_line(tmp_path):
    manifest = make_manifest(tmp_path, {"a.wav": (tone(300, 0.2, 16000), 16000)})
    manifest.write_text(manifest.read_text() + "missing.wav\t100\n")
    with pytest.raises(AudioError, match=rf"{manifest}:3: audio file not found: .*missing.wav"):
        load_raw(manifest, 16000)

    (tmp_path / "audio" / "bad.wav").write_bytes(b"RIFF not really a wave file")
    manifest.write_text("audio\nbad.wav\t10\n")
    with pytest.raises(AudioError, match=rf"{manifest}:2: cannot read audio file .*bad.wav"):
        load_raw(manifest, 16000)

    manifest = make_manifest(tmp_path, {"a.wav": (tone(300, 0.2, 16000), 16000)}, counts={"a.wav": 1234})
    with pytest.raises(DatasetError, match=rf"{manifest}:2: manifest says 1234 samples but .*a.wav has 3200"):
        load_raw(manifest, 16000)

    manifest = make_manifest(tmp_path, {"low.wav": (tone(100, 0.5, 1000), 1000)})
    with pytest.raises(
        AudioError,
        match="has sample rate 1000 Hz, which cannot be resampled to 16000 Hz; rates "
        "from 4000 to 384000 Hz are allowed",
    ):
        load_raw(manifest, 16000)

    manifest.write_text("audio\nlow.wav\tmany\n")
    with pytest.raises(DatasetError, match=":2: num_samples 'many' is not an integer"):
        load_raw(manifest, 16000)


def test_npz_arrays_by_kind(tmp_path):
    path = tmp_path / "d.npz"
    np.savez(
        path,
        utt1=np.ones((7, 80), np.float32),
        utt2=np.arange(5),
        utt3=np.zeros(160, np.float32),
        utt4=np.ones((1, 9, 80), np.float32),
    )
    s = load_npz(path, 16000, 80)
    assert [x.kind for x in s] == ["features", "tokens", "audio", "features"]
    assert [x.length for x in s] == [7, 5, 160, 9]
    assert s[1].tokens.dtype == np.int64
    assert len(load_npz(path, 16000, 80, size=2)) == 2
    with pytest.raises(DatasetError, match="features must be \\(frames, feat_dim=40\\)"):
        load_npz(path, 16000, 40)


def fairseq_npy(path: Path) -> Path:
    items = [
        {"id": 7, "net_input": {"src_tokens": np.ones((1, 12, 80), np.float32), "src_lengths": np.array([12])}},
        {"id": 9, "net_input": {"src_tokens": np.ones((1, 5, 80), np.float32), "src_lengths": np.array([5])}},
    ]
    array = np.empty(len(items), dtype=object)
    array[:] = items
    np.save(path, array, allow_pickle=True)
    return path


def test_pickled_npy_needs_the_flag(tmp_path):
    path = fairseq_npy(tmp_path / "fairseq.npy")
    with pytest.raises(DatasetError) as err:
        load_npy(path, 16000, 80, allow_pickle=False)
    assert "unpickling runs code from the file" in str(err.value)
    assert "--unsafe-pickle-runs-code" in str(err.value)
    samples = load_npy(path, 16000, 80, allow_pickle=True)
    assert [(s.id, s.kind, s.length) for s in samples] == [("7", "features", 12), ("9", "features", 5)]


def test_text_and_generated(tmp_path):
    path = tmp_path / "s.txt"
    path.write_text("hello world\n\nsecond line here\n")
    assert [(s.id, s.text, s.length) for s in load_text(path)] == [
        ("1", "hello world", 2),
        ("3", "second line here", 3),
    ]  # ids are line numbers
    a, b = generated_audio(3, 16000, (1.0, 2.0), seed=1), generated_audio(3, 16000, (1.0, 2.0), seed=1)
    assert [len(x.audio) for x in a] == [16000, 24000, 32000]
    assert all(np.array_equal(x.audio, y.audio) for x, y in zip(a, b))
    assert 0.01 < float(np.abs(a[0].audio).mean()) < 0.5  # something speech-loud, not silence
    words = [s.length for s in generated_text(3, (1.0, 3.0), seed=1)]
    assert words == [2, 5, 8]


def test_subsets_and_stats(tmp_path):
    manifest = make_manifest(tmp_path, {f"{n}.wav": (tone(300, n / 10, 16000), 16000) for n in (3, 1, 5, 2, 4)})
    index = index_dataset(manifest, "raw")
    assert [e.id for e in choose(index, "short", 2)] == ["1", "2"]
    assert [e.id for e in choose(index, "long", 2)] == ["5", "4"]
    random_ids = [e.id for e in choose(index, "random", 3, seed=1)]
    assert len(set(random_ids)) == 3 and random_ids == [e.id for e in choose(index, "random", 3, seed=1)]
    s = stats(index)
    assert (s.count, s.max_len, s.min_len, s.avg_len, s.unit) == (5, 8000, 1600, 4800.0, "samples")
    assert s.total_audio_s == pytest.approx(1.5)

    runner = CliRunner()
    out = tmp_path / "sub" / "long.tsv"
    result = runner.invoke(main, ["data", "subset", str(manifest), "--kind", "long", "-n", "2", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert [x.id for x in load_raw(out, 16000)] == ["5", "4"]  # the subset still finds the audio
    result = runner.invoke(main, ["data", "stats", str(out)])
    assert result.exit_code == 0
    assert "max_len\t8000 samples" in result.output and "min_len\t6400 samples" in result.output
    assert "total_audio\t0.90 s" in result.output


def test_npy_subset_is_written_as_npz_and_needs_the_flag(tmp_path):
    path = fairseq_npy(tmp_path / "fairseq.npy")
    runner = CliRunner()
    out = tmp_path / "short.npz"
    result = runner.invoke(main, ["data", "subset", str(path), "--kind", "short", "-n", "1", "-o", str(out)])
    assert result.exit_code == 2 and "--unsafe-pickle-runs-code" in result.output
    result = runner.invoke(
        main, ["data", "subset", str(path), "--kind", "short", "-n", "1", "-o", str(out), "--unsafe-pickle-runs-code"]
    )
    assert result.exit_code == 0, result.output
    assert [(s.id, s.length) for s in load_npz(out, 16000, 80)] == [("9", 5)]


def test_synth_names_the_missing_tool(tmp_path, monkeypatch):
    import speechperf.data.synth as synth

    monkeypatch.setattr(synth.shutil, "which", lambda name: None)
    result = CliRunner().invoke(main, ["data", "synth", str(tmp_path / "d"), "-n", "1"])
    assert result.exit_code == 2
    assert "espeak-ng is not installed (not on PATH); install it with: sudo apt-get install espeak-ng" in result.output


@pytest.mark.skipif(not HAVE_SYNTH_TOOLS, reason=NO_SYNTH_REASON)
def test_synth_makes_reproducible_real_speech(tmp_path):
    runner = CliRunner()
    for name in ("a", "b"):
        result = runner.invoke(main, ["data", "synth", str(tmp_path / name), "-n", "2"])
        assert result.exit_code == 0, result.output
    digest = lambda p: hashlib.sha256(p.read_bytes()).hexdigest()  # noqa: E731
    assert digest(tmp_path / "a/wav/utt000.wav") == digest(tmp_path / "b/wav/utt000.wav")
    samples = load_raw(tmp_path / "a" / "manifest.tsv", 16000)
    assert [s.text for s in samples] == [
        "the quick brown fox jumps over the lazy dog",
        "a speech model turns sound into words",
    ]
    assert all(1.0 < s.seconds < 6.0 for s in samples)
    assert (tmp_path / "a" / "sentences.txt").read_text().count("\n") == 2


def _one_line_exit_2(args: list[str], *needles: str) -> None:
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1, result.output
    for needle in needles:
        assert needle in result.output, result.output


def test_stats_refuses_what_bench_refuses(tmp_path):
    """A corrupt wav and a wrong num_samples are errors (naming the file and both numbers), not "not audio"."""
    manifest = make_manifest(tmp_path, {"a.wav": (tone(300, 0.2, 16000), 16000)}, counts={"a.wav": 999999999})
    _one_line_exit_2(
        ["data", "stats", str(manifest)], f"{manifest}:2: manifest says 999999999 samples but", "a.wav has 3200"
    )
    (tmp_path / "audio" / "bad.wav").write_bytes(b"RIFF not really a wave file")
    manifest.write_text("audio\nbad.wav\t10\n")
    _one_line_exit_2(["data", "stats", str(manifest)], f"{manifest}:2: cannot read audio file", "bad.wav")
    _one_line_exit_2(["data", "subset", str(manifest), "-n", "1", "-o", str(tmp_path / "s.tsv")], "bad.wav")


def test_binary_files_read_as_raw_are_one_line(tmp_path):
    npz = tmp_path / "x.npz"
    np.savez(npz, a=np.zeros(3))
    for path in (npz, Path(shutil.which("ls") or "/bin/ls")):
        _one_line_exit_2(
            ["data", "stats", "--type", "raw", str(path)],
            f"{path}:1: manifest is not UTF-8",
            "not a raw manifest",
            "--dataset-type npz",
        )
        _one_line_exit_2(
            ["bench", "-b", "onnxruntime", "--dataset-type", "raw", "--dataset-path", str(path)],
            f"{path}:1: manifest is not UTF-8 text",
            "so not a raw manifest",
        )


def test_bom_is_read_and_a_folder_is_named(tmp_path):
    manifest = make_manifest(tmp_path, {"a.wav": (tone(300, 0.2, 16000), 16000)})
    manifest.write_bytes(b"\xef\xbb\xbf" + manifest.read_bytes())  # as Notepad saves UTF-8
    manifest.with_suffix(".wrd").write_bytes("\ufeffhello world\n".encode())
    assert [(s.id, s.text) for s in load_raw(manifest, 16000)] == [("a", "hello world")]
    text = tmp_path / "sentences.txt"
    text.write_bytes("\ufeffone two\n".encode())
    assert [s.text for s in load_text(text)] == ["one two"]
    result = CliRunner().invoke(main, ["data", "stats", str(manifest)])
    assert result.exit_code == 0 and "total_audio\t0.20 s" in result.output, result.output
    out = tmp_path / "sub.tsv"
    assert CliRunner().invoke(main, ["data", "subset", str(manifest), "-n", "1", "-o", str(out)]).exit_code == 0
    assert not out.read_text().startswith("\ufeff") and [s.id for s in load_raw(out, 16000)] == ["a"]
    for args in (
        ["data", "stats", str(tmp_path)],
        ["data", "stats", "--type", "npz", str(tmp_path)],
        ["bench", "-b", "onnxruntime", "--dataset-path", str(tmp_path)],
    ):
        _one_line_exit_2(args, f"{tmp_path} is a folder; give the file itself (it holds sub.tsv, train.tsv)")
