"""Hardware FLOP counters through PAPI (python-papi's ``papi_low`` EventSet API).

Counts ``PAPI_SP_OPS + PAPI_DP_OPS`` (single and double precision: models run in fp32, so DP alone reads ~0).
python-papi 6 has no ``papi_high.start_counters``; the EventSet calls are ``library_init``, ``create_eventset``,
``add_event``, ``start``, ``stop``. PAPI counts the calling thread; run the backend with one thread for a full count.

``papi_status()`` says whether the counters work here and, when they do not, exactly why: on a VM without a
virtualised PMU, PAPI initialises but its perf_event component is disabled and every event fails to add.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import attrs

from speechperf.extras import MissingExtraError, require

EVENTS = ("PAPI_SP_OPS", "PAPI_DP_OPS")


@attrs.frozen
class PapiStatus:
    available: bool
    reason: str = ""


def papi_status() -> PapiStatus:
    try:
        require("pypapi", "hardware FLOP counting (FLOPs source 'papi')")
        from pypapi import events, papi_low
    except MissingExtraError as exc:
        return PapiStatus(False, str(exc))
    except Exception as exc:  # the wheel loads a shared library; any failure means no PAPI here
        return PapiStatus(False, f"python-papi cannot be imported ({type(exc).__name__}: {exc})")
    try:
        _init(papi_low)
    except Exception as exc:
        return PapiStatus(False, f"PAPI library_init failed: {type(exc).__name__}: {exc}")
    problems = []
    eventset = papi_low.create_eventset()
    try:
        for name in EVENTS:
            try:
                papi_low.add_event(eventset, getattr(events, name))
            except Exception as exc:
                problems.append(f"adding {name} failed ({type(exc).__name__}: {exc})")
    finally:
        try:
            papi_low.cleanup_eventset(eventset)
            papi_low.destroy_eventset(eventset)
        except Exception:
            pass
    if not problems:
        return PapiStatus(True)
    return PapiStatus(False, "; ".join(problems) + "; " + _why_no_counters(papi_low))


def _init(papi_low) -> None:
    if not papi_low.is_initialized():
        papi_low.library_init()


def _why_no_counters(papi_low) -> str:
    parts = []
    for index in range(papi_low.num_components()):
        info = papi_low.get_component_info(index)
        name = _text(info.name)
        if info.disabled:
            parts.append(f"component {name} is disabled ({_text(info.disabled_reason)})")
        else:
            parts.append(f"component {name} has {papi_low.num_cmp_hwctrs(index)} hardware counters")
    paranoid = Path("/proc/sys/kernel/perf_event_paranoid")
    if paranoid.exists():
        parts.append(f"perf_event_paranoid={paranoid.read_text().strip()}")
    summary = ", ".join(parts)
    return f"this machine exposes no usable hardware FLOP counters ({summary})"


def _text(value) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def papi_flops(forward: Callable[[], object]) -> int:
    """FLOPs (SP + DP operations) counted by the hardware over one forward. Raises when PAPI is unavailable."""
    from pypapi import events, papi_low

    _init(papi_low)
    eventset = papi_low.create_eventset()
    try:
        for name in EVENTS:
            papi_low.add_event(eventset, getattr(events, name))
        papi_low.start(eventset)
        try:
            forward()
        finally:
            counts = papi_low.stop(eventset)
        return int(sum(counts))
    finally:
        papi_low.cleanup_eventset(eventset)
        papi_low.destroy_eventset(eventset)
