"""The ONNX Runtime backend. ``import onnxruntime`` happens in methods, so registering it imports no framework."""

from __future__ import annotations

import attrs

from speechperf.backend import BackendBase, Capabilities, ModelSpec, Session, Variant, check_threads
from speechperf.errors import DeviceError
from speechperf.values import key


@attrs.frozen
class OnnxRuntimeOptions:
    """``options: {onnxruntime: {...}}`` of a stage (see speechperf.backend.options)."""

    graph_optimization_level: str = key(
        "all",
        "ORT graph optimisations applied when the session is made",
        "str",
        ("disable", "basic", "extended", "all"),
    )
    providers: tuple[str, ...] = key(
        (),
        "execution providers in order of preference (default: the CPU one, or CUDA then CPU on device cuda)",
        "list[str]",
    )
    intra_op_spinning: bool = key(
        True,
        "intra-op threads spin while they wait for work (session.intra_op.allow_spinning): lower latency on idle "
        "cores, CPU burnt on a shared machine",
        "bool",
    )
    log_severity_level: int = key(3, "ORT log level: 0 verbose .. 4 fatal", "int", minimum=0)
    enable_profiling: bool = key(False, "write ORT's own JSON profile of the session", "bool")
    profile_file_prefix: str = key("onnxruntime_profile", "file name prefix of that profile", "str")


#: The ways this backend runs a model (``speechperf backends``, ``compare --best``), the default first.
VARIANTS = (
    Variant("all", "onnx-torch", {"graph_optimization_level": "all"}, "torch's ONNX export, every optimisation"),
    Variant("extended", "onnx-torch", {"graph_optimization_level": "extended"}, "extended optimisations"),
    Variant("basic", "onnx-torch", {"graph_optimization_level": "basic"}, "basic optimisations"),
    Variant("disable", "onnx-torch", {"graph_optimization_level": "disable"}, "no graph optimisation"),
    Variant(
        "all-no-spinning",
        "onnx-torch",
        {"graph_optimization_level": "all", "intra_op_spinning": False},
        "every optimisation, intra-op threads do not spin",
    ),
    Variant("onnx-paddle", "onnx-paddle", {"graph_optimization_level": "all"}, "paddle2onnx's export"),
)


class OnnxRuntimeBackend(BackendBase):
    name = "onnxruntime"
    extra = "onnx"
    capabilities = Capabilities(
        devices=("cpu", "cuda"),
        formats=("onnx",),
        profilers=("session profiling",),
        quantization=("ort-dynamic", "ort-static-qdq"),
        pruning=("prune-l1-global", "prune-l1-layer", "prune-ffn-l1", "prune-ffn-l2"),
    )

    framework_module = "onnxruntime"
    framework_package = "onnxruntime"
    suffix_formats = {".onnx": "onnx"}
    options_class = OnnxRuntimeOptions
    default_zoo_format = "onnx-torch"

    def __init__(self) -> None:
        self._threads: int | None = None

    def variants(self) -> tuple[Variant, ...]:
        return VARIANTS

    def _load(self, spec: ModelSpec, fmt: str, device: str) -> Session:
        from speechperf.backends.onnxruntime.session import load_onnx

        return load_onnx(spec, device, self._threads, self._providers(device, spec))

    def require_cuda(self) -> None:
        import onnxruntime

        available = onnxruntime.get_available_providers()
        if "CUDAExecutionProvider" not in available:
            raise DeviceError(
                f"device 'cuda' was requested, but onnxruntime {onnxruntime.__version__} has no "
                f"CUDAExecutionProvider (available: {', '.join(available)}); install onnxruntime-gpu "
                "on a machine with a GPU, or use device 'cpu'"
            )

    def set_threads(self, n: int) -> None:
        # ORT fixes its thread pools when a session is created: this applies to sessions loaded from now on.
        self._threads = check_threads(n)

    def get_threads(self) -> int:
        import os

        return self._threads or os.cpu_count() or 1

    def seed(self, n: int) -> None:
        import onnxruntime

        onnxruntime.set_seed(n)

    def synchronize(self, device: str = "cpu") -> None:
        # Session.run returns host arrays, so the device work is finished when it returns.
        return None

    def _providers(self, device: str, spec: ModelSpec) -> list[str]:
        if spec.options.get("providers"):
            return list(spec.options["providers"])
        return ["CPUExecutionProvider"] if device == "cpu" else ["CUDAExecutionProvider", "CPUExecutionProvider"]
