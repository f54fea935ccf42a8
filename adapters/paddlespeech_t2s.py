"""Drop-ins for PaddleSpeech's t2s profiler (``paddlespeech.t2s.utils.profiler``): ``ProfilerOptions``,
``add_profiler_step`` and the "Benchmark Options" group, with the t2s defaults. The s2t sister is
``speechperf.adapters.paddlespeech``; both read the option string the same way and differ in what docs/profiler.md's
"two flavours" table lists:

- ``timer_only`` is true by default: reader_cost, batch_cost and ips of ``batch_range``, no op table, no trace;
- with ``timer_only=false``, paddle is profiled with ``paddle.profiler.Profiler`` (``api=new``), paddle's own
  summary is printed as t2s prints it (``op_detail=True, thread_sep=False, time_unit='ms'``) beside the uniform
  tables, and the timeline goes to a ``profiler_log/`` folder (``paddle_trace.json``, ``torch_trace.json``), unless
  ``profile_path`` names another place;
- ``state``, ``sorted_key``, ``tracer_option`` and ``profile_path`` are honoured, but, as PaddleSpeech's t2s never
  checks them, a value not allowed (``state=cpu``, ``sorted_key=avg``, an empty ``profile_path``) is one warning
  line and its case-insensitive match or the default is used: no value of them stops the loop.

PaddleSpeech's t2s trainer calls it after each update:

    from speechperf.adapters.paddlespeech_t2s import add_profiler_step

    if self.profiler_options:
        add_profiler_step(self.profiler_options)

This module imports no framework.
"""

from __future__ import annotations

from speechperf.adapters.paddlespeech import Flavour, ProfilerHook, exports

T2S = Flavour(
    "t2s",
    {"timer_only": True, "profile_path": "profiler_log/", "api": "new", "timer_window": "paddle_timer"},
    native_summary={"op_detail": True, "thread_sep": False, "time_unit": "ms"},
    # PaddleSpeech's t2s stores these and passes none to paddle: no value of them stops its loop, and none is used
    unchecked=("state", "sorted_key", "tracer_option", "profile_path"),
    ignored=("state", "sorted_key", "tracer_option", "profile_path"),
    empty_is_defaults=False,
    timer_only_true_word="True",
)

_hook = ProfilerHook(T2S)
(
    ProfilerOptions,
    add_profiler_step,
    current_profiler,
    reset_profiler_step,
    add_benchmark_options,
    benchmark_options,
) = exports(_hook, __name__)
