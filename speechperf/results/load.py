"""The load a result document's process runs timed under, and the line ``speechperf diff`` prints when the two
sides' loads differ (docs/compare.md, "Regression gate": Load). The probe itself is
``speechperf.results.environment.LoadProbe``."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from speechperf.results.document import Document
from speechperf.results.environment import is_busy

#: When what other processes kept busy differs by this many cores between the two sides, diff says so ...
LOAD_DIFFERENCE = 0.5
#: ... or when the cores they left idle differ by this factor: on a machine already near full, one more busy loop
#: adds little to the first figure (the cores are shared out) and halves the second.
IDLE_FACTOR = 1.5


def loads(doc: Document) -> list[dict[str, Any]]:
    """The load each process run of the document timed under (``speechperf.results.environment.LoadProbe``):
    each run's of ``bench --runs`` and compare; otherwise the document's own; none in a document without a probe."""
    runs = [r for r in doc.get("runs") or () if isinstance(r, dict)]
    per_run = [r.get("load") or (r.get("environment") or {}).get("load") for r in runs]
    found = [load for load in per_run if isinstance(load, dict) and "busy_cores_others" in load]
    own = doc.environment.get("load")
    return found or ([own] if isinstance(own, dict) and "busy_cores_others" in own else [])


def wait_share(result: dict[str, Any] | None) -> float | None:
    """The share of a bench run's timed wall time its calling thread spent waiting runnable for a CPU (Linux's
    schedstat ``wait_ns`` over ``ns``, every stage's timed repeats): the contention the run itself met, whatever
    other processes' busy cores say; None where it was not recorded (not Linux, a document written before it)."""
    waited = wall = 0
    for stage in (result or {}).get("stages") or ():
        for sample in (stage.get("runtime") or {}).get("samples") or ():
            ns, waits = sample.get("ns") or (), sample.get("wait_ns") or ()
            if ns and len(waits) == len(ns):
                waited, wall = waited + sum(waits), wall + sum(ns)
    return waited / wall if wall else None


def _busy(load: dict[str, Any]) -> bool:
    if "busy" in load:
        return bool(load["busy"])
    return is_busy(load["busy_cores_others"], load.get("cpu_count") or 1, load.get("busy_cores_own") or 0.0)


def _load_words(probes: Sequence[dict[str, Any]]) -> str:
    others, cores = statistics.fmean(p["busy_cores_others"] for p in probes), probes[0].get("cpu_count")
    averages = [p["loadavg_before"][0] for p in probes if p.get("loadavg_before")]
    text = f"other processes kept {others:.2f} of {cores} cores busy, {_idle(probes):.2f} idle ("
    text += f"load average {statistics.fmean(averages):.2f}; " if averages else ""
    return text + f"{sum(map(_busy, probes))} of {len(probes)} run(s) on a busy machine)"


def _idle(probes: Sequence[dict[str, Any]]) -> float:
    """The cores other processes left idle, averaged over the runs (a hundredth at least)."""
    return max(statistics.fmean((p.get("cpu_count") or 1) - p["busy_cores_others"] for p in probes), 0.01)


def load_warning(base: Document, new: Document) -> str | None:
    """One line when the two sides timed under different loads: averaged over the runs, other processes' busy cores
    differ by ``LOAD_DIFFERENCE`` or more, or the cores they left idle by ``IDLE_FACTOR``, or one side ran on a busy
    machine and the other did not."""
    left, right = loads(base), loads(new)
    if not left or not right:
        return None
    mean_left, mean_right = (statistics.fmean(p["busy_cores_others"] for p in side) for side in (left, right))
    idle = sorted((_idle(left), _idle(right)))
    same_busy = any(map(_busy, left)) == any(map(_busy, right))
    if abs(mean_left - mean_right) < LOAD_DIFFERENCE and idle[1] < IDLE_FACTOR * idle[0] and same_busy:
        return None
    return (
        f"warning: BASE and NEW timed under different loads: BASE {_load_words(left)}, NEW {_load_words(right)}; "
        "a difference between them may be the machine's, not the code's"
    )


#: A side whose runs' threads waited runnable for a CPU this share of their timed wall time or more (on average over
#: its runs) timed under contention, whatever other processes' busy cores say: on 2 cores that figure cannot exceed
#: what the run leaves free, while the wait is the time the run itself lost (docs/compare.md, "Regression gate").
WAIT_LIMIT = 0.01


def wait_shares(doc: Document) -> list[float]:
    """Per process run, the share of its timed wall time its thread waited for a CPU (``wait_share``): each run's of
    ``bench --runs``, a plain bench's own; none where not recorded (compare, optimize, documents before it)."""
    runs = [r for r in doc.get("runs") or () if isinstance(r, dict) and r.get("ok")]
    if runs:
        return [float(r["wait_share"]) for r in runs if isinstance(r.get("wait_share"), (int, float))]
    own = wait_share(doc.get("result")) if doc.kind == "bench" and isinstance(doc.get("result"), dict) else None
    return [] if own is None else [own]


def side_wait(doc: Document) -> float | None:
    """The runs' wait share of a document, averaged; None where not recorded."""
    shares = wait_shares(doc)
    return statistics.fmean(shares) if shares else None


def waited_sides(base: Document, new: Document) -> list[str]:
    """``BASE``, ``NEW``: the sides whose runs waited for a CPU ``WAIT_LIMIT`` of their timed wall time or more."""
    waits = {"BASE": side_wait(base), "NEW": side_wait(new)}
    return [side for side, share in waits.items() if share is not None and share >= WAIT_LIMIT]


def wait_warning(base: Document, new: Document) -> str | None:
    """One line when a side's runs waited for a CPU ``WAIT_LIMIT`` of their timed wall time or more, naming both.
    Waiting makes a side slower: on NEW it can make a regression, on BASE alone it can only hide one, so then the
    gate still runs (and the line says so)."""
    waited = waited_sides(base, new)
    if not waited:
        return None
    words = ", ".join(
        f"{side} {'-' if share is None else f'{share:.1%}'}"
        for side, share in (("BASE", side_wait(base)), ("NEW", side_wait(new)))
    )
    line = (
        f"warning: {' and '.join(waited)} waited for a CPU (runnable, another process on its core) {WAIT_LIMIT:.0%} "
        f"of its timed wall time or more ({words}, averaged over the runs): its times are the machine's as much as "
        "the code's"
    )
    if "NEW" not in waited:
        line += "; a slower BASE can only hide a regression, not make one, so the gate still runs"
    return line
