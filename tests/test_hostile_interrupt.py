"""Issue 18, family 7: Ctrl-C in ``speechperf compare`` keeps what was measured in all three exports (JSON, CSV,
Markdown), as the README promises for exit code 130, not only the JSON."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys

import pytest

from tests.test_hostile_outputs import QUICK, vocoder_config


@pytest.mark.slow
def test_ctrl_c_in_compare_writes_json_csv_and_markdown_of_the_finished_runs(tmp_path):
    config = vocoder_config(tmp_path)
    out = {suffix: tmp_path / f"c.{suffix}" for suffix in ("json", "csv", "md")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "speechperf", "compare", "--config", str(config), "--backends", "onnxruntime"]
        + ["--runs", "50", "--meters", "runtime", *QUICK, "--workdir", str(tmp_path / "work")]
        + ["-o", str(out["json"]), "--csv", str(out["csv"]), "--markdown", str(out["md"])],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if "run 2: ok" in line:  # two runs measured, the third under way: Ctrl-C, as a user would press it
            proc.send_signal(signal.SIGINT)
            break
    rest = proc.communicate(timeout=120)[1]
    assert proc.returncode == 130, "".join(lines) + rest
    assert "Traceback" not in rest and "interrupted; what was measured is in" in rest, rest
    data = json.loads(out["json"].read_text())
    assert data["complete"] is False and 1 <= len([r for r in data["runs"] if r["ok"]]) < 50
    rows = list(csv.DictReader(out["csv"].open()))
    assert [r["cell"] for r in rows] == ["onnxruntime"], rows
    summary = data["rows"][0]
    assert int(rows[0]["runs_ok"]) == summary["runs_ok"] >= 1
    assert "onnxruntime" in out["md"].read_text() and out["md"].read_text().startswith("|")
