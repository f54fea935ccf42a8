"""The package-dir mapping keeps backends/, adapters/ and configs/ under speechperf.*; every package must be listed."""

import tomllib
from importlib.metadata import entry_points
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAPPING = {"speechperf": "speechperf", "backends": "speechperf.backends", "adapters": "speechperf.adapters"}


def test_every_package_is_listed_in_pyproject():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = set()
    for folder, prefix in MAPPING.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            on_disk.add(".".join((prefix, *rel)))
    # configs/ holds no code: it installs as speechperf/configs for its package data (the shipped configs)
    assert config["package-dir"]["speechperf.configs"] == "configs" and not list((ROOT / "configs").rglob("*.py"))
    assert on_disk | {"speechperf.configs"} == set(config["packages"])


def test_builtin_backends_register_through_the_entry_point_group():
    names = {ep.name: ep.value for ep in entry_points(group="speechperf.backends")}
    assert names["torch"] == "speechperf.backends.torch:TorchBackend"
    assert names["paddle"] == "speechperf.backends.paddle:PaddleBackend"
    assert names["onnxruntime"] == "speechperf.backends.onnxruntime:OnnxRuntimeBackend"


def test_readme_test_command_is_what_ci_runs():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    command = next(
        line.strip() for line in readme.splitlines() if "pytest" in line and line.strip().startswith("python")
    )
    assert command in ci


def test_ci_runs_the_fast_lane_first_and_fails_on_any_pytest_exit_but_0():
    ci = (ROOT / ".ci" / "run").read_text()
    lines = [line.strip() for line in ci.splitlines() if line.strip() and not line.strip().startswith("#")]
    assert "set -euo pipefail" in lines
    pytest_lines = [i for i, line in enumerate(lines) if "-m pytest" in line]
    lint = lines.index("bash .ci/lint .venv/bin")
    assert len(pytest_lines) == 2 and lint < pytest_lines[0] < pytest_lines[1]
    assert '-m "not slow"' in lines[pytest_lines[0]] and "-m" not in lines[pytest_lines[1]].split("pytest", 1)[1]
    # exit 5 (no test collected) and every other failure stop the script: no "|| true", no exit code let through
    assert not any("||" in lines[i] or "$?" in lines[i] for i in pytest_lines)


def test_the_version_is_pyprojects_read_through_the_installed_metadata():
    import speechperf

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert speechperf.__version__ == pyproject["version"]
    assert "version" not in pyproject.get("dynamic", [])
    from click.testing import CliRunner

    from speechperf.cli import main

    assert CliRunner().invoke(main, ["--version"]).output == f"speechperf, version {pyproject['version']}\n"


def test_requires_python_is_what_the_code_needs_and_all_holds_every_extra():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert pyproject["requires-python"] == ">=3.11"  # tomllib, and the pins in constraints.txt
    extras = pyproject["optional-dependencies"]
    (everything,) = extras["all"]
    named = set(everything.removeprefix("speechperf[").removesuffix("]").split(","))
    assert named == set(extras) - {"all", "test", "lint"}  # ray included: `all` means every optional feature
    # The test tools, and no feature (ray is in all).
    assert extras["test"] == ["pytest>=8", "pytest-xdist>=3.5", "speechperf[lint]"]
    core = " ".join(pyproject["dependencies"])
    assert not any(name in core for name in ("python-papi", "memory_profiler", "matplotlib", "ray"))
