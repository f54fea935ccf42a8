"""The PaddlePaddle backend. ``import paddle`` happens in methods, so registering it imports no framework."""

from __future__ import annotations

import attrs

from speechperf.backend import BackendBase, Capabilities, ModelSpec, Session, Variant, ZooFormat, check_threads
from speechperf.backends.paddle.framework import import_paddle
from speechperf.errors import DeviceError, SpeechperfError
from speechperf.threads import set_gnu_openmp_threads
from speechperf.values import key

SUFFIX_FORMATS = {".json": "inference", ".pdmodel": "inference"}


@attrs.frozen
class PaddleOptions:
    """``options: {paddle: {...}}`` of a stage (see speechperf.backend.options)."""

    api: str = key(
        "predictor",
        "how an inference model (.json/.pdmodel) runs: the paddle.inference predictor, or "
        "paddle.jit.load (one thread only)",
        "str",
        ("predictor", "jit"),
    )
    mkldnn_int8: bool = key(
        False,
        "predictor on cpu: run a quantized program's int8 kernels with oneDNN (what "
        "`speechperf optimize` sets for its paddle-ptq variants)",
        "bool",
    )
    layer_api: str = key(
        "eager",
        "how a layer (paddle-eager, the silero VAD port) runs: eager, or `predictor`: exported once with "
        "paddle.jit.to_static into <speechperf cache>/paddle_predictor (keyed by the factory, its weights' hash and "
        "paddle's version) and run by the inference predictor with the settings below",
        "str",
        ("eager", "predictor"),
    )
    mkldnn: bool = key(
        True,
        "predictor on cpu: run fp32 kernels with oneDNN (Config.enable_mkldnn) or not (disable_mkldnn); set "
        "explicitly either way, since a fresh Config's own default differs between paddle versions",
        "bool",
    )
    ir_optim: bool = key(
        True,
        "predictor: apply paddle's IR graph passes (fusions) when the predictor is made (Config.switch_ir_optim)",
        "bool",
    )


#: The ways this backend runs a model (``speechperf backends``, ``compare --best``), the default first; the
#: predictor ones run a layer-only stage (the silero VAD port) through the predictor too (``layer_api``).
PREDICTOR_SWITCHES = (  # name, oneDNN, IR passes, what it is
    ("predictor", True, True, "inference predictor, oneDNN, IR passes"),
    ("predictor-no-onednn", False, True, "predictor, no oneDNN"),
    ("predictor-no-ir", True, False, "predictor, no IR passes"),
    ("predictor-plain", False, False, "predictor, neither"),
)
VARIANTS = (
    *(
        Variant(name, "paddle-inference", {"mkldnn": onednn, "ir_optim": ir, "layer_api": "predictor"}, note)
        for name, onednn, ir, note in PREDICTOR_SWITCHES
    ),
    Variant("eager", "paddle-eager", note="nn.Layer under paddle.no_grad"),
)


class PaddleBackend(BackendBase):
    name = "paddle"
    extra = "paddle"
    capabilities = Capabilities(
        devices=("cpu", "cuda"),
        formats=("inference", "layer"),
        profilers=("paddle.profiler (api=new)", "legacy (api=legacy)"),
        quantization=("paddle-ptq",),
        pruning=("prune-l1-global", "prune-l1-layer", "prune-ffn-l1", "prune-ffn-l2"),
    )

    profiles_training_loops = True
    framework_module = "paddle"
    framework_package = "paddlepaddle"
    suffix_formats = SUFFIX_FORMATS
    #: ``derive: onnx`` (speechperf.benchmark.derive): the exporter and its distribution, and the formats it reads.
    onnx_exporter = ("paddle2onnx", "paddle2onnx")
    onnx_export_formats = ("inference",)
    factory_format = "layer"
    options_class = PaddleOptions
    default_zoo_format = "paddle-inference"
    #: The silero VAD runs as a paddle port of its network, from the wheel's TorchScript weights that the core
    #: exports into the zoo's layout (speechperf.zoo.weights); this backend reaches no other backend itself.
    silero_vad_port = "speechperf.backends.paddle.silero_vad:build"
    zoo_formats = {
        "paddle-eager": ZooFormat("layer", factory="speechperf.backends.paddle.zoo:load_component"),
        # A paddle inference program keeps -1 for batch and time: FLOPs are counted on the eager layers instead.
        "paddle-inference": ZooFormat("inference", "paddle/{component}.json", counted_as="paddle-eager"),
        "onnx-paddle": ZooFormat("onnx", "paddle/{component}.onnx"),
    }

    def __init__(self) -> None:
        self._threads: int | None = None

    def variants(self) -> tuple[Variant, ...]:
        return VARIANTS

    def import_framework(self):
        return import_paddle()

    def _load(self, spec: ModelSpec, fmt: str, device: str) -> Session:
        from speechperf.backends.paddle import session

        return session.LOADERS[fmt](spec, device, self._threads)

    def set_threads(self, n: int) -> None:
        check_threads(n)
        import_paddle().base.core.set_num_threads(n)  # eager and paddle.jit.load layers
        set_gnu_openmp_threads(n)  # oneDNN's pool, which a torch in this process may have set already
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

    def export_onnx(self, source, feeds, outputs, dynamic_axes, out):
        """An ONNX file from the user's paddle inference program (paddle2onnx), for ``derive: onnx``."""
        self.require_available()
        from pathlib import Path

        from speechperf.backends.paddle.export import export_onnx

        return export_onnx(Path(source), feeds, outputs, dynamic_axes, Path(out))

    def build_reference(self, model, preset, folder, weights=None, architecture=None):
        """Build reference model ``model`` of the zoo at ``preset`` into ``folder`` from the ``weights`` the backend
        that ``builds_reference_weights`` wrote (see speechperf.zoo.build); paddle writes none of its own."""
        from pathlib import Path

        from speechperf.backends.paddle.zoo import build_reference

        if weights is None:
            raise SpeechperfError(
                "the paddle backend builds the zoo's models from the torch backend's weights; none given"
            )
        return build_reference(model, preset, Path(weights), Path(folder), architecture)
