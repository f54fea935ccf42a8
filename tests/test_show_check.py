"""``speechperf show`` of a ``check`` document prints what ``speechperf check`` printed and writes its Markdown and
CSV again: the real check of the cheapest meter (runtime, --quick) on this machine."""

from __future__ import annotations

import json

from click.testing import CliRunner

from speechperf.cli import main


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def test_check_of_the_runtime_meter_is_shown_again(tmp_path):
    out = ["-o", str(tmp_path / "run.json"), "--markdown", str(tmp_path / "run.md"), "--csv", str(tmp_path / "run.csv")]
    done = invoke("check", "--quick", "--meters", "runtime", *out)
    doc = json.loads((tmp_path / "run.json").read_text())
    assert doc["kind"] == "check" and doc["meters"] == ["runtime"]
    # the exit code and the verdict line say the same; every row of the document is in the table
    verdict = doc["verdicts"]["runtime"]
    assert done.exit_code == (0 if verdict == "trustworthy" else 1), done.output
    assert done.stdout.rstrip().endswith(f"verdict: runtime: {verdict}")
    assert all(row["check"] in done.stdout for row in doc["rows"]) and doc["rows"]
    markdown = (tmp_path / "run.md").read_text()
    assert "| meter | check | measured | target | result |" in markdown and f"| runtime | {verdict} |" in markdown
    shown = invoke(
        "show",
        str(tmp_path / "run.json"),
        "--markdown",
        str(tmp_path / "again.md"),
        "--csv",
        str(tmp_path / "again.csv"),
    )
    assert shown.exit_code == 0, shown.output
    assert shown.stdout == done.stdout
    assert (tmp_path / "again.md").read_text() == markdown
    assert (tmp_path / "again.csv").read_text() == (tmp_path / "run.csv").read_text()
