"""The int8 variants ``speechperf tune`` searches, made by ``speechperf optimize``'s methods and cached by content.

Per backend, the fp32 stages are opened once and calibrated on the first ``calibration_size`` samples
(speechperf.optimize.run.calibrate); each method then quantizes every stage (speechperf.optimize.run.make_variant).
The files go to ``<cache>/tune/int8/<digest>/<method>``, where the digest covers what the files depend on: the
config as the backend runs it, the dataset file's size and time, the backend's version, the method and the
calibration size. A second tune of the same pipeline (a rerun, another objective) finds them there. A method that
fails is cached with its reason too: it fails the same way every time.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from speechperf.errors import SpeechperfError, first_line
from speechperf.outputs import write_text_atomic

log = logging.getLogger(__name__)

VARIANT = "variant.json"
FAILED = "failed.txt"


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


def int8_variants(
    cfg,
    backends: Sequence[str],
    root: Path,
    workdir: Path,
    calibration_size: int,
    precisions: Sequence[str] = ("int8",),
) -> tuple[dict[tuple[str, str, int], dict | BaseException], int]:
    """``{(backend, method, stage): the stage keys that load its int8 files, or the failure}`` for every int8
    method of every backend and every stage, and how many came from the cache. Each stage is quantized on its
    own: a method that finds nothing to quantize in one stage (a decoder without MatMul) still serves the others."""
    from speechperf.benchmark import plan as run_plan
    from speechperf.optimize.variants import config_dict
    from speechperf.tune.space import technique_methods

    out: dict[tuple[str, str, int], dict | BaseException] = {}
    reused = 0
    for name in backends:
        methods = technique_methods(name, precisions)  # int8 methods, and pruned variants (--precisions pruned)
        if not methods:
            continue
        plan = run_plan.resolve(cfg, name, workdir=workdir, quality="off")  # the backend's config, its dataset
        base = config_dict(plan.cfg, name)
        version = plan.backend.availability().version
        folders = {
            (m, i): root / digest(base, version, m, calibration_size) / m / f"stage{i}"
            for m in methods
            for i in range(1, len(cfg.stages) + 1)
        }
        todo = {}
        for (method, index), folder in folders.items():
            found = cached(folder)
            if found is None:
                todo[(method, index)] = folder
            else:
                out[(name, method, index)] = found
                reused += 1
        if todo:
            out.update(_quantize(plan, base, todo, workdir, calibration_size))
    return out, reused


def _quantize(plan, base, folders: dict[tuple[str, int], Path], workdir: Path, calibration_size: int):
    """Calibrate the plan's fp32 stages once on its backend, then each (method, stage) into its folder."""
    from speechperf.benchmark import build
    from speechperf.optimize.run import calibrate, make_variant

    cfg, backend = plan.cfg, plan.backend
    out: dict[tuple[str, str, int], dict | BaseException] = {}
    try:
        stages, plans, calibration, held_out = calibrate(cfg, backend, plan.dataset, workdir, calibration_size)
    except Exception as exc:  # the backend cannot run the stages: every method of it is dropped with the reason
        reason = f"calibration failed: {_reason(exc)}"
        return {(backend.name, m, i): SpeechperfError(reason) for m, i in folders}
    for (method, index), folder in folders.items():
        log.info("tune: quantizing stage%d on %s with %s ...", index, backend.name, method)
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
            log.warning("tune: stage%d %s %s: could not quantize: %s", index, backend.name, method, reason)
            write_text_atomic(folder / FAILED, reason + "\n", "tune cache")
            out[(backend.name, method, index)] = SpeechperfError(reason)
            continue
        keys = data[f"stage{index}"]
        write_text_atomic(folder / VARIANT, json.dumps(keys, indent=1) + "\n", "tune cache")
        out[(backend.name, method, index)] = keys
    return out


def _reason(exc: BaseException) -> str:
    return first_line(exc) if isinstance(exc, SpeechperfError) else f"{type(exc).__name__}: {first_line(exc)}"
