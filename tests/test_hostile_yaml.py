"""Issue 18, family 4: the YAML loader, through ``speechperf config check`` and ``bench`` as a user runs them. Keys
that are not names, an alias bomb, a recursive alias and a huge integer are one line and exit 2, at once; a huge
value is cut in the message; merge keys work, with ``x-`` top-level keys holding the anchors."""

from __future__ import annotations

import subprocess
import sys

import pytest
from click.testing import CliRunner

from speechperf.cli import main


def laughs(levels: int = 9) -> str:
    """Ten lines that stand for 9**9 (387 million) strings: PyYAML builds them as shared lists in a millisecond."""
    parts = ['&a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi"[: levels - 1], strict=False):
        parts.append(f"&{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "general:\n  model_type: [" + ", ".join(parts) + "]\n"


BAD = {
    "int key": ("general: {1: 2}\n", ":1: key '1' is an integer; keys are names"),
    "null key": ("general: {null: 2}\n", "key 'null' is null"),
    "bool key": ("general:\n  yes: 2\n", ":2: key 'yes' is a boolean"),
    "top-level int key": ("1: {model: s2t}\n", "key '1' is an integer"),
    "complex key": ("general:\n  ? [a, b]\n  : 1\n", ":2: a key is a list (a YAML complex key"),
    "alias bomb": (laughs(), "expands to more than 100,000 values through its aliases"),
    "recursive alias": ("general:\n  meters: &a [runtime, *a]\n", "an alias refers to the value that holds it"),
    "huge integer": ("general:\n  seed: " + "9" * 5000 + "\n", ":2: an integer of 5000 digits"),
    "nested 5000 deep": ("general: " + "[" * 5000 + "]" * 5000 + "\n", ":1: lists and mappings nested more than 100"),
    "merge of a scalar": ("general:\n  <<: 5\n", "not valid YAML: expected a mapping or list of mappings for merging"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_hostile_yaml_is_one_line_and_exit_2(name, tmp_path):
    text, words = BAD[name]
    config = tmp_path / "c.yaml"
    config.write_text(text)
    for args in (["config", "check", str(config)], ["bench", "-b", "onnxruntime", "--config", str(config)]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2, (args, result.output)
        assert isinstance(result.exception, SystemExit) and "Traceback" not in result.output
        lines = [line for line in result.output.splitlines() if line.startswith("Error:")]
        assert len(lines) == 1 and words in lines[0], result.output
        assert str(config) in lines[0]


def test_an_alias_bomb_on_the_command_line_is_refused_in_a_second(tmp_path):
    # --set values are YAML too, read by the same reader; a subprocess with a timeout: a hang fails, not stalls
    done = subprocess.run(
        [sys.executable, "-m", "speechperf", "config", "check", "-"],
        input=laughs(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "<stdin>:2: this value expands to more than 100,000" in done.stderr
    bomb = laughs().split("model_type: ", 1)[1].strip()
    result = CliRunner().invoke(main, ["bench", "-b", "onnxruntime", "--set", f"general.meters={bomb}"])
    assert result.exit_code == 2 and "--set general.meters:1: this value expands" in result.output, result.output


def test_a_huge_value_is_cut_in_the_error_line(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("general:\n  model_type: " + "x" * 1_000_000 + "\n")
    result = CliRunner().invoke(main, ["config", "check", str(config)])
    assert result.exit_code == 2
    line = result.output.strip().splitlines()[-1]
    assert line.startswith(f"Error: {config}:2: general.model_type = 'xxx") and "allowed:" in line
    assert len(line) < 1000, len(line)


def test_merge_keys_work_and_x_keys_hold_the_anchors(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(
        "x-tiny: &tiny {model: s2t, preset: tiny, beam: 1}\n"
        "general: {model_type: S2T}\n"
        "stage1:\n  <<: *tiny\n  beam: 2\n"
    )
    result = CliRunner().invoke(main, ["config", "show", str(config)])
    assert result.exit_code == 0, result.output
    import yaml

    stage = yaml.safe_load(result.output)["stage1"]
    assert (stage["model"], stage["preset"], stage["beam"]) == ("s2t", "tiny", 2)  # its own key wins the merge
    assert "x-tiny" not in yaml.safe_load(result.output)
    duplicate = tmp_path / "d.yaml"
    duplicate.write_text("general: {model_type: S2T}\nstage1:\n  <<: {model: s2t}\n  beam: 1\n  beam: 2\n")
    result = CliRunner().invoke(main, ["config", "check", str(duplicate)])
    assert result.exit_code == 2 and ":5: duplicate key 'beam' (first at line 4)" in result.output
