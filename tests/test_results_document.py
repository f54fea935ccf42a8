"""The one result document: its envelope, the versions it reads, the notes it keeps, and the exporters over it
(speechperf.results, speechperf.exports; docs/results.md)."""

from __future__ import annotations

import csv
import io
import json
import logging
from pathlib import Path

import pytest

from speechperf.exports import Exports
from speechperf.results import SCHEMA_VERSION, Document, DocumentError, loads, read
from speechperf.results.document import ENVELOPE
from speechperf.results.environment import LoadProbe
from speechperf.results.figures import shown
from speechperf.results.notes import collect


def test_the_envelope_comes_first_in_its_order_then_the_kinds_fields():
    doc = Document("bench", rows=[{"stage": "total", "mean_ms": 1.5}], body={"result": {"stages": []}})
    data = json.loads(doc.dumps())
    assert list(data)[: len(ENVELOPE)] == list(ENVELOPE)
    assert data["kind"] == "bench" and data["schema_version"] == SCHEMA_VERSION and data["result"] == {"stages": []}
    again = loads(doc.dumps())
    assert again.rows == doc.rows and again["result"] == {"stages": []} and again.kind == "bench"


def test_a_kinds_field_may_not_shadow_the_envelope():
    with pytest.raises(ValueError, match="rows"):
        Document("bench", body={"rows": []}).to_json()


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError):
        Document("benchmark")
    with pytest.raises(DocumentError, match="kind 'nope' is not a speechperf result document kind; known: bench"):
        loads(json.dumps({"kind": "nope", "schema_version": SCHEMA_VERSION}), "x.json")


def test_a_newer_schema_version_is_refused_in_one_line():
    data = {"kind": "bench", "schema_version": SCHEMA_VERSION + 1}
    with pytest.raises(DocumentError) as err:
        loads(json.dumps(data), "new.json")
    assert str(err.value) == (
        f"new.json: schema_version {SCHEMA_VERSION + 1} was written by a newer speechperf; this one reads 1 to "
        f"{SCHEMA_VERSION} (upgrade speechperf to read it)"
    )


@pytest.mark.parametrize("text", ["[1, 2]", '{"schema_version": "1"}', '{"a": 1}', "not json"])
def test_foreign_json_is_one_line_naming_the_file(text):
    with pytest.raises(DocumentError, match=r"^f\.json: not (a speechperf result document|JSON)"):
        loads(text, "f.json")


def test_a_version_1_bench_summary_reads_with_the_shared_names_and_fractions():
    v1 = {
        "schema_version": 1,
        "complete": True,
        "environment": {"backend": "torch"},
        "config": {"general": {}},
        "result": {"stages": []},
        "summary": [{"stage": "total", "runtime_mean_ms": 12.5, "runtime_p90_ms": 14.0, "wer": 6.2, "bleu": 40.1}],
        "length_fit": {},
    }
    doc = loads(json.dumps(v1))
    assert doc.kind == "bench" and doc.complete and doc.environment == {"backend": "torch"}
    assert doc.rows == [{"stage": "total", "mean_ms": 12.5, "p90_ms": 14.0, "wer": pytest.approx(0.062), "bleu": 40.1}]
    assert set(doc.body) == {"result", "length_fit"}


def test_read_refuses_a_kind_the_command_does_not_take(tmp_path):
    path = tmp_path / "o.json"
    Document("optimize").write(path)
    assert read(path).kind == "optimize"
    with pytest.raises(DocumentError, match="a optimize document; this command takes bench or compare documents"):
        read(path, kinds=("bench", "compare"))
    with pytest.raises(DocumentError, match="is a folder"):
        read(tmp_path)


def test_figures_show_fractions_as_percent_and_round():
    assert shown("wer", 0.0623) == "6.23%"
    assert shown("mean_ms", 1.8849999999999998) == "1.885"
    assert shown("mean_ms", None) == "-"
    assert shown("label", "x") == "x"


def test_notes_and_warnings_are_collected_whatever_the_console_level():
    logger = logging.getLogger("speechperf.some.module")
    parent = logging.getLogger("speechperf")
    was = parent.level
    parent.setLevel(logging.WARNING)  # as -q sets it
    try:
        with collect() as got:
            logger.info("note: %s runs", "two")
            logger.info("stage1: runtime done")  # progress: neither
            logger.warning("runtime is noisy")
            logger.warning("note: a first call costs +12%")  # logged as a warning: kept as one, without "note: "
    finally:
        parent.setLevel(was)
    assert got.notes == ["two runs"] and got.warnings == ["runtime is noisy", "a first call costs +12%"]
    assert parent.level == was


def test_exports_refuse_one_file_named_twice_before_any_work(tmp_path):
    same = tmp_path / "r.json"
    with pytest.raises(Exception, match="--csv .*r.json: the same file as --output"):
        Exports(json=same, csv=same).check()


def test_ctrl_c_keeps_every_export_of_what_was_measured(tmp_path):
    """The lifecycle (speechperf.lifecycle) writes the last document again, marked incomplete, and says where."""
    from speechperf.errors import Interrupted
    from speechperf.lifecycle import lifecycle

    exports = Exports(json=tmp_path / "r.json", csv=tmp_path / "r.csv", markdown=tmp_path / "r.md")
    doc = Document("optimize", rows=[{"variant": "fp32", "status": "baseline", "mean_ms": 3.25}], complete=True)
    with pytest.raises(Interrupted, match=r"what was measured is in .*r.json, .*r.csv, .*r.md"):
        with lifecycle(exports) as run:
            run.write(doc)
            raise KeyboardInterrupt
    assert read(tmp_path / "r.json").complete is False
    # each export as optimize's view writes it (speechperf.views.optimize): the CSV its columns, the Markdown its table
    rows = list(csv.DictReader(io.StringIO((tmp_path / "r.csv").read_text())))
    assert [(r["variant"], r["status"], r["mean_ms"], r["speedup"]) for r in rows] == [("fp32", "baseline", "3.25", "")]
    assert "| fp32 | baseline | - | 3.25 |" in (tmp_path / "r.md").read_text()


def test_the_load_probe_counts_this_process_as_its_own():
    probe = LoadProbe().start()
    total = sum(i * i for i in range(300_000))  # some CPU of our own
    seen = probe.stop()
    assert total > 0
    assert seen["busy_cores_own"] > 0 and seen["busy_cores_others"] >= 0
    assert seen["cpu_count"] >= 1 and seen["seconds"] > 0


def test_the_cli_records_its_command_line(tmp_path):
    from click.testing import CliRunner

    from speechperf.cli import main
    from speechperf.results.document import current_command

    missing = str(tmp_path / "missing.tsv")
    result = CliRunner().invoke(main, ["data", "stats", missing])
    assert result.exit_code == 2
    assert current_command() == ["speechperf", "data", "stats", missing]


@pytest.mark.parametrize("kind", ["bench", "compare"])
def test_a_version_2_document_reads_with_fractions_where_it_kept_percents(kind):
    """tests/data/v2: written by `speechperf bench` / `compare` at schema version 2 (docs/results.md, Versions)."""
    from speechperf.results.figures import V2_PERCENT

    path = Path(__file__).parent / "data" / "v2" / f"{kind}.json"
    raw = json.loads(path.read_text())
    doc = read(path, kinds=(kind,))
    assert raw["schema_version"] == 2 and doc.schema_version == 4
    assert any(old in row for row in raw["rows"] for old in V2_PERCENT)  # the fixture holds what is upgraded
    for before, after in zip(raw["rows"], doc.rows):
        for old, new in V2_PERCENT.items():
            assert old not in after
            if before.get(old) is not None:
                assert after[new] == pytest.approx(before[old] / 100)
    if kind == "compare":  # the nested roofline table too
        stage = next(iter(doc.to_json()["roofline"]["per_stage"].values()))
        assert all("pct_of_peak" not in row and "fraction_of_peak" in row for row in stage.values())
