"""``speechperf show`` of a ``check`` document prints what ``speechperf check`` printed and writes its Markdown and
CSV again: the real check of the cheapest meter (runtime, --quick) on this machine."""

from __future__ import annotations

import json

import pytest

from tests.show_again import assert_shown_again, export_args, invoke


@pytest.mark.slow  # the runtime check measures until its interval decides: 2-3 s of CPU on a loaded machine
def test_check_of_the_runtime_meter_is_shown_again(tmp_path):
    done = invoke("check", "--quick", "--meters", "runtime", *export_args(tmp_path / "run"))
    doc = json.loads((tmp_path / "run.json").read_text())
    assert doc["kind"] == "check" and doc["meters"] == ["runtime"]
    # the exit code and the verdict line say the same; every row of the document is in the table
    verdict = doc["verdicts"]["runtime"]
    assert done.exit_code == (0 if verdict == "trustworthy" else 1), done.output
    assert done.stdout.rstrip().endswith(f"verdict: runtime: {verdict}")
    assert all(row["check"] in done.stdout for row in doc["rows"]) and doc["rows"]
    markdown = (tmp_path / "run.md").read_text()
    assert "| meter | check | measured | target | result |" in markdown and f"| runtime | {verdict} |" in markdown
    assert_shown_again(done.stdout, tmp_path / "run", [tmp_path / "run.json"])
