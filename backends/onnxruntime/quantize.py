"""Post-training int8 quantization of ``.onnx`` files with ``onnxruntime.quantization``.

Both methods start from ``quant_pre_process`` (symbolic shape inference, graph optimisation, ONNX shape inference),
which onnxruntime recommends before quantizing; where its symbolic shape inference cannot follow a graph (it fails
on the reference models' reshapes of dynamic time), the step runs without it and says so in a note.

- ``ort-dynamic``: ``quantize_dynamic``: MatMul, Gemm and LSTM weights stored as signed int8, activations
  quantized per call from their observed range. On an x86 CPU without VNNI the weights are 7-bit
  (``reduce_range``): there onnxruntime's u8s8 kernels add pairs of products in int16, which saturates for
  full-range weights (onnxruntime's quantization docs advise it; the method's note says when it applies).
- ``ort-static-qdq``: ``quantize_static`` in QDQ format: int8 weights (per channel) and int8 activations whose
  ranges were calibrated (MinMax) on real feeds of the benchmark's dataset, read through a CalibrationDataReader.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

from speechperf.errors import first_line
from speechperf.optimize.hook import QuantizationError, QuantizedModel, QuantizeSource

#: What each method quantizes. LSTM has only a dynamic int8 kernel in onnxruntime.
DYNAMIC_OPS = ["MatMul", "Gemm", "LSTM"]
STATIC_OPS = ["MatMul", "Gemm", "Conv"]
#: quantize_static writes per-channel DequantizeLinear nodes with an ``axis``, which exists from opset 13 on.
STATIC_MIN_OPSET = 13
#: Calibration feeds the upgraded graph is checked on against the original.
UPGRADE_CHECK_FEEDS = 4


def _fmt(spec) -> str | None:
    return "onnx" if spec.path is not None and spec.path.suffix == ".onnx" else None


@contextlib.contextmanager
def _quiet():
    """onnxruntime.quantization logs a warning per tensor it leaves alone through the root logger."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)


def upgrade_opset(src: Path, dst: Path, name: str, feeds) -> tuple[Path, list[str]]:
    """``src`` itself when its opset is at least STATIC_MIN_OPSET; else the graph upgraded by
    ``onnx.version_converter`` into ``dst``, used only if its outputs match the original's on calibration feeds
    (speechperf.meters.fidelity's defaults). A one-line refusal naming the opset and the fix otherwise."""
    import onnx
    from onnx import version_converter

    model = onnx.load(str(src))
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    if opset is None or opset >= STATIC_MIN_OPSET:
        return src, []
    fix = f"re-export it with opset_version={STATIC_MIN_OPSET} or later (torch.onnx.export, paddle2onnx)"
    need = f"ort-static-qdq needs opset >= {STATIC_MIN_OPSET} (DequantizeLinear's per-channel axis); {name} is opset {opset}"
    try:
        onnx.save(version_converter.convert_version(model, STATIC_MIN_OPSET), str(dst))
    except Exception as exc:
        raise QuantizationError(
            f"{need} and onnx.version_converter cannot upgrade it ({first_line(exc)}): {fix}"
        ) from None
    from speechperf.meters.fidelity import FloatMeter, past_tolerance

    original, upgraded = _plain_session(src), _plain_session(dst)
    inputs = {i.name for i in original.get_inputs()}
    names = [o.name for o in original.get_outputs()]
    meters = {n: FloatMeter() for n in names}
    checked = [{k: v for k, v in f.items() if k in inputs} for f in feeds[:UPGRADE_CHECK_FEEDS]]
    for f in checked:
        for n, a, b in zip(names, original.run(names, f), upgraded.run(names, f)):
            if a.dtype.kind == "f":
                meters[n].add(a, b)
    figures = {n: m.result() for n, m in meters.items() if m.samples}
    bad = {n: fid for n, fid in figures.items() if fid.differing}
    if bad:
        n, fid = next(iter(bad.items()))
        raise QuantizationError(
            f"{need}; the graph onnx.version_converter upgraded to {STATIC_MIN_OPSET} differs from it on "
            f"{len(checked)} calibration feed(s) (output {n!r} {fid.describe()}: {past_tolerance(fid)}): {fix}"
        )
    shown = ", ".join(f"{n} {fid.describe()}" for n, fid in figures.items())
    return dst, [
        f"{name}: upgraded from opset {opset} to {STATIC_MIN_OPSET} with onnx.version_converter for ort-static-qdq; "
        f"same outputs on {len(checked)} calibration feed(s): {shown}"
    ]


def _plain_session(path: Path):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def preprocess(src: Path, dst: Path) -> list[str]:
    from onnxruntime.quantization.shape_inference import quant_pre_process

    notes = []
    try:
        quant_pre_process(str(src), str(dst), skip_symbolic_shape=False)
    except Exception as exc:  # symbolic shape inference asserts on graphs it cannot follow
        notes.append(
            f"quant_pre_process: symbolic shape inference failed ({first_line(exc) or type(exc).__name__}); "
            "ran without it"
        )
        quant_pre_process(str(src), str(dst), skip_symbolic_shape=True)
    return notes


class FeedsReader:
    """A CalibrationDataReader over recorded feeds, keeping only the graph's own inputs."""

    def __init__(self, feeds, input_names):
        self._feeds = [{k: v for k, v in f.items() if k in input_names} for f in feeds]
        self._next = iter(self._feeds)

    def get_next(self):
        return next(self._next, None)

    def rewind(self):
        self._next = iter(self._feeds)


def u8s8_saturates(flags: tuple[str, ...] | None = None, arch: str | None = None) -> bool:
    """Whether onnxruntime's u8s8 integer GEMM on this CPU can saturate: x86 without VNNI (AVX2 or AVX-512)."""
    import platform

    from speechperf.meters.roofs import machine

    arch = (arch or platform.machine()).lower()
    flags = machine().flags if flags is None else flags
    return arch in ("x86_64", "amd64", "i686", "x86") and not {"avx512_vnni", "avx_vnni"} & set(flags)


def quantize(backend, method: str, source: QuantizeSource, out_dir: Path) -> QuantizedModel:
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_dynamic,
        quantize_static,
    )

    spec = source.spec_for(("onnx",), method, _fmt)
    model = spec.path
    assert model is not None  # _fmt gives "onnx" only to a spec with a path
    notes: list[str]
    out_dir.mkdir(parents=True, exist_ok=True)
    pre = out_dir / f"{source.name}.fp32-pre.onnx"
    upgraded = out_dir / f"{source.name}.fp32-opset{STATIC_MIN_OPSET}.onnx"
    out = out_dir / f"{source.name}.onnx"
    try:
        with _quiet():
            fp32, notes = model, []
            if method == "ort-static-qdq":
                fp32, notes = upgrade_opset(model, upgraded, model.name, source.calibration)
            notes += preprocess(fp32, pre)
            if method == "ort-dynamic":
                reduce_range = u8s8_saturates()
                if reduce_range:
                    notes.append("7-bit weights (reduce_range): this x86 CPU has no VNNI, so full-range u8s8 saturates")
                # EnableSubgraph: the silero VAD keeps its LSTMs inside If branches (one per sample rate).
                quantize_dynamic(
                    str(pre),
                    str(out),
                    weight_type=QuantType.QInt8,
                    op_types_to_quantize=DYNAMIC_OPS,
                    reduce_range=reduce_range,
                    extra_options={"EnableSubgraph": True},
                )
            else:
                if not source.calibration:
                    raise QuantizationError(f"{method}: no calibration feeds for {source.name}")
                import onnx

                names = {i.name for i in onnx.load(str(pre), load_external_data=False).graph.input}
                reader = type("Reader", (FeedsReader, CalibrationDataReader), {})(source.calibration, names)
                quantize_static(
                    str(pre),
                    str(out),
                    reader,
                    quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QInt8,
                    weight_type=QuantType.QInt8,
                    per_channel=True,
                    op_types_to_quantize=STATIC_OPS,
                )
    except QuantizationError:
        raise
    except Exception as exc:
        raise QuantizationError(f"{method} on {model.name}: {first_line(exc)}") from None
    finally:
        pre.unlink(missing_ok=True)
        upgraded.unlink(missing_ok=True)
    if not quantized_ops(out):
        ops = DYNAMIC_OPS if method == "ort-dynamic" else STATIC_OPS
        raise QuantizationError(
            f"{method} quantized no operator of {model.name} (it quantizes "
            f"{', '.join(ops)}; none was found where onnxruntime.quantization reaches)"
        )
    return QuantizedModel((out,), "onnx", notes=tuple(notes))


#: Operators that only a quantized graph holds.
INT8_OPS = {
    "DynamicQuantizeLinear",
    "MatMulInteger",
    "ConvInteger",
    "QuantizeLinear",
    "DynamicQuantizeLSTM",
    "MatMulIntegerToFloat",
    "DynamicQuantizeMatMul",
    "QLinearMatMul",
    "QLinearConv",
    "QGemm",
    "QAttention",
}


def quantized_ops(path: Path) -> int:
    """How many int8 operators the graph at ``path`` holds, subgraphs (If / Loop branches) included."""
    import onnx

    def count(graph) -> int:
        total = 0
        for node in graph.node:
            total += node.op_type in INT8_OPS
            total += sum(count(a.g) for a in node.attribute if a.type == onnx.AttributeProto.GRAPH)
        return total

    return count(onnx.load(str(path), load_external_data=False).graph)
