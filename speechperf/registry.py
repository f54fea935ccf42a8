"""Find backends by name through the ``speechperf.backends`` entry-point group.

The built-in torch, paddle and onnxruntime backends register through the same group as third-party plugins
(see pyproject.toml). Loading a plugin imports only the module that defines it, never its framework. A plugin that
fails to load is reported as broken with its error; it never stops the others from being used.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from typing import cast

import attrs

from speechperf.backend import OPTIONAL_CAPABILITIES, Availability, Backend, Capabilities, OptionalHooks, hooks
from speechperf.errors import BackendUnavailableError, UnknownBackendError

GROUP = "speechperf.backends"

_overrides: dict[str, Callable[[], Backend]] = {}
_instances: dict[str, Backend] = {}


def _entry_points() -> dict[str, EntryPoint]:
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=GROUP):
        found.setdefault(ep.name, ep)  # the first distribution to claim a name wins
    return found


def register_backend(name: str, factory: Callable[[], Backend]) -> None:
    """Register a backend in-process (tests, notebooks). It takes precedence over an entry point of that name."""
    _overrides[name] = factory
    _instances.pop(name, None)


def unregister_backend(name: str) -> None:
    _overrides.pop(name, None)
    _instances.pop(name, None)


def known_backends(include_overrides: bool = True) -> list[str]:
    """Names of the registered backends: entry points, and those registered in-process unless told not to."""
    return sorted(set(_entry_points()) | (set(_overrides) if include_overrides else set()))


def get_backend(name: str) -> Backend:
    """The backend registered under ``name``; its framework is not imported yet."""
    if name in _instances:
        return _instances[name]
    if name in _overrides:
        backend = _overrides[name]()
    else:
        eps = _entry_points()
        if name not in eps:
            known = known_backends()
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise UnknownBackendError(f"unknown backend {name!r}{hint}; known backends: {', '.join(known) or 'none'}")
        try:
            backend = eps[name].load()()
        except Exception as exc:  # a broken plugin is reported, never fatal to the others
            raise BackendUnavailableError(
                f"backend {name!r} is broken: its plugin {eps[name].value} failed to load: {type(exc).__name__}: {exc}"
            ) from exc
        _note_distribution(backend, eps[name])
    _instances[name] = backend
    return backend


def _note_distribution(backend: Backend, ep: EntryPoint) -> None:
    """Tell the backend which distribution registered it, for its install hint (``pip install <dist>``)."""
    dist = getattr(ep, "dist", None)
    if dist is None or hooks(backend).distribution is not None:
        return
    try:
        # distribution is an optional hook (OptionalHooks): set on the backend itself, a bare-protocol one included.
        cast(OptionalHooks, backend).distribution = dist.metadata["Name"]
    except (AttributeError, KeyError, TypeError):
        pass


def require_backend(name: str) -> Backend:
    """The backend registered under ``name``, checked to be usable on this machine."""
    backend = get_backend(name)
    status = backend.availability()
    if not status.ok:
        raise BackendUnavailableError(f"backend {name!r} is not available: {status.reason}")
    return backend


@attrs.frozen
class BackendStatus:
    name: str
    available: bool
    reason: str
    version: str | None
    capabilities: Capabilities
    #: The optional capabilities (speechperf.backend.OPTIONAL_CAPABILITIES) the backend has.
    optional: tuple[str, ...] = ()
    #: The variants the backend declares (its ``variants()`` hook), each described: name (format; options).
    variants: tuple[str, ...] = ()


def backend_table() -> list[BackendStatus]:
    """Every registered backend with whether it can run here and why not; loads each framework to find out."""
    rows = []
    for name in known_backends():
        try:
            backend = get_backend(name)
            status = backend.availability()
            caps = backend.capabilities
            optional = tuple(c for c in OPTIONAL_CAPABILITIES if hooks(backend).has_capability(c))
            variants = tuple(v.describe() for v in hooks(backend).variants())
        except Exception as exc:
            status, caps, optional, variants = Availability(False, str(exc)), Capabilities(devices=()), (), ()
        rows.append(BackendStatus(name, status.ok, status.reason, status.version, caps, optional, variants))
    return rows
