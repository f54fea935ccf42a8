"""``speechperf loadgen``: MLPerf LoadGen's serving scenarios on one backend, over the stages bench builds."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from speechperf.cache import cache_dir
from speechperf.cli.config_options import config_from_args, config_options
from speechperf.cli.options import (
    MAX_QPS,
    FiniteFloatRange,
    budget_option,
    export_options,
    instances_option,
    keep_options,
    mlperf_conf_options,
    optional_backend_option,
    scenario_option,
    scenario_run_options,
    threads_option,
    wide_option,
)

if TYPE_CHECKING:
    from speechperf.loadgen.run import LoadgenOptions

#: loadgen's options that describe one LoadGen test (``ScenarioOptions``'s fields, as named there).
TEST = {
    "target_qps": "target_qps",
    "target_latency_ms": "target_latency_ms",
    "percentile": "percentile",
    "duration": "duration_s",
    "min_queries": "min_queries",
    "samples_per_query": "samples_per_query",
    "instances": "instances",
    "user_conf": "user_conf",
    "audit_conf": "audit_conf",
}


@click.command()
@optional_backend_option(help="A registered backend.")
@config_options(without="the tiny S2T on generated data")
@scenario_option()
@click.option("--accuracy", is_flag=True, help="LoadGen's AccuracyOnly mode: every sample once, scored for quality.")
@scenario_run_options()
@instances_option
@threads_option(default=1, help="Threads per instance.")
@click.option("--find-peak", is_flag=True, help="Server: bisect for the highest VALID Poisson rate.")
@budget_option()
@click.option(
    "--start-qps",
    type=FiniteFloatRange(min=0, min_open=True, max=MAX_QPS),
    default=None,
    help="With --find-peak: the first trial's rate (default: half the warm-up's capacity estimate); a rate known "
    "from an earlier search saves the trials that double up to it.",
)
@click.option(
    "--reference-quality",
    type=FiniteFloatRange(min=0, max=1e6),
    default=None,
    help="Accuracy mode: the fp32 reference's figure (WER in %, BLEU, agreement in %): adds MLPerf's 99% line.",
)
@click.option(
    "--log-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where LoadGen's own logs are kept (one folder per test); must be empty unless --force. "
    "Default: a fresh folder per run under <cache>/loadgen-logs/ (as every command's work files), never the "
    "working folder.",
)
@click.option("--force", is_flag=True, help="Write into a --log-dir that is not empty (replacing what is there).")
@mlperf_conf_options()
@export_options("JSON: every test's LoadGen figures, the SUT's, the config; written after each test.")
@keep_options("run")
@wide_option("every column (the scheduled and completed rates, p99.9, the peak search's bracket, ...)")
def loadgen(**params) -> None:
    """Run an MLPerf LoadGen scenario on one backend (docs/loadgen.md). Latency includes queueing.

    Exit codes: 0 every sample answered; 1 some sample failed, or accuracy FAIL against --reference-quality; 2 bad
    input (a --store that is not a speechperf
    store included); 130 interrupted (LoadGen's logs and the exports keep what was measured). Each finished run is
    appended to the results store unless --no-store (`speechperf history`).
    """
    from speechperf.loadgen.run import run_loadgen

    sys.exit(run_loadgen(loadgen_options(params), workdir=cache_dir()))


def loadgen_options(p: dict[str, Any]) -> LoadgenOptions:
    """The command line as ``run_loadgen`` takes it (``run_loadgen`` checks it)."""
    from speechperf.loadgen.run import LoadgenOptions, fresh_log_dir
    from speechperf.loadgen.settings import ScenarioOptions

    mode = "accuracy" if p.pop("accuracy") else "performance"
    test = {field: p.pop(name) for name, field in TEST.items()}
    threads, backend, log_dir = p.pop("threads"), p.pop("backend_name"), p.pop("log_dir")
    exports = p.pop("exports")
    return LoadgenOptions(
        scenario=ScenarioOptions(scenario=p.pop("scenario"), mode=mode, threads=threads, **test),
        exports=exports,
        log_dir=log_dir if log_dir is not None else fresh_log_dir(cache_dir() / "loadgen-logs"),
        force=p.pop("force"),
        find_peak=p.pop("find_peak"),
        budget_s=p.pop("budget"),
        start_qps=p.pop("start_qps"),
        reference_quality=p.pop("reference_quality"),
        wide=p.pop("wide"),
        cfg=config_from_args(p, backend=backend, threads=threads),  # the last: what is left are the config options
    )
