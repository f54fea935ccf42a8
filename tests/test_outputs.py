"""Output files of bench and ``data subset``: refused before any work when they cannot be written, never written
over a device, FIFO or folder, written through a symlink, and kept (JSON, CSV, Markdown) when a run is interrupted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from speechperf.cli import main
from speechperf.outputs import OutputError, check_output_path, write_text_atomic

SPEECHPERF = [sys.executable, "-m", "speechperf"]
FAST = ["-b", "onnxruntime", "--dataset-size", "2", "--warmup", "0", "--repeat", "1", "--quiet"]


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def one_line_error(result, *needles: str) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit), result.exception
    line = [ln for ln in result.output.splitlines() if ln.startswith("Error:")]
    assert len(line) == 1, result.output
    for needle in needles:
        assert needle in line[0], line[0]
    return line[0]


@pytest.fixture
def fifo(tmp_path) -> Path:
    path = tmp_path / "pipe.csv"
    os.mkfifo(path)
    return path


@pytest.fixture
def npz_dataset(tmp_path) -> Path:
    path = tmp_path / "tokens.npz"
    np.savez(path, a=np.arange(5), b=np.arange(3), c=np.arange(7))
    return path


def test_check_output_path_refuses_what_is_not_a_regular_file(tmp_path, fifo):
    with pytest.raises(OutputError, match=r"^--output /dev/full is a character device"):
        check_output_path("/dev/full", "--output")
    with pytest.raises(OutputError, match="is a FIFO"):
        check_output_path(fifo, "--csv")
    with pytest.raises(OutputError, match="is a folder"):
        check_output_path(tmp_path, "--markdown")
    with pytest.raises(OutputError, match=r"its folder /proc is not writable"):
        check_output_path("/proc/x.json", "--output")
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match="cannot be written: .*/file is a file, not a folder"):  # under a file
        check_output_path(tmp_path / "file" / "r.json", "--output")
    new = tmp_path / "new" / "dir" / "r.json"
    assert check_output_path(new, "--output") == new and new.parent.is_dir() and not new.exists()
    assert list(new.parent.iterdir()) == []  # the probe file is gone


def test_write_through_a_symlink_keeps_the_link(tmp_path):
    target = tmp_path / "real.csv"
    target.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    write_text_atomic(link, "new\n")
    assert link.is_symlink() and target.read_text() == "new\n"
    dangling = tmp_path / "dangling.csv"
    dangling.symlink_to(tmp_path / "later.csv")
    write_text_atomic(dangling, "made\n")
    assert dangling.is_symlink() and (tmp_path / "later.csv").read_text() == "made\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling.csv", "later.csv", "link.csv", "real.csv"]


@pytest.mark.parametrize("option", ["--output", "--csv", "--markdown"])
def test_bench_refuses_device_fifo_and_proc_before_measuring(option, fifo):
    for path, why in (
        ("/dev/full", "is a character device"),
        (str(fifo), "is a FIFO"),
        ("/proc/x.json", "folder /proc is not writable"),
    ):
        start = time.perf_counter()
        result = invoke("bench", *FAST, option, path)
        one_line_error(result, option, path, why)
        assert "cold start" not in result.output  # refused before any model was loaded
        assert time.perf_counter() - start < 5
    assert Path("/dev/full").is_char_device() and fifo.is_fifo()  # nothing was put in their place


def test_bench_writes_through_a_symlink(tmp_path):
    target = tmp_path / "results" / "r.csv"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "r.csv"
    link.symlink_to(target)
    result = invoke("bench", *FAST, "--csv", str(link))
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and target.read_text().startswith("backend,stage,model,")


def test_data_subset_refuses_device_fifo_and_folder(tmp_path, npz_dataset, fifo):
    for path, why in (("/dev/full", "is a character device"), (str(fifo), "is a FIFO"), (str(tmp_path), "is a folder")):
        one_line_error(invoke("data", "subset", str(npz_dataset), "-n", "2", "-o", path), "--output", why)
    target = tmp_path / "subset_target.npz"
    link = tmp_path / "subset.npz"
    link.symlink_to(target)
    result = invoke("data", "subset", str(npz_dataset), "--kind", "long", "-n", "2", "-o", str(link))
    assert result.exit_code == 0, result.output
    assert link.is_symlink()
    with np.load(target) as written:
        assert sorted(written.files) == ["a", "c"]


@pytest.mark.slow
def test_ctrl_c_keeps_json_csv_markdown_and_says_interrupted_once(tmp_path):
    """A real bench process sent SIGINT while it measures memory: the runtime pass is in all three exports."""
    out, csv_path, md_path = tmp_path / "r.json", tmp_path / "r.csv", tmp_path / "r.md"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        SPEECHPERF
        + [
            "bench",
            "-b",
            "onnxruntime",
            "--dataset-size",
            "300",
            "--warmup",
            "1",
            "--repeat",
            "1",
            "--meters",
            "runtime,memory,flops",
            "-o",
            str(out),
            "--csv",
            str(csv_path),
            "--markdown",
            str(md_path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    lines = []
    for line in proc.stderr:  # progress lines on a non-terminal: "s2t/tiny: runtime done (300 samples)"
        lines.append(line)
        if "runtime done" in line:
            proc.send_signal(signal.SIGINT)
            break
    else:
        proc.wait()
        pytest.fail("the run ended before the runtime pass was reported:\n" + "".join(lines))
    stdout, rest = proc.communicate(timeout=120)
    stderr = "".join(lines) + rest
    assert proc.returncode == 130, stderr
    assert stderr.count("interrupted") == 1 and "Traceback" not in stderr, stderr
    assert f"interrupted; what was measured is in {out}, {csv_path}, {md_path}" in stderr
    assert "speechperf bench:" not in stdout  # no table of a run that did not finish
    data = json.loads(out.read_text())
    assert data["complete"] is False
    assert len(data["result"]["stages"][0]["runtime"]["samples"]) == 300
    row = csv_path.read_text().splitlines()[1].split(",")
    assert row[:5] == ["onnxruntime", "stage1 s2t", "s2t/tiny", "300", "0"] and float(row[5]) > 0
    assert "| onnxruntime | stage1 s2t | s2t/tiny | 300 | 0 |" in md_path.read_text()


# -- the one atomic writer --------------------------------------------------------------------------------------------


def test_a_failing_writer_leaves_the_old_file_intact(tmp_path):
    from speechperf.outputs import atomic_path

    path = tmp_path / "result.json"
    write_text_atomic(path, '{"old": true}')
    with pytest.raises(RuntimeError, match="writer died"), atomic_path(path) as tmp:
        tmp.write_text('{"new": tr', encoding="utf-8")  # half written, then the writer fails
        raise RuntimeError("writer died")
    assert path.read_text(encoding="utf-8") == '{"old": true}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]  # no partial file left behind


def test_a_failed_fsync_leaves_the_old_file_intact(tmp_path, monkeypatch):
    path = tmp_path / "table.csv"
    write_text_atomic(path, "old\n")
    synced = []

    def failing_fsync(fd):
        synced.append(fd)
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OutputError, match=r"^--csv .*table.csv: cannot be written: Input/output error$"):
        write_text_atomic(path, "new\n", "--csv")
    assert synced and path.read_text(encoding="utf-8") == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.csv"]


def test_the_file_and_its_folder_are_fsynced_before_and_after_the_rename(tmp_path, monkeypatch):
    calls = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(
        os, "fsync", lambda fd: calls.append(("fsync", os.path.isdir(f"/proc/self/fd/{fd}"))) or real_fsync(fd)
    )
    monkeypatch.setattr(os, "replace", lambda a, b: calls.append(("replace", None)) or real_replace(a, b))
    write_text_atomic(tmp_path / "x.md", "| a |\n")
    assert calls == [("fsync", False), ("replace", None), ("fsync", True)]


def test_atomic_folder_replaces_a_folder_whole_or_not_at_all(tmp_path):
    from speechperf.outputs import atomic_folder

    final = tmp_path / "model"
    with atomic_folder(final) as work:
        (work / "a.onnx").write_bytes(b"v1")
    with pytest.raises(RuntimeError), atomic_folder(final) as work:
        (work / "a.onnx").write_bytes(b"v2-half")
        raise RuntimeError("export failed")
    assert (final / "a.onnx").read_bytes() == b"v1"
    assert [p.name for p in tmp_path.iterdir()] == ["model"]


def test_file_sha256_is_the_content_hash_and_sees_a_changed_file(tmp_path):
    import hashlib

    from speechperf.outputs import file_sha256

    path = tmp_path / "w.bin"
    path.write_bytes(b"abc")
    assert file_sha256(path) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"  # FIPS 180-2 "abc"
    path.write_bytes(b"abcd")
    assert file_sha256(path) == hashlib.sha256(b"abcd").hexdigest()
