"""Post-training int8 quantization in paddle: ``paddle.quantization.PTQ``, run by the predictor with oneDNN int8.

``paddle-ptq``: absmax observers on the inputs and weights of every Linear and Conv1D layer the graph calls (found by
running it once: a component wrapper holds its whole parent model, and an observer that never sees data makes
``convert`` fail), calibration on real feeds, ``convert(remain_weight=True)`` (weights stay fp32 beside their
scales; the predictor's oneDNN int8 passes quantize them when it loads), then ``paddle.jit.save`` at the fixed
shapes of the first calibration feed: paddle 3.3.1 cannot save the quantize ops with a dynamic axis ("Each value
of attribute 'shape' is expected to be no less than 0"). The variant loads with ``enable_mkldnn()`` +
``enable_mkldnn_int8()``.

Before handing the file over, the hook loads it through the predictor and compares it with the converted layer on
the calibration feed it was saved at; if they disagree, the method fails with the figures (measured with paddle
3.3.1 on the reference S2T encoder: the converted layer stays within 0.02 of fp32, the saved program is off by
2.4 for outputs of scale 3.6, with and without oneDNN).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from speechperf.backends.paddle.framework import import_paddle
from speechperf.backends.paddle.session import input_spec
from speechperf.errors import first_line
from speechperf.optimize.hook import QuantizationError, QuantizedModel, QuantizeSource

paddle = import_paddle()

LOAD_OPTIONS = {"mkldnn_int8": True}
#: Largest |saved - converted| / max |converted| accepted before the saved program counts as broken.
SAVED_TOLERANCE = 0.1


def _fmt(spec) -> str | None:
    return "layer" if spec.factory else None


def _tensors(spec, feeds):
    names = [t.name for t in spec.inputs] if spec.inputs else list(feeds)
    return [paddle.to_tensor(np.ascontiguousarray(feeds[n])) for n in names]


def _called_layers(layer, args) -> list:
    called = []

    def record(sub, _inputs) -> None:  # a pre-hook that returns something replaces the inputs
        called.append(sub)

    hooks = [
        sub.register_forward_pre_hook(record)
        for sub in layer.sublayers()
        if isinstance(sub, (paddle.nn.Linear, paddle.nn.Conv1D))
    ]
    with paddle.no_grad():
        layer(*args)
    for hook in hooks:
        hook.remove()
    return list({id(s): s for s in called}.values())


def quantize(backend, method: str, source: QuantizeSource, out_dir: Path) -> QuantizedModel:
    from paddle.quantization import PTQ, QuantConfig
    from paddle.quantization.observers import AbsmaxObserver

    spec = source.spec_for(("layer",), method, _fmt)
    if not source.calibration:
        raise QuantizationError(f"{method}: no calibration feeds for {source.name}")
    out_dir.mkdir(parents=True, exist_ok=True)
    first = source.calibration[0]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            layer = spec.build_from_factory()
            layer.eval()
            config = QuantConfig(activation=None, weight=None)
            config.add_layer_config(
                _called_layers(layer, _tensors(spec, first)),
                activation=AbsmaxObserver(quant_bits=8),
                weight=AbsmaxObserver(quant_bits=8),
            )
            ptq = PTQ(config)
            observed = ptq.quantize(layer, inplace=False)
            with paddle.no_grad():
                for feeds in source.calibration:
                    observed(*_tensors(spec, feeds))
            converted = ptq.convert(observed, inplace=False, remain_weight=True)
            names = [t.name for t in spec.inputs] if spec.inputs else list(first)
            specs = [input_spec(n, str(first[n].dtype), list(first[n].shape)) for n in names]
            prefix = out_dir / source.name
            paddle.jit.save(converted, str(prefix), input_spec=specs)
            with paddle.no_grad():
                expected = converted(*_tensors(spec, first))
    except QuantizationError:
        raise
    except Exception as exc:
        raise QuantizationError(f"{method} on {source.name}: {type(exc).__name__}: {first_line(exc)}") from None
    files = (prefix.with_suffix(".json"), prefix.with_suffix(".pdiparams"))
    _check_saved(backend, files[0], spec, first, expected, method, source.name)
    shape = "x".join(str(d) for d in first[names[0]].shape)
    return QuantizedModel(
        files,
        "inference",
        dict(LOAD_OPTIONS),
        notes=(
            f"{method}: saved at the fixed input shapes of the first calibration feed ({names[0]} {shape}); paddle "
            f"{paddle.__version__} cannot save its quantize ops with dynamic axes",
        ),
    )


def _check_saved(backend, path: Path, spec, feeds, expected, method: str, name: str) -> None:
    from speechperf.backend import ModelSpec

    session = backend.load(ModelSpec(path=path, inputs=spec.inputs, options=LOAD_OPTIONS), threads=1)
    got = session(dict(feeds))
    expected = expected if isinstance(expected, (tuple, list)) else (expected,)
    for value, (out_name, array) in zip(expected, got.items()):
        want = value.numpy()
        if not np.issubdtype(want.dtype, np.floating):
            continue
        scale = max(float(np.abs(want).max()), 1e-12)
        diff = float(np.abs(np.asarray(array, dtype=np.float64) - want).max())
        if diff / scale > SAVED_TOLERANCE:
            raise QuantizationError(
                f"{method} on {name}: the saved int8 program disagrees with the converted layer it was saved from "
                f"(max |diff| {diff:.3g} for outputs of scale {scale:.3g}, on {out_name}; paddle "
                f"{paddle.__version__} PIR save of PTQ models)"
            )
