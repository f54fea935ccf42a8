"""``speechperf check``: validate the meters on this machine and print a pass/fail table (stdout).

Exit codes: 0 every meter asked for (``--meters``) is trustworthy here; 1 at least one is not (named on stderr);
2 bad input, such as an unknown meter or backend name.
"""

from __future__ import annotations

import sys

import click

from speechperf.meters.samples import METER_NAMES

DEFAULT = "runtime,memory,flops,threads"


@click.command()
@click.option(
    "--meters",
    default=DEFAULT,
    show_default=True,
    help=f"Comma-separated meters that must be trustworthy here; known: {', '.join(METER_NAMES)}.",
)
@click.option(
    "--backend",
    "backends",
    multiple=True,
    help="Backend to check FLOPs and thread pinning on (repeatable); default: every registered backend.",
)
@click.option("--quick", is_flag=True, help="Fewer timing repeats (less precise, faster).")
def check(meters: str, backends: tuple[str, ...], quick: bool) -> None:
    """Validate the meters on this machine and print a pass/fail table.

    Checks the meters named in --meters (PAPI availability is always reported) and exits 1 when one of them is not
    trustworthy here.
    """
    from speechperf.meters.check import format_report, run_checks
    from speechperf.meters.samples import parse_meter_names

    asked = parse_meter_names(meters)
    report = run_checks(asked, backends or None, quick=quick)
    click.echo(format_report(report, asked))
    bad = report.untrustworthy(asked)
    if bad:
        click.echo(f"check failed: not trustworthy on this machine: {', '.join(bad)}", err=True)
        sys.exit(1)
