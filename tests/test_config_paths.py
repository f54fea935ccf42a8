"""Datasets and paths as users write them: a config's relative paths read from its own folder, the command line's
from the working folder, a missing one named with its key, config and folder; a user's --dataset-path never cut by
a preset's dataset_size (and any cut said in a note); a TTS on an .npz of token ids with references."""

from __future__ import annotations

from pathlib import Path

import attrs
import numpy as np
import pytest
from click.testing import CliRunner

from speechperf.benchmark.validate import check_config
from speechperf.cli import main
from speechperf.config import load_config, parse_config, write_config
from speechperf.data import DatasetError, load_dataset, size_note
from speechperf.data.references import load_references


def layout(tmp_path: Path, text: str) -> Path:
    """``tmp_path/a/c.yaml`` holding ``text``, with ``a/data/s.txt`` (8 sentences) beside it; cwd ``tmp_path/b``."""
    (tmp_path / "a" / "data").mkdir(parents=True)
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "data" / "s.txt").write_text("".join(f"sentence number {i}\n" for i in range(8)))
    config = tmp_path / "a" / "c.yaml"
    config.write_text(text)
    return config


TEXT_MT = "general: {model_type: MT, dataset_type: text, dataset_path: data/s.txt, dataset_size: 4}\n"
TEXT_MT += "stage1: {model: mt, preset: tiny}\n"


def test_relative_paths_are_read_from_the_config_files_folder(tmp_path, monkeypatch):
    config = layout(
        tmp_path,
        "general: {model_type: S2T, dataset_type: text, dataset_path: data/s.txt, reference_path: ../r.txt,"
        " dump_speech_waveforms_dir: out}\n"
        "stage1: {path: {onnxruntime: m.onnx, torch: /abs/m.pt}, model_dir: ~/x, inputs: [{name: x, source: audio}],"
        " outputs: [y]}\n",
    )
    monkeypatch.chdir(tmp_path / "b")
    cfg = load_config(Path("..") / "a" / "c.yaml")
    folder = tmp_path / "a"
    assert cfg.general.dataset_path == str(folder / "data" / "s.txt")
    assert cfg.general.reference_path == str(tmp_path / "r.txt")  # `..` folded
    assert cfg.general.dump_speech_waveforms_dir == str(folder / "out")
    assert cfg.stages[0].path == {"onnxruntime": str(folder / "m.onnx"), "torch": "/abs/m.pt"}
    assert cfg.stages[0].model_dir == str(Path.home() / "x")
    assert config.exists() and load_dataset(cfg.general, "mt")[0].text == "sentence number 0"


def test_command_line_paths_are_read_from_the_working_folder(tmp_path, monkeypatch):
    config = layout(tmp_path, TEXT_MT)
    monkeypatch.chdir(tmp_path / "b")
    cfg = load_config(config, {"dataset_path": "mine.txt"}, sets=["general.reference_path=refs.txt"])
    assert cfg.general.dataset_path == "mine.txt" and cfg.general.reference_path == "refs.txt"
    # A config written for a child process (compare, optimize) names them absolute: the child reads its own folder.
    written = write_config(cfg.to_dict(), tmp_path / "child" / "c.yaml")
    child = load_config(written)
    assert child.general.dataset_path == str(tmp_path / "b" / "mine.txt")
    assert child.general.reference_path == str(tmp_path / "b" / "refs.txt")


def test_a_missing_relative_path_names_key_config_and_folder(tmp_path, monkeypatch):
    config = layout(tmp_path, TEXT_MT.replace("data/s.txt", "../librivox/test.txt"))
    monkeypatch.chdir(tmp_path / "b")
    result = CliRunner().invoke(main, ["config", "check", "../a/c.yaml"])
    assert result.exit_code == 2
    assert result.output == (
        f"Error: ../a/c.yaml:1: general.dataset_path = '../librivox/test.txt': {tmp_path}/librivox/test.txt not "
        f"found; a relative path in a config is read from the config file's folder, {config.parent}\n"
    )
    # replaced on the command line, the file's path is not checked (the given one is)
    (tmp_path / "b" / "mine.txt").write_text("one\n")
    check_config(load_config(config, {"dataset_path": "mine.txt"}))
    # from stdin: the working folder
    result = CliRunner().invoke(main, ["config", "check", "-"], input=config.read_text())
    assert result.exit_code == 2 and "is read from the working folder (a config read from stdin has no folder " in (
        result.output
    )
    assert f"{tmp_path / 'b'}\n" in result.output and "<stdin>:1: general.dataset_path" in result.output


def test_parse_config_without_a_folder_leaves_paths_as_written():
    cfg = parse_config("general: {dataset_type: text, dataset_path: s.txt}\nstage1: {model: mt}\n", "<t>")
    assert cfg.general.dataset_path == "s.txt" and cfg.written_paths == ()


def test_a_users_dataset_path_is_not_cut_by_the_files_dataset_size(tmp_path):
    config = layout(tmp_path, TEXT_MT)
    assert load_config(config).general.dataset_size == 4  # the file's own dataset: its size
    assert load_config(config, {"dataset_path": "x.txt"}).general.dataset_size is None
    assert load_config(config, sets=["general.dataset_path=x.txt"]).general.dataset_size is None
    assert load_config(config, {"dataset_path": "x.txt", "dataset_size": 2}).general.dataset_size == 2
    assert load_config(config, {"dataset_path": "x.txt"}, sets=["general.dataset_size=3"]).general.dataset_size == 3


def test_a_cut_dataset_is_said_in_a_note(tmp_path):
    general = load_config(layout(tmp_path, TEXT_MT)).general
    used = len(load_dataset(general, "mt"))
    assert size_note(general, used) == (
        "using 4 of 8 samples of s.txt (dataset_size 4; --dataset-size N for another count)"
    )
    assert size_note(attrs.evolve(general, dataset_size=8), 8) is None
    assert size_note(attrs.evolve(general, dataset_size=None), 8) is None
    assert size_note(attrs.evolve(general, dataset_type="generated", dataset_path=None), 4) is None


def test_a_tts_on_token_ids_reads_its_references(tmp_path):
    """An .npz of token ids is a TTS dataset: its references are counted against it, not refused as s2t input."""
    np.savez(tmp_path / "t.npz", s0=np.array([5, 6, 7], dtype=np.int64), s1=np.array([8, 9], dtype=np.int64))
    (tmp_path / "t.ref").write_text("hello world\nhow are you\n")
    config = tmp_path / "tts.yaml"
    config.write_text(
        "general: {model_type: TTS, dataset_type: npz, dataset_path: t.npz, reference_path: t.ref}\n"
        "stage1: {model: tts, preset: tiny}\n"
    )
    cfg = load_config(config)
    check_config(cfg)
    samples = load_dataset(cfg.general, cfg.roles[0])
    assert [s.kind for s in samples] == ["tokens", "tokens"]
    references = load_references(cfg.general, samples, cfg.roles)
    assert references is not None and list(references.texts.values()) == ["hello world", "how are you"]
    short = tmp_path / "short.ref"
    short.write_text("one line\n")
    with pytest.raises(DatasetError, match="1 line"):  # a reference file that does not fit: refused
        load_references(attrs.evolve(cfg.general, reference_path=str(short)), samples, cfg.roles)
