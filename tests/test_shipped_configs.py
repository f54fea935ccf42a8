"""The shipped configs travel with the package: listed one line each, found by name by ``--config NAME`` from any
folder, each a config whose ``config show`` output checks from anywhere, and all of it from an installed wheel."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from speechperf.cli import main
from speechperf.config import shipped
from speechperf.data import shipped as shipped_files

REPO = Path(__file__).resolve().parents[1]
NAMES = sorted(p.stem for p in (REPO / "configs").glob("*.yaml"))


def test_the_checkout_finds_its_configs_folder():
    assert shipped_files.folder() == REPO / "configs" and shipped.names() == NAMES


def test_config_list_shows_every_shipped_config_on_one_line():
    result = CliRunner().invoke(main, ["config", "list"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert [line.split()[0] for line in lines] == NAMES
    by_name = {line.split()[0]: line for line in lines}
    assert "VAD: silero_vad - The real silero VAD" in by_name["VAD"]
    assert "S2T: whisper-tiny-en - Speech-to-text with a real model" in by_name["WhisperTinyEn"]
    assert "3StageS2ST: whisper-tiny-en + marian-tiny-en-pt + kokoro" in by_name["3StageS2ST-en-pt"]


def test_config_name_finds_a_shipped_config_unless_a_file_is_there(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert shipped.find("VAD") == REPO / "configs" / "VAD.yaml" == shipped.find("VAD.yaml")
    assert shipped.find("sub/VAD") == Path("sub/VAD")  # a path is never looked up by name
    shown = yaml.safe_load(CliRunner().invoke(main, ["config", "show", "WhisperTinyEn"]).output)
    assert shown["stage1"]["model"] == "whisper-tiny-en"
    Path("VAD").write_text("general: {model_type: MT}\nstage1: {model: mt}\n")  # the user's own file wins
    assert shipped.find("VAD") == Path("VAD")
    result = CliRunner().invoke(main, ["config", "check", "VAD"])
    assert result.output == "VAD: ok (MT, 1 stage(s))\n"
    result = CliRunner().invoke(main, ["bench", "-b", "onnxruntime", "--config", "nosuch", "--quiet"])
    assert result.exit_code == 2
    assert (
        result.output == "Error: config file not found: nosuch; nor is it a shipped config (`speechperf config list`)\n"
    )


@pytest.mark.parametrize("name", NAMES)
def test_config_show_checks_from_another_folder(name, tmp_path, monkeypatch):
    """`config show X | config check -` from any folder: show writes the paths absolute."""
    monkeypatch.chdir(tmp_path)
    shown = CliRunner().invoke(main, ["config", "show", str(REPO / "configs" / f"{name}.yaml")])
    assert shown.exit_code == 0, shown.output
    checked = CliRunner().invoke(main, ["config", "check", "-"], input=shown.output)
    assert checked.exit_code == 0 and checked.output.startswith("-: ok ("), checked.output


def _tracked_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=REPO, capture_output=True, text=True
    )
    if listed.returncode != 0:
        pytest.skip("not a git checkout: the source tree cannot be copied")
    return [f for f in listed.stdout.splitlines() if (REPO / f).is_file()]


@pytest.mark.slow
def test_a_wheel_ships_the_configs_and_runs_one_by_name(tmp_path):
    """Built from a copy of the tree (no stale build/), installed into a fresh venv outside the repo, with the repo
    off the path: `config list` and `bench --config VAD` work from the wheel's files alone."""
    source = tmp_path / "src"
    for name in _tracked_files():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_bytes((REPO / name).read_bytes())
    system = Path(sys.base_prefix) / "bin" / "python3"  # the interpreter the venvs are made from
    version = subprocess.run(
        [str(system), "-c", "import setuptools; print(setuptools.__version__)"], capture_output=True
    )
    if version.returncode != 0 or int(version.stdout.split(b".")[0]) < 77:  # pyproject's build-system requires it
        pytest.skip(f"{system} needs setuptools >= 77 to build the wheel offline (no build isolation)")
    build = [str(system), "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path)]
    subprocess.run([*build, str(source)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("speechperf-*.whl")
    venv.create(tmp_path / "venv", system_site_packages=True, with_pip=False)
    python = tmp_path / "venv" / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    pip = [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)]
    subprocess.run(pip, check=True, cwd=tmp_path, env=env, capture_output=True)
    speechperf = [str(python), "-m", "speechperf"]

    def run(*args: str) -> str:
        done = subprocess.run([*speechperf, *args], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout

    where = subprocess.run(
        [str(python), "-c", "import speechperf; print(speechperf.__file__)"], cwd=tmp_path, env=env, capture_output=True
    ).stdout.decode()
    assert where.startswith(str(tmp_path / "venv")), where  # the wheel's copy, not the checkout
    assert [line.split()[0] for line in run("config", "list").splitlines()] == NAMES
    shown = yaml.safe_load(run("config", "show", "MT-marian-en-pt"))
    assert shown["general"]["dataset_path"].startswith(str(tmp_path / "venv"))  # the wheel's smoke set
    assert Path(shown["general"]["dataset_path"]).is_file()
    out = tmp_path / "vad.json"
    run(
        "bench",
        "-b",
        "onnxruntime",
        "--config",
        "VAD",
        "--dataset-size",
        "1",
        "--warmup",
        "0",
        "--quiet",
        "--no-store",
        "--meters",
        "runtime",
        "--output",
        str(out),
    )
    assert '"model_type": "VAD"' in out.read_text()
