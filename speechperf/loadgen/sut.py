"""The system under test LoadGen drives: N instances of the stages bench builds, one worker thread each.

LoadGen calls ``issue`` from its own thread with query samples (a sample index into the prepared inputs); each is
queued, and the first free instance runs the whole chain on it: stage 1's forward on its input (prepared untimed up
front, as bench prepares it), then each later stage on the hand-off from the one before, as a served request does.
The sample is completed when its last stage returns, so its latency holds the time it waited in the queue.
The frameworks release the GIL inside their forwards, so instances overlap on separate cores.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Sequence

import attrs
import numpy as np

from speechperf.benchmark.stage import Stage, StageIO, describe_output

log = logging.getLogger(__name__)


@attrs.define
class Served:
    """What the SUT measured itself, beside LoadGen's figures: per-stage service times and the audio served."""

    stage_seconds: list[list[float]]
    audio_seconds: float = 0.0
    samples: int = 0
    failed: dict[int, str] = attrs.Factory(dict)
    first_issue: float | None = None
    last_complete: float | None = None

    @property
    def span_s(self) -> float:
        if self.first_issue is None or self.last_complete is None:
            return 0.0
        return max(self.last_complete - self.first_issue, 1e-9)


class SystemUnderTest:
    def __init__(self, lg, instances: Sequence[Sequence[Stage]], inputs: Sequence[StageIO], backend, device: str):
        self.lg = lg
        self.instances = instances
        self.inputs = inputs
        self.backend = backend
        self.device = device
        self.keep_outputs = False
        #: per sample index: every stage's output (accuracy mode), what the quality meter scores
        self.outputs: dict[int, list[StageIO]] = {}
        self.served = Served([[] for _ in instances[0]])
        self.draining = False  # Ctrl-C: answer what is left at once, so LoadGen ends and writes its logs
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._start_workers()
        self.handle = lg.ConstructSUT(self._issue, self._flush)

    def _start_workers(self) -> None:
        self._workers = [
            threading.Thread(target=self._work, args=(i,), daemon=True) for i in range(len(self.instances))
        ]
        for worker in self._workers:
            worker.start()

    def reset(self) -> None:
        self.served = Served([[] for _ in self.instances[0]])

    def audio_seconds_of(self, index: int) -> float:
        seconds = self.instances[0][0].audio_seconds(self.inputs[index], None)
        return float(seconds or 0.0)

    def run_chain(self, stages: Sequence[Stage], inp: StageIO) -> tuple[list[StageIO], list[float]]:
        outs: list[StageIO] = []
        times: list[float] = []
        for n, stage in enumerate(stages):
            start = time.perf_counter()
            if n:
                inp = stage.from_previous(outs[-1])
            out = stage.forward(inp)
            self.backend.synchronize(self.device)
            times.append(time.perf_counter() - start)
            outs.append(out)
        return outs, times

    def _issue(self, query_samples) -> None:
        now = time.perf_counter()
        with self._lock:
            if self.served.first_issue is None:
                self.served.first_issue = now
        for sample in query_samples:
            self._queue.put((sample.id, sample.index))

    def _flush(self) -> None:
        pass

    def _work(self, instance: int) -> None:
        stages = self.instances[instance]
        while True:
            item = self._queue.get()
            if item is None:
                return
            sample_id, index = item
            if self.draining:
                self._complete(sample_id, index, None, [], None)
                continue
            try:
                outs, times = self.run_chain(stages, self.inputs[index])
            except Exception as exc:  # recorded; the sample is still answered, so LoadGen does not wait on it
                self._complete(sample_id, index, None, [], f"{type(exc).__name__}: {exc}".splitlines()[0])
            else:
                self._complete(sample_id, index, outs, times, None)

    def _complete(
        self, sample_id: int, index: int, outs: list[StageIO] | None, times: list[float], failure: str | None
    ) -> None:
        """Answer LoadGen for one sample: ``outs`` every stage's output (None: not served, draining or failed,
        ``failure`` the line why), ``times`` each stage's seconds."""
        payload = np.zeros(0, np.uint8)
        with self._lock:
            if failure is not None:
                self.served.failed.setdefault(index, failure)
            elif outs is not None:
                for n, seconds in enumerate(times):
                    self.served.stage_seconds[n].append(seconds)
                self.served.samples += 1
                self.served.audio_seconds += self.audio_seconds_of(index)
                if self.keep_outputs:
                    self.outputs[index] = outs
        if outs is not None and self.keep_outputs:
            # LoadGen's accuracy log gets what the model produced, as JSON bytes.
            payload = np.frombuffer(json.dumps(describe_output(outs[-1])).encode(), np.uint8).copy()
        response = self.lg.QuerySampleResponse(sample_id, payload.ctypes.data if payload.size else 0, payload.size)
        self.lg.QuerySamplesComplete([response])
        with self._lock:
            self.served.last_complete = time.perf_counter()

    def close(self) -> None:
        for _ in self._workers:
            self._queue.put(None)
        self.lg.DestroySUT(self.handle)
