"""``speechperf history`` writes its listing as a ``history`` document (``-o``, ``--csv``, ``--markdown``), and
``speechperf show`` of it prints the same listing and writes the same files; the plot of ``--plot`` is drawn again
from the points the document keeps (``show --html``). Over a temporary store of two loadgen runs."""

from __future__ import annotations

import json

from tests.show_again import assert_shown_again, export_args, invoke
from tests.test_store import _loadgen_document


def test_history_listing_and_plot_points_are_shown_again(tmp_path, monkeypatch):
    from speechperf.exports import Exports
    from speechperf.store.keep import Keep

    monkeypatch.chdir(tmp_path)  # in no git work tree
    store = tmp_path / "s.sqlite"
    for per_s, p99 in ((40.0, 30.0), (42.5, 28.0)):
        Exports(keep=Keep(store)).check().finish(_loadgen_document(per_s, p99), 0)
    done = invoke(
        "history", "--store", str(store), "--plot", "p99_ms", *export_args(tmp_path / "run"), "--html", "run.html"
    )
    assert done.exit_code == 0, done.output
    assert "2 run(s)" in done.stdout and "Offline 42.500 (samples_per_s)" in done.stdout
    doc = json.loads((tmp_path / "run.json").read_text())
    assert doc["kind"] == "history" and [r["id"] for r in doc["rows"]] == [2, 1]
    assert {name: [p[2] for p in points] for name, points in doc["series"].items()} == {
        "onnxruntime Offline": [30.0, 28.0]
    }
    assert (tmp_path / "run.csv").read_text().splitlines()[0] == "id,time,kind,model,config,backends,commit,headline"
    assert (tmp_path / "run.html").read_text().count("<img") == 1
    assert len(json.loads((tmp_path / "run.json").read_text())["rows"]) == 2
    assert_shown_again(done.stdout, tmp_path / "run", ["run.json"], "--html", "again.html")
    assert (tmp_path / "again.html").read_text().count("<img") == 1  # the plot, drawn from the document's points
    # a listing is no run: history stores nothing
    assert invoke("history", "--store", str(store), "--limit", "1").stdout.count("loadgen") == 1
    assert "2 run(s)" in invoke("history", "--store", str(store)).stdout
