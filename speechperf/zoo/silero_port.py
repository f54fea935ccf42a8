"""The 16 kHz silero VAD network (silero-vad 5.x/6.x) as a plain ONNX graph and as numpy, from its weights.

The wheel's ONNX file wraps the network in an ``If`` on ``sr``; a runtime that cannot run it (OpenVINO: an input's
rank inside the ``If`` is unknown) sets ``silero_vad_port = "onnx"`` and gets this graph instead, written by the
core from the wheel's TorchScript weights (``speechperf.zoo.weights``): no ``If``, no ``sr``, ops every ONNX
runtime has (Pad, Conv, Relu, LSTM, Sigmoid). ``reference`` is the same network in numpy: the conformance suite's
expected output, and the recipe for a runtime that builds the network itself (docs/backends.md, "The silero VAD
port").

One call: ``input`` [B, 576] float32 (64 samples of context + 512 new ones), ``state`` [2, B, 128] float32 (h and
c) -> ``output`` [B, 1] speech probability, ``stateN`` [2, B, 128].
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from speechperf.backend import TensorInfo
from speechperf.outputs import atomic_path

CONTEXT, CHUNK, HIDDEN = 64, 512, 128
INPUTS = (TensorInfo("input", "float32", (None, CONTEXT + CHUNK)), TensorInfo("state", "float32", (2, None, HIDDEN)))
OUTPUTS = (TensorInfo("output", "float32", (None, 1)), TensorInfo("stateN", "float32", (2, None, HIDDEN)))

#: The weights, as the TorchScript ``_model``'s state_dict names them (the zoo's layout), and their shapes.
WEIGHTS: dict[str, tuple[int, ...]] = {
    "stft.forward_basis_buffer": (258, 1, 256),  # |STFT| as a conv: 129 real rows, then 129 imaginary rows
    "encoder.0.reparam_conv.weight": (128, 129, 3),
    "encoder.0.reparam_conv.bias": (128,),
    "encoder.1.reparam_conv.weight": (64, 128, 3),
    "encoder.1.reparam_conv.bias": (64,),
    "encoder.2.reparam_conv.weight": (64, 64, 3),
    "encoder.2.reparam_conv.bias": (64,),
    "encoder.3.reparam_conv.weight": (128, 64, 3),
    "encoder.3.reparam_conv.bias": (128,),
    "decoder.rnn.weight_ih": (4 * HIDDEN, HIDDEN),  # an LSTM cell, gates in torch's order i, f, g, o
    "decoder.rnn.weight_hh": (4 * HIDDEN, HIDDEN),
    "decoder.rnn.bias_ih": (4 * HIDDEN,),
    "decoder.rnn.bias_hh": (4 * HIDDEN,),
    "decoder.decoder.2.weight": (1, HIDDEN, 1),
    "decoder.decoder.2.bias": (1,),
}
#: Part of the port file's name: raise it when ``port_model`` writes another graph, so a cached file is not reused.
GRAPH_VERSION = 1
#: The encoder's conv strides (kernel 3, padding 1 each); the STFT conv has stride 128 after a reflect pad of 64.
STRIDES = (1, 2, 2, 1)
HOP, RIGHT_PAD = 128, 64


def random_weights(seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded weights of the right names and shapes, scaled so that the activations stay in range (for tests)."""
    rng = np.random.default_rng(seed)
    return {name: (rng.standard_normal(shape) * 0.1).astype(np.float32) for name, shape in WEIGHTS.items()}


def _conv1d(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, stride: int = 1, pad: int = 0) -> np.ndarray:
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad)))
    windows = np.lib.stride_tricks.sliding_window_view(x, w.shape[2], axis=2)[:, :, ::stride]  # [b, c, t, k]
    y = np.einsum("bctk,ock->bot", windows, w)
    return y if b is None else y + b[None, :, None]


def reference(weights: Mapping[str, np.ndarray], input: np.ndarray, state: np.ndarray) -> dict[str, np.ndarray]:
    """One call of the network in numpy (float64 inside): ``{"output": [B, 1], "stateN": [2, B, 128]}``."""
    w = {k: np.asarray(v, np.float64) for k, v in weights.items()}
    x = np.pad(np.asarray(input, np.float64), ((0, 0), (0, RIGHT_PAD)), mode="reflect")[:, None, :]
    spec = _conv1d(x, w["stft.forward_basis_buffer"], None, HOP)
    x = np.sqrt(spec[:, :129] ** 2 + spec[:, 129:] ** 2)  # [B, 129, 4]
    for k, stride in enumerate(STRIDES):
        conv = f"encoder.{k}.reparam_conv."
        x = np.maximum(_conv1d(x, w[conv + "weight"], w[conv + "bias"], stride, 1), 0)
    h, c = np.asarray(state[0], np.float64), np.asarray(state[1], np.float64)
    gates = x[:, :, 0] @ w["decoder.rnn.weight_ih"].T + w["decoder.rnn.bias_ih"]
    gates += h @ w["decoder.rnn.weight_hh"].T + w["decoder.rnn.bias_hh"]
    i, f, g, o = np.split(gates, 4, axis=1)

    def sigmoid(v):
        return 1 / (1 + np.exp(-v))

    c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    h = sigmoid(o) * np.tanh(c)
    out = _conv1d(np.maximum(h, 0)[:, :, None], w["decoder.decoder.2.weight"], w["decoder.decoder.2.bias"])
    return {
        "output": sigmoid(out[:, 0, :]).mean(axis=1, keepdims=True).astype(np.float32),
        "stateN": np.stack([h, c]).astype(np.float32),
    }


def port_model(weights: Mapping[str, np.ndarray]):
    """The network as an ``onnx.ModelProto`` (opset 17) over ``weights`` (the names of ``WEIGHTS``)."""
    from onnx import TensorProto, helper, numpy_helper

    def gates(v: np.ndarray) -> np.ndarray:  # torch's i, f, g, o -> ONNX's i, o, f, c
        i, f, g, o = np.split(v, 4, axis=0)
        return np.concatenate([i, o, f, g])

    rnn = "decoder.rnn."
    arrays = {
        "basis": weights["stft.forward_basis_buffer"],
        "pads": np.array([0, 0, 0, 0, 0, RIGHT_PAD], np.int64),
        "W": gates(weights[rnn + "weight_ih"])[None],
        "R": gates(weights[rnn + "weight_hh"])[None],
        "B": np.concatenate([gates(weights[rnn + "bias_ih"]), gates(weights[rnn + "bias_hh"])])[None],
        "dec_w": weights["decoder.decoder.2.weight"],
        "dec_b": weights["decoder.decoder.2.bias"],
        "ax0": np.array([0], np.int64),
        "ax1": np.array([1], np.int64),
        "ax2": np.array([2], np.int64),
        "s0": np.array([0], np.int64),
        "s129": np.array([129], np.int64),
        "s258": np.array([258], np.int64),
        "s1": np.array([1], np.int64),
        "s2": np.array([2], np.int64),
    }
    node = helper.make_node
    nodes = [
        node("Unsqueeze", ["input", "ax1"], ["x1"]),
        node("Pad", ["x1", "pads"], ["padded"], mode="reflect"),
        node("Conv", ["padded", "basis"], ["spec"], strides=[HOP]),
        node("Slice", ["spec", "s0", "s129", "ax1"], ["real"]),
        node("Slice", ["spec", "s129", "s258", "ax1"], ["imag"]),
        node("Mul", ["real", "real"], ["real2"]),
        node("Mul", ["imag", "imag"], ["imag2"]),
        node("Add", ["real2", "imag2"], ["power"]),
        node("Sqrt", ["power"], ["enc_in0"]),
    ]
    for i, stride in enumerate(STRIDES):
        name = f"encoder.{i}.reparam_conv."
        arrays[f"enc{i}_w"], arrays[f"enc{i}_b"] = weights[name + "weight"], weights[name + "bias"]
        conv = node("Conv", [f"enc_in{i}", f"enc{i}_w", f"enc{i}_b"], [f"enc_conv{i}"], strides=[stride], pads=[1, 1])
        nodes += [conv, node("Relu", [f"enc_conv{i}"], [f"enc_in{i + 1}"])]
    nodes += [
        node("Squeeze", [f"enc_in{len(STRIDES)}", "ax2"], ["features"]),  # [B, 128, 1] -> [B, 128]
        node("Unsqueeze", ["features", "ax0"], ["sequence"]),  # one step: [1, B, 128]
        node("Slice", ["state", "s0", "s1", "ax0"], ["h0"]),
        node("Slice", ["state", "s1", "s2", "ax0"], ["c0"]),
        node("LSTM", ["sequence", "W", "R", "B", "", "h0", "c0"], ["Y", "h1", "c1"], hidden_size=HIDDEN),
        node("Concat", ["h1", "c1"], ["stateN"], axis=0),
        node("Squeeze", ["h1", "ax0"], ["h"]),
        node("Relu", ["h"], ["h_relu"]),
        node("Unsqueeze", ["h_relu", "ax2"], ["dec_in"]),
        node("Conv", ["dec_in", "dec_w", "dec_b"], ["dec_out"]),
        node("Sigmoid", ["dec_out"], ["prob"]),
        node("Squeeze", ["prob", "ax1"], ["prob_t"]),  # [B, 1, T] -> [B, T]
        node("ReduceMean", ["prob_t"], ["output"], axes=[1], keepdims=1),
    ]

    def value(info: TensorInfo):
        return helper.make_tensor_value_info(
            info.name, TensorProto.FLOAT, ["batch" if d is None else d for d in info.shape or ()]
        )

    graph = helper.make_graph(
        nodes,
        "silero_vad_16k_port",
        [value(t) for t in INPUTS],
        [value(t) for t in OUTPUTS],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in arrays.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def write_port(weights: Mapping[str, np.ndarray], out: Path) -> Path:
    """The port's ONNX file at ``out``, written atomically; returns ``out``."""
    with atomic_path(out, "silero VAD port") as tmp:
        tmp.write_bytes(port_model(weights).SerializeToString())
    return Path(out)
