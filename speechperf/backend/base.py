"""``BackendBase``: the shared shape of a backend, so every backend checks and dispatches the same way.

A plugin may subclass it or implement the ``Backend`` protocol (and any of ``OptionalHooks``) on its own.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs

from speechperf.backend.capabilities import finds_capability, load_capability
from speechperf.backend.contract import Availability, Capabilities
from speechperf.backend.hooks import OptionalHooks
from speechperf.backend.options import check_options
from speechperf.backend.quantization import check_method
from speechperf.backend.session import Session
from speechperf.backend.spec import ModelSpec
from speechperf.errors import BackendUnavailableError, DeviceError, SpeechperfError
from speechperf.values import CORES, check_range


class BackendBase(OptionalHooks):
    """The shared shape of a backend. A plugin may subclass it or implement the Backend protocol on its own.

    A subclass names its framework and formats and implements ``_load``, ``set_threads``, ``get_threads``,
    ``seed``, ``synchronize`` and, where it declares a ``cuda`` device, ``require_cuda``. ``load`` does every check
    that can be made before the framework reads a file, the same way on every backend. The optional hooks it may
    set or override (``options_class``, ``zoo_formats``, ``build_reference``, ...) are declared in
    ``OptionalHooks``, which this class inherits its defaults from.
    """

    name: str = ""
    #: The pip extra of speechperf that installs the framework: ``pip install "speechperf[<extra>]"`` (built-ins).
    extra: str = ""
    #: What to run to install this backend's framework. A plugin sets it; unset, it is ``pip install <the
    #: distribution that registered the entry point>`` (the registry fills ``distribution``).
    install_command: str | None = None
    #: Optional capability -> module providing it, where it is not ``<the plugin's package>.<module>``.
    capability_modules: Mapping[str, str] = {}
    #: The module imported to use the framework, and the distribution that installs it.
    framework_module: str = ""
    framework_package: str = ""
    capabilities: Capabilities = Capabilities()
    #: The format of a spec built from a ``factory`` (None where the backend loads no factories).
    factory_format: str | None = None

    def import_framework(self) -> ModuleType:
        return importlib.import_module(self.framework_module)

    def availability(self) -> Availability:
        try:
            framework = self.import_framework()
        except ImportError as exc:
            return Availability(
                False, f"{self.framework_package} is not installed ({exc}); install it with: {self.install_hint()}"
            )
        return Availability(True, "", self.framework_version(framework))

    def framework_version(self, framework: ModuleType) -> str:
        """The version ``availability`` reports, of the imported ``framework_module``: its ``__version__``, else
        the installed version of ``framework_package`` (``importlib.metadata``), else ``"unknown"``. Override it
        for a framework that keeps its version elsewhere (``executorch.version.__version__``)."""
        version = getattr(framework, "__version__", None)
        if isinstance(version, str) and version:
            return version
        try:
            return importlib.metadata.version(self.framework_package or self.framework_module.split(".")[0])
        except (importlib.metadata.PackageNotFoundError, ValueError):
            return "unknown"

    def load(self, spec: ModelSpec, device: str = "cpu", threads: int | None = None) -> Session:
        self.require_available()
        self.check_device(device)
        if device == "cuda":
            self.require_cuda()
        checked = check_threads(threads)
        if checked is not None:
            self.set_threads(checked)
        if spec.options:
            spec = attrs.evolve(spec, options=self.check_options(spec.options))
        fmt: str | None
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

    def set_threads(self, n: int) -> None:
        raise NotImplementedError

    def get_threads(self) -> int:
        raise NotImplementedError

    def require_cuda(self) -> None:
        raise DeviceError(f"backend {self.name!r} has no CUDA support; use device 'cpu'")

    # Each optional capability lives in its own module of the backend's package (profiler.py, flops.py, known.py,
    # memory.py, quantize.py); these methods only dispatch to it, so every backend is laid out the same way.

    def step_profiler(self, options):
        return self.capability("profiler").make_step_profiler(self, options)

    def count_flops(self, session, feeds):
        return self.capability("flops").count_flops(session, feeds)

    def known_session(self, graph, threads: int | None = None):
        return self.capability("known_graph").known_session(graph, threads)

    def device_memory(self, device: str = "cpu"):
        return self.capability("memory").DeviceMemory(device)

    @property
    def quantization_methods(self) -> tuple[str, ...]:
        return self.capabilities.quantization

    def quantize(self, method: str, source, out_dir):
        """An unknown method is a one-line error listing this backend's (see OptionalHooks.quantize)."""
        check_method(self, method)
        return self.capability("quantize").quantize(self, method, source, Path(out_dir))

    def capability(self, name: str) -> ModuleType:
        return load_capability(self, name)

    def has_capability(self, name: str) -> bool:
        return finds_capability(self, name)

    def install_hint(self) -> str:
        if self.install_command:
            return self.install_command
        if self.distribution and self.distribution.lower() != "speechperf":
            return f"pip install {self.distribution}"
        return f'pip install "speechperf[{self.extra}]"' if self.extra else "see the backend's documentation"

    def check_options(self, options: Mapping[str, Any], where: str = "") -> Mapping[str, Any]:
        """``options`` checked against ``options_class``; the same mapping, every value converted and valid."""
        return check_options(self, options, where)

    def require_available(self) -> Availability:
        status = self.availability()
        if not status.ok:
            raise BackendUnavailableError(f"backend {self.name!r} is not available: {status.reason}")
        return status


def check_threads(n: int | None) -> int | None:
    """A thread count: an integer from 1 to the cores this process may use (``speechperf.values.CORES``, the bound
    of a config's ``threads`` too), so thousands of threads are refused here instead of hanging the machine."""
    if n is None:
        return None
    if isinstance(n, bool) or not isinstance(n, int):
        raise SpeechperfError(f"threads must be an integer >= 1, got {n!r}")
    return check_range(n, "threads", 1, CORES)
