"""The PaddlePaddle backend. ``import paddle`` happens in methods, so registering it imports no framework."""

from __future__ import annotations

from speechperf.backend import BackendBase, Capabilities, ModelSpec, Session, check_threads
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
        quantization=("paddle-ptq",),
    )

    framework_module = "paddle"
    framework_package = "paddlepaddle"
    suffix_formats = SUFFIX_FORMATS
    factory_format = "layer"

    def __init__(self) -> None:
        self._threads: int | None = None

    def import_framework(self):
        return import_paddle()

    def _load(self, spec: ModelSpec, fmt: str, device: str) -> Session:
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

    def require_cuda(self) -> None:
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
