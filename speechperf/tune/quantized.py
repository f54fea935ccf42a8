"""The int8 variants ``speechperf tune`` searches, made by ``speechperf optimize``'s methods and cached by content.

Each (backend, method, stage) is made when its candidate comes up in the screening (``Int8Maker.make``): per
backend, the fp32 stages are opened once and calibrated on the first ``calibration_size`` samples
(speechperf.optimize.run.calibrate), by the first method that needs it; the method then quantizes the stage
(speechperf.optimize.run.make_variant).
The files go to ``<cache>/tune/int8/<digest>/<method>``, where the digest covers what the files depend on: the
config as the backend runs it, the dataset file's size and time, the backend's version, the method and the
calibration size. A second tune of the same pipeline (a rerun, another objective) finds them there. A method that
fails is cached with its reason too: it fails the same way every time.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import shutil
import time
from pathlib import Path
from typing import Any

import attrs

from speechperf.errors import SpeechperfError, first_line
from speechperf.outputs import write_text_atomic
from speechperf.tune.quiet import third_party_to_log

log = logging.getLogger(__name__)

VARIANT = "variant.json"
FAILED = "failed.txt"
SECONDS = "seconds.txt"  #: how long making the files took, for the next estimate


def digest(base: dict[str, Any], backend_version: str | None, method: str, calibration_size: int) -> str:
    dataset = base["general"].get("dataset_path")
    stat = None
    if dataset and Path(dataset).is_file():
        st = Path(dataset).stat()
        stat = (st.st_size, st.st_mtime_ns)
    text = json.dumps([base, backend_version, method, calibration_size, stat], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cached(folder: Path) -> dict | SpeechperfError | None:
    """What an earlier tune left in ``folder``: the stage keys, the failure, or None."""
    if (folder / VARIANT).is_file():
        return json.loads((folder / VARIANT).read_text(encoding="utf-8"))
    if (folder / FAILED).is_file():
        return SpeechperfError((folder / FAILED).read_text(encoding="utf-8").strip())
    return None


@attrs.define
class Int8Maker:
    """The int8 files of one (backend, method, stage) made when its candidate comes up, cached by content: the
    fp32 variants are measured while the budget is young, and a budget that ends before a method's turn never pays
    for its files. A backend's calibration (its fp32 stages opened and fed ``calibration_size`` samples) is done
    once, by its first method that is not cached. How long each making took is kept beside its files
    (``seconds.txt``): the next tune's estimate of what its first pass costs."""

    cfg: Any
    root: Path
    workdir: Path
    calibration_size: int
    reused: int = 0  #: files found in the cache
    made: int = 0  #: files made by this tune
    seconds: float = 0.0  #: spent making them (calibration included)
    _backends: dict[str, Any] = attrs.Factory(dict)  # name -> (plan, base config, version)
    _calibrated: dict[str, Any] = attrs.Factory(dict)  # name -> calibrate()'s tuple, or the exception

    def folder(self, backend: str, method: str, stage: int) -> Path:
        plan, base, version = self._backend(backend)
        return self.root / digest(base, version, method, self.calibration_size) / method / f"stage{stage}"

    def cached(self, backend: str, method: str, stage: int) -> dict | SpeechperfError | None:
        return cached(self.folder(backend, method, stage))

    def cost(self, backend: str, method: str, stage: int) -> float | None:
        """Seconds making these files takes: 0 when cached, what an earlier making took (kept in the cache), or
        None when never measured here."""
        folder = self.folder(backend, method, stage)
        if cached(folder) is not None:
            return 0.0
        try:
            return float((folder / SECONDS).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def make(self, backend: str, method: str, stage: int) -> dict | BaseException:
        """The stage keys that load the int8 files (from the cache, or made now), or what stopped the method."""
        folder = self.folder(backend, method, stage)
        found = cached(folder)
        if found is not None:
            self.reused += 1
            return found
        start = time.monotonic()
        try:
            with third_party_to_log():
                got = self._make(backend, method, stage, folder)
        finally:
            spent = time.monotonic() - start
            self.seconds += spent
            self.made += 1
            with contextlib.suppress(OSError):
                folder.mkdir(parents=True, exist_ok=True)
                write_text_atomic(folder / SECONDS, f"{spent:.1f}\n", "tune cache")
        return got

    def _backend(self, name: str):
        if name not in self._backends:
            from speechperf.benchmark import plan as run_plan
            from speechperf.optimize.variants import config_dict

            with third_party_to_log():
                plan = run_plan.resolve(self.cfg, name, workdir=self.workdir, quality="off")  # its config, dataset
            self._backends[name] = (plan, config_dict(plan.cfg, name), plan.backend.availability().version)
        return self._backends[name]

    def _make(self, name: str, method: str, index: int, folder: Path) -> dict | BaseException:
        from speechperf.benchmark import build
        from speechperf.optimize.run import calibrate, make_variant

        plan, base, _ = self._backend(name)
        cfg, backend = plan.cfg, plan.backend
        if name not in self._calibrated:
            log.info("tune: calibrating %s's fp32 stages on %d sample(s) ...", name, self.calibration_size)
            try:
                self._calibrated[name] = calibrate(cfg, backend, plan.dataset, self.workdir, self.calibration_size)
            except Exception as exc:  # the backend cannot run the stages: every method of it is dropped
                self._calibrated[name] = SpeechperfError(f"calibration failed: {_reason(exc)}")
        calibrated = self._calibrated[name]
        if isinstance(calibrated, BaseException):
            return calibrated
        stages, plans, calibration, held_out = calibrated
        log.info("tune: quantizing stage%d on %s with %s ...", index, name, method)
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        at = index - 1
        try:
            with build.stdout_to_stderr():
                data, *_ = make_variant(
                    backend,
                    method,
                    [plans[at]],
                    [stages[at]],
                    [calibration[at]],
                    [held_out[at]],
                    base,
                    folder,
                    cfg.general,
                )
        except Exception as exc:  # one method's failure is that stage's candidate's reason, never the search's end
            reason = _reason(exc)
            log.warning("tune: stage%d %s %s: could not quantize: %s", index, name, method, reason)
            write_text_atomic(folder / FAILED, reason + "\n", "tune cache")
            return SpeechperfError(reason)
        keys = data[f"stage{index}"]
        write_text_atomic(folder / VARIANT, json.dumps(keys, indent=1) + "\n", "tune cache")
        return keys


def _reason(exc: BaseException) -> str:
    return first_line(exc) if isinstance(exc, SpeechperfError) else f"{type(exc).__name__}: {first_line(exc)}"
