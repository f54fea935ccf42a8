"""Issue 18, family 1: every output path of every command that writes is checked before any work, by one mechanism
(speechperf.outputs): a FIFO, a private device node, a folder where a file is wanted (a file where a folder is), a
parent that is a file (what is unwritable even for root) and a name over the OS's limits are refused with one line
and exit 2, and left as they were; a symlink is written through (the link stays a link, its target gets the data);
``data subset`` never writes its own input, nor anything when the dataset holds no samples."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from speechperf.cli import main
from speechperf.outputs import (
    OutputError,
    check_figure_path,
    check_output_folder,
    check_output_path,
    file_problem,
)
from tests.needs import require
from tests.test_outputs import one_line_error as _one_line_error

REPO = Path(__file__).resolve().parents[1]
QUICK = ["--dataset-size", "2", "--repeat", "1", "--warmup", "0"]


def vocoder_config(folder: Path) -> Path:
    """An S2S config on a one-node ONNX "vocoder" (mel -> its mean per frame): a real model file that loads and
    runs in a fraction of a second, so a run that must succeed costs little."""
    import onnx
    from onnx import TensorProto, helper

    mel = helper.make_tensor_value_info("mel", TensorProto.FLOAT, [1, "a", "b"])
    wave = helper.make_tensor_value_info("wave", TensorProto.FLOAT, [1, "a"])
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [2])
    node = helper.make_node("ReduceMean", ["mel", "axes"], ["wave"], keepdims=0)
    model = helper.make_model(
        helper.make_graph([node], "voc", [mel], [wave], [axes]), opset_imports=[helper.make_opsetid("", 18)]
    )
    model.ir_version = 8
    onnx.save(model, folder / "voc.onnx")
    config = folder / "voc.yaml"
    config.write_text(
        "general: {model_type: S2S, generated_seconds: [0.5, 0.5]}\n"
        f"stage1: {{path: {folder / 'voc.onnx'}, inputs: [{{name: mel, source: features}}], outputs: [wave]}}\n"
    )
    return config


@pytest.fixture(scope="module")
def voc(tmp_path_factory) -> Path:
    return vocoder_config(tmp_path_factory.mktemp("voc"))


@pytest.fixture
def synth_tools(monkeypatch):
    """data synth's programs (espeak-ng, sox), as if installed: it refuses its outputs before it would run one, so
    these tests need neither."""
    import speechperf.data.synth as synth

    monkeypatch.setattr(synth, "require_tool", lambda name: f"/nonexistent/{name}")


def one_line_error(result, *needles: str) -> str:
    line = _one_line_error(result, *needles)
    assert len(line) < 600, line  # a 5,000-character path is cut in the message
    return line


def make_hostile(kind: str, folder: Path, name: str) -> tuple[Path, str]:
    """A path of ``kind`` in ``folder`` and the words the refusal must hold."""
    path = folder / name
    if kind == "fifo":
        os.mkfifo(path)
        return path, "is a FIFO"
    if kind == "device":  # a private node (the null device's numbers), never the machine's own /dev entry
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 3))
        return path, "is a character device"
    if kind == "under-a-file":  # unwritable even for root: its parent is a regular file
        (folder / "plain").write_text("x")
        return folder / "plain" / name, "is a file, not a folder"
    if kind == "long-name":
        return folder / ("n" * 5000 + Path(name).suffix), "long; this file system allows"
    raise AssertionError(kind)


def state_of(path: Path) -> str:
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return "absent"
    except OSError:
        return "unreachable"
    return stat.filemode(mode)[0] + (path.read_text() if stat.S_ISREG(mode) else "")


# Each command that writes a file, with the file in the FILE slot.
FILE_WRITERS = {
    "compare -o": ["compare", "--backends", "onnxruntime", "--runs", "1", "-o", "FILE"],
    "compare --csv": ["compare", "--backends", "onnxruntime", "--runs", "1", "--csv", "FILE"],
    "compare --markdown": ["compare", "--backends", "onnxruntime", "--runs", "1", "--markdown", "FILE"],
    "compare --plot": ["compare", "--backends", "onnxruntime", "--runs", "1", "--plot", "FILE.png"],
    "bench -o": ["bench", "-b", "onnxruntime", "-o", "FILE"],
    "bench --csv": ["bench", "-b", "onnxruntime", "--csv", "FILE"],
    "bench --save-text": ["bench", "-b", "onnxruntime", "--save-text", "FILE"],
    "bench --html": ["bench", "-b", "onnxruntime", "--html", "FILE"],
    "bench --store": ["bench", "-b", "onnxruntime", "--store", "FILE"],
    "compare --html": ["compare", "--backends", "onnxruntime", "--runs", "1", "--html", "FILE"],
    "optimize --html": ["optimize", "-b", "onnxruntime", "--method", "ort_dynamic", "--html", "FILE"],
    "history --html": ["history", "--html", "FILE"],
    "optimize -o": ["optimize", "-b", "onnxruntime", "--method", "ort_dynamic", "-o", "FILE"],
    "optimize --markdown": ["optimize", "-b", "onnxruntime", "--method", "ort_dynamic", "--markdown", "FILE"],
    "data subset -o": ["data", "subset", "DATA", "-n", "1", "-o", "FILE"],
    "profile trace": ["profile", "-b", "onnxruntime", "--model", "VOC", "--profiler-options", "profile_path=FILE"],
}
# Each command that fills a folder, with it in the DIR slot.
FOLDER_WRITERS = {
    "compare --workdir": ["compare", "--backends", "onnxruntime", "--runs", "1", "--workdir", "DIR"],
    "optimize --out-dir": ["optimize", "-b", "onnxruntime", "--method", "ort_dynamic", "--out-dir", "DIR"],
    "zoo build --out": ["zoo", "build", "--model", "s2t", "--out", "DIR"],
    "data synth": ["data", "synth", "DIR", "-n", "1"],
    "bench --dump-speech-waveforms-dir": ["bench", "-b", "onnxruntime", "--dump-speech-waveforms-dir", "DIR"],
    "profile trace folder": [
        "profile",
        "-b",
        "onnxruntime",
        "--model",
        "VOC",
        "--profiler-options",
        "profile_path=DIR/",
    ],
}


def fill(args: list[str], path: Path, tmp_path: Path, voc: Path) -> list[str]:
    data = tmp_path / "in.txt"
    data.write_text("one two\nthree four five\n")
    out = []
    for a in args:
        a = a.replace("profile_path=FILE", f"profile_path={path}").replace("profile_path=DIR/", f"profile_path={path}/")
        out.append({"FILE": str(path), "FILE.png": str(path), "DIR": str(path), "DATA": str(data)}.get(a, a))
    return [a.replace("VOC", str(voc.with_suffix(".onnx"))) for a in out]


FILE_KINDS = ["fifo", "device", "under-a-file", "long-name"]
FOLDER_KINDS = ["fifo", "device", "file", "under-a-file", "long-name"]


def make_hostile_folder(kind: str, folder: Path) -> tuple[Path, str]:
    """A path of ``kind`` where a folder is wanted, and the words the refusal must hold."""
    if kind == "file":
        path = folder / "plain.txt"
        path.write_text("keep")
        return path, "is a file; a folder (or a new path) is needed"
    return make_hostile(kind, folder, "out")


# The shared checks (speechperf.outputs), each hostile kind: refused in one OutputError naming the option, and the
# path left as it was. Every command's outputs go through these two functions (CONTRIBUTING.md, "Style").
@pytest.mark.parametrize("kind", FILE_KINDS + ["folder"])
def test_check_output_path_refuses_each_hostile_kind_and_leaves_it_as_it_was(kind, tmp_path):
    if kind == "folder":
        path, words = tmp_path / "out.json", "is a folder; only a regular file (or a new path) is written"
        path.mkdir()
    else:
        path, words = make_hostile(kind, tmp_path, "out.json")
    before = state_of(path)
    with pytest.raises(OutputError) as refused:
        check_output_path(path, "--csv")
    assert str(refused.value).startswith("--csv ") and words in str(refused.value)
    assert "\n" not in str(refused.value) and len(str(refused.value)) < 600  # one line; a 5,000-byte name is cut
    assert state_of(path) == before


@pytest.mark.parametrize("kind", FOLDER_KINDS)
def test_check_output_folder_refuses_each_hostile_kind_and_leaves_it_as_it_was(kind, tmp_path):
    path, words = make_hostile_folder(kind, tmp_path)
    before = state_of(path)
    with pytest.raises(OutputError) as refused:
        check_output_folder(path, "--out-dir")
    assert str(refused.value).startswith("--out-dir ") and words in str(refused.value)
    assert "\n" not in str(refused.value) and len(str(refused.value)) < 600
    assert state_of(path) == before


def test_a_plot_path_is_checked_like_any_output_after_its_suffix(tmp_path):
    with pytest.raises(OutputError, match=r"--plot .*c\.txt: the file must end in \.png or \.svg"):
        check_figure_path(tmp_path / "c.txt", "--plot")
    fifo, _ = make_hostile("fifo", tmp_path, "c.png")
    with pytest.raises(OutputError, match="is a FIFO"):
        check_figure_path(fifo, "--plot")
    assert check_figure_path(tmp_path / "new" / "c.svg", "--plot") == tmp_path / "new" / "c.svg"


@pytest.mark.parametrize("kind", ["fifo", "device", "folder", "missing", "kernel"])
def test_file_problem_says_why_an_input_cannot_be_read(kind, tmp_path):
    path = {"kernel": Path("/proc/self/status"), "missing": tmp_path / "absent.tsv"}.get(kind, tmp_path / "in.tsv")
    if kind in ("fifo", "device"):
        path, _ = make_hostile(kind, tmp_path, "in.tsv")
    elif kind == "folder":
        path.mkdir()
    words = {
        "fifo": "is a FIFO, not a regular file",
        "device": "is a character device, not a regular file",
        "folder": "is a folder",
        "missing": "not found",
        "kernel": "is a file of the kernel's /proc, not a data file",
    }[kind]
    assert file_problem(path) == words
    (tmp_path / "ok.tsv").write_text("x")
    assert file_problem(tmp_path / "ok.tsv") is None


# Each command's own refusal, through the CLI: every option that writes a file or fills a folder, once, with the
# hostile kinds taken in turn (each kind is still seen through the CLI): one line, exit 2, the path left as it was.
FILE_CASES = [(w, FILE_KINDS[i % len(FILE_KINDS)]) for i, w in enumerate(sorted(FILE_WRITERS))]
FOLDER_CASES = [(w, FOLDER_KINDS[i % len(FOLDER_KINDS)]) for i, w in enumerate(sorted(FOLDER_WRITERS))]


@pytest.mark.parametrize("writer, kind", FILE_CASES)
def test_a_file_output_that_cannot_be_written_is_refused_before_any_work(writer, kind, tmp_path, voc):
    path, words = make_hostile(kind, tmp_path, "out.png" if "plot" in writer else "out.json")
    before = state_of(path)
    result = CliRunner().invoke(main, fill(FILE_WRITERS[writer], path, tmp_path, voc))
    one_line_error(result, words)
    assert state_of(path) == before  # the FIFO or node is still there, nothing was put in its place


@pytest.mark.parametrize("writer, kind", FOLDER_CASES)
def test_a_folder_output_that_cannot_be_filled_is_refused_before_any_work(writer, kind, tmp_path, voc, synth_tools):
    path, words = make_hostile_folder(kind, tmp_path)
    before = state_of(path)
    result = CliRunner().invoke(main, fill(FOLDER_WRITERS[writer], path, tmp_path, voc))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and words.split(";")[0].split(",")[0] in result.output, result.output
    assert state_of(path) == before


def test_every_hostile_kind_is_seen_through_the_cli():
    assert {k for _, k in FILE_CASES} == set(FILE_KINDS) and {k for _, k in FOLDER_CASES} == set(FOLDER_KINDS)


@pytest.mark.parametrize("entry", ["manifest.tsv", "sentences.txt", "wav", "wav/utt000.wav"])
def test_data_synth_checks_every_entry_of_its_folder_first(entry, tmp_path, synth_tools):
    folder = tmp_path / "synth"
    (folder / "wav").mkdir(parents=True)
    if entry == "wav":
        (folder / "wav").rmdir()
        (folder / "wav").write_text("keep")
        words = "is a file; a folder"
    else:
        os.mkfifo(folder / entry)
        words = "is a FIFO"
    result = CliRunner().invoke(main, ["data", "synth", str(folder), "-n", "2"])
    one_line_error(result, words, entry)
    assert not (folder / "wav" / "utt000.wav").is_file() or entry == "wav/utt000.wav"


def test_data_subset_never_writes_its_input_nor_an_empty_subset(tmp_path):
    data = tmp_path / "in.txt"
    data.write_text("one two\nthree four five\n")
    link = tmp_path / "link.txt"
    link.symlink_to(data)
    for target in (data, link):  # the same file, by its name or through a link
        one_line_error(
            CliRunner().invoke(main, ["data", "subset", str(data), "-n", "1", "-o", str(target)]), "is the input"
        )
        assert data.read_text() == "one two\nthree four five\n"
    empty, kept = tmp_path / "empty.txt", tmp_path / "kept.txt"
    empty.write_text("\n\n")
    kept.write_text("keep me\n")
    one_line_error(CliRunner().invoke(main, ["data", "subset", str(empty), "-n", "1", "-o", str(kept)]), "no samples")
    assert kept.read_text() == "keep me\n"


def symlink_to_new(tmp_path: Path, name: str, folder: bool = False) -> tuple[Path, Path]:
    target = tmp_path / "real" / name
    target.parent.mkdir(exist_ok=True)
    if folder:
        target.mkdir()
    else:
        target.write_text("old")
    link = tmp_path / f"link-{name}"
    link.symlink_to(target)
    return link, target


@pytest.mark.slow
def test_compare_and_bench_write_through_symlinks(tmp_path, voc):
    links = {name: symlink_to_new(tmp_path, name) for name in ("c.json", "c.csv", "c.md", "c.png")}
    workdir, work_target = symlink_to_new(tmp_path, "work", folder=True)
    result = CliRunner().invoke(
        main,
        [
            "compare",
            "--config",
            str(voc),
            "--backends",
            "onnxruntime",
            "--runs",
            "1",
            "--meters",
            "runtime",
            *QUICK,
            "--workdir",
            str(workdir),
            "-o",
            str(links["c.json"][0]),
            "--csv",
            str(links["c.csv"][0]),
            "--markdown",
            str(links["c.md"][0]),
            "--plot",
            str(links["c.png"][0]),
        ],
    )
    assert result.exit_code == 0, result.output
    for name, (link, target) in links.items():
        assert link.is_symlink() and target.is_file() and target.read_bytes() != b"old", name
    assert json.loads(links["c.json"][1].read_text())["complete"] is True
    assert links["c.png"][1].read_bytes().startswith(b"\x89PNG")
    assert workdir.is_symlink() and any(work_target.iterdir())
    dumps, dumps_target = symlink_to_new(tmp_path, "dumps", folder=True)
    done = CliRunner().invoke(
        main, ["bench", "-b", "onnxruntime", "--config", str(voc), *QUICK, "--dump-speech-waveforms-dir", str(dumps)]
    )
    assert done.exit_code == 0, done.output
    assert dumps.is_symlink() and sorted(p.name for p in dumps_target.iterdir()) == ["_0_pred.wav", "_1_pred.wav"]


def test_data_subset_and_synth_write_through_symlinks(tmp_path):
    data = tmp_path / "in.txt"
    data.write_text("one two\nthree four five\n")
    link, target = symlink_to_new(tmp_path, "subset.txt")
    assert CliRunner().invoke(main, ["data", "subset", str(data), "-n", "1", "-o", str(link)]).exit_code == 0
    assert link.is_symlink() and target.read_text().strip() in ("one two", "three four five")
    require("espeak-ng", "sox")
    folder, folder_target = symlink_to_new(tmp_path, "synth", folder=True)
    (folder_target / "manifest.tsv").write_text("old")
    manifest_link = folder_target / "manifest.wrd"
    (folder_target / "old.wrd").write_text("old")
    manifest_link.symlink_to(folder_target / "old.wrd")
    assert CliRunner().invoke(main, ["data", "synth", str(folder), "-n", "1"]).exit_code == 0
    assert folder.is_symlink() and (folder_target / "wav" / "utt000.wav").is_file()
    assert manifest_link.is_symlink() and (folder_target / "old.wrd").read_text() != "old"


TORCH_MODEL = """
import sys, torch
m = torch.jit.script(torch.nn.Linear(4, 4))
m.save(sys.argv[1])
"""
PADDLE_MODEL = """
import sys, paddle
layer = paddle.nn.Linear(4, 4)
paddle.jit.save(layer, sys.argv[1], input_spec=[paddle.static.InputSpec([1, 4], "float32", "x")])
"""


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["onnxruntime", "torch", "paddle"])
def test_a_symlinked_trace_path_is_written_through_on_every_profiler(backend, tmp_path, voc):
    shape = {"onnxruntime": ["--input", "mel:1x4x4"], "torch": ["--input", "input:1x4"], "paddle": []}[backend]
    if backend == "onnxruntime":
        model = voc.with_suffix(".onnx")
    else:
        source = TORCH_MODEL if backend == "torch" else PADDLE_MODEL
        stem = tmp_path / "linear"
        subprocess.run([sys.executable, "-c", source, str(stem) + (".pt" if backend == "torch" else "")], check=True)
        model = Path(f"{stem}.pt") if backend == "torch" else Path(f"{stem}.json")
        if not model.exists():
            model = Path(f"{stem}.pdmodel")
    link, target = symlink_to_new(tmp_path, "trace.json")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "speechperf",
            "profile",
            "-b",
            backend,
            "--model",
            str(model),
            *shape,
            "--profiler-options",
            f"batch_range=[1,3]; profile_path={link}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert link.is_symlink(), "the profiler replaced the link with a file"
    assert target.read_text() != "old" and json.loads(target.read_text())


@pytest.mark.slow
def test_what_compare_and_profile_write_beside_their_outputs_is_checked_first(tmp_path, voc):
    workdir = tmp_path / "work"
    (workdir / "run1" / "onnxruntime").mkdir(parents=True)
    os.mkfifo(workdir / "run1" / "onnxruntime" / "stderr.txt")  # a child writing its log here would block
    args = ["compare", "--config", str(voc), "--backends", "onnxruntime", "--runs", "1", "--workdir", str(workdir)]
    one_line_error(CliRunner().invoke(main, args), "stderr.txt is a FIFO")
    os.mkfifo(tmp_path / "t.categories.json")  # the profiler's category table, written beside the trace
    options = f"batch_range=[1,3]; profile_path={tmp_path / 't.json'}"
    model = ["--model", str(voc.with_suffix(".onnx")), "--input", "mel:1x4x4"]
    result = CliRunner().invoke(main, ["profile", "-b", "onnxruntime", *model, "--profiler-options", options])
    one_line_error(result, "t.categories.json is a FIFO")


@pytest.mark.parametrize("beside", ["length", "scaling", "roofline"])
def test_the_plots_written_beside_compares_plot_are_checked_before_any_run(beside, tmp_path, voc):
    hostile = tmp_path / f"c.{beside}.png"
    os.mkfifo(hostile)  # compare would block on it after every run had finished
    args = ["compare", "--config", str(voc), "--backends", "onnxruntime", "--runs", "1"]
    one_line_error(CliRunner().invoke(main, [*args, "--plot", str(tmp_path / "c.png")]), f"c.{beside}.png is a FIFO")
    assert stat.S_ISFIFO(hostile.stat().st_mode) and not (tmp_path / "c.png").exists()
