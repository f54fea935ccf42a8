"""Click options shared by several commands, defined once."""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Mapping
from pathlib import Path

import click

from speechperf.backend import KNOWN_DEVICES
from speechperf.loadgen.settings import (
    MAX_DURATION_S,
    MAX_QPS,
    MLPERF_DURATION_S,
    MLPERF_LATENCY_MS,
    MLPERF_SAMPLES_PER_QUERY,
    SCENARIOS,
)
from speechperf.values import SEED_MAX

backend_option = click.option(
    "--backend",
    "-b",
    "backend_name",
    required=True,
    metavar="NAME",
    help="A registered backend (see `speechperf backends`).",
)
device_option = click.option(
    "--device", type=click.Choice(KNOWN_DEVICES), default="cpu", show_default=True, help="Where the model runs."
)


class ThreadCount(click.ParamType):
    """One thread count: a whole number from 1 to the cores this process may use (``speechperf.values.CORES``).
    A bad one raises the config's own ConfigError, which the CLI prints as its one line (exit 2), in the words a
    config's ``threads`` gets."""

    name = "thread count"

    def convert(self, value, param, ctx):
        from speechperf.values import ConfigError, parse_thread_counts

        if isinstance(value, int):
            value = str(value)
        if "," in value:
            raise ConfigError(f"--threads = {value!r}; one thread count, not a list")
        (count,) = parse_thread_counts(value)
        return count


class ThreadCounts(click.ParamType):
    """A comma-separated list of thread counts (``1,2``), each checked as ``ThreadCount`` checks one."""

    name = "thread counts"

    def convert(self, value, param, ctx):
        from speechperf.values import parse_thread_counts

        return value if isinstance(value, tuple) else parse_thread_counts(str(value))


def threads_option(default: int | None = None, help: str = "Threads, pinned the same on every backend."):
    """--threads N: the one declaration of a command's thread count (bench, optimize, loadgen, profile, run);
    None leaves the config's ``general.threads``."""
    return click.option(
        "--threads", type=ThreadCount(), default=default, show_default=default is not None, metavar="N", help=help
    )


def thread_counts_option(default: str | None, help: str):
    """--threads N[,M...]: the one declaration of a list of thread counts (compare, check)."""
    return click.option(
        "--threads",
        "threads",
        type=ThreadCounts(),
        default=default,
        show_default=default is not None,
        metavar="N[,M...]",
        help=help,
    )


#: The longest wait a float option may ask for (s): Python's threading refuses longer ones with an OverflowError,
#: raised in the thread that waits, far from the option (about 292 years on Linux).
TIMEOUT_MAX = threading.TIMEOUT_MAX


def seed_option(default: int | None, help: str | None = None):
    """--seed: an integer from 0 to ``speechperf.values.SEED_MAX`` (what numpy's RandomState and every framework
    take), as a config's ``seed``."""
    return click.option(
        "--seed",
        type=click.IntRange(0, SEED_MAX),
        default=default,
        show_default=default is not None,
        help=help,
    )


class FiniteFloatRange(click.FloatRange):
    """click's FloatRange that also refuses nan and inf: nan passes every comparison click's range makes."""

    name = "finite float range"

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number; {self._describe_range()}", param, ctx)
        return number


def optional_backend_option(
    help: str = "A registered backend (see `speechperf backends`); or general.backend in the config.",
):
    """--backend/-b NAME, optional: the config's general.backend serves without it (bench, optimize, loadgen)."""
    return click.option("--backend", "-b", "backend_name", metavar="NAME", default=None, help=help)


def seconds_option(*names: str, default: float | None, help: str, most: float = MAX_DURATION_S):
    """A positive, finite number of seconds, at most ``most`` (a week: far beyond any run, yet a number every timer
    takes); shown with its default."""
    return click.option(
        *names,
        type=FiniteFloatRange(min=0, min_open=True, max=most),
        default=default,
        show_default=default is not None,
        help=help,
    )


SCENARIO_HELP = (
    "MLPerf's scenario: SingleStream (p90), MultiStream (p99, 8 samples a query), Server (Poisson arrivals "
    "at --target-qps, p99 within --target-latency-ms), Offline (everything in one query, samples/s)."
)


def scenario_option(required: bool = True, help: str = SCENARIO_HELP):
    """--scenario: one of MLPerf's four (``speechperf.loadgen.settings.SCENARIOS``)."""
    return click.option("--scenario", type=click.Choice(SCENARIOS), required=required, default=None, help=help)


def scenario_run_options():
    """The options of one LoadGen test (speechperf loadgen, compare --scenario): its rate, its latency bound and
    percentile, and how long it lasts; MLPerf's rules are the defaults (docs/loadgen.md)."""
    return stacked(
        [
            click.option(
                "--target-qps",
                type=FiniteFloatRange(min=0, min_open=True, max=MAX_QPS),
                default=None,
                help="Server: the Poisson rate; Offline: the expected rate. Default: the warm-up's estimate.",
            ),
            seconds_option(
                "--target-latency-ms",
                default=MLPERF_LATENCY_MS,
                most=3.6e6,
                help="Server's latency bound (MLPerf's RNN-T: 1000 ms).",
            ),
            click.option(
                "--percentile",
                type=FiniteFloatRange(min=0, min_open=True, max=100, max_open=True),
                default=None,
                help="The latency percentile: default MLPerf's (SingleStream 90, MultiStream and Server 99).",
            ),
            seconds_option(
                "--duration",
                default=MLPERF_DURATION_S,
                help="Minimum seconds of the test (MLPerf: 600); shorter runs are marked not MLPerf-compliant.",
            ),
            click.option(
                "--min-queries",
                type=click.IntRange(min=1, max=10**9),
                default=None,
                help="Minimum queries: default MLPerf's (1024 / 270336 / 270336 / 1); 1 when only --duration "
                "shortens the run.",
            ),
            click.option(
                "--samples-per-query",
                type=click.IntRange(min=1, max=10**6),
                default=MLPERF_SAMPLES_PER_QUERY,
                show_default=True,
                help="MultiStream: samples in each query (MLPerf's 8).",
            ),
        ]
    )


def mlperf_conf_options():
    """--user-conf and --audit-conf: MLPerf's own user.conf and audit.config, passed through to LoadGen."""
    return stacked(
        [
            click.option(
                "--user-conf",
                type=click.Path(dir_okay=False),
                default=None,
                help="MLPerf's user.conf: LoadGen's TestSettings.FromConfig applies it over these options.",
            ),
            click.option(
                "--audit-conf",
                type=click.Path(dir_okay=False),
                default=None,
                help="MLPerf's audit.config (a compliance test's), passed to LoadGen's StartTest.",
            ),
        ]
    )


instances_option = click.option(
    "--instances", type=click.IntRange(min=1), default=1, show_default=True, help="Model instances."
)


def budget_option(help: str = "Seconds the peak search may take."):
    return seconds_option("--budget", default=300.0, help=help)


#: The options of quality_budget_options, as the command's function receives them.
QUALITY_BUDGET = ("max_wer_increase", "max_bleu_drop", "min_agreement", "max_mos_drop", "max_mcd", "min_snr_db")


def quality_budget_options():
    """How much quality a variant may lose against fp32 (optimize, tune): speechperf.optimize.fidelity.QualityBudget."""
    return stacked(
        [
            click.option(
                "--max-wer-increase",
                type=FiniteFloatRange(min=0),
                default=1.0,
                show_default=True,
                metavar="POINTS",
                help="A variant whose WER rises more than this (absolute points) over fp32's is over its quality budget.",
            ),
            click.option(
                "--max-bleu-drop",
                type=FiniteFloatRange(min=0),
                default=1.0,
                show_default=True,
                metavar="POINTS",
                help="A variant whose BLEU falls more than this below fp32's is over its quality budget.",
            ),
            click.option(
                "--min-agreement",
                type=FiniteFloatRange(min=0, max=1),
                default=None,
                metavar="FRACTION",
                help="A variant whose token or VAD agreement with fp32 is below this (e.g. 0.98) is over its quality budget.",
            ),
            click.option(
                "--max-mos-drop",
                type=FiniteFloatRange(min=0),
                default=0.2,
                show_default=True,
                metavar="MOS",
                help="A variant whose speech's DNSMOS OVRL falls more than this below fp32's is over its quality budget "
                "(needs the speech-quality extra).",
            ),
            click.option(
                "--max-mcd",
                type=FiniteFloatRange(min=0),
                default=None,
                metavar="DB",
                help="A variant whose speech is further than this from fp32's in mel-cepstral distortion (dB, DTW-aligned) "
                "is over its quality budget (default: no limit; the MCD is shown).",
            ),
            click.option(
                "--min-snr",
                "min_snr_db",
                type=FiniteFloatRange(),
                default=20.0,
                show_default=True,
                metavar="DB",
                help="A variant with a float output (a mask, a model file's outputs; not the speech waveform, judged by MCD "
                "and DNSMOS) below this SNR against fp32's in a sample is over its quality budget; a stage's `tolerance` "
                "key, where it has one, is used instead for its outputs.",
            ),
        ]
    )


def quality_budget(params: dict):
    """The QualityBudget of the options ``quality_budget_options`` added, taken out of ``params``."""
    from speechperf.optimize.fidelity import QualityBudget

    return QualityBudget(*(params.pop(name) for name in QUALITY_BUDGET))


def calibration_size_option():
    """--calibration-size N: the samples whose real feeds calibrate the static int8 methods (optimize, tune)."""
    from speechperf.values import DATASET_MAX

    return click.option(
        "--calibration-size",
        type=click.IntRange(min=1, max=DATASET_MAX),
        default=4,
        show_default=True,
        help="Samples of the dataset whose real feeds calibrate the static int8 methods.",
    )


#: The options of launch_options, as the command's function receives them.
LAUNCH = ("executor", "jobs", "timeout_s")


def launch_options(children: str = "Children", refuse: Mapping[str, str] | None = None, executor_note: str = ""):
    """--executor, --jobs and --timeout: where a command's child processes run, how many at once and how long one
    may take (compare, optimize, tune; speechperf.launch). The choices are the executors registry's
    (``speechperf.launch.executors.EXECUTORS``), so a new executor is a choice of every such command. ``refuse``:
    executor -> why this command cannot use it, refused in one line naming the value and what is allowed."""
    from speechperf.launch.executors import EXECUTORS, executor_help
    from speechperf.values import JOBS_MAX

    refused = dict(refuse or {})
    allowed = [name for name in EXECUTORS if name not in refused]

    def check_executor(ctx, param, value):
        if value in refused:
            from speechperf.errors import SpeechperfError

            raise SpeechperfError(
                f"--executor {value}: {ctx.info_name} cannot use it ({refused[value]}); allowed: {', '.join(allowed)}"
            )
        return value

    return stacked(
        [
            click.option(
                "--executor",
                type=click.Choice(tuple(EXECUTORS)),
                default="local",
                show_default=True,
                callback=check_executor,
                help=f"Where the {children.lower()} run: {executor_help(allowed)}{executor_note}"
                + "".join(f" Not {name}: {why}." for name, why in refused.items()),
            ),
            click.option(
                "--jobs",
                type=click.IntRange(min=1, max=JOBS_MAX),
                default=1,
                show_default=True,
                help=f"{children} at once, at most {JOBS_MAX}; more than 1 on one machine makes them share its cores "
                "(a warning says so).",
            ),
            click.option(
                "--timeout",
                "timeout_s",
                type=FiniteFloatRange(min=0, min_open=True, max=TIMEOUT_MAX),
                default=None,
                help="Seconds one child process may take before it is killed and counts as failed (timed out).",
            ),
        ]
    )


def wide_option(what: str = "every column"):
    """``--wide``: the console's table with ``what``, as wide as it takes; by default its key columns, laid out to fit
    a 120-column terminal (``speechperf.tables.FIT``). The exports have every column either way."""
    return click.option(
        "--wide",
        is_flag=True,
        help=f"Print {what}, as wide as it takes; by default the key columns, within 120 columns. The exports have "
        "every column.",
    )


def export_options(json_help: str, kept: str | None = None):
    """--output/-o (JSON, written as results come in), --csv and --markdown, and with ``kept`` (what the page shows:
    "run", "comparison (with the plots)", ...) --store/--no-store and --html (``keep_options``): the exports of every
    command that writes a result document. They reach the command as ONE value, ``exports``, a
    ``speechperf.exports.Exports`` (checked by the command's lifecycle before any work)."""

    def decorate(command):
        @functools.wraps(command)
        def with_exports(*args, **params):
            from speechperf.exports import Exports
            from speechperf.store.keep import Keep

            paths = (params.pop("output"), params.pop("csv_path"), params.pop("md_path"))
            keep = params.pop("keep", None) or Keep()
            return command(*args, exports=Exports(*paths, keep=keep), **params)

        path = click.Path(dir_okay=False, path_type=Path)
        options = [
            click.option("--output", "-o", type=path, default=None, help=json_help),
            click.option("--csv", "csv_path", type=path, default=None, help="CSV export."),
            click.option("--markdown", "md_path", type=path, default=None, help="Markdown export."),
        ]
        decorated = stacked(options)(with_exports)
        return keep_options(kept)(decorated) if kept else decorated

    return decorate


def keep_options(html_what: str = "run"):
    """--store PATH / --no-store and --html FILE: where a finished run goes besides its exports
    (speechperf.store.keep; docs/history.md). Their values reach the command as ``keep``, a checked ``Keep``."""

    def to_keep(ctx, param, value):
        params = ctx.params
        store, no_store = params.pop("store", None), params.pop("no_store", False)
        from speechperf.store.keep import Keep

        return Keep.of(store, no_store, value)

    path = click.Path(dir_okay=False, path_type=Path)
    return stacked(
        [
            click.option(
                "--store",
                type=path,
                default=None,
                is_eager=True,
                expose_value=True,
                help="The results store (SQLite) this run is appended to; default: <cache>/results.sqlite "
                "(see `speechperf history`).",
            ),
            click.option("--no-store", is_flag=True, is_eager=True, help="Do not append this run to the store."),
            click.option(
                "--html",
                "keep",
                type=path,
                default=None,
                callback=to_keep,
                help=f"A self-contained HTML report of the {html_what}: tables, plots, environment, raw JSON.",
            ),
        ]
    )


def stacked(options):
    """One decorator applying click ``options`` in the order listed (as if written one above the other)."""

    def decorate(fn):
        for option in reversed(options):
            fn = option(fn)
        return fn

    return decorate
