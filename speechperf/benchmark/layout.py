"""The axis order an input of a user's model file is fed in (``stageN.inputs[].layout``), and its check at load.

A sample's arrays have their own axes: ``features`` (frames, bins) = ``TC``, ``audio`` (samples,) and ``tokens``
(ids,) = ``T``. A layout is the order of the axes the model takes, in the letters B (batch), T (time) and C
(channels): ``BTC`` feeds features as ``[1, frames, 80]`` (the default, B + the sample's own axes), ``BCT`` as
``[1, 80, frames]``, as vocoders, acoustic models and conv front-ends take them. A letter the sample's array lacks
is a new axis of size 1 (``BCT`` audio is ``[1, 1, samples]``); leaving B out feeds no batch axis.

Where the model file declares its input shapes (ONNX, paddle inference), the layout is checked against them when
the stage is loaded, not on every sample, and a mismatch names the layout that fits.
"""

from __future__ import annotations

from itertools import permutations

import numpy as np

from speechperf.backend import TensorInfo
from speechperf.benchmark.stage import StageError
from speechperf.config.schema import LAYOUT_NAMES

_NAMES = {letters: name for name, letters in LAYOUT_NAMES.items()}


def own_axes(source: str) -> str:
    """The axes of a sample's array for an input ``source``: TC for features, T for audio and tokens."""
    return "TC" if source.startswith("feature") else "T"


def layout_of(source: str, layout: str | None) -> str:
    return layout or "B" + own_axes(source)


def arrange(value: np.ndarray, source: str, layout: str | None) -> np.ndarray:
    """``value`` (in the sample's own axes) with its axes in ``layout`` order, missing letters as size-1 axes."""
    own = own_axes(source)
    letters = layout_of(source, layout)
    for axis in letters:
        if axis not in own:
            value, own = value[None], axis + own
    return np.transpose(value, [own.index(axis) for axis in letters])


def fed_shape(
    source: str, layout: str | None, channels: int | None, frames: int | None = None
) -> tuple[int | None, ...]:
    """The shape fed in ``layout``: B and an added axis are 1, T is ``frames`` (None: it varies with the sample),
    C is ``channels``."""
    own = own_axes(source)
    sizes = {"B": 1, "T": frames, "C": channels if "C" in own else 1}
    return tuple(sizes[axis] for axis in layout_of(source, layout))


def _misfit(shape: tuple[int | None, ...], declared: tuple) -> int | None:
    """None when ``shape`` cannot be fed where ``declared``; else how many axes fit only if the sample's length
    happens to equal a fixed size the model declares (0: a sure fit)."""
    if len(shape) != len(declared):
        return None
    unsure = 0
    for size, want in zip(shape, declared):
        if not isinstance(want, int) or want < 0:
            continue
        if size is None:
            unsure += 1
        elif size != want:
            return None
    return unsure


def _size(info: TensorInfo, letters: str) -> int | None:
    """The fixed channel size the model declares where ``letters`` puts C (None where it declares none)."""
    if info.shape is None or len(letters) != len(info.shape):
        return None
    want = info.shape[letters.index("C")]
    return want if isinstance(want, int) and want >= 0 else None


def _text(shape) -> str:
    return "[" + ", ".join("?" if d is None or isinstance(d, str) or d < 0 else str(d) for d in shape) + "]"


def _named(letters: str) -> str:
    return f"{letters} ({_NAMES[letters]})" if letters in _NAMES else letters


def check_layout(
    info: TensorInfo,
    source: str,
    layout: str | None,
    channels: int | None,
    what: str,
    channel_key: str,
    frames: int | None = None,
) -> None:
    """Raise a one-line StageError when the shape the model declares for ``info`` cannot take this input as it
    is fed: naming the layout that fits, or (for features) the channel size the model wants."""
    if info.shape is None:  # the format declares no shapes (TorchScript): a mismatch fails in the forward
        return
    letters = layout_of(source, layout)
    shape = fed_shape(source, layout, channels, frames)
    own = own_axes(source)
    candidates = ["".join(p) for n in (len(own), len(own) + 1, len(own) + 2) for p in permutations("BTC", n)]
    candidates = [c for c in candidates if set(own) <= set(c)]
    scored = {c: _misfit(fed_shape(source, c, channels, frames), info.shape) for c in candidates}
    fitting = sorted((score, c) for c, score in scored.items() if score is not None)
    mine = _misfit(shape, info.shape)
    # [1, 80, ?] takes BCT surely; BTC only if a sample had exactly 80 frames: the sure fit wins.
    if mine is not None and (mine == 0 or fitting[0][0] == mine):
        return
    fed = f"{what} is fed as {letters} {_text(shape)}"
    sure = [c for score, c in fitting if score == 0]
    resized = [
        c for c in candidates if "C" in own and _misfit(fed_shape(source, c, _size(info, c), frames), info.shape) == 0
    ]
    if sure or not resized:
        if fitting:
            best = (sure or [c for _, c in fitting])[0]
            raise StageError(
                f"{fed}; the model declares {info.name!r} as {_text(info.shape)}, which takes layout "
                f"{_named(best)}: set layout: {_NAMES.get(best, best)}"
            )
    else:  # the right rank and order for some layout, but another channel size
        best = resized[0]
        want = info.shape[best.index("C")]
        raise StageError(
            f"{fed}; the model declares {info.name!r} as {_text(info.shape)}: {want} channels in layout "
            f"{_named(best)}, not {channels}: set {channel_key}: {want}"
            + (f" and layout: {_NAMES.get(best, best)}" if best != letters else "")
        )
    raise StageError(
        f"{fed}; the model declares {info.name!r} as {_text(info.shape)}, which no layout of {source} ({own}) fits"
    )
