"""What a ``path`` stage's output is, decided once for every command (bench, loadgen, optimize, profile, compare,
tune, ``config check -b``) when its model is loaded: the config's ``output_kind`` against the shape the model
declares for its first output, beside its inputs' (issue 44: a mask flattened into a "waveform" was dumped as wav and
scored as speech). ``speechperf.benchmark.plan`` lists it among the run's rules.
"""

from __future__ import annotations


def decide(stage, role: str, output, inputs, where: str) -> tuple[str, str | None]:
    """(kind, the line that says what was assumed, or None) of a ``path`` stage's first output, from the config's
    ``output_kind`` and the shape the loaded model declares for it (``output``, a TensorInfo) beside its inputs'.

    Only a speech role's output can be audio, and only an output of one axis of samples (axes of size 1 and a
    leading batch axis aside) is: an undeclared output of frames x bins is never taken as a waveform (``features``
    when it is shaped like the features input, as a mask is; ``spectrogram`` otherwise), and a declared
    ``waveform`` of that shape is refused. Where the model declares no shape the role's kind is assumed, said in
    the line, and each output is checked when it comes (``FileStage``)."""
    from speechperf.benchmark.stage import OUTPUT_AUDIO_ROLES, StageError
    from speechperf.config.schema import resolve_output_kind

    declared = stage.output_kind
    if role not in OUTPUT_AUDIO_ROLES:
        return resolve_output_kind(declared, role), None
    audio = _audio_shape(output.shape)
    shape = _shape_text(output.shape)
    if declared == "waveform" and audio is False:
        raise StageError(
            f"{where}.output_kind = waveform: the model declares output {output.name!r} as {shape}, frames of bins, "
            "not a waveform (one axis of samples besides axes of size 1); declare what it is: output_kind mask, "
            "spectrogram or features"
        )
    if declared or audio is True:
        return declared or "waveform", None
    if audio is None:
        return "waveform", (
            f"{where}: the model declares {'no shape' if output.shape is None else shape} for output "
            f"{output.name!r}; taken as a waveform (the {role} role's output), each one checked to be one axis of "
            "samples; if it is not audio, declare output_kind: mask, spectrogram or features"
        )
    like = _shaped_like(output.shape, [i for i in inputs if i.name in _feature_inputs(stage)])
    kind = "features" if like is not None else "spectrogram"
    what = f"shaped like its features input {like.name!r}" if like is not None else "frames of bins"
    return kind, (
        f"{where}: output {output.name!r} is declared {shape}, {what}, not audio: taken as output_kind {kind} "
        "(never dumped as wav or scored as speech); declare output_kind: mask to apply it to the noisy STFT and "
        "score the speech (with features.spectrum: linear), or waveform if it is audio"
    )


def _feature_inputs(stage) -> set[str]:
    return {i.name for i in stage.inputs if i.source == "features"}


def _audio_shape(shape) -> bool | None:
    """True: one axis of samples (``[T]``, ``[1, T]``, ``[batch, 1, T]``); False: surely more (a fixed size above 1
    beside another axis that is not 1); None: not known (no shape, or several dynamic axes)."""
    if shape is None:
        return None
    dims = list(shape)
    if len(dims) >= 2 and (dims[0] == 1 or not isinstance(dims[0], int)):
        dims = dims[1:]  # the batch axis (fed with 1)
    fixed = sum(1 for d in dims if isinstance(d, int) and d > 1)
    dynamic = sum(1 for d in dims if not isinstance(d, int))
    if fixed + dynamic <= 1:
        return True
    return False if fixed else None


def _shaped_like(shape, inputs):
    """The first of ``inputs`` whose declared shape has ``shape``'s rank and its fixed sizes, or None."""
    for info in inputs:
        if info.shape is None or len(info.shape) != len(shape):
            continue
        pairs = list(zip(info.shape, shape))
        if all(a == b for a, b in pairs if isinstance(a, int) and isinstance(b, int)) and any(
            isinstance(a, int) and a > 1 and a == b for a, b in pairs
        ):
            return info
    return None


def _shape_text(shape) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]" if shape is not None else "unknown"
