"""``compare --scenario``: the options that go with it (and those that do not), and the run that ranks the cells by
a LoadGen scenario (``speechperf.compare.serving``); compare without --scenario never reaches this."""

from __future__ import annotations

import sys
from pathlib import Path

import attrs
import click
from click.core import ParameterSource

from speechperf.errors import Interrupted, SpeechperfError

#: compare's parameters that only --scenario uses (the loadgen options) ...
SCENARIO_PARAMS = (
    "target_qps",
    "target_latency_ms",
    "percentile",
    "duration",
    "min_queries",
    "samples_per_query",
    "budget",
    "instances",
)
#: ... and those of the bench comparison that a scenario's children do not take
BENCH_PARAMS = (
    "runs",
    "sweeps",
    "executor",
    "jobs",
    "repeat",
    "meters",
    "plot_path",
    "best",
    "best_budget",
    "best_runs",
)


def _flag(ctx: click.Context, name: str) -> str:
    param = next(p for p in ctx.command.params if p.name == name)
    return max(param.opts, key=len)


def check_scenario_use(ctx: click.Context, scenario: str | None) -> None:
    """One line for an option given where it does nothing: a loadgen option without --scenario, a bench one with it."""
    given = {name for name in ctx.params if ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE}
    if scenario is None:
        for name in SCENARIO_PARAMS:
            if name in given:
                raise SpeechperfError(
                    f"{_flag(ctx, name)}: needs --scenario (SingleStream, MultiStream, Server or Offline)"
                )
        return
    for name in BENCH_PARAMS:
        if name in given:
            raise SpeechperfError(
                f"{_flag(ctx, name)}: not used with --scenario {scenario}: each backend runs one `speechperf loadgen` "
                "child; drop it, or compare without --scenario"
            )
    if scenario == "Server" and "target_qps" in given:
        raise SpeechperfError(
            "--target-qps: compare --scenario Server searches each backend's peak rate; drop it "
            "(or run `speechperf loadgen --scenario Server --target-qps N` on one backend)"
        )
    if scenario != "Server" and "budget" in given:
        raise SpeechperfError(f"--budget: the peak search's, only with --scenario Server, not {scenario}")
    if scenario != "MultiStream" and "samples_per_query" in given:
        raise SpeechperfError(f"--samples-per-query: only with --scenario MultiStream, not {scenario}")


def scenario_options(params: dict, threads):
    """The children's loadgen options, checked as ``speechperf loadgen`` checks them, at every thread count."""
    from speechperf.compare.serving import ServingOptions
    from speechperf.extras import require
    from speechperf.loadgen.settings import MLPERF_PERCENTILE, ScenarioOptions, check_options

    require("mlperf_loadgen", "speechperf compare --scenario")
    checked = ScenarioOptions(
        scenario=params["scenario"],
        target_qps=params["target_qps"],
        target_latency_ms=params["target_latency_ms"],
        percentile=params["percentile"],
        duration_s=params["duration"],
        min_queries=params["min_queries"],
        samples_per_query=params["samples_per_query"],
        instances=params["instances"],
    )
    for n in threads:
        check_options(attrs.evolve(checked, threads=n))
    shared = {
        field.name: getattr(checked, field.name)
        for field in attrs.fields(ServingOptions)
        if hasattr(checked, field.name)
    }
    return ServingOptions(**shared, budget_s=params["budget"], mlperf_percentile=MLPERF_PERCENTILE[checked.scenario])


def run_scenario(opts, cells, workdir: Path, *, config, options, output, csv_path, md_path, timeout_s) -> int:
    """Each cell's loadgen child, one at a time; the exports rewritten after each; the ranking printed at the end.
    Exit 0 when every child finished, 1 when one failed (its row says why), 130 on Ctrl-C (the exports keep the
    rows so far, the interrupted child's partial one included)."""
    from speechperf.benchmark.report import write_json_atomic
    from speechperf.compare.serving import run_serving
    from speechperf.compare.serving_report import render, to_csv, to_json, to_markdown
    from speechperf.outputs import write_text_atomic

    print(f"compare: {len(cells)} cell(s), scenario {opts.scenario}, one loadgen child at a time", file=sys.stderr)
    print(f"compare: work folder {workdir}", file=sys.stderr)

    def write(rows, complete: bool) -> None:
        if output is not None:
            write_json_atomic(output, to_json(rows, opts, config, options, complete))
        if csv_path is not None:
            write_text_atomic(csv_path, to_csv(rows, opts), "--csv")
        if md_path is not None:
            write_text_atomic(md_path, to_markdown(rows, opts), "--markdown")

    try:
        rows = run_serving(cells, opts, workdir, timeout_s=timeout_s, on_row=lambda rows: write(rows, False))
    except KeyboardInterrupt:
        kept = [str(p) for p in (output, csv_path, md_path) if p is not None]
        where = f"what was measured is in {', '.join(kept)}; " if kept else ""
        raise Interrupted(f"{where}LoadGen's logs are in {workdir}") from None
    write(rows, True)
    click.echo(render(rows, opts), nl=False)
    return 0 if all(r.ok for r in rows) else 1
