"""Profile inference through the step profiler: each step runs every stage once, in order.

``speechperf profile --model FILE`` makes one stage of a model file on random inputs
(``ProfileStage.of_session``); ``speechperf profile --config FILE`` makes one stage per config stage, each with its
inputs for every sample of the dataset (``ProfileStage.of_stage``). Step ``k`` runs sample ``k mod n`` through the
whole pipeline, so the loop cycles over the samples until ``batch_range`` has ended.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from speechperf.backend import Session, TensorInfo
from speechperf.errors import SpeechperfError, shorten
from speechperf.profiler.options import ProfilerOptions
from speechperf.profiler.summary import ProfileSummary
from speechperf.values import ELEMENTS_MAX


@attrs.frozen
class ProfileStage:
    """One stage of a profiled step: ``run(sessions, inputs[k % len(inputs)])`` is its forward in step ``k``.

    ``batch`` is the number of samples one forward processes (``num_samples`` of a step, for samples/s).
    """

    name: str
    sessions: Mapping[str, Session]
    run: Callable[[Mapping[str, Session], Any], object]
    inputs: Sequence[Any]
    batch: int = 1

    @classmethod
    def of_session(cls, name: str, session: Session, feeds: Mapping[str, np.ndarray]) -> ProfileStage:
        """A model file called on fixed feeds; its batch is axis 0 of its first input."""
        first = next(iter(feeds.values()), None)
        batch = int(first.shape[0]) if first is not None and first.ndim else 1
        return cls(name, {name: session}, lambda sessions, f: sessions[name](f), (feeds,), batch)

    @classmethod
    def of_stage(cls, stage, inputs: Sequence[Any]) -> ProfileStage:
        """A benchmark stage (``speechperf.benchmark.stage.Stage``): one sample per forward, decoding included."""
        return cls(stage.label, stage.sessions, stage.run, tuple(inputs), 1)


def profile_stages(
    backend,
    stages: Sequence[ProfileStage],
    options: ProfilerOptions | str | None,
    roof: tuple[float, str] | None = None,
    echo: bool = True,
) -> ProfileSummary:
    """Run the stages step after step until ``batch_range`` has ended; return the summary (printed when ``echo``).
    ``roof``: the compute roof (GFLOP/s, what it is) the ops with FLOPs are listed against."""
    options = ProfilerOptions.coerce(options)
    if not stages or any(not stage.inputs for stage in stages):
        raise SpeechperfError("nothing to profile: every stage needs at least one input")
    prof = backend.step_profiler(options)
    prof.roof = roof
    prof.echo = echo
    prof.ends_loop_when_finished = True  # the loop below stops at prof.finished: exit_on_finished is honoured
    with prof:
        # a backend that profiles sessions rather than the process (onnxruntime) hands back stand-ins to call
        attached = [{key: prof.attach(s) for key, s in stage.sessions.items()} for stage in stages]
        k = 0
        while not prof.finished:
            for stage, sessions in zip(stages, attached):
                stage.run(sessions, stage.inputs[k % len(stage.inputs)])
            prof.step(num_samples=stages[0].batch)
            k += 1
    return prof.summary


_DTYPES = ("float32", "float64", "float16", "int64", "int32", "int8", "uint8", "bool")


def parse_input_spec(text: str) -> tuple[str, tuple[int, ...], str | None]:
    """``NAME:SHAPE[:DTYPE]`` with SHAPE like ``4x80x100`` -> (name, shape, dtype or None)."""
    parts = text.split(":")
    if len(parts) not in (2, 3) or not parts[0] or not re.fullmatch(r"\d+(x\d+)*", parts[1]):
        raise SpeechperfError(f"--input {text!r} is not NAME:SHAPE[:DTYPE]; write e.g. x:4x80x100 or tokens:1x12:int64")
    dtype = parts[2] if len(parts) == 3 else None
    if dtype is not None and dtype not in _DTYPES:
        raise SpeechperfError(f"--input {text!r}: dtype {dtype!r} is not known; allowed: {', '.join(_DTYPES)}")
    shape = tuple(int(d) for d in parts[1].split("x"))
    if 0 in shape:
        raise SpeechperfError(f"--input {text!r}: a zero-length axis cannot be run")
    if math.prod(shape) > ELEMENTS_MAX:  # before numpy tries to allocate it
        raise SpeechperfError(
            f"--input {shorten(text)}: {math.prod(shape):.3g} elements; at most {ELEMENTS_MAX:,} (2**28) in one input"
        )
    return parts[0], shape, dtype


def example_shape(declared) -> str:
    """An --input SHAPE that fits a declared shape: its fixed axes as declared, a dynamic one (time) 100, a batch
    axis 1; without a declared shape, features [1, 80, 100]."""
    if declared is None:
        return "1x80x100"
    sizes = [d if isinstance(d, int) and d > 0 else (1 if i == 0 else 100) for i, d in enumerate(declared)]
    return "x".join(map(str, sizes))


def random_feeds(
    inputs: Sequence[TensorInfo], given: Mapping[str, tuple[tuple[int, ...], str | None]], seed: int = 0
) -> dict[str, np.ndarray]:
    """Seeded random arrays for a session's inputs: normal floats, integers in [0, 2), random booleans.

    A shape comes from ``given`` or, when every axis is fixed, from the model; otherwise it is an error.
    """
    names = [t.name for t in inputs]
    for name in given:
        if name not in names:
            raise SpeechperfError(f"--input {name!r}: the model has no such input; its inputs: {', '.join(names)}")
    rng = np.random.default_rng(seed)
    feeds = {}
    for info in inputs:
        shape, dtype_name = given.get(info.name, (None, None))
        if shape is None:
            fixed = tuple(d for d in info.shape or () if isinstance(d, int) and d > 0)
            if info.shape is None or len(fixed) != len(info.shape):
                shown = (
                    "?" if info.shape is None else "x".join(str(d) if isinstance(d, int) else "?" for d in info.shape)
                )
                raise SpeechperfError(
                    f"input {info.name!r} has no fixed shape ({shown}); give it with --input {info.name}:SHAPE, "
                    f"e.g. --input {info.name}:{example_shape(info.shape)}"
                )
            shape = fixed
        dtype = np.dtype(dtype_name or info.dtype or "float32")
        if dtype.kind == "f":
            feeds[info.name] = rng.standard_normal(shape).astype(dtype)
        elif dtype.kind == "b":
            feeds[info.name] = rng.integers(0, 2, shape).astype(bool)
        else:
            feeds[info.name] = rng.integers(0, 2, shape).astype(dtype)
    return feeds
