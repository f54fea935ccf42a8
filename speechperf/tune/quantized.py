"""The int8 variants ``speechperf tune`` searches, made by ``speechperf optimize``'s methods and cached by content.

Each (backend, method, stage) is made when its candidate comes up in the screening (``Int8Maker.make``), in a
child process of its own (``python -m speechperf.tune.quantized``): it opens the backend's fp32 stages, takes the
calibration feeds (recorded on the first ``calibration_size`` samples by the backend's first file set, and kept on
disk for the others: speechperf.optimize.run.calibrate) and quantizes or prunes the stage
(speechperf.optimize.run.make_variant). The tune's own process never loads a model: when it held each backend's
stages and feeds for the whole search, the 3-stage cascade's tune grew to 11.4 GiB and was killed for memory.
The files go to ``<cache>/tune/int8/<digest>/<method>``, where the digest covers what the files depend on: the
config as the backend runs it, the dataset file's size and time, the backend's version, the method and the
calibration size. A second tune of the same pipeline (a rerun, another objective) finds them there. A method that
fails is cached with its reason too: it fails the same way every time. What the child printed stays beside the
files (``make.log``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import attrs

from speechperf.errors import SpeechperfError, first_line
from speechperf.outputs import write_text_atomic
from speechperf.tune.quiet import third_party_to_log

#: Named, not ``__name__``: the child runs this module as ``__main__``.
log = logging.getLogger("speechperf.tune.quantized")

VARIANT = "variant.json"
FAILED = "failed.txt"
SECONDS = "seconds.txt"  #: how long making the files took, for the next estimate
JOB = "job.json"  #: what the child makes, and from which config
MAKE_LOG = "make.log"  #: what the child printed
#: The backend's stages could not be calibrated: every method of it is dropped (for this tune; not cached)
CALIBRATION_FAILED = "calibration-failed.txt"
FEEDS = "calibration"  #: the method name the backend's kept calibration feeds are filed under


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
    for its files. Each is made in a child process (``make_files``); a backend's calibration feeds are recorded
    once, by its first file set that is not cached, and kept on disk for the others. How long each making took is kept beside its files
    (``seconds.txt``): the next tune's estimate of what its first pass costs."""

    cfg: Any
    root: Path
    workdir: Path
    calibration_size: int
    reused: int = 0  #: files found in the cache
    made: int = 0  #: files made by this tune
    seconds: float = 0.0  #: spent making them (calibration included)
    _backends: dict[str, Any] = attrs.Factory(dict)  # name -> (base config, version): the cache digest's parts
    _calibration_failed: dict[str, SpeechperfError] = attrs.Factory(dict)  # name -> why

    def folder(self, backend: str, method: str, stage: int) -> Path:
        base, version = self._backend(backend)
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
        if backend in self._calibration_failed:
            return self._calibration_failed[backend]
        start = time.monotonic()
        try:
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
            self._backends[name] = (config_dict(plan.cfg, name), plan.backend.availability().version)
        return self._backends[name]

    def _make(self, name: str, method: str, index: int, folder: Path) -> dict | BaseException:
        from speechperf.config import write_config

        base, version = self._backend(name)
        log.info("tune: quantizing stage%d on %s with %s (in a child process) ...", index, name, method)
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        write_config(self.cfg.to_dict(), folder / "config.yaml")
        job = {
            "config": str(folder / "config.yaml"),
            "source": self.cfg.source,
            "backend": name,
            "method": method,
            "stage": index,
            "workdir": str(self.workdir),
            "calibration_size": self.calibration_size,
            "feeds": str(self.root / digest(base, version, FEEDS, self.calibration_size) / FEEDS),
        }
        write_text_atomic(folder / JOB, json.dumps(job, indent=1) + "\n", "tune cache")
        with open(folder / MAKE_LOG, "wb") as out:
            done = subprocess.run(
                [sys.executable, "-m", "speechperf.tune.quantized", str(folder)], stdout=out, stderr=subprocess.STDOUT
            )
        found = cached(folder)
        if found is not None:
            if isinstance(found, SpeechperfError):
                log.warning("tune: stage%d %s %s: could not quantize: %s", index, name, method, found)
            return found
        if (folder / CALIBRATION_FAILED).is_file():
            failed = SpeechperfError((folder / CALIBRATION_FAILED).read_text(encoding="utf-8").strip())
            log.warning("tune: %s: %s; its int8 and pruned candidates are dropped", name, failed)
            self._calibration_failed[name] = failed
            return failed
        # killed (out of memory, a signal) or crashed: nothing cached, a later tune tries again
        ended = f"signal {-done.returncode}" if done.returncode < 0 else f"exit {done.returncode}"
        reason = f"the process making its files ended ({ended}); its output: {folder / MAKE_LOG}"
        log.warning("tune: stage%d %s %s: %s", index, name, method, reason)
        return SpeechperfError(reason)


def make_files(folder: Path) -> int:
    """The child: the files of the job in ``folder`` (``JOB``) made there. It writes ``VARIANT``, or ``FAILED``
    with the method's reason, or ``CALIBRATION_FAILED`` when the backend's stages cannot be calibrated."""
    from speechperf.benchmark import plan as run_plan
    from speechperf.config import load_config
    from speechperf.optimize.run import calibrate, make_variant
    from speechperf.optimize.variants import config_dict

    job = json.loads((folder / JOB).read_text(encoding="utf-8"))
    name, method, index, workdir = job["backend"], job["method"], job["stage"], Path(job["workdir"])
    cfg = attrs.evolve(load_config(job["config"]), source=job["source"])
    plan = run_plan.resolve(cfg, name, workdir=workdir, quality="off")
    cfg, backend = plan.cfg, plan.backend
    try:
        stages, plans, calibration, held_out = calibrate(
            cfg, backend, plan.dataset, workdir, job["calibration_size"], Path(job["feeds"])
        )
    except Exception as exc:  # the backend cannot run the stages
        write_text_atomic(folder / CALIBRATION_FAILED, f"calibration failed: {_reason(exc)}\n", "tune cache")
        raise
    at = index - 1
    try:
        data, *_ = make_variant(
            backend,
            method,
            [plans[at]],
            [stages[at]],
            [calibration[at]],
            [held_out[at]],
            config_dict(cfg, name),
            folder,
            cfg.general,
        )
    except Exception as exc:  # one method's failure is that stage's candidate's reason, never the search's end
        write_text_atomic(folder / FAILED, _reason(exc) + "\n", "tune cache")
        raise
    write_text_atomic(folder / VARIANT, json.dumps(data[f"stage{index}"], indent=1) + "\n", "tune cache")
    return 0


def _reason(exc: BaseException) -> str:
    return first_line(exc) if isinstance(exc, SpeechperfError) else f"{type(exc).__name__}: {first_line(exc)}"


if __name__ == "__main__":
    from speechperf import logs

    logs.configure(logging.INFO)  # the child's lines go to its make.log
    sys.exit(make_files(Path(sys.argv[1])))
