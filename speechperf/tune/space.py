"""What ``speechperf tune`` searches: per stage, backend x execution variant x precision x threads.

A ``StageCandidate`` is one way to run one stage of the pipeline: the ``--set`` items that pin that stage to a
backend (``stageN.backend``), its variant (``variants()`` of the backend: a zoo format and options, applied to this
stage alone) and, for int8, the quantized model files (``stageN.model_dir`` / ``stageN.path``, written by
``speechperf optimize``'s methods, speechperf.tune.quantized). The other stages keep the reference path (the first
backend's own), so a stage is timed on the inputs the reference hands it.

Precisions:
- ``fp32``: every variant the backend declares;
- ``bf16``: the variants a backend declares with ``precision="bf16"``, on a CPU with AVX-512 BF16 or AMX; where either
  is missing, one dropped candidate per backend says which;
- ``int8:<method>``: each quantization method of the backend (``capabilities.quantization``, less ``fp32-export``,
  which is no int8), on the backend's own path (int8 files load in one way);
- ``pruned:<variant>``: with ``--precisions ...,pruned``, structured pruning (``PRUNED_VARIANTS``: FFN neurons
  removed and the layers rebuilt smaller, the kind of pruning that can lower latency on a dense runtime; made by
  ``speechperf optimize``'s pruning, speechperf.optimize.pruning) where the backend offers it
  (``capabilities.pruning``); judged end to end by the quality budget, as int8 is.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import attrs

from speechperf.backend import Variant

FP32 = "fp32"
BF16 = "bf16"
INT8 = "int8"
PRUNED = "pruned"
PRECISIONS = (FP32, BF16, INT8, PRUNED)
#: The pruned variants ``--precisions ...,pruned`` searches (optimize's variant names: method@sparsity).
PRUNED_VARIANTS = ("prune-ffn-l2@0.1", "prune-ffn-l2@0.3")
#: Quantization methods that change no precision (optimize's control for the container's effect).
NOT_INT8 = ("fp32-export",)
#: /proc/cpuinfo flags of a CPU with bf16 arithmetic (AVX-512 BF16; AMX tiles with bf16).
BF16_FLAGS = ("avx512_bf16", "amx_bf16")


@attrs.frozen
class StageCandidate:
    """One way to run stage ``stage`` (1-based). ``sets``: the --set items that make the base config run it."""

    stage: int
    backend: str
    variant: str
    precision: str  # "fp32", "bf16", "int8:<method>"
    threads: int
    sets: tuple[str, ...] = ()
    what: str = ""  # the variant's description
    #: its files are made when it comes up in the screening (int8: speechperf.tune.quantized.Int8Maker); until
    #: then ``sets`` only pin the backend
    pending: bool = False

    @property
    def key(self) -> str:
        """``stage1 onnxruntime:default fp32 t=1``: the name in every table and in the resume store."""
        return f"stage{self.stage} {self.backend}:{self.variant} {self.precision} t={self.threads}"

    @property
    def is_int8(self) -> bool:
        """int8 or pruned: files of their own, judged end to end against the quality budget (no fp32 parity)."""
        return self.precision.startswith((INT8, PRUNED))


@attrs.frozen
class Dropped:
    """A candidate that is not measured at all, and why (no bf16 on this CPU, a method that could not quantize)."""

    key: str
    stage: int
    backend: str
    precision: str
    reason: str


def cpu_has_bf16(cpuinfo: str | None = None) -> bool:
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8") as f:
                cpuinfo = f.read()
        except OSError:
            return False
    flags = set(cpuinfo.split())
    return any(flag in flags for flag in BF16_FLAGS)


def stage_variant_sets(config, index: int, backend: str, variant: Variant) -> tuple[str, ...]:
    """The ``--set`` items that run stage ``index`` of ``config`` as ``variant`` of ``backend``: its format where
    the stage runs a seeded reference model (a file of your own, Whisper or silero keeps its own), its options
    merged over the stage's own for that backend."""
    from speechperf.zoo.catalog import MODEL_MODULES

    stage = config.stages[index - 1]
    items = []
    if variant.format is not None and stage.model in MODEL_MODULES:
        items.append(f"stage{index}.format={variant.format}")
    if variant.options:
        options = {k: dict(v or {}) for k, v in (stage.options or {}).items()}
        options.setdefault(backend, {}).update(variant.options_dict)
        items.append(f"stage{index}.options={json.dumps(options)}")
    return tuple(items)


def declared_variants(backend: str) -> tuple[Variant, ...]:
    from speechperf.compare.best import backend_variants

    return backend_variants(backend, precision=None)


def float_candidates(
    config, backends: Sequence[str], precisions: Sequence[str], threads: Sequence[int], bf16_cpu: bool
) -> tuple[list[StageCandidate], list[Dropped]]:
    """fp32 and bf16 candidates of every stage, with the bf16 ones that cannot run dropped; the same stage sets
    under two variant names (Whisper has no format to switch) are measured once, under the first name."""
    out: list[StageCandidate] = []
    dropped: list[Dropped] = []
    for index in range(1, len(config.stages) + 1):
        seen: set[tuple] = set()
        for backend in backends:
            variants = declared_variants(backend)
            for precision in (p for p in precisions if p in (FP32, BF16)):
                chosen = [v for v in variants if v.precision == precision]
                if precision == BF16 and (not bf16_cpu or not chosen):
                    why = (
                        "this CPU has no AVX-512 BF16 or AMX (cpuinfo flags avx512_bf16, amx_bf16)"
                        if not bf16_cpu
                        else f"backend {backend!r} declares no bf16 variant"
                    )
                    for n in threads:
                        key = f"stage{index} {backend}:* bf16 t={n}"
                        dropped.append(Dropped(key, index, backend, BF16, why))
                    continue
                for variant in chosen:
                    sets = (f"stage{index}.backend={backend}", *stage_variant_sets(config, index, backend, variant))
                    for n in threads:
                        if (backend, sets, n) in seen:
                            continue
                        seen.add((backend, sets, n))
                        out.append(StageCandidate(index, backend, variant.name, precision, n, sets, variant.describe()))
    return out, dropped


def pending_int8_candidates(
    stages: int, backends: Sequence[str], threads: Sequence[int], precisions: Sequence[str] = (INT8,)
) -> list[StageCandidate]:
    """Every int8 method (and, with ``pruned`` in ``precisions``, every pruned variant) of every backend on every
    stage, its files not made yet (made when it comes up)."""
    out = []
    for index in range(1, stages + 1):
        for backend in backends:
            for method in technique_methods(backend, precisions):
                kind = _kind(method)
                for n in threads:
                    sets = (f"stage{index}.backend={backend}",)
                    what = f"{method} {kind} files, made when it comes up"
                    out.append(StageCandidate(index, backend, "default", f"{kind}:{method}", n, sets, what, True))
    return out


def _kind(method: str) -> str:
    return PRUNED if method in PRUNED_VARIANTS else INT8


def with_int8_files(cand: StageCandidate, made: Any) -> StageCandidate | Dropped:
    """A pending int8 candidate once its files are made (``made``: the stage keys, or what stopped the method)."""
    if isinstance(made, BaseException):
        return Dropped(cand.key, cand.stage, cand.backend, cand.precision, f"could not quantize: {made}")
    sets = [f"stage{cand.stage}.backend={cand.backend}"]
    sets += [f"stage{cand.stage}.{k}={json.dumps(v)}" for k, v in sorted(made.items()) if k in LOAD_KEYS]
    kind, _, method = cand.precision.partition(":")
    return attrs.evolve(cand, sets=tuple(sets), what=f"{method} {kind} files", pending=False)


#: The stage keys a quantized variant changes (speechperf.optimize.variants.write_variant).
LOAD_KEYS = ("model_dir", "format", "path")


def int8_methods(backend: str) -> tuple[str, ...]:
    from speechperf.registry import get_backend

    return tuple(m for m in get_backend(backend).capabilities.quantization if m not in NOT_INT8)


def technique_methods(backend: str, precisions: Sequence[str] = (INT8,)) -> tuple[str, ...]:
    """What ``speechperf optimize``'s ``make_variant`` makes for ``precisions``: the int8 methods, and the pruned
    variants the backend offers."""
    from speechperf.registry import get_backend

    methods = int8_methods(backend) if INT8 in precisions else ()
    if PRUNED in precisions:
        offered = get_backend(backend).capabilities.pruning
        methods += tuple(v for v in PRUNED_VARIANTS if v.partition("@")[0] in offered)
    return methods
