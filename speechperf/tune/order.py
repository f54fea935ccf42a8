"""The order in which ``speechperf tune`` tries a stage's candidates: what a short budget should learn first.

A budget can end at any candidate, so the first ones are those that tell the most: each backend's default path
(the figure every other variant is read against), then each technique's most promising variant on each backend
(its fastest execution variant is unknown, its declared first one is the backend's own advice; for int8 the method
that is cheapest to make and usually fastest on a CPU: dynamic quantization of the Linear layers), then the rest of
each (backend, technique) group in turn. Candidates whose files are made when they come up (int8) thereby cost
their making only once the defaults are measured.

``TECHNIQUES`` is the one enumeration of the techniques tune searches, in the order they are tried within a round;
a new technique (pruning) joins it with its own promise ranking in ``PROMISE``.
"""

from __future__ import annotations

from collections.abc import Sequence

from speechperf.tune.space import BF16, FP32, INT8, PRUNED, PRUNED_VARIANTS, StageCandidate

#: The techniques tune searches, in the order each round tries them (a new technique is added here). int8 before
#: bf16: on the pt->en cascade here int8 gained most (Whisper base pt2e-static 568 ms against fp32 966 ms) where
#: torch's eager-bf16 (1232 ms) gained nothing, and a 600 s Whisper tiny.en tune spent its last screening seconds
#: on eager-bf16 before any int8 candidate. Pruning last (asked for only with ``--precisions ...,pruned``): on
#: Whisper tiny.en its FFN pruning at 0.3 gained 1.62 +- 0.88x (p = 0.17) and its WER rose from 4.8% to 92.1%
#: (docs/optimize.md).
TECHNIQUES = (FP32, INT8, BF16, PRUNED)

#: Within a technique, the variants (fp32, bf16) or methods (int8, pruned) known to be most promising first; the
#: rest keep the order their backend declares them in (its first fp32 variant is its default path). Dynamic int8
#: first: nothing to calibrate, and on Whisper tiny.en here onnxruntime's ``ort-dynamic`` ran 1.65x faster than fp32 where the static methods gained less.
PROMISE = {
    FP32: (),  # the first variant a backend declares is its default path
    BF16: (),
    INT8: ("ort-dynamic", "legacy-dynamic", "torchao-dynamic", "pt2e-static", "ort-static-qdq", "paddle-ptq"),
    PRUNED: PRUNED_VARIANTS,  # the lower sparsity first: the more likely to stay within the quality budget
}


def technique(precision: str) -> str:
    """``int8:ort-dynamic`` -> ``int8``."""
    return precision.partition(":")[0]


def _variant_of(c: StageCandidate) -> str:
    """What the promise ranking names: the int8 method, else the execution variant."""
    return c.precision.partition(":")[2] or c.variant


def _rank(c: StageCandidate) -> int:
    known = PROMISE.get(technique(c.precision), ())
    name = _variant_of(c)
    return known.index(name) if name in known else len(known)


def stage_order(cands: Sequence[StageCandidate]) -> list[StageCandidate]:
    """One stage's candidates in the order they are tried: each backend's default fp32 path, then each technique's
    most promising variant per backend, then the rest, one of each (backend, technique) group in turn."""
    backends = list(dict.fromkeys(c.backend for c in cands))
    groups: dict[tuple[str, str], list[StageCandidate]] = {}
    for c in cands:
        groups.setdefault((technique(c.precision), c.backend), []).append(c)
    for members in groups.values():  # stable: equal ranks keep the declared order (and thread counts together)
        members.sort(key=_rank)
    order = [t for t in TECHNIQUES if any(k[0] == t for k in groups)]
    order += [t for t in dict.fromkeys(k[0] for k in groups) if t not in order]
    # within a technique, the backends' best guesses by their promise (ort-dynamic and legacy-dynamic before
    # paddle-ptq, whose calibration built paddle's Whisper for 119 s), the declared order between equals
    keys = [
        k
        for t in order
        for k in sorted([(t, b) for b in backends if (t, b) in groups], key=lambda k: _rank(groups[k][0]))
    ]
    first: list[StageCandidate] = []
    for key in keys:  # the defaults and each technique's best guess, every thread count of it
        head = groups[key][0]
        first += [c for c in groups[key] if _variant_of(c) == _variant_of(head)]
    rest = [[c for c in groups[key] if c not in first] for key in keys]
    return first + interleave(rest)


def interleave(groups: Sequence[Sequence[StageCandidate]]) -> list[StageCandidate]:
    """The first of each group, then the second of each, ..."""
    out: list[StageCandidate] = []
    for i in range(max((len(g) for g in groups), default=0)):
        out += [g[i] for g in groups if i < len(g)]
    return out


def round_robin(alive: Sequence[StageCandidate]) -> list[StageCandidate]:
    """Stage by stage in turn, each stage in ``stage_order``: a budget that runs out leaves every stage's defaults
    and every technique tried (a Whisper tune at 720 s, its candidates in declared order, ran out at rung 1 before
    any int8 one)."""
    by_stage: dict[int, list[StageCandidate]] = {}
    for cand in alive:
        by_stage.setdefault(cand.stage, []).append(cand)
    return interleave([stage_order(cands) for cands in by_stage.values()])
