"""``compare --scenario``: the options that go with it (and those that do not), parsed into the children's loadgen
options; the run that ranks the cells by a LoadGen scenario is ``speechperf.compare.run``'s."""

from __future__ import annotations

import os

import attrs
import click
from click.core import ParameterSource

from speechperf.errors import SpeechperfError

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
    "user_conf",
    "audit_conf",
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


def _absolute(path: str | None) -> str | None:
    return None if path is None else os.path.abspath(path)


def scenario_options(params: dict, threads):
    """The children's loadgen options, checked as ``speechperf loadgen`` checks them, at every thread count."""
    from speechperf.compare.serving import ServingOptions
    from speechperf.extras import require
    from speechperf.loadgen.settings import MLPERF_PERCENTILE, ScenarioOptions, check_options, user_conf_settings

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
        user_conf=_absolute(params["user_conf"]),
        audit_conf=_absolute(params["audit_conf"]),
    )
    for n in threads:
        check_options(attrs.evolve(checked, threads=n))
    user_conf_settings(checked, "*")  # a file LoadGen cannot parse fails here, not in every child
    shared = {
        field.name: getattr(checked, field.name)
        for field in attrs.fields(ServingOptions)
        if hasattr(checked, field.name)
    }
    return ServingOptions(**shared, budget_s=params["budget"], mlperf_percentile=MLPERF_PERCENTILE[checked.scenario])
