"""Profile inference through the step profiler: each step calls every stage once on its feeds.

``speechperf profile`` builds the stages from a model file and random inputs; a config's stages (a cascade) plug
in the same way, one ``ProfileStage`` per stage.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import attrs
import numpy as np

from speechperf.backend import Session, TensorInfo
from speechperf.errors import SpeechperfError
from speechperf.profiler.options import ProfilerOptions
from speechperf.profiler.summary import ProfileSummary


@attrs.frozen
class ProfileStage:
    name: str
    session: Session
    feeds: Mapping[str, np.ndarray]


def profile_stages(backend, stages: Sequence[ProfileStage], options: ProfilerOptions | str | None) -> ProfileSummary:
    """Run the stages step after step until ``batch_range`` has ended; return the summary (also printed).

    ``num_samples`` of a step is the batch size: axis 0 of the first stage's first input.
    """
    options = ProfilerOptions.coerce(options)
    first = next(iter(stages[0].feeds.values()), None) if stages else None
    batch = int(first.shape[0]) if first is not None and first.ndim else 1
    with backend.step_profiler(options) as prof:
        sessions = [prof.attach(stage.session) for stage in stages]
        while not prof.finished:
            for session, stage in zip(sessions, stages):
                session(stage.feeds)
            prof.step(num_samples=batch)
    return prof.summary


_DTYPES = ("float32", "float64", "float16", "int64", "int32", "int8", "uint8", "bool")


def parse_input_spec(text: str) -> tuple[str, tuple[int, ...], str | None]:
    """``NAME:SHAPE[:DTYPE]`` with SHAPE like ``4x80x100`` -> (name, shape, dtype or None)."""
    parts = text.split(":")
    if len(parts) not in (2, 3) or not parts[0] or not re.fullmatch(r"\d+(x\d+)*", parts[1]):
        raise SpeechperfError(
            f"--input {text!r} is not NAME:SHAPE[:DTYPE]; write e.g. x:4x80x100 or tokens:1x12:int64"
        )
    dtype = parts[2] if len(parts) == 3 else None
    if dtype is not None and dtype not in _DTYPES:
        raise SpeechperfError(f"--input {text!r}: dtype {dtype!r} is not known; allowed: {', '.join(_DTYPES)}")
    shape = tuple(int(d) for d in parts[1].split("x"))
    if 0 in shape:
        raise SpeechperfError(f"--input {text!r}: a zero-length axis cannot be run")
    return parts[0], shape, dtype


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
        shape, dtype = given.get(info.name, (None, None))
        if shape is None:
            if info.shape is None or not all(isinstance(d, int) and d > 0 for d in info.shape):
                shown = "?" if info.shape is None else "x".join(str(d) if isinstance(d, int) else "?" for d in info.shape)
                raise SpeechperfError(
                    f"input {info.name!r} has no fixed shape ({shown}); give it with --input {info.name}:SHAPE, "
                    f"e.g. --input {info.name}:1x80x100"
                )
            shape = tuple(info.shape)
        dtype = np.dtype(dtype or info.dtype or "float32")
        if dtype.kind == "f":
            feeds[info.name] = rng.standard_normal(shape).astype(dtype)
        elif dtype.kind == "b":
            feeds[info.name] = rng.integers(0, 2, shape).astype(bool)
        else:
            feeds[info.name] = rng.integers(0, 2, shape).astype(dtype)
    return feeds
