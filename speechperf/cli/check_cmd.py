"""``speechperf check``: validate the meters on this machine and print a pass/fail table (stdout).

Exit codes: 0 every meter asked for is trustworthy here, or unavailable (no backend has what its check needs) and
not named in ``--meters``; 1 at least one is NOT trustworthy, or unavailable although named in --meters (named on
stderr);
2 bad input, such as an unknown meter or backend name.
"""

from __future__ import annotations

import sys

import click

from speechperf.cli.options import export_options, thread_counts_option
from speechperf.meters.samples import METER_NAMES

DEFAULT = "runtime,memory,flops,threads,roofline"  # speechperf.meters.check_run.DEFAULT


@click.command()
@click.option(
    "--meters",
    default=None,
    help=f"Comma-separated meters that must be trustworthy here [default: {DEFAULT}]; known: "
    f"{', '.join(METER_NAMES)}. Unnamed, an unavailable meter does not fail the check.",
)
@click.option(
    "--backend",
    "backends",
    multiple=True,
    help="Backend to check FLOPs and thread pinning on (repeatable); default: every registered backend.",
)
@click.option("--quick", is_flag=True, help="Fewer timing repeats (less precise, faster).")
@thread_counts_option(
    None, help="Thread counts to measure the roofs at (roofline meter); default: 1 and 2, those the usable cores allow."
)
@export_options("JSON: the checks as a result document (kind check, docs/results.md).")
def check(meters: str | None, backends: tuple[str, ...], quick: bool, threads: tuple[int, ...] | None, exports) -> None:
    """Validate the meters on this machine and print a pass/fail table.

    Checks the meters named in --meters (PAPI availability is always reported) and exits 1 when one of them is not
    trustworthy here.
    """
    from speechperf.meters.check_run import CheckOptions, run_check

    options = CheckOptions(
        meters=meters,
        backends=tuple(backends),
        quick=quick,
        threads=tuple(threads or ()),
        exports=exports,
    )
    sys.exit(run_check(options))
