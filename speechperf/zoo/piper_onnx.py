"""Piper's ONNX file as a weights source and as the reference runtime (``speechperf.zoo.piper``); onnx + numpy.

Weights. Piper exports with the weight norm of the generator removed and constant folding on, so most initializers
keep their PyTorch names (``enc_p.encoder.attn_layers.0.conv_q.weight``), but the folded weight-norm weights of the
flow's WaveNet convolutions are anonymous (``onnx::Conv_8168``), the phoneme embedding is called ``sid`` and the
duration predictor's affine flow keeps only ``exp(-logs)`` (``/dp/flows.0/Exp_output_0``). Those are found through
the graph: the ``Conv`` node whose bias is ``flow.flows.K.enc.in_layers.I.bias`` takes the weight of that layer.
Unused training-time flows (the duration predictor's ``flows.1``, its posterior flows) are not in the file.

Reference. ``noise_input_model`` replaces each ``RandomNormalLike`` node (the duration predictor's noise and the
prior's) by a ``Slice`` of a new graph input (``duration_noise`` [B, 2, >= T], ``latent_noise`` [B, 192, >= F]) to
the sampled tensor's shape, so the file computes exactly what it did, from noise the caller gives.

Layers contract: the one module of the zoo that imports onnx (a file-format library, no runtime), inside its
functions (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from speechperf.errors import ModelFileError

#: The noises Piper samples: graph input name, and the output of the RandomNormalLike it replaces.
NOISE_INPUTS = {"duration_noise": "/dp/RandomNormalLike_output_0", "latent_noise": "/RandomNormalLike_output_0"}


def _load(path: Path):
    import onnx

    try:
        return onnx.load(str(path))
    except Exception as exc:
        raise ModelFileError(f"cannot read the Piper ONNX file {path}: {exc}") from None


def _rename(name: str) -> str | None:
    """The port's parameter name for a named Piper initializer (None: not a weight of the port)."""
    if name == "sid":
        return "enc_p.emb.weight"
    if name.startswith("dp.flows."):
        index, rest = name[len("dp.flows.") :].split(".", 1)
        if index == "0":
            return "dp.affine.m" if rest == "m" else None
        return f"dp.spline_flows.{(int(index) - 3) // 2}.{rest}"
    if name.startswith("flow.flows."):
        index, rest = name[len("flow.flows.") :].split(".", 1)
        return f"flow.couplings.{int(index) // 2}.{rest}"
    if name.startswith(("enc_p.", "dp.", "dec.")):
        return name
    return None


def state_dict(path: Path, hp) -> dict[str, np.ndarray]:
    """Every weight of the port (torch layout, float32) from the ONNX file's initializers."""
    from onnx import numpy_helper

    model = _load(path)
    arrays = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    out: dict[str, np.ndarray] = {}
    for name, value in arrays.items():
        renamed = _rename(name)
        if renamed is not None and value.dtype == np.float32:
            out[renamed] = value
    exp_neg_logs = arrays.get("/dp/flows.0/Exp_output_0")
    if exp_neg_logs is None:
        raise ModelFileError(f"{path} has no /dp/flows.0/Exp_output_0 (the duration flow's scale); not a Piper VITS")
    out["dp.affine.inv_scale"] = exp_neg_logs
    # The WaveNet weights: Conv nodes name their (anonymous) weight beside their (named) bias.
    for node in model.graph.node:
        if node.op_type == "Conv" and len(node.input) == 3 and node.input[2].startswith("flow.flows."):
            bias = _rename(node.input[2])
            if bias is not None and node.input[1] in arrays:
                out[bias[: -len("bias")] + "weight"] = arrays[node.input[1]]
    _check(out, path, hp)
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in out.items()}


def _check(out: dict[str, np.ndarray], path: Path, hp) -> None:
    want = {
        "enc_p.emb.weight": (hp.num_symbols, hp.hidden),
        "flow.couplings.0.enc.in_layers.0.weight": (2 * hp.hidden, hp.hidden, hp.coupling_kernel),
        "dec.conv_pre.weight": (hp.upsample_initial, hp.hidden, 7),
    }
    got = {k: tuple(out[k].shape) if k in out else None for k in want}
    if got != want:
        raise ModelFileError(f"{path} is not the Piper medium VITS this port builds: {got}; expected {want}")


def noise_input_model(path: Path, out: Path) -> Path:
    """Write Piper's file to ``out`` with its two noise samplers replaced by inputs (see the module docstring)."""
    import onnx
    from onnx import TensorProto, helper

    model = _load(path)
    graph = model.graph
    nodes = list(graph.node)
    by_output = {n.output[0]: n for n in nodes if n.op_type == "RandomNormalLike"}
    missing = [o for o in NOISE_INPUTS.values() if o not in by_output]
    if missing:
        raise ModelFileError(f"{path} has no RandomNormalLike node giving {missing}; not a Piper VITS export")
    channels = {"duration_noise": 2, "latent_noise": None}
    replaced = []
    for name, sampled in NOISE_INPUTS.items():
        node = by_output[sampled]
        like = node.input[0]
        shape, zeros = f"{name}/shape", f"{name}/starts"
        replaced.append(
            (
                node,
                [
                    helper.make_node("Shape", [like], [shape], name=f"{name}/Shape"),
                    helper.make_node(
                        "ConstantOfShape",
                        [f"{name}/rank"],
                        [zeros],
                        name=f"{name}/Zeros",
                        value=helper.make_tensor("zero", TensorProto.INT64, [1], [0]),
                    ),
                    helper.make_node("Slice", [name, zeros, shape], [sampled], name=f"{name}/Slice"),
                ],
            )
        )
        graph.initializer.append(helper.make_tensor(f"{name}/rank", TensorProto.INT64, [1], [3]))
        dim = channels[name]
        graph.input.append(
            helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch_size", dim or "channels", f"{name}_time"])
        )
    kept: list = []
    for node in nodes:
        swap = next((new for old, new in replaced if old is node), None)
        kept.extend(swap if swap is not None else [node])
    del graph.node[:]
    graph.node.extend(kept)
    onnx.checker.check_model(model)
    out.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(out))
    return out
