"""Drop-ins for PaddleSpeech's t2s profiler (``paddlespeech.t2s.utils.profiler``): ``ProfilerOptions``,
``add_profiler_step`` and the "Benchmark Options" group, with the t2s defaults. The s2t sister is
``speechperf.adapters.paddlespeech``; both read the option string the same way and differ in what docs/profiler.md's
"two flavours" table lists:

- ``timer_only`` is true by default: reader_cost, batch_cost and ips of ``batch_range``, no op table, no trace;
- with ``timer_only=false``, paddle is profiled with ``paddle.profiler.Profiler`` (``api=new``), paddle's own
  summary is printed as t2s prints it (``op_detail=True, thread_sep=False, time_unit='ms'``) beside the uniform
  tables, and the timeline goes to a ``profiler_log/`` folder (``paddle_trace.json``, ``torch_trace.json``), unless
  ``profile_path`` names another place.

PaddleSpeech's t2s trainer calls it after each update:

    from speechperf.adapters.paddlespeech_t2s import add_profiler_step

    if self.profiler_options:
        add_profiler_step(self.profiler_options)

This module imports no framework.
"""

from __future__ import annotations

import argparse

from speechperf.adapters.paddlespeech import (
    Flavour,
    ProfilerHook,
    add_benchmark_options_for,
    benchmark_options_for,
    options_of,
)
from speechperf.profiler.options import ProfilerOptions as _Options

T2S = Flavour(
    "t2s",
    {"timer_only": True, "profile_path": "profiler_log/", "api": "new"},
    native_summary={"op_detail": True, "thread_sep": False, "time_unit": "ms"},
)

_hook = ProfilerHook(T2S)


def ProfilerOptions(options_str: str = "", strict: bool = False) -> _Options:  # noqa: N802 - PaddleSpeech's name
    """PaddleSpeech's t2s ``ProfilerOptions(options_str)``, with ``timer_only`` true unless the string says not."""
    return options_of(_hook, options_str, strict)


def add_profiler_step(
    options_str: str | None = None,
    backend: str | None = None,
    num_samples: int | None = None,
    strict: bool = False,
) -> None:
    """One training step ended (``num_samples`` in it, for ips in samples/s); see speechperf.adapters.paddlespeech."""
    _hook.step(options_str, backend, num_samples, strict)


def current_profiler():
    """The step profiler the hook drives, or None before the first call."""
    return _hook.profiler


def reset_profiler_step() -> None:
    """Forget the parsed options and the profiler; a profiler still recording is stopped."""
    _hook.reset()


def add_benchmark_options(parser: argparse.ArgumentParser):
    """The "Benchmark Options" group (``--profiler_options`` or ``--profiler-options``, ``--benchmark-batch-size``,
    ``--benchmark-max-step``); returns the group."""
    return add_benchmark_options_for(_hook, parser)


def benchmark_options(command):
    """The same three options for a click command."""
    return benchmark_options_for(_hook, command)
