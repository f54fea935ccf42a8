"""FLOPs per sample: floating point operations, one multiply-add counted as 2 FLOPs.

Every count carries its ``source``:

- ``"papi"``: hardware counters (``PAPI_SP_OPS + PAPI_DP_OPS``, see ``speechperf.meters.papi``), over the whole
  forward (numpy decoding included);
- ``"analytic"``: the backend's counter over each session call (``backend.count_flops(session, feeds)``), summed over
  the calls of one forward.

The analytic convention, the same on every backend so that one model counts the same on torch, paddle and
onnxruntime: only the multiply-adds of matrix products are counted, as ``2 * multiply-adds``:

- matmul / linear / gemm: ``2*M*N*K`` (bias adds not counted);
- convolution: ``2 * output elements * (C_in/groups) * kernel size``; transposed convolution:
  ``2 * input elements per channel * weight elements * batch``;
- LSTM / GRU / RNN: ``2 * steps * batch * (elements of every weight matrix)`` (input and recurrent weights of each
  layer and direction; gate nonlinearities and bias adds not counted);
- attention: its projections as matmuls, plus ``2*L*S*E`` for ``Q K^T`` and ``2*L*S*E_v`` for ``A V`` per head and
  batch (softmax and scaling not counted).

Everything else (elementwise ops, normalisation, softmax, activations, reductions, data movement) is not counted,
and every count lists those ops in ``uncounted`` (the backend's own op names).

Counting is much slower than running (torch dispatches every op through Python; paddle traces a program per input
shape), so by default (``cache_by_shape=True``) the analytic count of a session is computed once per distinct input
shapes and dtypes and reused: a decoding loop repeats the same step shapes across samples. That is exact for graphs
whose work depends only on input shapes (every exported reference model component); pass ``cache_by_shape=False``
for a session whose work depends on input values.

Use::

    meter = FlopsMeter(backend, source="auto")        # "auto": PAPI where it works, else analytic
    meter.measure(sample_id, lambda s: s(feeds), session)   # forward gets a counting proxy of ``session``
    meter.measure(sample_id, lambda s: decode(s["enc"], s["dec"], feats), {"enc": enc, "dec": dec})
    meter.result()   # FlopCount: .total, .per_sample (id -> FLOPs), .source, .uncounted, .fallback_reason
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    import numpy as np

from speechperf.meters.papi import papi_flops, papi_status
from speechperf.meters.samples import MeterError, SampleFailure, failure

SOURCES = ("auto", "papi", "analytic")


def _sorted_tuple(items) -> tuple[str, ...]:
    return tuple(sorted(set(items)))


@attrs.frozen
class FlopCount:
    """A FLOP count. ``total`` is the sum over everything counted; ``per_sample`` maps sample id -> FLOPs when the
    count covers a dataset (empty for one session call). ``by_kind`` splits the total into matmul / conv / rnn /
    attention. ``uncounted`` lists the ops seen but not counted. ``fallback_reason`` says why PAPI was not used."""

    total: int
    source: str
    uncounted: tuple[str, ...] = attrs.field(default=(), converter=_sorted_tuple)
    per_sample: Mapping[str, int] = attrs.field(factory=dict)
    by_kind: Mapping[str, int] = attrs.field(factory=dict)
    fallback_reason: str = ""
    #: sample id -> a lower bound on the bytes its forward moved: per session call, the feeds read, the outputs
    #: written and the weights read (``Session.parameter_bytes``); counted by the analytic meter only.
    traffic_per_sample: Mapping[str, int] = attrs.field(factory=dict)
    #: Whether every session counted told its weights' bytes (False: the bound holds the feeds and outputs only).
    parameters_known: bool = True

    def __add__(self, other: FlopCount) -> FlopCount:
        kinds = dict(self.by_kind)
        for kind, value in other.by_kind.items():
            kinds[kind] = kinds.get(kind, 0) + value
        source = self.source if self.source == other.source else f"{self.source}+{other.source}"
        return FlopCount(
            self.total + other.total,
            source,
            self.uncounted + other.uncounted,
            {**self.per_sample, **other.per_sample},
            kinds,
            self.fallback_reason or other.fallback_reason,
        )

    @property
    def gflops(self) -> float:
        return self.total / 1e9


def _nbytes(values) -> int:
    return sum(int(getattr(v, "nbytes", 0)) for v in values)


class _CountingSession:
    """Stands in for a Session inside a forward: counts each call analytically, then runs it for real."""

    def __init__(self, backend, session, cache: dict | None):
        self._backend = backend
        self._session = session
        self._cache = cache
        self.count = FlopCount(0, "analytic")
        self.traffic = 0
        self._weights: int | None = None
        self.parameters_known = False  # known after the first call
        self._asked = False

    def __getattr__(self, name):
        return getattr(self._session, name)

    def __call__(self, feeds):
        self.count = self.count + self._count(feeds)
        if not self._asked:  # an eager session learns the weights a call reads by running it once (untimed)
            self._asked = True
            ask = getattr(self._session, "parameter_bytes", None)
            self._weights = ask(feeds) if ask is not None else None
            self.parameters_known = self._weights is not None
        out = self._session(feeds)
        self.traffic += _nbytes(feeds.values()) + _nbytes(out.values()) + (self._weights or 0)
        return out

    def _count(self, feeds) -> FlopCount:
        if self._cache is None:
            return self._backend.count_flops(self._session, feeds)
        key = (
            id(self._session),
            tuple(sorted((k, getattr(v, "shape", ()), str(getattr(v, "dtype", type(v)))) for k, v in feeds.items())),
        )
        if key not in self._cache:
            # the session is kept in the value so that its id cannot be reused by another session
            self._cache[key] = (self._session, self._backend.count_flops(self._session, feeds))
        return self._cache[key][1]


class FlopsMeter:
    """FLOPs of one forward per sample; see the module docstring for the convention."""

    name = "flops"

    def __init__(self, backend=None, source: str = "auto", cache_by_shape: bool = True):
        if source not in SOURCES:
            raise MeterError(f"unknown FLOPs source {source!r}; allowed: {', '.join(SOURCES)}")
        status = papi_status() if source in ("auto", "papi") else None
        if source == "papi" and status is not None and not status.available:
            raise MeterError(f"FLOPs source 'papi' is not available here: {status.reason}")
        self.source = "papi" if status is not None and status.available else "analytic"
        self.fallback_reason = status.reason if source == "auto" and status is not None and not status.available else ""
        if self.source == "analytic" and backend is None:
            raise MeterError("analytic FLOPs need a backend (backend.count_flops); none was given")
        self.backend = backend
        self._cache: dict | None = {} if cache_by_shape else None
        self._counts: dict[str, int] = {}
        self._traffic: dict[str, int] = {}
        self._parameters_known = True
        self._kinds: dict[str, int] = {}
        self._uncounted: set[str] = set()
        self._failures: list[SampleFailure] = []

    def measure(self, sample_id: str, forward: Callable[[Any], object], session) -> int | SampleFailure:
        """FLOPs of ``forward(session)``; ``session`` may be a Session or a mapping of name -> Session. ``forward``
        is called with a counting stand-in of the same shape, hence its Any argument."""
        try:
            if self.source == "papi":
                flops = papi_flops(lambda: forward(session))
            else:
                flops, traffic = self._analytic(forward, session)
                self._traffic[str(sample_id)] = traffic
        except Exception as exc:
            record = failure(sample_id, self.name, exc)
            self._failures.append(record)
            return record
        self._counts[str(sample_id)] = flops
        return flops

    def _analytic(self, forward, session) -> tuple[int, int]:
        if isinstance(session, Mapping):
            proxies = {k: _CountingSession(self.backend, s, self._cache) for k, s in session.items()}
            forward(proxies)
            counted = list(proxies.values())
        else:
            proxy = _CountingSession(self.backend, session, self._cache)
            forward(proxy)
            counted = [proxy]
        total = traffic = 0
        for proxy in counted:
            total += proxy.count.total
            traffic += proxy.traffic
            self._parameters_known &= proxy.parameters_known
            self._uncounted.update(proxy.count.uncounted)
            for kind, value in proxy.count.by_kind.items():
                self._kinds[kind] = self._kinds.get(kind, 0) + value
        return total, traffic

    @property
    def failures(self) -> tuple[SampleFailure, ...]:
        return tuple(self._failures)

    def result(self) -> FlopCount:
        return FlopCount(
            sum(self._counts.values()),
            self.source,
            self._uncounted,
            dict(self._counts),
            dict(self._kinds),
            self.fallback_reason,
            dict(self._traffic),
            self._parameters_known,
        )


@attrs.frozen
class KnownGraph:
    """A one-op graph whose FLOPs are known in closed form, for validating a backend's counter.

    ``"matmul"``: ``x[m, k] @ w[k, n]`` -> ``2*m*n*k``. ``"conv"``: a 1-D convolution of ``x[batch, c_in, t]`` with
    ``c_out`` kernels of size ``kernel``, no padding, stride 1 -> ``2 * batch * c_out * (t - kernel + 1) * c_in *
    kernel``. Each backend builds it in its framework (``backend.known_session(graph, threads)``) with input ``x``.
    """

    kind: str = attrs.field(validator=attrs.validators.in_(("matmul", "conv")))
    m: int = 64
    n: int = 48
    k: int = 32
    batch: int = 2
    c_in: int = 8
    c_out: int = 16
    t: int = 50
    kernel: int = 3
    seed: int = 0
    dtype: str = attrs.field(default="float32", validator=attrs.validators.in_(("float32", "int8")))

    @property
    def expected(self) -> int:
        if self.kind == "matmul":
            return 2 * self.m * self.n * self.k
        return 2 * self.batch * self.c_out * (self.t - self.kernel + 1) * self.c_in * self.kernel

    @property
    def input_shape(self) -> tuple[int, ...]:
        return (self.m, self.k) if self.kind == "matmul" else (self.batch, self.c_in, self.t)

    @property
    def weight_shape(self) -> tuple[int, ...]:
        return (self.k, self.n) if self.kind == "matmul" else (self.c_out, self.c_in, self.kernel)

    def weight(self):
        import numpy as np

        rng = np.random.default_rng(self.seed)
        if self.dtype == "int8":
            # 7-bit weights: 2 * 255 * 64 fits int16, so an x86 u8s8 kernel without VNNI (which adds pairs of
            # products in int16) is exact too, and the int8 graph's output can be checked against numpy's.
            return rng.integers(-64, 64, self.weight_shape, dtype=np.int8)
        return rng.standard_normal(self.weight_shape).astype("float32")

    def feeds(self) -> dict:
        import numpy as np

        rng = np.random.default_rng(self.seed + 1)
        if self.dtype == "int8":
            return {"x": rng.integers(0, 256, self.input_shape, dtype=np.uint8)}
        return {"x": rng.standard_normal(self.input_shape).astype("float32")}

    def reference(self, feeds) -> np.ndarray:
        """The expected output, computed with numpy."""
        import numpy as np

        x, w = feeds["x"], self.weight()
        if self.dtype == "int8":
            return x.astype(np.int32) @ w.astype(np.int32)
        if self.kind == "matmul":
            return x @ w
        windows = np.lib.stride_tricks.sliding_window_view(x, self.kernel, axis=2)  # [b, c_in, t', kernel]
        return np.einsum("bctk,ock->bot", windows, w)
