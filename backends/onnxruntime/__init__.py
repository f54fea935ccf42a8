"""The ONNX Runtime backend. ``import onnxruntime`` happens in methods, so registering it imports no framework."""

from __future__ import annotations

from speechperf.backend import Availability, BackendBase, Capabilities, ModelSpec, Session, check_threads
from speechperf.errors import DeviceError


class OnnxRuntimeBackend(BackendBase):
    name = "onnxruntime"
    extra = "onnx"
    capabilities = Capabilities(
        devices=("cpu", "cuda"),
        formats=("onnx",),
        profilers=("session profiling",),
    )

    def __init__(self) -> None:
        self._threads: int | None = None

    def availability(self) -> Availability:
        try:
            import onnxruntime
        except ImportError as exc:
            return Availability(False, f"onnxruntime is not installed ({exc}); install it with: {self.install_hint()}")
        return Availability(True, "", onnxruntime.__version__)

    def load(self, spec: ModelSpec, device: str = "cpu", threads: int | None = None) -> Session:
        self.require_available()
        self.check_device(device)
        threads = check_threads(threads) or self._threads
        fmt = spec.format or ("onnx" if spec.path is not None and spec.path.suffix == ".onnx" else None)
        self.check_format(spec, fmt)
        from speechperf.backends.onnxruntime.session import load_onnx

        return load_onnx(spec, device, threads, self._providers(device, spec))

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
        import onnxruntime

        if "providers" in spec.options:
            return list(spec.options["providers"])
        if device == "cpu":
            return ["CPUExecutionProvider"]
        available = onnxruntime.get_available_providers()
        if "CUDAExecutionProvider" not in available:
            raise DeviceError(
                f"device 'cuda' was requested, but onnxruntime {onnxruntime.__version__} has no "
                f"CUDAExecutionProvider (available: {', '.join(available)}); install onnxruntime-gpu "
                "on a machine with a GPU, or use device 'cpu'"
            )
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]
