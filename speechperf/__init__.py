"""speechperf: benchmark and profile speech models the same way on PyTorch, PaddlePaddle and ONNX Runtime.

Importing this package imports no framework: backends are found by name through the registry and import their
framework only when they are used.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("speechperf")  # the one definition is pyproject.toml's; this reads the installed metadata
except PackageNotFoundError:  # a source tree on sys.path that was never installed
    __version__ = "0+unknown"

from speechperf.backend import Availability, Backend, Capabilities, ModelSpec, Session, TensorInfo
from speechperf.errors import SpeechperfError
from speechperf.registry import get_backend, known_backends

__all__ = [
    "Availability",
    "Backend",
    "Capabilities",
    "ModelSpec",
    "Session",
    "SpeechperfError",
    "TensorInfo",
    "__version__",
    "get_backend",
    "known_backends",
]
