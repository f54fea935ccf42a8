"""The system under test with ``general.serving: stages``: a queue and a pool of instances per stage, requests
handed from stage to stage, and dynamic batching, as a Triton ensemble with dynamic batchers serves a cascade.

- Each stage has its own queue and ``stageN.instances`` workers, each holding its own copy of the stage (loaded
  with ``stageN.stage_threads``, its worker thread set to them). A worker takes a batch, runs it, hands each
  request's output on to the next stage's queue (``from_previous``) or completes it with LoadGen: the stages of
  different requests overlap, so a cascade's throughput is its slowest stage's, not the sum.
- Dynamic batching (``max_batch`` > 1): a free worker takes the oldest queued request and, from the others queued,
  those nearest it in length (``batch_length``, what bench sorts by), up to ``max_batch``; it waits at most
  ``max_queue_delay_ms`` from the oldest request's arrival for the batch to fill, then runs what it has. The batch
  is one padded forward (``forward_batch``); each request gets the batch's time over its size as its stage time.
- Padding must not change an output: ``check_batch_parity`` runs each batching stage's first ``max_batch`` inputs
  (sorted by length) batched and one by one at warm-up, and refuses the run when an output differs past the parity
  rules (tokens identical, floats within the stage's ``tolerance``; ``speechperf.compare.parity``).
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from speechperf.benchmark.stage import Stage, StageError, StageIO
from speechperf.loadgen.sut import SystemUnderTest

log = logging.getLogger(__name__)


@attrs.frozen
class StageServing:
    """How one stage is served: its pool (``instances`` copies at ``threads`` each) and its dynamic batching."""

    instances: int = 1
    threads: int = 1
    max_batch: int = 1
    max_queue_delay_ms: float = 0.0

    def describe(self) -> str:
        batching = f", batches <= {self.max_batch} within {self.max_queue_delay_ms:g} ms" if self.max_batch > 1 else ""
        return f"{self.instances} instance(s) x {self.threads} thread(s){batching}"


def serving_of(cfg, threads: int | None = None) -> list[StageServing] | None:
    """Each stage's serving from the config (None: ``general.serving: chain``, one chain per instance);
    ``threads``: the run's (--threads), what a stage without ``stage_threads`` gets."""
    if cfg.general.serving != "stages":
        return None
    default = threads if threads is not None else cfg.general.threads
    return [
        StageServing(s.instances, s.stage_threads or default, s.max_batch, float(s.max_queue_delay_ms))
        for s in cfg.stages
    ]


def check_serving(cfg, instances: int, threads: int) -> None:
    """One line for a staged run the machine or the options cannot give: --instances beside the stages' pools, a
    pool wider than the cores this process may use."""
    from speechperf.errors import SpeechperfError
    from speechperf.values import usable_cores

    if instances != 1:
        raise SpeechperfError(
            f"--instances {instances}: with general.serving: stages each stage has its own pool (stageN.instances); "
            "allowed: 1 (or general.serving: chain)"
        )
    cores = usable_cores()
    for n, how in enumerate(serving_of(cfg, threads) or [], 1):
        if how.instances * how.threads > cores:
            raise SpeechperfError(
                f"stage{n}.instances = {how.instances}: {how.instances} instance(s) x {how.threads} thread(s) need "
                f"{how.instances * how.threads} cores; this process may use {cores} (allowed: 1 to "
                f"{max(1, cores // how.threads)} at {how.threads} thread(s))"
            )


@attrs.define
class Request:
    sample_id: int
    index: int
    inp: StageIO  # the input of the stage it is queued at
    length: int
    arrived: float
    outs: list[StageIO] = attrs.Factory(list)
    times: list[float] = attrs.Factory(list)


class Batcher:
    """One stage's queue: ``take`` blocks for a request, then gathers a batch of those nearest it in length."""

    def __init__(self, max_batch: int, max_queue_delay_ms: float):
        self.max_batch = max_batch
        self.delay_s = max_queue_delay_ms / 1000.0
        self._items: collections.deque[Request] = collections.deque()
        self._ready = threading.Condition()
        self._closed = False

    def put(self, request: Request) -> None:
        with self._ready:
            self._items.append(request)
            self._ready.notify()

    def close(self) -> None:
        with self._ready:
            self._closed = True
            self._ready.notify_all()

    def take(self) -> list[Request] | None:
        """The next batch (the oldest request first), or None once closed and empty."""
        with self._ready:
            while not self._items and not self._closed:
                self._ready.wait()
            if not self._items:
                return None
            deadline = self._items[0].arrived + self.delay_s
            while len(self._items) < self.max_batch and not self._closed:
                left = deadline - time.perf_counter()
                if left <= 0:
                    break
                self._ready.wait(left)
            if not self._items:  # another worker took them while this one waited
                return None if self._closed else self.take()
            return self._pick()

    def _pick(self) -> list[Request]:
        oldest = self._items.popleft()
        if self.max_batch == 1 or not self._items:
            return [oldest]
        # the nearest in length pad the least; ties keep arrival order
        nearest = sorted(self._items, key=lambda r: abs(r.length - oldest.length))[: self.max_batch - 1]
        for request in nearest:
            self._items.remove(request)
        return [oldest, *nearest]


class StagedSystemUnderTest(SystemUnderTest):
    """LoadGen's SUT over per-stage pools: ``pools[n]`` the instances of stage n, ``serving[n]`` how it is served."""

    def __init__(self, lg, pools: Sequence[Sequence[Stage]], inputs: Sequence[StageIO], backend, device: str,
                 serving: Sequence[StageServing]):  # fmt: skip
        self.pools = pools
        self.serving = list(serving)
        self._batchers = [Batcher(s.max_batch, s.max_queue_delay_ms) for s in serving]
        self.batch_sizes: list[list[int]] = [[] for _ in pools]
        # the chains the warm-up runs: every instance of every stage at least once
        width = max(len(pool) for pool in pools)
        chains = [[pool[min(k, len(pool) - 1)] for pool in pools] for k in range(width)]
        super().__init__(lg, chains, inputs, backend, device)

    def _start_workers(self) -> None:
        self._workers = [
            threading.Thread(target=self._serve, args=(n, stage), daemon=True, name=f"speechperf-stage{n + 1}-{k}")
            for n, pool in enumerate(self.pools)
            for k, stage in enumerate(pool)
        ]
        for worker in self._workers:
            worker.start()

    def reset(self) -> None:
        super().reset()
        self.batch_sizes = [[] for _ in self.pools]

    def _issue(self, query_samples) -> None:
        now = time.perf_counter()
        with self._lock:
            if self.served.first_issue is None:
                self.served.first_issue = now
        first = self.pools[0][0]
        for sample in query_samples:
            inp = self.inputs[sample.index]
            self._batchers[0].put(Request(sample.id, sample.index, inp, first.batch_length(inp), now))

    def _serve(self, n: int, stage: Stage) -> None:
        stage.backend.set_threads(self.serving[n].threads)  # this worker thread's intra-op threads (torch's)
        batcher = self._batchers[n]
        last = n == len(self.pools) - 1
        while True:
            batch = batcher.take()
            if batch is None:
                return
            if self.draining:
                for request in batch:
                    self._answer(request, None)
                continue
            try:
                start = time.perf_counter()
                inps = [r.inp for r in batch]
                outs = stage.forward_batch(inps) if len(batch) > 1 else [stage.forward(inps[0])]
                stage.backend.synchronize(self.device)
                share = (time.perf_counter() - start) / len(batch)
            except Exception as exc:  # recorded; each request is still answered, so LoadGen does not wait on it
                for request in batch:
                    self._answer(request, f"{type(exc).__name__}: {exc}".splitlines()[0])
                continue
            with self._lock:
                self.batch_sizes[n].append(len(batch))
            for request, out in zip(batch, outs):
                request.outs.append(out)
                request.times.append(share)
                if last:
                    self._answer(request, None)
                    continue
                try:
                    following = self.pools[n + 1][0]
                    request.inp = following.from_previous(out)
                    request.length = following.batch_length(request.inp)
                except Exception as exc:  # noqa: BLE001  (the hand-off failed: this request's failure)
                    self._answer(request, f"{type(exc).__name__}: {exc}".splitlines()[0])
                    continue
                request.arrived = time.perf_counter()
                self._batchers[n + 1].put(request)

    def _answer(self, request: Request, failure: str | None) -> None:
        served = not self.draining and failure is None
        self._complete(request.sample_id, request.index, request.outs if served else None, request.times, failure)

    def close(self) -> None:
        for batcher in self._batchers:
            batcher.close()
        self.lg.DestroySUT(self.handle)

    def capacity(self, stage_s: Sequence[float]) -> float:
        """Samples a second the pools serve, from each stage's warm-up time alone (``stage_s``): the slowest pool's
        rate, counting a full batch as one forward's time (an upper bound: an Offline query sized from it runs a
        little longer, never ends early; a chain's rate ended a staged Offline run before its minimum duration)."""
        return min(s.instances * s.max_batch / t for s, t in zip(self.serving, stage_s))

    def mean_batches(self) -> list[float | None]:
        """Each stage's mean requests a forward in the last test (None: no forward)."""
        return [sum(sizes) / len(sizes) if sizes else None for sizes in self.batch_sizes]


def check_batch_parity(pools: Sequence[Sequence[Stage]], serving: Sequence[StageServing],
                       inputs: Sequence[StageIO], tolerances: Sequence[dict[str, Any] | None]) -> list[str]:  # fmt: skip
    """Each batching stage's first ``max_batch`` inputs (the dataset's, handed on through the stages before it)
    sorted by length, run as one batch and one by one; a line per stage saying what was compared, or StageError
    naming the stage and what differs."""
    from speechperf.meters.parity import compare_outputs

    lines = []
    current = list(inputs)
    for n, (pool, how) in enumerate(zip(pools, serving)):
        stage = pool[0]
        if how.max_batch > 1:
            if stage.batch_refusal is not None:
                raise StageError(f"stage{n + 1}.max_batch = {how.max_batch}: stage{n + 1} ({stage.label}) cannot "
                                 f"batch: {stage.batch_refusal}; allowed for it: 1")  # fmt: skip
            chosen = sorted(current, key=stage.batch_length)[: how.max_batch]
            batched = stage.forward_batch(chosen)
            single = [stage.forward(inp) for inp in chosen]
            ref, got, other = _arrays(n, single), _arrays(n, batched), _others(single) != _others(batched)
            tolerance = tolerances[n]
            diffs = compare_outputs(ref, got, {f"stage{n + 1}": tolerance} if tolerance else None)
            differing = [d.describe() for d in diffs if d.differing]
            if differing or other:
                what = "; ".join(differing) or "its text or segments differ"
                raise StageError(
                    f"stage{n + 1}.max_batch = {how.max_batch}: a batch of {len(chosen)} changes the outputs of "
                    f"stage{n + 1} ({stage.label}) against batch 1: {what}; allowed for it: 1"
                )
            lines.append(
                f"batch parity: stage{n + 1} ({stage.label}) batches of {len(chosen)} against batch 1: "
                + ("; ".join(d.describe() for d in diffs) or "outputs equal")
            )
        later = max((s.max_batch for s in serving[n + 1 :]), default=1)
        if later == 1:  # no stage after this one batches: nothing more to hand on
            break
        current = [pools[n + 1][0].from_previous(stage.forward(inp)) for inp in current[:later]]
    return lines


def _flat(out: StageIO):
    """(name, value) of every output, a model file's named outputs as ``outputs.<name>``."""
    for name, value in out.items():
        if isinstance(value, dict):
            yield from ((f"{name}.{k}", v) for k, v in value.items())
        else:
            yield name, value


def _numeric(value) -> np.ndarray | None:
    if isinstance(value, (np.ndarray, list, tuple)) or np.isscalar(value) and not isinstance(value, str):
        arr = np.asarray(value)
        return arr if arr.dtype.kind in "biuf" else None
    return None


def _arrays(n: int, outs: Sequence[StageIO]) -> dict[tuple, np.ndarray]:
    """The numeric outputs, keyed as speechperf.compare.parity compares them."""
    found: dict[tuple, np.ndarray] = {}
    for i, out in enumerate(outs):
        for name, value in _flat(out):
            arr = _numeric(value)
            if arr is not None:
                found[(f"stage{n + 1}", i, name)] = arr
    return found


def _others(outs: Sequence[StageIO]) -> list[dict]:
    """What is not numeric (a text), compared as is."""
    return [{k: repr(v) for k, v in _flat(out) if _numeric(v) is None} for out in outs]
