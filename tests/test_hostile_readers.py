"""Issue 18, family 5: dataset and cache readers, through the CLI. A file that is not UTF-8 names the file, line,
column and byte (one reader: speechperf.data.files.read_lines); a 0-d .npy, a device, a FIFO or a /proc file as
data, and a zoo manifest.json that is a list, a number, a folder or not JSON are one line and exit 2."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from speechperf.cli import main
from tests.test_outputs import one_line_error

SPEECH = Path(__file__).parent / "data" / "speech_16k.wav"
BENCH = ["bench", "-b", "onnxruntime", "--dataset-size", "1", "--repeat", "1", "--warmup", "0", "-q"]


def one_line(args: list[str], *needles: str) -> str:
    return one_line_error(CliRunner().invoke(main, args), *needles)


@pytest.fixture
def raw(tmp_path) -> Path:
    """A raw manifest of one real speech file, with its transcript."""
    import soundfile as sf

    shutil.copy(SPEECH, tmp_path / "a.wav")
    manifest = tmp_path / "m.tsv"
    manifest.write_text(f"{tmp_path}\na.wav\t{sf.info(str(SPEECH)).frames}\n")
    (tmp_path / "m.wrd").write_text("hello\n")
    return manifest


def test_a_transcript_manifest_or_text_file_that_is_not_utf8_names_file_line_and_byte(raw, tmp_path):
    raw.with_suffix(".wrd").write_bytes(b"caf\xe9 au lait\n")  # latin-1, as an old editor saves it
    for args in (
        [*BENCH, "--dataset-type", "raw", "--dataset-path", str(raw)],
        ["data", "subset", str(raw), "-n", "1", "-o", str(tmp_path / "sub.tsv")],
    ):
        one_line(args, f"{raw.with_suffix('.wrd')}:1: transcript file is not UTF-8 text: byte 0xe9 at column 4")
    manifest = tmp_path / "bad.tsv"
    manifest.write_bytes(f"{tmp_path}\n".encode() + b"\xff.wav\t5\n")
    one_line(["data", "stats", str(manifest)], f"{manifest}:2: manifest is not UTF-8 text: byte 0xff at column 1")
    text = tmp_path / "t.txt"
    text.write_bytes(b"one\ntwo \x80\n")
    one_line(["data", "stats", str(text)], f"{text}:2: text dataset is not UTF-8 text: byte 0x80 at column 5")


def test_a_zero_d_npy_is_one_line(tmp_path):
    path = tmp_path / "z.npy"
    np.save(path, np.array(5))
    for args in (["data", "stats", str(path)], [*BENCH, "--dataset-type", "npy", "--dataset-path", str(path)]):
        one_line(args, "holds a single value (a 0-d int64 array)")


def test_what_is_not_a_regular_file_is_refused_as_audio_or_as_a_dataset(raw, tmp_path):
    device = tmp_path / "zero"
    os.mknod(device, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # a private /dev/zero node, never the machine's own
    fifo = tmp_path / "pipe.wav"
    os.mkfifo(fifo)  # reading it would block forever
    for audio, words in (
        ("/proc/self/mem", "audio file is a file of the kernel's /proc, not a data file"),
        (str(device), "audio file is a character device, not a regular file"),
        (str(fifo), "audio file is a FIFO, not a regular file"),
    ):
        raw.write_text(f"/\n{audio.lstrip('/')}\t100\n")
        raw.with_suffix(".wrd").unlink(missing_ok=True)
        one_line(["data", "stats", str(raw)], f"{raw}:2: {words}")
        one_line([*BENCH, "--dataset-type", "raw", "--dataset-path", str(raw)], words)
    one_line([*BENCH, "--dataset-type", "npz", "--dataset-path", "/proc/self/mem"], "is a file of the kernel's /proc")
    one_line(["data", "stats", str(device), "--type", "npz"], "is a character device, not a regular file")


@pytest.mark.parametrize(
    "content, words",
    [
        ("[1, 2]", "holds a JSON list, not an object"),
        ("5", "holds a JSON int, not an object"),
        (None, "manifest.json is a folder"),
        (b"\xff\xfe{", "is not a JSON file"),
        ("{not json", "is not a JSON file"),
    ],
)
def test_a_zoo_manifest_that_is_not_an_object_is_one_line(content, words, tmp_path):
    folder = tmp_path / "s2t"
    manifest = folder / "manifest.json"
    if content is None:
        manifest.mkdir(parents=True)
    else:
        folder.mkdir()
        manifest.write_bytes(content if isinstance(content, bytes) else content.encode())
    one_line([*BENCH, "--set", f"stage1.model_dir={folder}"], str(manifest), words)
    listed = CliRunner().invoke(main, ["zoo", "list", "--dir", str(tmp_path), "--json"])
    assert listed.exit_code == 0 and '"built": false' in listed.output, listed.output


def in_a_child(args: list[str], *needles: str) -> str:
    """``speechperf ARGS`` in a subprocess with a timeout, for inputs that used to block the read forever (a FIFO,
    /dev/zero): a hang fails the test instead of stalling the suite. Its one error line."""
    done = subprocess.run(
        [sys.executable, "-m", "speechperf", *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert len(lines) == 1, done.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def test_a_config_that_is_a_device_a_fifo_or_too_large_is_refused_before_reading(tmp_path):
    in_a_child(["config", "check", "/dev/zero"], "config file /dev/zero is a character device, not a regular file")
    fifo = tmp_path / "c.yaml"
    os.mkfifo(fifo)
    in_a_child(["bench", "-b", "onnxruntime", "--config", str(fifo)], f"config file {fifo} is a FIFO")
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    big = tmp_path / "big.yaml"
    with open(big, "wb") as f:
        f.truncate(10_000_001)  # sparse: no time spent writing it
    one_line(["config", "check", str(big)], f"config file {big} is 10,000,001 bytes; at most 10,000,000")


def test_a_fifo_as_a_zoo_manifest_is_refused_by_bench_and_config_check_and_not_built_in_zoo_list(tmp_path):
    folder = tmp_path / "s2t"
    folder.mkdir()
    manifest = folder / "manifest.json"
    os.mkfifo(manifest)
    in_a_child([*BENCH, "--set", f"stage1.model_dir={folder}"], f"{manifest} is a FIFO, not a regular file")
    config = tmp_path / "c.yaml"
    config.write_text(f"stage1: {{model: s2t, preset: tiny, model_dir: {folder}}}\n")
    in_a_child(["config", "check", str(config)], f"{manifest} is a FIFO")
    done = subprocess.run(
        [sys.executable, "-m", "speechperf", "zoo", "list", "--dir", str(tmp_path), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and '"built": false' in done.stdout, done.stderr
    assert stat.S_ISFIFO(manifest.lstat().st_mode)


def test_run_refuses_a_garbage_npz_and_a_fifo_as_its_feeds(tmp_path):
    model = tmp_path / "m.onnx"
    model.write_bytes(b"never loaded")
    garbage = tmp_path / "feeds.npz"
    garbage.write_bytes(b"PK\x03\x04garbage")
    run = ["run", "-b", "onnxruntime", "--model", str(model), "--feeds"]
    one_line([*run, str(garbage)], f"--feeds {garbage}: cannot read it as .npz")
    fifo = tmp_path / "fifo.npz"
    os.mkfifo(fifo)
    in_a_child([*run, str(fifo)], f"--feeds {fifo} is a FIFO, not a regular file")


def test_diff_and_profile_compare_refuse_a_fifo_or_a_device_before_reading(tmp_path):
    fifo = tmp_path / "p.json"
    os.mkfifo(fifo)
    device = tmp_path / "z.json"
    os.mknod(device, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # a private /dev/zero node: its read never ends
    in_a_child(
        ["diff", str(fifo), str(device)],
        f"{fifo} is a FIFO, not a regular file; a speechperf result document is a JSON file",
    )
    in_a_child(["profile-compare", str(device), str(device)], f"{device} is a character device, not a regular file")


def test_a_config_of_binary_garbage_on_stdin_is_one_line():
    done = subprocess.run(
        [sys.executable, "-m", "speechperf", "config", "check", "-"], input=b"\x00\xff\x01garbage", capture_output=True
    )
    err = done.stderr.decode()
    assert done.returncode == 2 and "Traceback" not in err, err
    assert err.strip().splitlines()[-1].startswith("Error: <stdin>: not valid YAML"), err


def test_a_raw_dataset_of_an_empty_wav_or_a_non_utf8_wrd_is_refused_by_stats_and_subset(raw, tmp_path):
    out = tmp_path / "out" / "s.tsv"
    out.parent.mkdir()
    subset = ["data", "subset", str(raw), "--type", "raw", "-n", "1", "-o", str(out)]
    raw.with_suffix(".wrd").write_bytes(b"caf\xe9 au lait\n")
    for args in (["data", "stats", str(raw), "--type", "raw"], subset):
        one_line(args, "m.wrd:1: transcript file is not UTF-8 text")
    raw.with_suffix(".wrd").unlink()
    import soundfile as sf

    sf.write(tmp_path / "z.wav", np.zeros(0, np.float32), 16000)
    raw.write_text(f"{tmp_path}\nz.wav\t0\n")
    for args in (["data", "stats", str(raw), "--type", "raw"], subset):
        one_line(args, f"{raw}:2: z.wav has num_samples 0; an audio file needs at least 1 sample")
    assert list(out.parent.iterdir()) == []
