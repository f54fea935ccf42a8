"""The drop-ins are exactly as lenient as the PaddleSpeech modules they replace, key by key: each row of ``ROWS`` is
an option string, what PaddleSpeech's s2t and t2s ``profiler.py`` do with it (read from their source: s2t hands
state/tracer_option to paddle's legacy ``start_profiler`` and sorted_key/profile_path to ``stop_profiler``, which
check them; t2s stores state, sorted_key, tracer_option and profile_path and passes none of them on), and what
both drop-ins do. Each row runs a short torch loop through both drop-ins. The drop-ins may stop a loop only where
the original stops it.

docs/profiler.md's leniency table is ``markdown()``; ``python -m tests.test_profiler_leniency`` rewrites it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import attrs
import pytest

from speechperf.adapters import paddlespeech as s2t
from speechperf.adapters import paddlespeech_t2s as t2s
from tests.paddlespeech_originals import run_original

torch = pytest.importorskip("torch")

RUNS, STOPS = "runs", "ValueError"
DOCS = Path(__file__).resolve().parents[1] / "docs" / "profiler.md"
BEGIN, END = "<!-- leniency table: tests/test_profiler_leniency.py -->", "<!-- end of the leniency table -->"


@attrs.frozen
class Row:
    text: str
    s2t: str  # PaddleSpeech's s2t module
    t2s: str  # PaddleSpeech's t2s module
    dropin: dict  # flavour -> RUNS or STOPS
    reads: dict = attrs.field(factory=dict)  # flavour -> {key: value the drop-in uses}
    why: str = ""


def both(outcome):
    return {"s2t": outcome, "t2s": outcome}


ROWS = (
    Row("state=cpu", "ValueError at batch_range[0] (paddle's start_profiler)", "runs: state unused",
        {"s2t": STOPS, "t2s": RUNS}, {"t2s": {"state": "CPU"}}, "s2t: did you mean 'CPU'; t2s: read as CPU, a warning"),
    Row("state=gpu", "ValueError at batch_range[0]", "runs: state unused",
        {"s2t": STOPS, "t2s": RUNS}, {"t2s": {"state": "GPU"}}, "t2s: read as GPU (CPU used, a warning, without one)"),
    Row("state=GPU", "runs", "runs: state unused", both(RUNS), {"s2t": {"state": "GPU"}, "t2s": {"state": "GPU"}},
        "no GPU: CPU is profiled, one warning (none with timer_only)"),
    Row("sorted_key=avg", "ValueError at batch_range[1] (paddle's stop_profiler)", "runs: sorted_key unused",
        {"s2t": STOPS, "t2s": RUNS}, {"t2s": {"sorted_key": "total"}}, "did you mean 'ave'; t2s: total, a warning"),
    Row("sorted_key=default", "runs (paddle takes 'default')", "runs: sorted_key unused", both(RUNS),
        {"s2t": {"sorted_key": "total"}, "t2s": {"sorted_key": "total"}}, "total, a warning"),
    Row("tracer_option=opdetail", "ValueError at batch_range[0]", "runs: tracer_option unused",
        {"s2t": STOPS, "t2s": RUNS}, {"t2s": {"tracer_option": "OpDetail"}}, "t2s: read as OpDetail, a warning"),
    Row("profile_path=", "runs (paddle writes no file)", "runs: profile_path unused", both(RUNS),
        {"s2t": {"profile_path": "/tmp/profile"}, "t2s": {"profile_path": "profiler_log/"}},
        "the default path, a warning"),
    Row("batch_range=[10,200000]", "runs, never stops", "runs, never stops", both(RUNS),
        {"s2t": {"batch_range": (10, 200000)}, "t2s": {"batch_range": (10, 200000)}},
        "runs; what was recorded is printed as the loop ends"),
    Row("batch_range=[20,10]", "runs with [10, 20]", "runs with [10, 20]", both(RUNS),
        {"s2t": {"batch_range": (10, 20)}, "t2s": {"batch_range": (10, 20)}}, "[10, 20], a warning"),
    Row("batch_range=[a,20]", "ValueError (int())", "ValueError (int())", both(STOPS)),
    Row("batch_range", "ValueError (no '=')", "ValueError (no '=')", both(STOPS)),
    Row("foo=1", "runs: ignored", "runs: ignored", both(RUNS), {}, "ignored, a warning with a did-you-mean"),
    Row("state=CPU; state=All", "runs: the last wins", "runs: the last wins", both(RUNS),
        {"s2t": {"state": "All"}, "t2s": {"state": "All"}}, "the last wins, a warning"),
    Row("exit_on_finished=maybe", "runs: false", "runs: false", both(RUNS),
        {"s2t": {"exit_on_finished": False}, "t2s": {"exit_on_finished": False}}, "false, a warning"),
    Row("timer_only=true", "runs: ignored (no such key)", "runs: operators profiled (only 'True' is true)",
        both(RUNS), {"s2t": {"timer_only": True}, "t2s": {"timer_only": True}},
        "timer only; a warning: s2t never uses it, t2s would read it as false"),
    Row("", "runs: the defaults", "ValueError (the empty item has no '=')", {"s2t": RUNS, "t2s": STOPS}, {},
        "s2t: the defaults; t2s: the original's reason"),
    Row("batch_range=[1,3];", "ValueError (the empty item after ';')", "ValueError (the empty item after ';')",
        both(STOPS), {}, "the original's reason"),
    Row("=5", "runs: the empty key ignored", "runs: the empty key ignored", both(RUNS), {}, "ignored, a warning"),
    Row(";", "ValueError (empty items)", "ValueError (empty items)", both(STOPS), {}, "the original's reason"),
    Row(" ", "ValueError (spaces removed: an empty item)", "ValueError (spaces removed: an empty item)", both(STOPS),
        {}, "the original's reason"),
    Row("state=CPU;;batch_range=[1,2]", "ValueError (the empty item between ';;')", "ValueError (the empty item "
        "between ';;')", both(STOPS), {}, "the original's reason"),
    Row("a=1=2", "ValueError (too many values to unpack)", "ValueError (too many values to unpack)", both(STOPS), {},
        "the original's reason"),
    Row("profile_path=a=b", "ValueError (too many values to unpack)", "ValueError (too many values to unpack)",
        both(STOPS), {}, "the original's reason"),
)  # fmt: skip

MODULES = {"s2t": s2t, "t2s": t2s}
STEPS = 25  # past the default range's end (20)


def run_loop(module, text: str, tmp_path: Path) -> str:
    """A short torch training loop calling the drop-in after each step: RUNS when it ends (or exits with status 0
    at the range's end, as PaddleSpeech does), STOPS on a ValueError."""
    module.reset_profiler_step()
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    try:
        for _ in range(STEPS):
            model(torch.ones(2, 4)).sum().backward()
            optimizer.step()
            module.add_profiler_step(text)
    except ValueError:
        return STOPS
    except SystemExit as exc:
        assert exc.code == 0
    return RUNS


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # t2s writes profiler_log/ in the working directory
    yield
    for module in MODULES.values():
        module.reset_profiler_step()


@pytest.mark.parametrize("flavour", ["s2t", "t2s"])
@pytest.mark.parametrize("row", ROWS, ids=[r.text or "empty" for r in ROWS])
def test_row(row, flavour, tmp_path):
    module = MODULES[flavour]
    text = row.text
    if "profile_path" not in text and flavour == "s2t" and row.dropin[flavour] == RUNS:
        # the row's own keys only; keep the default /tmp/profile out of the test (the t2s default is relative)
        text = f"{text}; profile_path={tmp_path}/p" if text else f"profile_path={tmp_path}/p"
    assert run_loop(module, text, tmp_path) == row.dropin[flavour]
    if row.dropin[flavour] == RUNS:
        options = module.current_profiler().options
        for key, value in row.reads.get(flavour, {}).items():
            assert getattr(options, key) == value, key


@pytest.mark.parametrize("row", ROWS, ids=[r.text or "empty" for r in ROWS])
def test_a_dropin_stops_only_where_paddlespeech_stops(row):
    for flavour in MODULES:
        stops = run_original(flavour, row.text).stops  # PaddleSpeech's own module (tests/paddlespeech_originals.py)
        assert getattr(row, flavour).startswith("ValueError") == stops, (row.text, flavour)
        assert (row.dropin[flavour] == STOPS) == stops, (row.text, flavour)


def markdown() -> str:
    lines = [
        "| option string | PaddleSpeech s2t | PaddleSpeech t2s | s2t drop-in | t2s drop-in | the drop-ins say |",
        "|---|---|---|---|---|---|",
    ]
    for r in ROWS:
        cells = [f"`{r.text}`" if r.text else '`""`', r.s2t, r.t2s, r.dropin["s2t"], r.dropin["t2s"], r.why]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def test_docs_table_is_the_tests_rows():
    text = DOCS.read_text()
    assert f"{BEGIN}\n{markdown()}\n{END}" in text, "run: python -m tests.test_profiler_leniency"


if __name__ == "__main__":
    text = DOCS.read_text()
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    if not rest:
        sys.exit(f"{DOCS}: no {BEGIN} marker")
    DOCS.write_text(f"{head}{BEGIN}\n{markdown()}\n{END}{tail}")
