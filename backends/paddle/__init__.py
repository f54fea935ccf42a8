"""The PaddlePaddle backend. ``import paddle`` happens in methods, so registering it imports no framework."""

from __future__ import annotations

from speechperf.backend import Availability, BackendBase, Capabilities, ModelSpec, Session, check_threads
from speechperf.errors import DeviceError

SUFFIX_FORMATS = {".json": "inference", ".pdmodel": "inference"}


def import_paddle():
    """Import paddle quietly, and undo the ``OMP_NUM_THREADS=1`` it sets when the variable is unset.

    Left in place, that variable would silently make any framework imported later run one thread.
    """
    import os

    os.environ.setdefault("GLOG_minloglevel", "2")  # paddle's C++ logs every graph pass otherwise
    had_omp = "OMP_NUM_THREADS" in os.environ
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="No ccache found")
        import paddle

    if not had_omp:
        os.environ.pop("OMP_NUM_THREADS", None)
    return paddle


class PaddleBackend(BackendBase):
    name = "paddle"
    extra = "paddle"
    capabilities = Capabilities(
        devices=("cpu", "cuda"),
        formats=("inference", "layer"),
        profilers=("paddle.profiler (api=new)", "legacy (api=legacy)"),
    )

    def __init__(self) -> None:
        self._threads: int | None = None

    def availability(self) -> Availability:
        try:
            paddle = import_paddle()
        except ImportError as exc:
            return Availability(False, f"paddlepaddle is not installed ({exc}); install it with: {self.install_hint()}")
        return Availability(True, "", paddle.__version__)

    def load(self, spec: ModelSpec, device: str = "cpu", threads: int | None = None) -> Session:
        self.require_available()
        self.check_device(device)
        if device == "cuda":
            self._require_cuda()
        if threads is not None:
            self.set_threads(threads)
        fmt = spec.format or ("layer" if spec.factory else SUFFIX_FORMATS.get(spec.path.suffix if spec.path else ""))
        fmt = self.check_format(spec, fmt)
        from speechperf.backends.paddle import session

        return session.LOADERS[fmt](spec, device, self._threads)

    def set_threads(self, n: int) -> None:
        check_threads(n)
        import_paddle().base.core.set_num_threads(n)  # eager and paddle.jit.load layers
        self._threads = n  # the predictor takes it from its Config when it is created

    def get_threads(self) -> int:
        return self._threads or 1  # paddle runs one thread unless told otherwise

    def seed(self, n: int) -> None:
        import_paddle().seed(n)

    def synchronize(self, device: str = "cpu") -> None:
        if device == "cuda":
            import_paddle().device.synchronize()

    def _require_cuda(self) -> None:
        paddle = import_paddle()
        if not paddle.device.is_compiled_with_cuda() or paddle.device.cuda.device_count() == 0:
            raise DeviceError(
                f"device 'cuda' was requested, but paddlepaddle {paddle.__version__} has no usable GPU "
                f"(compiled with CUDA: {paddle.device.is_compiled_with_cuda()}); install paddlepaddle-gpu on a "
                "machine with a GPU, or use device 'cpu'"
            )

    def build_reference(self, model, preset, weights, folder):
        """Build reference model ``model`` of the zoo at ``preset`` into ``folder`` (see speechperf.zoo.build)."""
        from pathlib import Path

        from speechperf.backends.paddle.zoo import build_reference

        return build_reference(model, preset, Path(weights), Path(folder))
