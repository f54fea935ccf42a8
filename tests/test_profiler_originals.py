"""The drop-ins against PaddleSpeech's own modules, string by string: every option string of the trial set is run
through PaddleSpeech's s2t and t2s ``add_profiler_step`` (tests/paddlespeech_originals.py: their code, unchanged,
on stand-ins for paddle's profiler calls) and read by both drop-ins. A drop-in stops (a ``ValueError``) exactly
where its original stops; where it runs, each option the original uses has the original's value, or a warning line
of the drop-in names that option (a difference by design, said at run time); an option the original never uses is
named in a warning line when given. ``python tests/test_profiler_originals.py`` prints the table of outcomes.
Framework-free and fast (no loop runs a framework here; tests/test_profiler_leniency.py runs torch loops).
"""

from __future__ import annotations

import logging

import pytest

from speechperf.adapters import paddlespeech as s2t
from speechperf.adapters import paddlespeech_t2s as t2s
from tests.paddlespeech_originals import run_original

TIPC = (
    # PaddleSpeech's test_tipc/configs/{conformer,pwgan}/train_infer_python.txt, and benchmark_train.sh's
    # PROFILING_TIMER_ONLY=False, which appends ";timer_only=False"
    "batch_range=[10,35];state=GPU;tracer_option=Default;profile_path=model.profile",
    "batch_range=[10,35];state=GPU;tracer_option=Default;profile_path=model.profile;timer_only=False",
    # the modules' docstring examples
    "profile_path=model.profile",
    "batch_range=[50, 60]; profile_path=model.profile",
    "batch_range=[50, 60]; tracer_option=OpDetail; profile_path=model.profile",
)
EDGES = (
    # docs/profiler.md's documented edge cases
    "",
    "state=cpu",
    "state=gpu",
    "state=GPU",
    "state=",
    "sorted_key=avg",
    "sorted_key=default",
    "tracer_option=opdetail",
    "profile_path=",
    "profile_path=/tmp/my runs/p",
    "batch_range=[10,200000]",
    "batch_range=[20,10]",
    "batch_range=[-1,5]",
    "batch_range=[5]",
    "batch_range=[10,20,30]",
    "batch_range=[a,20]",
    "batch_range=[1.5,20]",
    "batch_range",
    "foo=1",
    "state=CPU; state=All",
    "exit_on_finished=maybe",
    "exit_on_finished=false",
    "timer_only=true",
    "timer_only=True",
    "timer_only=2",
    "batch_range=[1,3];",
    # the trial's
    "=5",
    ";",
    " ",
    "a=1=2",
    "profile_path=a=b",
    "state=CPU;;batch_range=[1,2]",
)
TRIAL = TIPC + EDGES
MODULES = {"s2t": s2t, "t2s": t2s}
#: speechperf's own keys: PaddleSpeech has none of them, and a user gives them to the drop-in on purpose.
OWN = ("api", "timer_window", "backend")


def read_dropin(flavour: str, text: str):
    """(options, None) as the drop-in reads ``text`` at its first call, or (None, the ValueError's message)."""
    try:
        return MODULES[flavour]._hook.parse(text), None
    except ValueError as exc:
        return None, str(exc)


@pytest.mark.parametrize("flavour", ["s2t", "t2s"])
@pytest.mark.parametrize("text", TRIAL, ids=[repr(t) for t in TRIAL])
def test_the_dropin_reads_the_string_as_its_original(flavour, text):
    original = run_original(flavour, text)
    options, error = read_dropin(flavour, text)
    assert (error is not None) == original.stops, (original, options, error)
    if original.stops:
        # the original's reason: its own ValueError, named (not a different complaint)
        reason = original.error.split(" (expected")[0]  # "not enough values to unpack (expected 2, got 1)"
        paddle_checks = ("The state must", "tracer option must", "The sorted_key must", "invalid literal for int")
        if not original.error.startswith(paddle_checks):
            assert reason in error, (original.error, error)
        return
    warned = " ".join(options.warnings)
    for key, value in original.uses.items():
        mine = getattr(options, key)
        if mine != value:
            assert f"{key}" in warned, f"{key}: PaddleSpeech's {flavour} uses {value!r}, the drop-in {mine!r}, silently"
    if not options.timer_only:  # the drop-in profiles operators: the keys of its profiler are used
        for key in options.given - set(original.uses) - set(OWN):
            assert key in warned, f"{key} is given and used here, PaddleSpeech's {flavour} never uses it: no line"


def test_the_trial_set_ends_as_the_issue_measured():
    """The rows the issue names, spelled out: what each original does, and the drop-ins the same."""
    assert not run_original("s2t", "=5").stops and not run_original("t2s", "=5").stops
    assert run_original("t2s", "=5").exited_at == 20  # t2s runs to its range's end and exits 0
    for text in (";", " ", "state=CPU;;batch_range=[1,2]", "profile_path=a=b", "a=1=2"):
        for flavour in MODULES:
            assert run_original(flavour, text).stops, (flavour, text)
            assert read_dropin(flavour, text)[1] is not None, (flavour, text)
    # t2s reads only the word True as true: "true" profiles operators there; the drop-in says it reads it otherwise
    assert run_original("t2s", "timer_only=true").uses["timer_only"] is False
    options, _ = read_dropin("t2s", "timer_only=true")
    assert options.timer_only is True
    assert any("PaddleSpeech's t2s reads only 'True' as true" in line for line in options.warnings)


def test_warning_lines_reach_stderr_at_the_first_call(caplog):
    with caplog.at_level(logging.WARNING, logger="speechperf"):
        t2s.ProfilerOptions("=5")
    assert [r.getMessage() for r in caplog.records] == [
        "profiler option '=5' has no key; it was ignored, as in PaddleSpeech"
    ]


def outcome_cell(stops: bool, error: str, exited_at=None, warnings=()) -> str:
    if stops:
        # the drop-ins name the original's reason in "(ValueError: ...)"; the originals' message is that reason
        inner = error.partition("(ValueError: ")[2].partition(")")[0]
        reason = f"{inner} ({error.split('; ')[0][:56]})" if inner else error[:60]
        return "ValueError: " + reason.replace("|", "\\|")
    cell = "runs" + (f", exits 0 at call {exited_at + 1}" if exited_at is not None else "")
    return cell + (f" ({len(warnings)} warning line{'s' * (len(warnings) != 1)})" if warnings else "")


def markdown() -> str:
    lines = [
        "| option string | PaddleSpeech s2t | PaddleSpeech t2s | s2t drop-in | t2s drop-in |",
        "|---|---|---|---|---|",
    ]
    for text in TRIAL:
        cells = [f"`{text!r}`"]
        for flavour in MODULES:
            o = run_original(flavour, text)
            cells.append(outcome_cell(o.stops, o.error, o.exited_at))
        for flavour in MODULES:
            options, error = read_dropin(flavour, text)
            cells.append(outcome_cell(error is not None, error or "", None, options.warnings if options else ()))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown())
