"""The contract between the core and the framework bindings, one concept per module:

- ``spec``: ``ModelSpec`` (what to load) and ``TensorInfo`` (a session's inputs and outputs);
- ``session``: ``Session``, the inference callable (host numpy arrays in and out), and ``check_feeds``;
- ``contract``: the ``Backend`` protocol, ``Availability``, ``Capabilities``, ``KNOWN_DEVICES``;
- ``hooks``: ``OptionalHooks``, every hook a backend may have beyond the protocol, and ``hooks(backend)``, the one
  way the core reads them;
- ``capabilities``: the optional capabilities and the modules of a backend's package they are found in;
- ``options``: a backend's ``options_class`` and the check of a stage's ``options`` against it;
- ``zoo``: ``ZooFormat``, a format a backend builds the reference models in;
- ``quantization``: the check of a quantization method name;
- ``variants``: ``Variant``, one way a backend runs a model (a zoo format and options), declared by its ``variants()``;
- ``base``: ``BackendBase``, the shared shape of a backend.

This package is the public facade: ``from speechperf.backend import BackendBase, ModelSpec, Session, ...`` is how
backends and plugins import these names (see docs/architecture.md, "The Backend contract").
"""

from speechperf.backend.base import BackendBase, check_threads
from speechperf.backend.capabilities import OPTIONAL_CAPABILITIES, CapabilityUnavailableError
from speechperf.backend.contract import KNOWN_DEVICES, Availability, Backend, Capabilities
from speechperf.backend.hooks import HOOKS, OptionalHooks, hooks
from speechperf.backend.options import OptionError, check_options
from speechperf.backend.quantization import check_method
from speechperf.backend.session import Session, check_feeds, check_output_count
from speechperf.backend.spec import ModelSpec, TensorInfo
from speechperf.backend.variants import Variant
from speechperf.backend.zoo import ZooFormat

# The errors a backend raises, importable from where a plugin takes everything else (docs/backends.md).
from speechperf.errors import BackendUnavailableError, DeviceError, FeedError, ModelFileError

__all__ = [
    "BackendUnavailableError",
    "DeviceError",
    "FeedError",
    "ModelFileError",
    "HOOKS",
    "KNOWN_DEVICES",
    "OPTIONAL_CAPABILITIES",
    "Availability",
    "Backend",
    "BackendBase",
    "Capabilities",
    "CapabilityUnavailableError",
    "ModelSpec",
    "OptionError",
    "OptionalHooks",
    "Session",
    "TensorInfo",
    "Variant",
    "ZooFormat",
    "check_feeds",
    "check_output_count",
    "check_method",
    "check_options",
    "check_threads",
    "hooks",
]
