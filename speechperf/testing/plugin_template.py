"""``speechperf plugin new NAME``: the skeleton of a backend plugin, a distribution of its own.

What it writes, for ``NAME`` = ``myrt``, into ``<dir>/speechperf-myrt/``::

    pyproject.toml                 the distribution, its entry point in the ``speechperf.backends`` group
    README.md                      what to fill in, in order, with the guide's sections
    speechperf_myrt/backend.py     class MyrtBackend(BackendBase): every method that is not written yet raises
                                   NotImplementedError naming itself and the guide section (docs/backends.md)
    speechperf_myrt/flops.py       FLOPs and known graphs, written already for a runtime that loads ONNX files
    speechperf_myrt/known.py       (the core counts the file and writes the graphs); delete them otherwise
    speechperf_myrt/memory.py      a stub saying "not implemented yet": ``check`` shows it as unavailable
    tests/test_conformance.py      the conformance suite (speechperf.testing.conformance) over an ONNX affine model

so that ``pip install -e .`` and ``pytest`` run the conformance suite at once; it fails where the stubs are, with
their messages, until they are written.
"""

from __future__ import annotations

import keyword
import re
from pathlib import Path

from speechperf.errors import SpeechperfError, shorten
from speechperf.outputs import check_output_folder

GUIDE = "docs/backends.md"

NAME = re.compile(r"^[a-z][a-z0-9_]*$")

FILES = {
    "pyproject.toml": """\
[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[project]
name = "speechperf-{name}"
version = "0.1.0"
description = "The {name} backend for speechperf."
requires-python = ">=3.10"
# TODO: add your runtime's distribution, e.g. "openvino>=2024.0"; it is the `framework_package` of backend.py,
# which BackendBase.availability() checks. onnx is there for what the core does with ONNX files (flops.py's
# counter, known.py's graphs, onnx_tensor_infos; they import it at run time): drop it if your runtime loads no ONNX.
dependencies = ["speechperf", "onnx>=1.16"]

[project.optional-dependencies]
test = ["pytest>=8", "onnx>=1.16"]

# How speechperf finds the backend ({guide}, "Registering").
[project.entry-points."speechperf.backends"]
{name} = "speechperf_{name}.backend:{cls}"

[tool.setuptools]
packages = ["speechperf_{name}"]
""",
    "README.md": """\
# speechperf-{name}

A speechperf backend plugin, made by `speechperf plugin new {name}`. Fill in, in this order (each step is a
section of speechperf's {guide}):

1. `speechperf_{name}/backend.py`: `framework_module` / `framework_package`, `capabilities`, `_load` and the
   session's `run`, `set_threads`, `seed` ("The backend class", "The session").
2. `pip install -e ".[test]"` and `python -m pytest tests`: the conformance suite, failing where the stubs are.
   With speechperf from a local checkout, install the checkout first (`pip install -e "/path/to/speechperf"`, with
   the extras you need, e.g. `"/path/to/speechperf[torch]"`): pip then takes it for the `speechperf` dependency
   ("Start").
3. The optional capabilities: `flops.py` and `known.py` work as they are for a runtime that loads ONNX files
   (delete or rewrite them otherwise); `memory.py` is a stub; add `profiler.py`, `quantize.py` if you have them
   ("Optional capabilities"). If your runtime cannot run silero's ONNX file, set `silero_vad_port = "onnx"`
   ("The silero VAD port").
4. `speechperf backends`, `speechperf check --backend {name}`, `speechperf bench --backend {name} --preset tiny`
   (the reference models are built once from the zoo's definitions, which needs `pip install "speechperf[torch]"`
   on a fresh cache), then `speechperf bench --backend {name} --config VAD` (the silero VAD, a config shipped with
   speechperf, run by name; `pip install "speechperf[vad]"`: its ONNX file has an `If` and an LSTM whose cell state
   is read). With a `profiler.py`: `speechperf profile --backend {name} --preset tiny --profiler-options
   "batch_range=[1,3]"` (the same tiny S2T, one sample per step; "Step profiler").
   A runtime that loads no ONNX: "Runtimes that load no ONNX", and its worked example `examples/speechperf-pt2`.
""",
    "speechperf_{name}/__init__.py": '''\
"""The {name} backend for speechperf (registered in pyproject.toml's ``speechperf.backends`` entry point)."""
''',
    "speechperf_{name}/backend.py": '''\
"""The {name} backend: {guide}, "The backend class" and "The session".

Import your runtime only inside methods: registering a backend must not import its framework.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import numpy as np

from speechperf.backend import BackendBase, Capabilities, ModelSpec, Session, TensorInfo, check_threads

# Under "speechperf." so that `speechperf -v` shows this plugin's messages ({guide}, "Logging").
log = logging.getLogger(f"speechperf.{{__name__}}")


def not_implemented(what: str) -> NotImplementedError:
    return NotImplementedError(
        f"speechperf_{name}: {{what}} is not implemented yet (see speechperf's {guide}, {{_SECTIONS[what]}})"
    )


_SECTIONS = {{
    "{cls}._load": '"The backend class"',
    "{cls}Session.run": '"The session"',
    "{cls}.seed": '"The backend class"',
}}


class {cls}Session(Session):
    """A loaded model: host numpy arrays in, fresh host numpy arrays out, named as in the model file."""

    backend = "{name}"

    def __init__(self, model, device: str, inputs: tuple[TensorInfo, ...], outputs: tuple[TensorInfo, ...]):
        self.model = model
        self.device = device
        self.inputs = inputs
        self.outputs = outputs

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        raise not_implemented("{cls}Session.run")

    def parameter_bytes(self, feeds: Mapping[str, np.ndarray]) -> int | None:
        # The roofline's weight traffic: the initializers and Constant tensors the ONNX file's graph reads.
        from speechperf.meters.onnx_flops import onnx_weight_bytes

        return onnx_weight_bytes(self, feeds)


class {cls}(BackendBase):
    name = "{name}"
    # TODO: the module your runtime imports as, and the distribution pip installs it from. numpy stands in until
    # then, so that availability() is ok and the conformance suite runs (and fails where the stubs are).
    framework_module = "numpy"
    framework_package = "numpy"
    capabilities = Capabilities(devices=("cpu",), formats=("onnx",))
    suffix_formats = {{".onnx": "onnx"}}
    # If your runtime cannot run silero's ONNX file (its If on sr), uncomment: the core then writes the VAD's
    # network as a plain ONNX file for you ({guide}, "The silero VAD port").
    # silero_vad_port = "onnx"

    def __init__(self) -> None:
        self._threads: int | None = None

    def _load(self, spec: ModelSpec, fmt: str, device: str) -> Session:
        # spec.existing(spec.path) raises ModelFileError naming a missing file; raise ModelFileError naming the
        # file when your runtime cannot read it. Build the session with the inputs/outputs as the file names them:
        # inputs, outputs = speechperf.meters.onnx_files.onnx_tensor_infos(path).
        spec.existing(spec.path)
        raise not_implemented("{cls}._load")

    def set_threads(self, n: int) -> None:
        # Must really limit the cores used: the conformance suite measures CPU time over wall time at 1 thread.
        self._threads = check_threads(n)

    def get_threads(self) -> int:
        import os

        return self._threads or os.cpu_count() or 1

    def seed(self, n: int) -> None:
        raise not_implemented("{cls}.seed")

    def synchronize(self, device: str = "cpu") -> None:
        return None  # run() returns host arrays, so the device work is done when it returns
''',
    "speechperf_{name}/flops.py": '''\
"""Optional capability ``flops`` ({guide}, "FLOPs"): the core counts an ONNX file's graph for every runtime.
Delete this module if your runtime loads no ONNX files and you write no counter."""

from speechperf.meters.onnx_flops import count_onnx_flops


def count_flops(session, feeds):
    return count_onnx_flops(session, feeds)  # reads session.spec.path, which BackendBase.load sets
''',
    "speechperf_{name}/known.py": '''\
"""Optional capability ``known_graph`` ({guide}, "Known graphs"): the core writes the one-op graph (float32 or
int8) as an ONNX file; this loads it through the backend, so it gets the same checks and threads."""

import shutil
import tempfile
import weakref
from pathlib import Path

from speechperf.backend import CapabilityUnavailableError, ModelSpec
from speechperf.meters.onnx_files import write_known_graph


def known_session(graph, threads=None):
    from speechperf_{name}.backend import {cls}

    folder = Path(tempfile.mkdtemp(prefix="speechperf-known-"))
    path = write_known_graph(graph, folder / "known.onnx")
    try:
        session = {cls}().load(ModelSpec(path), threads=threads)
    except NotImplementedError as exc:  # the template's stubs: unavailable until backend.py is written
        shutil.rmtree(folder, True)
        why = f"backend '{name}': capability 'known_graph' is unavailable ({{exc}})"
        raise CapabilityUnavailableError(why) from None
    weakref.finalize(session, shutil.rmtree, folder, True)  # check runs the session after this returns
    return session
''',
    "speechperf_{name}/memory.py": '''\
"""Optional capability ``memory`` ({guide}, "Device memory"): the device allocator's peak."""


class DeviceMemory:
    def __init__(self, device: str = "cpu"):
        self.device = device
        self.available = False
        self.reason = "speechperf_{name}/memory.py is a stub: not implemented yet"

    def reset(self) -> None:
        raise RuntimeError(self.reason)

    def peak_bytes(self) -> int:
        raise RuntimeError(self.reason)
''',
    "tests/test_conformance.py": '''\
"""speechperf's conformance suite over the {name} backend ({guide}, "The conformance suite")."""

import pytest

from speechperf.backend import ModelSpec
from speechperf.testing.conformance import BackendConformance


class Test{cls}(BackendConformance):
    backend_name = "{name}"

    def build_affine_model(self, directory, weight, bias):
        """An ONNX file with input x [batch, time, in] float32 and output y = tanh(x @ weight + bias). Write it
        in your runtime's own format instead if it loads no ONNX."""
        onnx = pytest.importorskip("onnx")
        from onnx import TensorProto, helper, numpy_helper

        graph = helper.make_graph(
            [
                helper.make_node("MatMul", ["x", "w"], ["xw"]),
                helper.make_node("Add", ["xw", "b"], ["z"]),
                helper.make_node("Tanh", ["z"], ["y"]),
            ],
            "affine",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "time", weight.shape[0]])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "time", weight.shape[1]])],
            [numpy_helper.from_array(weight, "w"), numpy_helper.from_array(bias, "b")],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        path = directory / "affine.onnx"
        onnx.save(model, str(path))
        return ModelSpec(path)
''',
}


#: The longest plugin name: it names a folder, a package and a class, each within a file name's 255 bytes.
NAME_MAX = 64


def check_name(name: str) -> str:
    if len(name) > NAME_MAX:
        raise SpeechperfError(
            f"plugin name {shorten(name, 60)} is {len(name)} characters; at most {NAME_MAX} (it names the folder "
            "speechperf-NAME, the package speechperf_NAME and the backend class)"
        )
    if not NAME.match(name) or keyword.iskeyword(name):
        raise SpeechperfError(
            f"plugin name {name!r} is not allowed; use lowercase letters, digits and _ , starting with a letter "
            "(it names the backend, the package speechperf_NAME and the entry point)"
        )
    return name


def class_name(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_")) + "Backend"


def write_plugin(name: str, into: Path) -> Path:
    """Write the skeleton of plugin ``name`` into ``into/speechperf-<name>``; return that folder."""
    check_name(name)
    folder = check_output_folder(into, "--dir") / f"speechperf-{name}"  # a file, a parent that is a file, too long
    if folder.exists():
        raise SpeechperfError(f"{folder} exists already; give another --dir or remove it")
    values = {"name": name, "cls": class_name(name), "guide": GUIDE}
    for relative, text in FILES.items():
        path = folder / relative.format(**values)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.format(**values))
    return folder
