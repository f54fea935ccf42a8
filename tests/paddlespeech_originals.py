"""PaddleSpeech's two profiler modules run as they are (``tests/paddlespeech_original/``, Apache-2.0, unchanged), on
stand-ins for what they import: their option parsing and their ``add_profiler_step`` loop are their own code; only
paddle's profiler calls are stand-ins, which record their arguments and, for the s2t module's legacy calls, check
them as paddle 2.x's ``paddle/fluid/profiler.py`` does (``start_profiler`` refuses a state other than CPU / GPU /
All and a tracer_option other than Default / OpDetail / AllOpDetail; ``stop_profiler`` a sorted_key other than
None / default / calls / total / max / min / ave, each a ``ValueError``). No framework is imported.

``run_original(flavour, text)`` calls the module's ``add_profiler_step(text)`` once per step, as a trainer does, and
returns what happened: ``ValueError`` (and its message) or the run's effective options, each as the module uses it.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path
from unittest import mock

import attrs

FOLDER = Path(__file__).resolve().parent / "paddlespeech_original"
STEPS = 40  # past the end of the default range and of TIPC's [10,35]


class _Legacy:
    """paddle 2.x's ``paddle.utils.profiler``: the argument checks of ``start_profiler`` / ``stop_profiler``."""

    def __init__(self):
        self.calls: list[tuple] = []

    def start_profiler(self, state, tracer_option="Default"):
        if state not in ["CPU", "GPU", "All"]:
            raise ValueError("The state must be 'CPU' or 'GPU' or 'All'.")
        if tracer_option not in ["Default", "OpDetail", "AllOpDetail"]:
            raise ValueError("tracer option must be 'Default', 'OpDetail', 'AllOpDetail'.")
        self.calls.append(("start", state, tracer_option))

    def stop_profiler(self, sorted_key=None, profile_path="/tmp/profile"):
        sorted_key = "default" if sorted_key is None else sorted_key
        if sorted_key not in ["default", "calls", "total", "max", "min", "ave"]:
            raise ValueError("The sorted_key must be None or in 'calls', 'total', 'max', 'min' and 'ave'")
        self.calls.append(("stop", sorted_key, profile_path))


class _Profiler:
    """``paddle.profiler.Profiler``: records how the t2s module made it."""

    made: list[dict] = []

    def __init__(self, **kwargs):
        _Profiler.made.append(kwargs)

    def start(self):
        pass

    def step(self):
        pass

    def stop(self):
        pass

    def summary(self, **kwargs):
        pass


def _stand_ins(legacy: _Legacy) -> dict[str, types.ModuleType]:
    paddle = types.ModuleType("paddle")
    paddle.utils = types.ModuleType("paddle.utils")  # type: ignore[attr-defined]
    paddle.utils.profiler = legacy  # type: ignore[attr-defined]
    profiler = types.ModuleType("paddle.profiler")
    profiler.Profiler = _Profiler  # type: ignore[attr-defined]
    profiler.export_chrome_tracing = lambda folder, worker_name=None: (folder, worker_name)  # type: ignore[attr-defined]
    paddle.profiler = profiler  # type: ignore[attr-defined]
    log = types.ModuleType("paddlespeech.s2t.utils.log")

    class Log:
        def __init__(self, name):
            pass

        def getlog(self):
            return mock.Mock()

    log.Log = Log  # type: ignore[attr-defined]
    modules = {"paddle": paddle, "paddle.utils": paddle.utils, "paddle.profiler": profiler}  # type: ignore[attr-defined]
    for name in ("paddlespeech", "paddlespeech.s2t", "paddlespeech.s2t.utils"):
        modules[name] = types.ModuleType(name)
    modules["paddlespeech.s2t.utils.log"] = log
    return modules


def load_original(flavour: str, legacy: _Legacy | None = None) -> types.ModuleType:
    """A fresh copy of PaddleSpeech's ``paddlespeech/<flavour>/utils/profiler.py`` (its step counter at 0)."""
    path = FOLDER / f"{flavour}_profiler.py"
    spec = importlib.util.spec_from_file_location(f"paddlespeech_original_{flavour}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    with mock.patch.dict(sys.modules, _stand_ins(legacy or _Legacy())):
        spec.loader.exec_module(module)
    return module


@attrs.frozen
class Outcome:
    stops: bool  # a ValueError stopped the loop
    error: str = ""  # its message
    exited_at: int | None = None  # the step sys.exit(0) ended the loop at (exit_on_finished)
    #: Each option as the module uses it (keys it stores but never uses are left out).
    uses: dict = attrs.field(factory=dict)


def run_original(flavour: str, text: str | None, steps: int = STEPS) -> Outcome:
    legacy = _Legacy()
    module = load_original(flavour, legacy)
    _Profiler.made.clear()
    exited_at = None
    calls = 0
    try:
        while calls < steps:
            calls += 1
            module.add_profiler_step(text)
    except ValueError as exc:
        return Outcome(True, str(exc))
    except SystemExit as exc:
        assert exc.code == 0
        exited_at = calls - 1
    options = module._profiler_options._options
    uses = {
        "batch_range": tuple(options["batch_range"][:2]),
        "exit_on_finished": options["exit_on_finished"],
    }
    if flavour == "s2t":
        # handed to paddle's legacy start_profiler / stop_profiler; s2t has no timer_only: it always profiles ops
        uses.update({key: options[key] for key in ("state", "tracer_option", "sorted_key", "profile_path")})
        uses["timer_only"] = False
    else:
        # t2s makes paddle.profiler.Profiler(scheduler=..., timer_only=str(value) == str(True)) and nothing else
        uses["timer_only"] = _Profiler.made[0]["timer_only"]
    return Outcome(False, "", exited_at, uses)
