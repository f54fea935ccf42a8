"""The PyTorch backend. ``import torch`` happens in methods, so registering this backend imports no framework."""

from __future__ import annotations

import attrs

from speechperf.backend import BackendBase, Capabilities, ModelSpec, Session, Variant, ZooFormat, check_threads
from speechperf.errors import DeviceError, SpeechperfError
from speechperf.values import key

#: File suffix -> format. ``.pt`` is TorchScript; weights for a factory are given as ``weights``.
SUFFIX_FORMATS = {".pt": "torchscript", ".jit": "torchscript", ".ts": "torchscript", ".pt2": "export"}


#: ``compile`` values: off, torch.compile's modes that run on every device (no CUDA graphs), and ahead of time:
#: torch.export + AOTInductor.
COMPILE_MODES = ("off", "default", "max-autotune-no-cudagraphs", "aot-inductor")
#: ``dtype`` values: the module's weights and float computation.
DTYPES = ("float32", "bfloat16")


@attrs.frozen
class TorchOptions:
    """``options: {torch: {...}}`` of a stage (see speechperf.backend.options)."""

    optimize_for_inference: bool = key(
        False,
        "TorchScript: freeze the module and apply torch.jit.optimize_for_inference (fuses conv+bn, folds constants)",
        "bool",
    )
    compile: str = key(
        "off",
        "module or export format: run it through torch.compile (Inductor) in this mode, or `aot-inductor`: "
        "torch.export on the first call's inputs (every axis dynamic) compiled by AOTInductor into a package kept "
        "in <speechperf cache>/torch_aoti; either compiles on the first call, so its cost is in the cold start "
        "(load + first call), never in the timings; Inductor's cache is <speechperf cache>/torchinductor unless "
        "TORCHINDUCTOR_CACHE_DIR is set",
        "str",
        COMPILE_MODES,
    )
    compile_dynamic: bool = key(
        True,
        "torch.compile: compile for dynamic shapes (speech varies in length, a decoder step in its prefix), so a "
        "new input length does not compile again; false: one graph per input shape",
        "bool",
    )
    compile_freezing: bool = key(
        False,
        "torch.compile: Inductor freezing (weights become constants, prepacked for oneDNN), which the int8 "
        "kernels of a pt2e-static graph need",
        "bool",
    )
    dtype: str = key(
        "float32",
        "torch-eager (and torch.compile over it): bfloat16 holds the weights of the Linear and Conv layers in bf16 "
        "and runs every call under torch.autocast(bfloat16) (matmuls on oneDNN's AVX-512 BF16 / AMX kernels where the "
        "CPU has them; norms, softmax and embeddings stay float32); float outputs are handed back as float32",
        "str",
        DTYPES,
    )


#: The ways this backend runs a model (``speechperf backends``, ``compare --best``), the default first.
VARIANTS = (
    Variant("eager", "torch-eager", note="nn.Module under torch.inference_mode"),
    Variant("torchscript", "torchscript", note="torch.jit.trace file"),
    Variant(
        "torchscript-frozen",
        "torchscript",
        {"optimize_for_inference": True},
        "torch.jit.freeze + optimize_for_inference",
    ),
    Variant("compile", "torch-eager", {"compile": "default"}, "torch.compile, Inductor, dynamic shapes"),
    Variant(
        "compile-frozen",
        "torch-eager",
        {"compile": "default", "compile_freezing": True},
        "torch.compile with Inductor freezing (weights prepacked for oneDNN)",
    ),
    Variant(
        "aot-inductor",
        "torch-eager",
        {"compile": "aot-inductor"},
        "torch.export + AOTInductor package, compiled once into the cache",
    ),
    Variant(
        "compile-max-autotune",
        "torch-eager",
        {"compile": "max-autotune-no-cudagraphs"},
        "torch.compile mode max-autotune-no-cudagraphs (slow to compile)",
    ),
    Variant(
        "eager-bf16",
        "torch-eager",
        {"dtype": "bfloat16"},
        "Linear / Conv weights in bfloat16 under torch.autocast (AVX-512 BF16 / AMX)",
        precision="bf16",
    ),
)


class TorchBackend(BackendBase):
    name = "torch"
    extra = "torch"
    capabilities = Capabilities(
        devices=("cpu", "cuda"),
        formats=("torchscript", "export", "module"),
        profilers=("torch.profiler",),
        quantization=("torchao-dynamic", "pt2e-static", "legacy-dynamic", "fp32-export"),
        pruning=("prune-l1-global", "prune-l1-layer", "prune-ffn-l1", "prune-ffn-l2"),
    )

    profiles_training_loops = True
    framework_module = "torch"
    framework_package = "torch"
    suffix_formats = SUFFIX_FORMATS
    #: ``derive: onnx`` (speechperf.benchmark.derive): the exporter and its distribution, and the formats it reads.
    onnx_exporter = ("torch.onnx.export", "torch")
    onnx_export_formats = ("torchscript",)
    #: ``model: hf``: the Transformers modules of a save_pretrained folder, as factories (backends/torch/hf.py).
    transformers_factories = "speechperf.backends.torch.hf"
    factory_format = "module"
    options_class = TorchOptions
    default_zoo_format = "torch-eager"
    #: The zoo's weights are written in torch's layout from the catalog's seeds; the other builders read them.
    builds_reference_weights = True
    zoo_formats = {
        "torch-eager": ZooFormat("module", factory="speechperf.backends.torch.zoo:load_component"),
        "torchscript": ZooFormat("torchscript", "torch/{component}.pt"),
        "onnx-torch": ZooFormat("onnx", "torch/{component}.onnx"),
        "torch-export": ZooFormat("export", "torch/{component}.pt2", variant=True),
    }

    def variants(self) -> tuple[Variant, ...]:
        return VARIANTS

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

    def export_onnx(self, source, feeds, outputs, dynamic_axes, out):
        """An ONNX file from the user's TorchScript file, or from a factory's module (``model: hf``), by
        torch.onnx.export, for ``derive: onnx``."""
        self.require_available()
        from pathlib import Path

        from speechperf.backends.torch.export import export_onnx

        return export_onnx(
            source if isinstance(source, ModelSpec) else Path(source), feeds, outputs, dynamic_axes, Path(out)
        )

    def build_reference(self, model, preset, folder, weights=None, architecture=None):
        """Build reference model ``model`` of the zoo at ``preset`` into ``folder``, weights included (see
        speechperf.zoo.build); ``weights`` is None: this backend writes them."""
        from pathlib import Path

        from speechperf.backends.torch.zoo import build_reference

        if weights is not None or architecture:
            raise SpeechperfError(
                "the torch backend writes the zoo's weights; a pruned model is made by prune_reference"
            )
        return build_reference(model, preset, Path(folder))

    def prune_reference(self, model, preset, source, method, sparsity, folder, exports):
        """``torch.nn.utils.prune`` on the zoo weights ``source`` (speechperf.backends.torch.prune)."""
        self.require_available()
        from pathlib import Path

        from speechperf.backends.torch.prune import prune_reference

        return prune_reference(model, preset, Path(source), method, sparsity, Path(folder), exports)
