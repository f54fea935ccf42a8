"""Peak memory of one forward: process RSS (two methods) and, where a device is used, the device allocator's peak.

Definitions (docs/architecture.md, "Measurements"), all in MiB (2**20 bytes):

- ``peak_mib``: the absolute peak process RSS during the forward.
- ``baseline_mib``: the RSS just before the call; ``delta_mib = peak_mib - baseline_mib``. After the first call this
  reads near 0, because allocators keep freed memory resident (glibc, torch, paddle and ORT arenas).
- ``preload_mib``: the RSS before the model was loaded (framework already imported), recorded once with
  ``mark_preload()``; ``footprint_mib = peak_mib - preload_mib`` is what the model and its forward cost. This is the
  figure to compare across backends; it is None until ``mark_preload()`` was called.
- ``device_peak_mib``: the device allocator's peak during the forward (``backend.device_memory(device)``), or None
  on the CPU.

Methods:

- ``"hwm"`` (exact, Linux): write ``5`` to ``/proc/self/clear_refs``, which resets the RSS high-water mark to the
  current RSS, run the forward, then read ``VmHWM`` from ``/proc/self/status``. No sampling, so no peak is missed.
- ``"memory_profiler"`` (fairseq's way): ``memory_profiler.memory_usage((forward, (), {}), max_usage=True,
  interval=interval)``, which samples RSS every ``interval`` seconds from another process; a forward shorter than
  the interval can be missed. ``interval_s`` is reported with every sample.

Use::

    meter = MemoryMeter(backend, device="cpu", method="hwm")
    meter.mark_preload()              # before backend.load(...)
    session = backend.load(spec)
    meter.measure(sample_id, lambda: session(feeds))   # MemorySample, or SampleFailure if it raised
    result = meter.result()           # MemoryResult: .samples, .failures, .peak_mib (max over samples)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import attrs

from speechperf.backend import CapabilityUnavailableError
from speechperf.extras import require
from speechperf.meters.samples import MeterError, SampleFailure, failure

MIB = 2**20
METHODS = ("hwm", "memory_profiler")
CLEAR_REFS = Path("/proc/self/clear_refs")
STATUS = Path("/proc/self/status")


def _status_kib(field: str) -> int:
    for line in STATUS.read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise MeterError(f"{STATUS} has no {field} line; the exact memory method needs Linux")


def rss_mib() -> float:
    """The current process RSS in MiB."""
    if STATUS.exists():
        return _status_kib("VmRSS") / 1024
    import psutil

    return psutil.Process().memory_info().rss / MIB


def hwm_status() -> tuple[bool, str]:
    """Whether the exact method works here, and why not."""
    if not STATUS.exists() or not CLEAR_REFS.exists():
        return False, f"{CLEAR_REFS} or {STATUS} does not exist (not Linux); use method 'memory_profiler'"
    try:
        reset_hwm()
        hwm, rss = _status_kib("VmHWM"), _status_kib("VmRSS")
    except OSError as exc:
        return False, f"cannot reset the RSS high-water mark through {CLEAR_REFS}: {exc}; use method 'memory_profiler'"
    if hwm > rss + 1024:  # kernels before 4.0 ignore "5" and keep the old high-water mark
        return False, f"writing 5 to {CLEAR_REFS} did not reset VmHWM (kernel too old); use method 'memory_profiler'"
    return True, ""


def reset_hwm() -> None:
    with open(CLEAR_REFS, "w") as f:
        f.write("5")


@attrs.frozen
class MemorySample:
    sample_id: str
    method: str
    peak_mib: float
    baseline_mib: float
    preload_mib: float | None = None
    device_peak_mib: float | None = None
    interval_s: float | None = None  # memory_profiler's sampling interval; None for the exact method

    @property
    def delta_mib(self) -> float:
        return self.peak_mib - self.baseline_mib

    @property
    def footprint_mib(self) -> float | None:
        return None if self.preload_mib is None else self.peak_mib - self.preload_mib


@attrs.frozen
class MemoryResult:
    method: str
    samples: tuple[MemorySample, ...]
    failures: tuple[SampleFailure, ...]
    preload_mib: float | None
    interval_s: float | None
    device_note: str = ""  # why there is no device figure, when there is none

    @property
    def peak_mib(self) -> float | None:
        return max((s.peak_mib for s in self.samples), default=None)

    @property
    def footprint_mib(self) -> float | None:
        values = [s.footprint_mib for s in self.samples if s.footprint_mib is not None]
        return max(values, default=None)

    @property
    def device_peak_mib(self) -> float | None:
        values = [s.device_peak_mib for s in self.samples if s.device_peak_mib is not None]
        return max(values, default=None)


class MemoryMeter:
    """Peak memory of one forward per sample; see the module docstring for the exact definitions."""

    name = "memory"

    def __init__(self, backend=None, device: str = "cpu", method: str = "hwm", interval: float = 0.01):
        if method not in METHODS:
            raise MeterError(f"unknown memory method {method!r}; allowed: {', '.join(METHODS)}")
        if not (isinstance(interval, (int, float)) and interval > 0):
            raise MeterError(f"memory_profiler interval must be a number of seconds > 0, got {interval!r}")
        if method == "hwm":
            ok, why = hwm_status()
            if not ok:
                raise MeterError(f"memory method 'hwm' is not available here: {why}")
        else:
            require("memory_profiler", "memory method 'memory_profiler'")
        self.method = method
        self.interval = float(interval)
        self.device = device
        self._sync = (lambda: backend.synchronize(device)) if backend is not None else (lambda: None)
        self._device = None
        self.device_note = ""
        if device != "cpu" and backend is not None:
            try:
                self._device = backend.device_memory(device)
            except CapabilityUnavailableError as exc:  # a plugin without memory.py: no device figure, said why
                self._device = _NoDeviceMemory(str(exc))
            if not self._device.available:
                self.device_note = self._device.reason
                self._device = None
        elif device == "cpu":
            self.device_note = "device 'cpu': there is no separate device allocator; host memory is the process RSS"
        self.preload_mib: float | None = None
        self._samples: list[MemorySample] = []
        self._failures: list[SampleFailure] = []

    def mark_preload(self) -> float:
        """Record the RSS before the model is loaded; footprints are measured from it."""
        self.preload_mib = rss_mib()
        return self.preload_mib

    def peak_of(self, forward: Callable[[], object]) -> tuple[float, float]:
        """(peak RSS MiB, pre-call RSS MiB) of one forward with this meter's method. Exceptions propagate."""
        baseline = rss_mib()
        if self.method == "hwm":
            reset_hwm()
            forward()
            self._sync()
            return _status_kib("VmHWM") / 1024, baseline
        from memory_profiler import memory_usage

        def call():
            forward()
            self._sync()

        peak = memory_usage((call, (), {}), max_usage=True, interval=self.interval, include_children=False)
        if isinstance(peak, (list, tuple)):  # memory_profiler < 0.58 returned a one-element list
            peak = peak[0]
        return max(float(peak), baseline), baseline

    def measure(self, sample_id: str, forward: Callable[[], object]) -> MemorySample | SampleFailure:
        try:
            if self._device is not None:
                self._device.reset()
            peak, baseline = self.peak_of(forward)
            device_peak = self._device.peak_bytes() / MIB if self._device is not None else None
        except Exception as exc:
            record = failure(sample_id, self.name, exc)
            self._failures.append(record)
            return record
        sample = MemorySample(
            str(sample_id),
            self.method,
            peak,
            baseline,
            self.preload_mib,
            device_peak,
            self.interval if self.method == "memory_profiler" else None,
        )
        self._samples.append(sample)
        return sample

    def result(self) -> MemoryResult:
        return MemoryResult(
            self.method,
            tuple(self._samples),
            tuple(self._failures),
            self.preload_mib,
            self.interval if self.method == "memory_profiler" else None,
            self.device_note,
        )


class _NoDeviceMemory:
    available = False

    def __init__(self, reason: str):
        self.reason = reason
