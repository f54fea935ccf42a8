"""``speechperf show`` of a ``diff`` document prints what ``speechperf diff`` printed and writes its Markdown and CSV
again, from the JSON and from the stored run; ``--store`` and ``--html`` leave diff's exit code as it was.

The fast tests diff documents with known figures (tests/test_diff_runs.py's) and version 1 files (a serving diff);
the slow one diffs two real bench runs of the tiny S2T on onnxruntime (tests/test_diff_cli.py's recipe)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.show_again import assert_shown_from_json_and_store, export_args, file, invoke, speechperf
from tests.test_diff_cli import BENCH
from tests.test_diff_runs import FAST, QUIET, SLOW, bench_doc

DATA = Path(__file__).parent / "data" / "v1"


def assert_diff_shown_again(folder: Path, stdout: str, store: Path) -> None:
    """``show`` on the run's JSON and on its stored id: the same stdout, Markdown and CSV, and the diff's rows."""
    rows = json.loads((folder / "run.json").read_text())["rows"]
    for again in assert_shown_from_json_and_store(stdout, folder / "run", store):
        doc = json.loads(file(again, "json").read_text())
        assert doc["kind"] == "diff" and doc["rows"] == rows


def test_a_gated_regression_is_shown_again_and_its_exit_code_survives_store_and_html(tmp_path):
    base = bench_doc(tmp_path / "a.json", [FAST, [10.1, 10.3, 9.9, 10.0], [9.9, 10.0, 9.7, 10.2]], QUIET)
    new = bench_doc(tmp_path / "b.json", [SLOW, [20.2, 20.1, 19.9, 20.0], [19.8, 20.5, 19.7, 20.1]], QUIET)
    plain = invoke("diff", str(base), str(new), "--fail-above", "5%", "--no-store")
    store = tmp_path / "s.sqlite"
    kept = invoke(
        "diff", str(base), str(new), "--fail-above", "5%", *export_args(tmp_path / "run"), "--store", str(store),
        "--html", str(tmp_path / "d.html"),
    )  # fmt: skip
    assert plain.exit_code == kept.exit_code == 1, kept.output
    assert "REGRESSION" in kept.stdout and kept.stdout == plain.stdout
    doc = json.loads((tmp_path / "run.json").read_text())
    assert doc["exit_code"] == 1 and {r["verdict"] for r in doc["rows"]} == {"REGRESSION"}
    page = (tmp_path / "d.html").read_text()
    assert "REGRESSION" in page and "statistical unit: one process run" in page
    assert_diff_shown_again(tmp_path, kept.stdout, store)


def test_a_serving_diff_of_version_1_files_is_shown_again(tmp_path):
    serving = str(DATA / "serving.json")
    store = tmp_path / "s.sqlite"
    done = invoke("diff", serving, serving, "--fail-above", "5%", *export_args(tmp_path / "run"), "--store", str(store))
    assert done.exit_code == 0, done.output
    assert "figure" in done.stdout and "better" in done.stdout and "the ratio alone decides" in done.stdout
    rows = json.loads((tmp_path / "run.json").read_text())["rows"]
    assert all(line["new_over_base"] == 1.0 for row in rows for line in row["figures"])
    assert_diff_shown_again(tmp_path, done.stdout, store)


@pytest.mark.slow
def test_two_real_bench_runs_diffed_are_shown_again(tmp_path):
    base, new = tmp_path / "base.json", tmp_path / "new.json"
    for path in (base, new):
        speechperf(*BENCH, "-o", path)
    store = tmp_path / "s.sqlite"
    done = invoke(
        "diff", str(base), str(new), "--fail-above", "5%", *export_args(tmp_path / "run"), "--store", str(store)
    )
    assert done.exit_code == 0, done.output
    assert "stage1 s2t" in done.stdout and "no significance test: one process per side" in done.stdout
    assert_diff_shown_again(tmp_path, done.stdout, store)


#: The row fields a diff document had before its rows held the console's figures.
OLDER_ROW = ("unit", "metric", "base", "new", "new_over_base", "p_value", "tested_over", "base_units", "new_units")


def test_a_diff_document_written_before_the_console_figures_is_shown(tmp_path):
    """A diff JSON written by the speechperf before this one (no means, σ or figure lines in its rows) is shown: the
    gated figure, its ratio and the verdict, the figures it lacks as '-'."""
    base = bench_doc(tmp_path / "a.json", [FAST, [10.1, 10.3, 9.9, 10.0], [9.9, 10.0, 9.7, 10.2]], QUIET)
    new = bench_doc(tmp_path / "b.json", [SLOW, [20.2, 20.1, 19.9, 20.0], [19.8, 20.5, 19.7, 20.1]], QUIET)
    serving = str(DATA / "serving.json")
    for name, pair in (("timing", (base, new)), ("serving", (serving, serving))):
        done = invoke("diff", *map(str, pair), "--fail-above", "5%", "-o", str(tmp_path / f"{name}.json"), "--no-store")
        data = json.loads((tmp_path / f"{name}.json").read_text())
        data["rows"] = [{k: row[k] for k in (*OLDER_ROW, "untested", "verdict")} for row in data["rows"]]
        (tmp_path / f"{name}-older.json").write_text(json.dumps(data))
        shown = invoke("show", str(tmp_path / f"{name}-older.json"))
        assert shown.exit_code == 0, shown.output
        now, older = done.stdout.splitlines(), shown.stdout.splitlines()
        heads = [next(line for line in lines if line.startswith("┃")) for lines in (older, now)]
        assert [[c.strip() for c in head.split("┃")] for head in heads] == [
            [c.strip() for c in heads[1].split("┃")]
        ] * 2
        assert older[0].strip() == now[0].strip()  # the title
        assert older[-1] == now[-1]  # the gate line
        for row in data["rows"]:
            line = next(line for line in older if f"│ {row['unit']} " in line)
            assert row["verdict"] in line and f"{row['new_over_base']:.2f}" in line
