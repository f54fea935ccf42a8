"""``speechperf check`` as one call: the meters asked for checked on this machine, the report shown, written and
kept through the command lifecycle (``speechperf.lifecycle``) as a ``check`` document."""

from __future__ import annotations

import logging

import attrs

from speechperf.exports import Exports
from speechperf.lifecycle import lifecycle
from speechperf.meters.check import DEFAULT_METERS, run_checks, to_document
from speechperf.meters.samples import parse_meter_names

log = logging.getLogger(__name__)

DEFAULT = ",".join(DEFAULT_METERS)


@attrs.frozen
class CheckOptions:
    """``meters``: as given (None: ``DEFAULT``, and an unavailable meter fails nothing); ``backends``: () for every
    registered one; ``threads``: the roofs' thread counts (() for 1 and 2, those the usable cores allow)."""

    meters: str | None = None
    backends: tuple[str, ...] = ()
    quick: bool = False
    threads: tuple[int, ...] = ()
    exports: Exports = Exports()


def default_thread_counts() -> tuple[int, ...]:
    """1 and 2, those the cores this process may use allow."""
    from speechperf.values import usable_cores

    return tuple(n for n in (1, 2) if n <= usable_cores())


def run_check(options: CheckOptions) -> int:
    """0: every meter asked for is trustworthy here (or unavailable and not named); 1: one is not (named on
    stderr)."""
    from speechperf.registry import get_backend

    asked = parse_meter_names(DEFAULT if options.meters is None else options.meters)  # '' is refused
    for name in options.backends:  # an unknown one is refused before any check runs, listing the registered ones
        get_backend(name)
    with lifecycle(options.exports) as run:  # a bad path is refused before any check
        threads = options.threads or default_thread_counts()
        report = run_checks(asked, options.backends or None, quick=options.quick, threads=threads)
        bad = report.untrustworthy(asked, named=options.meters is not None)
        if bad:
            named = [m if report.verdict(m) != "unavailable" else f"{m} (unavailable)" for m in bad]
            log.error("check failed: not trustworthy on this machine: %s", ", ".join(named))
        return run.finish(to_document(report, asked, threads), 1 if bad else 0)
