"""The PyTorch backend. ``import torch`` happens in methods, so registering this backend imports no framework."""

from __future__ import annotations

from speechperf.backend import Availability, BackendBase, Capabilities, ModelSpec, Session, check_threads
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
    )

    def __init__(self) -> None:
        self._threads: int | None = None

    def availability(self) -> Availability:
        try:
            import torch
        except ImportError as exc:
            return Availability(False, f"torch is not installed ({exc}); install it with: {self.install_hint()}")
        return Availability(True, "", torch.__version__)

    def load(self, spec: ModelSpec, device: str = "cpu", threads: int | None = None) -> Session:
        self.require_available()
        self.check_device(device)
        if device == "cuda":
            self._require_cuda()
        if threads is not None:
            self.set_threads(threads)
        elif self._threads is not None:
            self.set_threads(self._threads)
        fmt = spec.format or ("module" if spec.factory else SUFFIX_FORMATS.get(spec.path.suffix if spec.path else ""))
        fmt = self.check_format(spec, fmt)
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
        self._threads = n

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

    def _require_cuda(self) -> None:
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
