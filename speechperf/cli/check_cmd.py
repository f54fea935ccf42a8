"""``speechperf check``: validate the meters on this machine and print a pass/fail table (stdout).

Exit codes: 0 every meter asked for is trustworthy here, or unavailable (no backend has what its check needs) and
not named in ``--meters``; 1 at least one is NOT trustworthy, or unavailable although named in --meters (named on
stderr);
2 bad input, such as an unknown meter or backend name.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from speechperf.cli.options import thread_counts_option
from speechperf.meters.samples import METER_NAMES

DEFAULT = "runtime,memory,flops,threads,roofline"


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
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="JSON: the checks as a result document (kind check, docs/results.md).",
)
def check(
    meters: str | None, backends: tuple[str, ...], quick: bool, threads: tuple[int, ...] | None, output: Path | None
) -> None:
    """Validate the meters on this machine and print a pass/fail table.

    Checks the meters named in --meters (PAPI availability is always reported) and exits 1 when one of them is not
    trustworthy here.
    """
    from speechperf.exports import Exports
    from speechperf.meters.check import format_report, run_checks, to_document
    from speechperf.meters.samples import parse_meter_names
    from speechperf.registry import get_backend

    asked = parse_meter_names(DEFAULT if meters is None else meters)  # --meters '' is refused, not the default
    for name in backends:  # an unknown one is refused before any check runs, listing the registered ones
        get_backend(name)
    exports = Exports(json=output).check()  # before any check: a bad path costs nothing
    threads = threads or _default_thread_counts()
    report = run_checks(asked, backends or None, quick=quick, threads=threads)
    click.echo(format_report(report, asked))
    exports.write(to_document(report, asked, threads))
    bad = report.untrustworthy(asked, named=meters is not None)
    if bad:
        named = [m if report.verdict(m) != "unavailable" else f"{m} (unavailable)" for m in bad]
        click.echo(f"check failed: not trustworthy on this machine: {', '.join(named)}", err=True)
        sys.exit(1)


def _default_thread_counts() -> tuple[int, ...]:
    """1 and 2, those the cores this process may use allow."""
    from speechperf.values import usable_cores

    return tuple(n for n in (1, 2) if n <= usable_cores())
