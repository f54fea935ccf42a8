"""Meters: runtime, RTF/throughput, peak memory and FLOPs of one forward per sample, on any backend.

Framework-free: a meter calls a ``forward`` (one forward of a stage: its session calls plus the numpy decoding
loop) and, through the backend object from the registry, ``synchronize()``, ``device_memory()`` and
``count_flops()``. The exact definitions are in each module's docstring (and docs/architecture.md, "Measurements").

A benchmark loop uses them per sample::

    from speechperf.meters import RuntimeMeter, MemoryMeter, FlopsMeter, real_time_factor

    runtime = RuntimeMeter(backend, device, warmup=1, repeat=5)
    memory = MemoryMeter(backend, device, method="hwm")     # or "memory_profiler" (fairseq's, sampling)
    flops = FlopsMeter(backend, source="auto")               # PAPI where it works, else the backend's analytic count
    memory.mark_preload()                                    # before loading: footprint = peak - this RSS
    runtime.measure_cold_start(lambda: backend.load(spec), lambda s: s(first_feeds))
    for sample_id, feeds in samples:
        forward = lambda: session(feeds)                     # or the stage's decoding loop over its sessions
        runtime.measure(sample_id, forward)                  # each returns the sample's record, or a SampleFailure
        memory.measure(sample_id, forward)
        flops.measure(sample_id, lambda s: s(feeds), session)  # forward over (proxies of) the sessions
    runtime.result(), memory.result(), flops.result()        # failures are in .failures, one line each (.message)
    real_time_factor(runtime.result().per_sample_seconds, audio_seconds, audio="input")

A forward that raises is recorded as a ``SampleFailure`` (``.message``: one line naming the sample id) and the
meter goes on with the next sample. Bad settings (unknown meter names, ``warmup < 0``, ``repeat < 1``, an unknown
memory method or FLOPs source) raise ``MeterError``, a ``SpeechperfError`` with a one-line message.
"""

from speechperf.meters.flops import FlopCount, FlopsMeter, KnownGraph
from speechperf.meters.memory import MemoryMeter, MemoryResult, MemorySample
from speechperf.meters.rtf import RtfResult, real_time_factor
from speechperf.meters.runtime import ColdStart, RuntimeMeter, RuntimeResult, SampleTiming, Stats
from speechperf.meters.samples import METER_NAMES, MeterError, SampleFailure, parse_meter_names

__all__ = [
    "METER_NAMES",
    "ColdStart",
    "FlopCount",
    "FlopsMeter",
    "KnownGraph",
    "MemoryMeter",
    "MemoryResult",
    "MemorySample",
    "MeterError",
    "RtfResult",
    "RuntimeMeter",
    "RuntimeResult",
    "SampleFailure",
    "SampleTiming",
    "Stats",
    "parse_meter_names",
    "real_time_factor",
]
