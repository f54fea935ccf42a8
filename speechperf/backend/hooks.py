"""``OptionalHooks``: everything a backend *may* have beyond the ``Backend`` protocol, declared in one place.

A plugin author reads this class to see every hook the core asks a backend for, what each is for, and what the core
does when a backend lacks it (the default written here). The core never probes a backend with ``getattr``: it asks
``hooks(backend).<hook>``, which is the backend's own attribute where it has one and the default below where not.
``BackendBase`` subclasses this class, so a backend built on it has every default already and overrides what it has.

Three groups (docs/architecture.md, "Optional hooks"):

- optional capabilities, each in a module of the backend's package (``profiler.py``, ``flops.py``, ``known.py``,
  ``memory.py``, ``quantize.py``; see ``speechperf.backend.capabilities``): ``has_capability``, ``capability``,
  ``step_profiler``, ``count_flops``, ``known_session``, ``device_memory``, ``quantize``;
- declarations the core reads: ``options_class``, ``suffix_formats``, ``zoo_formats``, ``builds_reference_weights``,
  ``default_zoo_format``, ``silero_vad_port``, ``distribution``, ``profiles_training_loops``, ``onnx_exporter``,
  ``onnx_export_formats``, ``transformers_factories``, ``variants``;
- checks and builders: ``check_device``, ``check_format``, ``build_reference``, ``prune_reference``,
  ``export_weights``, ``export_onnx``.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, cast

from speechperf.backend.capabilities import OPTIONAL_CAPABILITIES, unavailable
from speechperf.backend.contract import KNOWN_DEVICES, Capabilities
from speechperf.backend.session import Session
from speechperf.backend.spec import ModelSpec
from speechperf.backend.variants import Variant
from speechperf.backend.zoo import ZooFormat
from speechperf.errors import DeviceError, ModelFileError, SpeechperfError


class OptionalHooks(Protocol):
    """The optional hooks of a backend, each with the default the core uses when a backend does not define it."""

    # What the defaults below use; every backend has them (the Backend protocol).
    name: str
    capabilities: Capabilities

    # -- declarations ------------------------------------------------------------------------------------------

    #: The attrs class of the settings a stage config may give this backend (``options: {<name>: {...}}``), each
    #: field made with ``speechperf.values.key``; None: it takes none.
    options_class: type | None = None
    #: File suffix -> format, for a model file whose stage names no format (``.onnx`` -> ``onnx``).
    suffix_formats: Mapping[str, str] = {}
    #: The zoo formats this backend builds the reference models in: name -> ZooFormat (``speechperf zoo``).
    zoo_formats: Mapping[str, ZooFormat] = {}
    #: Whether this backend writes the zoo's weights from the catalog's seeds (and so ``export_weights`` too): the
    #: other builders read them. One backend of those registered says so.
    builds_reference_weights: bool = False
    #: The zoo format this backend runs when a stage names none; None: the first zoo format it loads.
    default_zoo_format: str | None = None
    #: A backend that loads neither of the silero VAD's files (ONNX, TorchScript) but ports its network: the
    #: ``"module:callable"`` that builds the port from weights in the zoo's layout, or ``"onnx"``: a backend that
    #: loads ONNX but not the wheel's file (its ``If``) gets the network as a plain ONNX file the core writes
    #: (``speechperf.zoo.silero_port``). The core exports the weights of the wheel's TorchScript file through the
    #: backend that ``builds_reference_weights`` (``speechperf.zoo.weights``), so this backend needs no other
    #: backend itself.
    silero_vad_port: str | None = None
    #: The distribution that registered the backend's entry point; the registry fills it in for the install hint.
    distribution: str | None = None
    #: Its step profiler records the whole process, as a training loop needs (not only sessions it attaches), so the
    #: PaddleSpeech drop-ins (speechperf.adapters.paddlespeech) pick it when the objects of the loop's step are
    #: instances of its ``framework_module``'s classes (speechperf.adapters.loop_framework).
    profiles_training_loops: bool = False
    #: The module imported to use the framework (``"paddle"``); the drop-ins match a loop's objects against its
    #: classes. Empty: none said (such a backend is never picked for a training loop).
    framework_module: str = ""
    #: (exporter, the distribution it comes from) when this backend exports its own model files to ONNX
    #: (``("torch.onnx.export", "torch")``), for a stage's ``derive: onnx`` (speechperf.benchmark.derive); None: it
    #: exports none. The distribution's version is part of the derived file's cache key.
    onnx_exporter: tuple[str, str] | None = None
    #: The formats of this backend's files that ``export_onnx`` reads (``("torchscript",)``); empty: none.
    onnx_export_formats: tuple[str, ...] = ()
    #: The module of this backend's package whose ``nn.Module``-like factories build the graphs of a Hugging Face
    #: ``save_pretrained`` folder (``model: hf``, speechperf.benchmark.hf_stage) in this framework; ``export_onnx``
    #: then also takes a factory's ModelSpec as ``source``. None: it runs no Transformers module.
    transformers_factories: str | None = None

    def variants(self) -> tuple[Variant, ...]:
        """The ways this backend can run a model (speechperf.backend.variants.Variant: a name, a zoo format, its
        options), its default path first; ``speechperf backends`` lists them and ``compare --best`` measures each.
        Declarations only: must not import the framework. Default: none beyond the stage's own path."""
        return ()

    # -- optional capabilities ---------------------------------------------------------------------------------

    def has_capability(self, name: str) -> bool:
        """Whether optional capability ``name`` (``speechperf.backend.OPTIONAL_CAPABILITIES``) is there, without
        importing its module or the framework. Default: whether the backend defines the methods that reach it
        (``count_flops`` for ``flops``); ``BackendBase`` looks for the capability's module instead."""
        methods = OPTIONAL_CAPABILITIES.get(name, ((), (), ()))[2]
        return bool(methods) and all(_defines(self, method) for method in methods)

    def capability(self, name: str) -> types.ModuleType:
        """The module providing optional capability ``name``; a CapabilityUnavailableError if there is none."""
        raise unavailable(self, name, "the backend declares no optional capabilities")

    def step_profiler(self, options: Any) -> Any:
        """A StepProfiler driven by a PaddleSpeech-style option string (``speechperf profile``) or the
        speechperf.profiler.ProfilerOptions read from one (the PaddleSpeech drop-ins); Any, as this layer is below
        speechperf.profiler."""
        raise unavailable(self, "profiler", "no step_profiler")

    def count_flops(self, session: Session, feeds: Mapping[str, Any]) -> Any:
        """An analytic FlopCount of one call of ``session`` on ``feeds`` (FLOPs in ``bench`` and ``check``)."""
        raise unavailable(self, "flops", "no count_flops")

    def known_session(self, graph: Any, threads: int | None = None) -> Session:
        """A session over a speechperf.meters.flops.KnownGraph built in this framework (``speechperf check``)."""
        raise unavailable(self, "known_graph", "no known_session")

    def device_memory(self, device: str = "cpu") -> Any:
        """The device allocator's peak since the last reset (speechperf.meters.memory)."""
        raise unavailable(self, "memory", "no device_memory")

    def quantize(self, method: str, source: Any, out_dir: Path) -> Any:
        """Post-training ``method`` of ``source`` (a speechperf.optimize.hook.QuantizeSource) written into
        ``out_dir``; returns a QuantizedModel (``speechperf optimize``)."""
        raise unavailable(self, "quantize", "no quantize")

    # -- checks and builders -----------------------------------------------------------------------------------

    def check_device(self, device: str) -> str:
        """``device`` if this backend runs on it, else a one-line DeviceError naming the ones it runs on."""
        if device not in KNOWN_DEVICES:
            raise DeviceError(f"unknown device {device!r}; allowed: {', '.join(KNOWN_DEVICES)}")
        supported = self.capabilities.devices
        if device not in supported:
            raise DeviceError(
                f"device {device!r} is not supported by backend {self.name!r}; it supports: {', '.join(supported)}"
            )
        return device

    def check_format(self, spec: ModelSpec, fmt: str | None) -> str:
        """``fmt`` if this backend loads it, else a one-line ModelFileError naming the formats it loads."""
        formats, name = self.capabilities.formats, self.name
        if fmt is None:
            where = spec.path or spec.factory
            raise ModelFileError(
                f"cannot tell the format of {where} from its suffix; backend {name!r} loads: "
                f"{', '.join(formats)} (give the format explicitly)"
            )
        if fmt not in formats:
            raise ModelFileError(f"format {fmt!r} is not loaded by backend {name!r}; it loads: {', '.join(formats)}")
        return fmt

    def build_reference(
        self, model: str, preset: str, folder: Path, weights: Path | None = None, architecture: Any = None
    ) -> Any:
        """Build zoo model ``model`` at ``preset`` into ``folder`` in this backend's ``zoo_formats``
        (speechperf.zoo.build). The backend that ``builds_reference_weights`` gets ``weights=None``, writes them and
        returns a SourceBuild; the others read ``weights`` and return their Artifacts. ``architecture``: sizes that
        differ from the preset's (a pruned model's smaller ``ffn``, speechperf.zoo.pruned)."""
        raise SpeechperfError(f"backend {self.name!r} builds no zoo formats")

    def prune_reference(
        self, model: str, preset: str, source: Path, method: str, sparsity: float, folder: Path, exports: tuple
    ) -> Any:
        """The backend that ``builds_reference_weights``: zoo model ``model``'s weights ``source`` pruned by
        ``method`` at ``sparsity``, written as ``folder/weights.safetensors`` (and in its own zoo formats named in
        ``exports``); returns a dict: ``weights``, ``artifacts``, ``architecture`` (sizes changed), ``targets`` (the pruned
        weights' names), ``parameter_count`` (speechperf.zoo.pruned)."""
        raise SpeechperfError(f"backend {self.name!r} prunes no weights")

    def export_weights(self, spec: ModelSpec, out: Path) -> Path:
        """The weights of the model file ``spec`` (in this framework's own format) written to ``out`` as
        ``.safetensors`` in the zoo's layout; the backend that ``builds_reference_weights`` has it."""
        raise SpeechperfError(f"backend {self.name!r} exports no weights")

    def export_onnx(
        self,
        source: Path | ModelSpec,
        feeds: Mapping[str, Any],
        outputs: list[str],
        dynamic_axes: Mapping[str, Mapping[int, str]],
        out: Path,
    ) -> Path:
        """The model file ``source`` (one of ``onnx_export_formats``) exported by ``onnx_exporter`` to the ONNX file
        ``out``, traced on ``feeds`` with ``outputs`` named and ``dynamic_axes`` (input -> axis -> name) left
        dynamic; returns ``out`` (``derive: onnx``, run in a child process of its own). A backend with
        ``transformers_factories`` also takes a ModelSpec of one of its factories (a ``model: hf`` graph)."""
        raise SpeechperfError(f"backend {self.name!r} exports no ONNX files")


#: Every hook's name, in the order declared above (``name`` and ``capabilities`` are the Backend protocol's).
HOOKS: tuple[str, ...] = tuple(name for name in vars(OptionalHooks) if not name.startswith("_"))


def _defines(backend: Any, method: str) -> bool:
    """Whether ``backend`` has its own ``method``, not the default declared above."""
    found = getattr(backend, method, None)
    return callable(found) and getattr(found, "__func__", found) is not vars(OptionalHooks).get(method)


class _WithDefaults:
    """A backend seen through ``OptionalHooks``: its own attribute where it has one, else the declared default."""

    __slots__ = ("_backend",)

    def __init__(self, backend: Any) -> None:
        self._backend = backend

    def __getattr__(self, name: str) -> Any:
        if name not in HOOKS:
            raise AttributeError(f"{name!r} is not an optional hook of a backend; the hooks: {', '.join(HOOKS)}")
        try:
            return getattr(self._backend, name)
        except AttributeError:
            default = vars(OptionalHooks)[name]
            if isinstance(default, types.FunctionType):
                return types.MethodType(default, self._backend)
            return default


def hooks(backend: Any) -> OptionalHooks:
    """``backend``'s optional hooks: ``hooks(b).zoo_formats``, ``hooks(b).has_capability("flops")``, ... Each is
    the backend's own where it defines it, else the default of ``OptionalHooks``."""
    if isinstance(backend, _WithDefaults):
        return cast(OptionalHooks, backend)
    return cast(OptionalHooks, _WithDefaults(backend))
