"""Optional capabilities of a backend and where they are found: one module each in the backend's package.

``BackendBase`` finds capability ``flops`` of ``mypkg.backend:MyBackend`` in ``mypkg/flops.py`` (or where its
``capability_modules`` says), so every backend is laid out the same way and registering one imports none of them.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType

from speechperf.errors import SpeechperfError

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


def unavailable(backend, name: str, why: str) -> CapabilityUnavailableError:
    return CapabilityUnavailableError(f"backend {backend.name!r}: capability {name!r} is unavailable ({why})")


def capability_module_name(backend, name: str) -> str:
    """Where capability ``name`` of ``backend`` lives: its ``capability_modules[name]``, else ``<package>.<module>``
    where the package is the one holding the module that defines the class (``mypkg`` for ``mypkg.backend``)."""
    if name not in OPTIONAL_CAPABILITIES:
        raise SpeechperfError(f"unknown capability {name!r}; known: {', '.join(OPTIONAL_CAPABILITIES)}")
    elsewhere = getattr(backend, "capability_modules", {})
    if name in elsewhere:
        return elsewhere[name]
    defining_name = type(backend).__module__
    defining = sys.modules.get(defining_name)
    package = getattr(defining, "__package__", None) or defining_name.rpartition(".")[0]
    module = OPTIONAL_CAPABILITIES[name][0]
    return f"{package}.{module}" if package else module


def load_capability(backend, name: str) -> ModuleType:
    """The module providing optional capability ``name``; a one-line error saying it is unavailable if none."""
    module_name = capability_module_name(backend, name)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is None or not module_name.startswith(exc.name):
            raise  # the module exists but imports something missing: that is its own error
        raise unavailable(backend, name, f"no module {module_name}") from None
    missing = [attr for attr in OPTIONAL_CAPABILITIES[name][1] if not hasattr(module, attr)]
    if missing:
        raise unavailable(backend, name, f"{module_name} defines no {', '.join(missing)}")
    return module


def finds_capability(backend, name: str) -> bool:
    """Whether optional capability ``name`` is there, without importing its module (nor its framework)."""
    try:
        return importlib.util.find_spec(capability_module_name(backend, name)) is not None
    except (ImportError, ValueError):
        return False
