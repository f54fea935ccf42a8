"""The contracts between the core and the framework bindings: Backend, Session, ModelSpec, TensorInfo.

A Session is the inference callable every meter and benchmark class uses: a dict of host numpy arrays in, a dict
of host numpy arrays out, on every backend. Copying to and from the framework's tensors is part of what a user pays,
and keeping it inside the call is what makes numbers from different backends comparable.
"""

from __future__ import annotations

import abc
import importlib
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import attrs
import numpy as np

from speechperf.errors import BackendUnavailableError, DeviceError, FeedError, ModelFileError, SpeechperfError

#: Devices a backend may declare. A backend rejects any other name.
KNOWN_DEVICES = ("cpu", "cuda")


def _optional_path(value: Any) -> Path | None:
    return None if value is None else Path(value)


@attrs.frozen
class TensorInfo:
    """One input or output of a session.

    ``dtype`` is a numpy dtype name (``"float32"``), or None where the model file does not say.
    ``shape`` has one entry per axis: an int for a fixed size, a str (the axis name) or None for a dynamic one.
    ``shape`` is None when even the rank is unknown.
    """

    name: str
    dtype: str | None = None
    shape: tuple[int | str | None, ...] | None = attrs.field(
        default=None, converter=lambda s: None if s is None else tuple(s)
    )


@attrs.frozen
class ModelSpec:
    """What a backend should load.

    The format is inferred from the file suffix unless ``format`` is given. ``factory`` (``"module:callable"``)
    builds an ``nn.Module`` / ``nn.Layer`` whose weights are read from ``weights``. ``inputs`` / ``outputs``
    declare names (and dtypes) where the model file does not carry them. ``entry`` is the attribute path of the
    submodule to call inside a TorchScript file. ``options`` holds backend-specific settings.
    """

    path: Path | None = attrs.field(default=None, converter=_optional_path)
    format: str | None = None
    factory: str | None = None
    factory_kwargs: Mapping[str, Any] = attrs.field(factory=dict)
    weights: Path | None = attrs.field(default=None, converter=_optional_path)
    inputs: tuple[TensorInfo, ...] | None = None
    outputs: tuple[TensorInfo, ...] | None = None
    entry: str | None = None
    options: Mapping[str, Any] = attrs.field(factory=dict)

    def existing(self, path: Path | None, what: str = "model file") -> Path:
        """Return ``path`` if it exists, else raise a one-line error naming it."""
        if path is None:
            raise ModelFileError(f"no {what} given in the model spec")
        if not path.exists():
            raise ModelFileError(f"{what} not found: {path}")
        return path

    def build_from_factory(self) -> Any:
        """Call ``factory`` (``"package.module:callable"``) with ``factory_kwargs``; the module is the user's code."""
        import importlib

        module_name, _, attr = (self.factory or "").partition(":")
        if not module_name or not attr:
            raise ModelFileError(f"factory must look like 'package.module:callable', got {self.factory!r}")
        try:
            factory = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            raise ModelFileError(f"cannot import factory {self.factory!r}: {exc}") from None
        return factory(**dict(self.factory_kwargs))

    def output_names(self, default: list[str]) -> list[str]:
        return [t.name for t in self.outputs] if self.outputs else default


@attrs.frozen
class ZooFormat:
    """One format the reference models of ``speechperf.zoo`` are built in, declared by the backend that builds it.

    Any backend whose ``capabilities.formats`` holds ``format`` runs it: ``"onnx"`` files built by torch run on
    onnxruntime and on any plugin that loads ONNX. ``path`` is the file inside a model's folder (``{component}``
    filled in), or None for ``factory`` (``"module:callable"``) + the shared weights. ``counted_as`` names the zoo
    format of the same model and weights that FLOP counters walk instead (a paddle inference program keeps -1 for
    batch and time, so its shapes cannot be counted). A ``variant`` format is never built: it is a file that
    ``speechperf optimize`` writes into a copy of a model's folder (e.g. a quantized ``torch.export`` program), and
    it loads from there like the built ones.
    """

    format: str
    path: str | None = None
    factory: str | None = None
    counted_as: str | None = None
    variant: bool = False


@attrs.frozen
class Availability:
    ok: bool
    reason: str = ""
    version: str | None = None


@attrs.frozen
class Capabilities:
    devices: tuple[str, ...] = ("cpu",)
    formats: tuple[str, ...] = ()
    profilers: tuple[str, ...] = ()
    quantization: tuple[str, ...] = ()


class Session(abc.ABC):
    """A loaded model. Call it with a dict of numpy arrays; it returns a dict of numpy arrays."""

    backend: str
    device: str = "cpu"
    inputs: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]

    def __call__(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        check_feeds(self.inputs, feeds)
        return self.run(feeds)

    @abc.abstractmethod
    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run on feeds already checked by ``__call__``."""

    @property
    def input_names(self) -> list[str]:
        return [t.name for t in self.inputs]

    @property
    def output_names(self) -> list[str]:
        return [t.name for t in self.outputs]

    def __repr__(self) -> str:
        def fmt(ts: tuple[TensorInfo, ...]) -> str:
            return ", ".join(f"{t.name}:{t.dtype or '?'}{list(t.shape) if t.shape is not None else ''}" for t in ts)

        return f"<{type(self).__name__} {self.backend}/{self.device} in({fmt(self.inputs)}) out({fmt(self.outputs)})>"


def check_feeds(inputs: tuple[TensorInfo, ...], feeds: Mapping[str, np.ndarray]) -> None:
    """Raise FeedError, naming the input, for a feed that the session cannot take."""
    expected = [t.name for t in inputs]
    for name in feeds:
        if name not in expected:
            raise FeedError(f"unknown input {name!r}; this session takes: {', '.join(expected)}")
    for info in inputs:
        if info.name not in feeds:
            raise FeedError(f"missing input {info.name!r}; this session takes: {', '.join(expected)}")
        value = feeds[info.name]
        if not isinstance(value, np.ndarray):
            raise FeedError(f"input {info.name!r} is a {type(value).__name__}; a numpy array is required")
        if info.dtype is not None and value.dtype != np.dtype(info.dtype):
            raise FeedError(f"input {info.name!r} has dtype {value.dtype}; expected {info.dtype}")
        if info.shape is None:
            continue
        if value.ndim != len(info.shape):
            raise FeedError(
                f"input {info.name!r} has rank {value.ndim} (shape {value.shape}); "
                f"expected rank {len(info.shape)} {_shape_text(info.shape)}"
            )
        for axis, (size, want) in enumerate(zip(value.shape, info.shape)):
            if isinstance(want, int) and want >= 0 and size != want:
                raise FeedError(
                    f"input {info.name!r} has size {size} on axis {axis}; expected {want} {_shape_text(info.shape)}"
                )
        if value.size == 0:
            raise FeedError(f"input {info.name!r} is empty (shape {value.shape}); a zero-length input cannot be run")


def _shape_text(shape: tuple[int | str | None, ...]) -> str:
    return "(" + ", ".join("?" if d is None else str(d) for d in shape) + ")"


#: Optional capabilities a backend may have: name -> (module of the backend's package that provides it, what it
#: must define there, the Backend methods that reach it). A backend without one says so in one line ("unavailable").
OPTIONAL_CAPABILITIES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "profiler": ("profiler", ("make_step_profiler",), ("step_profiler",)),
    "flops": ("flops", ("count_flops",), ("count_flops",)),
    "known_graph": ("known", ("known_session",), ("known_session",)),
    "memory": ("memory", ("DeviceMemory",), ("device_memory",)),
    "quantize": ("quantize", ("quantize",), ("quantize",)),
}


class CapabilityUnavailableError(SpeechperfError):
    """A backend lacks an optional capability (see OPTIONAL_CAPABILITIES)."""


@runtime_checkable
class Backend(Protocol):
    """A framework binding. Found by name through the ``speechperf.backends`` entry-point group.

    Importing the module that defines a backend must not import its framework; ``availability()`` and ``load()``
    do. Beyond the methods below, a backend may have the optional capabilities of ``OPTIONAL_CAPABILITIES``
    (``step_profiler``, ``count_flops``, ``known_session``, ``device_memory``, ``quantize``); ``has_capability(name)`` says
    which. ``BackendBase`` finds each in a module of the plugin's package (``mypkg/flops.py`` beside
    ``mypkg/backend.py``), or where its ``capability_modules`` says.
    """

    name: str
    extra: str
    capabilities: Capabilities

    def availability(self) -> Availability: ...

    def load(self, spec: ModelSpec, device: str = "cpu", threads: int | None = None) -> Session: ...

    def set_threads(self, n: int) -> None: ...

    def get_threads(self) -> int: ...

    def seed(self, n: int) -> None: ...

    def synchronize(self, device: str = "cpu") -> None: ...

    def has_capability(self, name: str) -> bool: ...

    def install_hint(self) -> str: ...


class BackendBase:
    """The shared shape of a backend. A plugin may subclass it or implement the Backend protocol on its own.

    A subclass names its framework and formats and implements ``_load``, ``set_threads``, ``get_threads``,
    ``seed``, ``synchronize`` and, where it declares a ``cuda`` device, ``require_cuda``. ``load`` does every check
    that can be made before the framework reads a file, the same way on every backend.
    """

    name: str = ""
    #: The pip extra of speechperf that installs the framework: ``pip install "speechperf[<extra>]"`` (built-ins).
    extra: str = ""
    #: What to run to install this backend's framework. A plugin sets it; unset, it is ``pip install <the
    #: distribution that registered the entry point>`` (the registry fills ``distribution``).
    install_command: str | None = None
    distribution: str | None = None
    #: Optional capability -> module providing it, where it is not ``<the plugin's package>.<module>``.
    capability_modules: Mapping[str, str] = {}
    #: The attrs class of the backend's ``options:`` (a stage config's per-backend settings); None takes none.
    options_class: type | None = None
    #: Zoo formats (see speechperf.zoo.build) this backend builds: name -> ZooFormat. The backend that builds
    #: the reference weights from the catalog's seeds sets ``builds_reference_weights``.
    zoo_formats: Mapping[str, Any] = {}
    builds_reference_weights: bool = False
    #: The zoo format this backend runs when a stage names none; None: the first zoo format it can load.
    default_zoo_format: str | None = None
    #: The module imported to use the framework, and the distribution that installs it.
    framework_module: str = ""
    framework_package: str = ""
    #: Its step profiler records the whole process, as a training loop needs (not only sessions it attaches), so the
    #: PaddleSpeech drop-ins pick it when ``framework_module`` is the one such framework imported.
    profiles_training_loops: bool = False
    capabilities: Capabilities = Capabilities()
    #: File suffix -> format, for a spec that does not name its format.
    suffix_formats: Mapping[str, str] = {}
    #: The format of a spec built from a ``factory`` (None where the backend loads no factories).
    factory_format: str | None = None

    def import_framework(self):
        import importlib

        return importlib.import_module(self.framework_module)

    def availability(self) -> Availability:
        try:
            framework = self.import_framework()
        except ImportError as exc:
            return Availability(
                False, f"{self.framework_package} is not installed ({exc}); install it with: {self.install_hint()}"
            )
        return Availability(True, "", framework.__version__)

    def load(self, spec: ModelSpec, device: str = "cpu", threads: int | None = None) -> Session:
        self.require_available()
        self.check_device(device)
        if device == "cuda":
            self.require_cuda()
        if check_threads(threads) is not None:
            self.set_threads(threads)
        if spec.options:
            spec = attrs.evolve(spec, options=self.check_options(spec.options))
        if spec.format:
            fmt = spec.format
        elif spec.factory:
            fmt = self.factory_format
        else:
            fmt = self.suffix_formats.get(spec.path.suffix if spec.path else "")
        session = self._load(spec, self.check_format(spec, fmt), device)
        session.spec = spec  # what it was loaded from: FLOP counts are cached on disk by its files' content
        return session

    def _load(self, spec: ModelSpec, fmt: str, device: str) -> Session:
        raise NotImplementedError

    def require_cuda(self) -> None:
        raise DeviceError(f"backend {self.name!r} has no CUDA support; use device 'cpu'")

    # Each optional capability lives in its own module of the backend's package (profiler.py, flops.py, known.py,
    # memory.py); these methods only dispatch to it, so every backend is laid out the same way.

    def step_profiler(self, options):
        """A StepProfiler driven by a PaddleSpeech-style option string (see speechperf.profiler)."""
        return self.capability("profiler").make_step_profiler(self, options)

    def count_flops(self, session, feeds):
        """An analytic FlopCount of one call of ``session`` on ``feeds`` (see speechperf.meters.flops)."""
        return self.capability("flops").count_flops(session, feeds)

    def known_session(self, graph, threads: int | None = None):
        """A session over a speechperf.meters.flops.KnownGraph built in this framework (for ``speechperf check``)."""
        return self.capability("known_graph").known_session(graph, threads)

    def device_memory(self, device: str = "cpu"):
        """The device allocator's peak since the last reset (see speechperf.meters.memory)."""
        return self.capability("memory").DeviceMemory(device)

    @property
    def quantization_methods(self) -> tuple[str, ...]:
        return self.capabilities.quantization

    def quantize(self, method: str, source, out_dir):
        """Post-training int8 ``method`` of ``source`` (a speechperf.optimize.hook.QuantizeSource) written into
        ``out_dir``; returns a QuantizedModel. An unknown method is a one-line error listing this backend's."""
        check_method(self, method)
        return self.capability("quantize").quantize(self, method, source, Path(out_dir))

    def capability_module_name(self, name: str) -> str:
        """Where capability ``name`` lives: ``capability_modules[name]``, else ``<package>.<module>`` where the
        package is the one holding the module that defines the class (``mypkg`` for ``mypkg.backend``)."""
        if name not in OPTIONAL_CAPABILITIES:
            raise SpeechperfError(f"unknown capability {name!r}; known: {', '.join(OPTIONAL_CAPABILITIES)}")
        if name in self.capability_modules:
            return self.capability_modules[name]
        defining = sys.modules.get(type(self).__module__)
        package = getattr(defining, "__package__", None) or type(self).__module__.rpartition(".")[0]
        module = OPTIONAL_CAPABILITIES[name][0]
        return f"{package}.{module}" if package else module

    def capability(self, name: str):
        """The module providing optional capability ``name``; a one-line error saying it is unavailable if none."""
        module_name = self.capability_module_name(name)
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name is None or not module_name.startswith(exc.name):
                raise  # the module exists but imports something missing: that is its own error
            raise CapabilityUnavailableError(
                f"backend {self.name!r}: capability {name!r} is unavailable (no module {module_name})"
            ) from None
        missing = [attr for attr in OPTIONAL_CAPABILITIES[name][1] if not hasattr(module, attr)]
        if missing:
            raise CapabilityUnavailableError(
                f"backend {self.name!r}: capability {name!r} is unavailable ({module_name} defines no "
                f"{', '.join(missing)})"
            )
        return module

    def has_capability(self, name: str) -> bool:
        """Whether optional capability ``name`` is there, without importing its module (nor its framework)."""
        import importlib.util

        try:
            return importlib.util.find_spec(self.capability_module_name(name)) is not None
        except (ImportError, ValueError):
            return False

    def install_hint(self) -> str:
        if self.install_command:
            return self.install_command
        if self.distribution and self.distribution.lower() != "speechperf":
            return f"pip install {self.distribution}"
        return f'pip install "speechperf[{self.extra}]"' if self.extra else "see the backend's documentation"

    def check_options(self, options: Mapping[str, Any], where: str = "") -> Mapping[str, Any]:
        """``options`` checked against ``options_class``; the same mapping, every value converted and valid."""
        from speechperf.config.backend_options import check_options

        return check_options(self, options, where)

    def require_available(self) -> Availability:
        status = self.availability()
        if not status.ok:
            raise BackendUnavailableError(f"backend {self.name!r} is not available: {status.reason}")
        return status

    def check_device(self, device: str) -> str:
        if device not in KNOWN_DEVICES:
            raise DeviceError(f"unknown device {device!r}; allowed: {', '.join(KNOWN_DEVICES)}")
        if device not in self.capabilities.devices:
            raise DeviceError(
                f"device {device!r} is not supported by backend {self.name!r}; "
                f"it supports: {', '.join(self.capabilities.devices)}"
            )
        return device

    def check_format(self, spec: ModelSpec, fmt: str | None) -> str:
        if fmt is None:
            where = spec.path or spec.factory
            raise ModelFileError(
                f"cannot tell the format of {where} from its suffix; backend {self.name!r} loads: "
                f"{', '.join(self.capabilities.formats)} (give the format explicitly)"
            )
        if fmt not in self.capabilities.formats:
            raise ModelFileError(
                f"format {fmt!r} is not loaded by backend {self.name!r}; it loads: "
                f"{', '.join(self.capabilities.formats)}"
            )
        return fmt


def check_method(backend, method: str) -> str:
    """``method`` if ``backend`` offers it, else a one-line error naming the backend's quantization methods."""
    methods = tuple(getattr(backend.capabilities, "quantization", ()))
    if method not in methods:
        offered = ", ".join(methods) if methods else "none"
        raise SpeechperfError(
            f"unknown quantization method {method!r} for backend {backend.name!r}; its methods: {offered}"
        )
    return method


def check_threads(n: int | None) -> int | None:
    if n is None:
        return None
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise SpeechperfError(f"threads must be an integer >= 1, got {n!r}")
    return n
