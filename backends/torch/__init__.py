"""The PyTorch backend. ``import torch`` happens in methods, so registering this backend imports no framework."""

from __future__ import annotations

from speechperf.backend import BackendBase, Capabilities, ModelSpec, Session, check_threads
from speechperf.errors import DeviceError

#: File suffix -> format. ``.pt`` is TorchScript; weights for a factory are given as ``weights``.
SUFFIX_FORMATS = {".pt": "torchscript", ".jit": "torchscript", ".ts": "torchscript", ".pt2": "export"}


class TorchBackend(BackendBase):
    name = "torch"
    extra = "torch"
    capabilities = Capabilities(
        devices=("cpu", "cuda"),
        formats=("torchscript", "export", "module"),
        profilers=("torch.profiler",),
        quantization=("torchao-dynamic", "pt2e-static", "legacy-dynamic", "fp32-export"),
    )

    framework_module = "torch"
    framework_package = "torch"
    suffix_formats = SUFFIX_FORMATS
    factory_format = "module"

    def _load(self, spec: ModelSpec, fmt: str, device: str) -> Session:
        from speechperf.backends.torch import session

        return session.LOADERS[fmt](spec, device)

    def set_threads(self, n: int) -> None:
        check_threads(n)
        import torch

        torch.set_num_threads(n)
        try:
            # Inter-op threads can only be set before the first parallel op; a fair run keeps them at 1.
            torch.set_num_interop_threads(1)
        except RuntimeError:
            pass

    def get_threads(self) -> int:
        import torch

        return torch.get_num_threads()

    def seed(self, n: int) -> None:
        import torch

        torch.manual_seed(n)

    def synchronize(self, device: str = "cpu") -> None:
        if device == "cuda":
            import torch

            torch.cuda.synchronize()

    def require_cuda(self) -> None:
        import torch

        if not torch.cuda.is_available():
            raise DeviceError(
                f"device 'cuda' was requested, but torch {torch.__version__} sees no CUDA device "
                "(torch.cuda.is_available() is False); use device 'cpu'"
            )

    def export_weights(self, spec, out):
        """The weights of a TorchScript model written to ``out`` as ``.safetensors`` under their torch names."""
        self.require_available()
        from speechperf.backends.torch.weights import export_weights

        return export_weights(spec, out)

    def build_reference(self, model, preset, folder):
        """Build reference model ``model`` of the zoo at ``preset`` into ``folder`` (see speechperf.zoo.build)."""
        from pathlib import Path

        from speechperf.backends.torch.zoo import build_reference

        return build_reference(model, preset, Path(folder))
