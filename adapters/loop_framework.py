"""Which framework a training loop runs on, found from what its step uses, never from what is imported.

A PaddleSpeech environment imports paddle (``paddlespeech.s2t``'s ``__init__`` does) whatever the trainer trains
with, and a paddle trainer may import torch for one helper, so "which framework is in ``sys.modules``" cannot name
the loop's. What can: the objects the step holds. At the first ``add_profiler_step`` call the training step has
just run, and its tensors, loss, model and optimizer are in the caller's frames (``loss``, ``batch``,
``self.model``, ``self.optimizer``). Each object votes for the framework whose classes it is an instance of (a
user's ``nn.Module`` subclass defined in ``__main__`` counts through its bases); containers are looked into one
level. Objects the caller passes (``add_profiler_step(..., uses=model)``) count before the frames.

When nothing votes, or the votes tie, the imported candidates that profile training loops decide if there is only
one; otherwise the caller gets one warning line and ``DEFAULT_BACKEND`` (PaddleSpeech's paddle), never an error.
Framework-free: a framework is a name (``framework_module``); no framework is imported here.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from types import FrameType, FunctionType, MethodType, ModuleType

#: The framework profiled when the loop's own objects do not say: PaddleSpeech's.
DEFAULT_BACKEND = "paddle"

#: How many of the caller's frames are looked at (the trainer's after_train_batch, its train loop, their callers).
FRAMES = 6


def owner(obj: object, roots: Mapping[str, str]) -> str | None:
    """The backend whose framework defines ``obj``'s class or one of its bases; ``roots``: module root -> backend."""
    for cls in type(obj).__mro__:
        backend = roots.get(str(getattr(cls, "__module__", "") or "").split(".", 1)[0])
        if backend is not None:
            return backend
    return None


def _objects(values: Iterable[object]) -> Iterable[object]:
    """The values, what containers among them hold (one level), and the attributes of other objects (a trainer's
    ``self.model``), but not of modules (``import torch`` is not a vote) or functions."""
    for value in values:
        yield value
        if isinstance(value, (list, tuple)):
            yield from value[:16]
        elif isinstance(value, dict):
            yield from list(value.values())[:16]
        elif hasattr(value, "__dict__") and not isinstance(value, (type, ModuleType, FunctionType, MethodType)):
            try:
                attributes = list(vars(value).values())
            except TypeError:
                continue
            yield from attributes[:64]


def votes(values: Iterable[object], roots: Mapping[str, str]) -> Counter:
    counts: Counter = Counter()
    for obj in _objects(values):
        backend = owner(obj, roots)
        if backend is not None:
            counts[backend] += 1
    return counts


def batch_size(values: Iterable[object]) -> int | None:
    """``benchmark_batch_size`` of the first object that has one as a positive int (the trainer's argparse namespace,
    ``self.args``, when PaddleSpeech's own "Benchmark Options" group parsed it), else None."""
    for obj in _objects(values):
        size = getattr(obj, "benchmark_batch_size", None) if not isinstance(obj, ModuleType) else None
        if isinstance(size, int) and not isinstance(size, bool) and size > 0:
            return size
    return None


def caller_values(skip: int) -> list[object]:
    """The local variables of the ``FRAMES`` frames above the ``skip`` innermost ones."""
    values: list[object] = []
    frame: FrameType | None = sys._getframe(skip + 1)
    for _ in range(FRAMES):
        if frame is None:
            break
        values.extend(frame.f_locals.values())
        frame = frame.f_back
    return values


def decide(counts: Counter, imported: list[str]) -> tuple[str, str | None]:
    """(backend, a warning line or None) from the votes and the imported candidates."""
    ranked = counts.most_common()
    if ranked and (len(ranked) == 1 or ranked[0][1] > ranked[1][1]):
        return ranked[0][0], None
    if not ranked and len(imported) == 1:
        return imported[0], None  # the only framework the loop could have used
    why = (
        f"the loop's objects are {', '.join(f'{n} {b}' for b, n in ranked)}"
        if ranked
        else "the loop's step holds no tensor, model or optimizer the profiler can see"
    )
    return DEFAULT_BACKEND, (
        f"cannot tell which framework the loop trains with ({why}; imported: {', '.join(imported) or 'none'}); "
        f"{DEFAULT_BACKEND} is profiled, as PaddleSpeech does; add backend=torch or backend=paddle to the profiler "
        "options, or pass uses=model to add_profiler_step"
    )
