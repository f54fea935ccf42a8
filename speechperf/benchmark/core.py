"""fairseq's S2ST benchmark classes, framework-free, over stages that any backend runs.

``BenchmarkingBase`` measures a chain of stages on a dataset: ``warm_up``, ``benchmark_run_time``, ``max_memory``,
``count_flops``, ``gather_all_metrics`` and ``dump_final_speech_output``, as in fairseq's ``core.py``. The
subclasses fix the chain: ``Processing`` (S2T, MT, VAD), ``SpeechGeneration`` (TTS), ``S2UT`` (speech-to-unit plus
an optional unit vocoder), ``Cascaded2StageS2ST`` (S2T + TTS) and ``Cascaded3StageS2ST`` (ASR + MT + TTS).

Measurement rules (docs/architecture.md, "Measurements"; fairseq's aggregation):
- inter-stage inputs are generated once, up front, by running each stage on its inputs before any timing, so the
  hand-off between stages (decoding to text, re-encoding for the next model) is never timed;
- each stage is warmed up (``warmup`` untimed forwards on its first input; fairseq hard-codes 2), then every
  sample gets ``repeat`` timed forwards, one forward under the memory meter and one under the FLOPs meter;
- with ``warmup_per_shape`` (not fairseq's), each sample whose input shapes the stage has not run yet gets
  ``max(1, warmup)`` untimed forwards too, so its repeats hold no first-call-per-shape cost
  (``speechperf.meters.first_call``; that cost is reported either way);
- totals: runtime and FLOPs summed over stages per sample, memory the max over stages;
- a sample that fails is recorded with a one-line reason and the others still run; its later stages are skipped;
- with ``batch_size`` > 1 (not fairseq's benchmark, but its batching by size), samples are grouped by length once
  (``speechperf.benchmark.batching``) and every pass, the hand-off included, runs batches: the warm-up runs the
  first batch, runtime and memory are measured per batch, a batch's time is shared out among its samples; FLOPs
  stay counted per sample unbatched (the work a sample needs, without the padding).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from speechperf.backend import hooks
from speechperf.benchmark import batching
from speechperf.benchmark.results import BenchResult, StageResult, totals
from speechperf.benchmark.stage import Stage, StageIO, describe_output
from speechperf.data.sample import Sample
from speechperf.errors import SpeechperfError
from speechperf.meters.first_call import shape_key
from speechperf.meters.samples import SampleFailure, failure

if TYPE_CHECKING:
    from speechperf.meters.flops import FlopsMeter
    from speechperf.meters.memory import MemoryMeter
    from speechperf.meters.runtime import RuntimeMeter

log = logging.getLogger(__name__)


@attrs.define
class _StageMeters:
    """The meters of one stage that have run so far (a snapshot reads their results)."""

    runtime: RuntimeMeter | None = None
    memory: MemoryMeter | None = None
    flops: FlopsMeter | None = None
    #: batch key -> its sample ids, when the runtime meter timed batches
    batches: dict[str, tuple[str, ...]] | None = None


METERS = ("runtime", "memory", "flops")

#: progress(stage label, meter name, samples done, samples in this pass)
Progress = Callable[[str, str, int, int], None]


class BenchmarkingBase:
    #: Allowed role chains of this class; the first that matches the given stages is used.
    ROLE_CHAINS: tuple[tuple[str, ...], ...] = ()

    def __init__(
        self,
        stages: Sequence[Stage],
        backend,
        *,
        model_type: str = "",
        device: str = "cpu",
        threads: int = 1,
        meters: Sequence[str] = METERS,
        warmup: int = 2,
        repeat: int = 1,
        warmup_per_shape: bool = False,
        memory_method: str = "hwm",
        preload_mib: float | None = None,
        progress: Progress | None = None,
        batch_size: int = 1,
    ):
        roles = tuple(s.role for s in stages)
        if self.ROLE_CHAINS and roles not in self.ROLE_CHAINS:
            allowed = " or ".join("+".join(c) for c in self.ROLE_CHAINS)
            raise SpeechperfError(f"{type(self).__name__} takes stages {allowed}; got {'+'.join(roles) or 'none'}")
        for name in meters:
            if name not in METERS:
                raise SpeechperfError(f"unknown meter {name!r}; allowed: {', '.join(METERS)}")
        if batch_size > 1:
            for index, stage in enumerate(stages, 1):
                if stage.batch_refusal is not None:
                    raise SpeechperfError(
                        f"general.batch_size = {batch_size}: stage{index} ({stage.label}) cannot batch: "
                        f"{stage.batch_refusal}; allowed for it: 1"
                    )
        self.batch_size = batch_size
        self.stages = tuple(stages)
        self.backend = backend
        self.model_type = model_type or type(self).__name__
        self.device = device
        self.threads = threads
        self.meters = tuple(meters)
        self.warmup = warmup
        self.repeat = repeat
        self.warmup_per_shape = warmup_per_shape
        self.memory_method = memory_method
        self.preload_mib = preload_mib
        self.progress = progress or (lambda *a: None)
        self._reset()

    def _reset(self) -> None:
        self.sample_ids: tuple[str, ...] = ()
        self.inputs: list[dict[str, StageIO]] = [{} for _ in self.stages]
        self.final_outputs: dict[str, StageIO] = {}
        #: outputs of every stage but the last, from the up-front pass (the last stage's are ``final_outputs``)
        self.handoff_outputs: list[dict[str, StageIO]] = [{} for _ in self.stages[:-1]]
        self.failed: dict[str, str] = {}
        self._stage_failures: list[list[SampleFailure]] = [[] for _ in self.stages]
        self._meters = [_StageMeters() for _ in self.stages]
        self._first_call: list[float | None] = [None for _ in self.stages]
        self._warm_shapes: list[set] = [set() for _ in self.stages]  # input shapes each stage's warm-up ran
        self._groups: dict[str, tuple[str, ...]] = {}  # batch key -> sample ids, from the first stage's lengths
        self._batch_size = self.batch_size  # capped to the dataset's size by gather_all_metrics

    # -- fairseq's methods -----------------------------------------------------------------------------------------

    def warm_up(self, stage: int, inp: StageIO | list[StageIO], repeat: int) -> float | None:
        """``repeat`` untimed forwards of stage ``stage`` on ``inp`` (a list: a batch); returns the first one's
        seconds (cold call)."""
        first = None
        s = self.stages[stage]
        backend = self.backend_of(stage)
        forward = s.forward_batch if isinstance(inp, list) else s.forward
        for i in range(repeat):
            start = time.perf_counter()
            forward(inp)  # type: ignore[arg-type]
            backend.synchronize(self.device)
            if i == 0:
                first = time.perf_counter() - start
        return first

    def benchmark_run_time(self, stage: int):
        from speechperf.meters.runtime import RuntimeMeter

        meter = RuntimeMeter(
            self.backend_of(stage),
            self.device,
            warmup=0,
            repeat=self.repeat,
            shape_warmup=max(1, self.warmup) if self.warmup_per_shape else 0,
            seen_shapes=self._warm_shapes[stage],
        )
        self._meters[stage].runtime = meter
        last = stage == len(self.stages) - 1
        s = self.stages[stage]
        if self.batched:
            batches: dict[str, tuple[str, ...]] = {}
            self._meters[stage].batches = batches

            def batch_pass(key, ids, inps):
                def forward():
                    outs = s.forward_batch(inps)
                    if last:
                        self.final_outputs.update(zip(ids, outs))

                batches[key] = ids
                record = meter.measure(key, forward, shape=tuple(shape_key(inp) for inp in inps))
                for sid, inp in zip(ids, inps):
                    self._finish(stage, sid, inp)  # untimed: after the measured forward
                return record

            self._each_batch(stage, "runtime", batch_pass)
            return meter.result()

        def pass_(sid, inp):
            def forward():
                out = s.forward(inp)
                if last:
                    self.final_outputs[sid] = out

            record = meter.measure(sid, forward, shape=shape_key(inp))
            self._finish(stage, sid, inp)  # untimed: after the measured forward
            return record

        self._each(stage, "runtime", pass_)
        return meter.result()

    def max_memory(self, stage: int):
        from speechperf.meters.memory import MemoryMeter

        meter = MemoryMeter(self.backend_of(stage), self.device, method=self.memory_method)
        meter.preload_mib = self.preload_mib
        self._meters[stage].memory = meter
        s = self.stages[stage]
        if self.batched:  # the peak of a batch's forward, keyed by the batch
            self._each_batch(stage, "memory", lambda key, ids, inps: meter.measure(key, lambda: s.forward_batch(inps)))
        else:
            self._each(stage, "memory", lambda sid, inp: meter.measure(sid, lambda: s.forward(inp)))
        return meter.result()

    def count_flops(self, stage: int):
        from speechperf.meters.flops import FlopsMeter
        from speechperf.meters.flops_cache import DiskFlopCache

        backend = self.backend_of(stage)
        disk = DiskFlopCache(backend)
        meter = FlopsMeter(_ShapeCachedFlops(disk), source="auto")
        self._meters[stage].flops = meter
        s = self.stages[stage]
        if meter.source == "analytic" and not hooks(backend).has_capability("flops"):
            self.progress(
                s.label, f"FLOPs not counted: backend {backend.name!r}: capability 'flops' is unavailable", 0, 0
            )
            return meter.result()
        # Counting is often the long part of a run: say so before it starts.
        what = f"counting FLOPs ({meter.source}, {backend.name})"
        self.progress(s.label, what + " ...", 0, 0)
        self._each(
            stage,
            "flops",
            lambda sid, inp: meter.measure(sid, lambda sessions: s.run(sessions, inp), dict(s.flops_sessions())),
            display=what,
        )
        if disk.hits or disk.misses:
            self.progress(s.label, f"FLOP counts: {disk.hits} read from the cache, {disk.misses} counted", 0, 0)
        return meter.result()

    def gather_all_metrics(self, dataset: Sequence[Sample]) -> BenchResult:
        """Generate every stage's inputs up front, then measure each stage with each meter; totals as fairseq."""
        self._reset()
        self.sample_ids = tuple(s.id for s in dataset)
        if len(set(self.sample_ids)) != len(self.sample_ids):
            dup = next(i for i in self.sample_ids if self.sample_ids.count(i) > 1)
            raise SpeechperfError(f"the dataset has sample id {dup!r} more than once; ids must be unique")
        if self.batch_size > len(dataset) > 0:
            log.warning(
                "note: general.batch_size = %d is more than the dataset's %d samples; batches of %d are run",
                self.batch_size,
                len(dataset),
                len(dataset),
            )
        self._batch_size = max(1, min(self.batch_size, len(dataset)))
        self.generate_stage_inputs(dataset)
        for index, stage in enumerate(self.stages):
            first: StageIO | list[StageIO] | None = next(iter(self.inputs[index].values()), None)
            if self.batched:
                first = next(([self.inputs[index][sid] for sid in ids] for _, ids in self._batches(index)), None)
            if first is not None and self.warmup:
                try:
                    self._first_call[index] = self.warm_up(index, first, self.warmup)
                    self._warm_shapes[index].add(
                        tuple(shape_key(i) for i in first) if isinstance(first, list) else shape_key(first)
                    )
                except Exception as exc:  # the first sample is broken; the meters record it, the others run
                    self.progress(stage.label, "warm-up failed: " + failure("", "warm-up", exc).error, 0, 0)
            if "runtime" in self.meters:
                self.benchmark_run_time(index)
            if "memory" in self.meters:
                self.max_memory(index)
            if "flops" in self.meters:
                self.count_flops(index)
            if "runtime" not in self.meters:  # the final outputs come from the timed pass otherwise
                self._final_pass(index)
        return self.snapshot()

    def dump_final_speech_output(self, out_dir: str | Path, prefix: str = "", target_sr: int = 16000) -> list[Path]:
        """Write each sample's final waveform as ``{prefix}_{i}_pred.wav`` (i = its index in the dataset),
        resampled to ``target_sr``; the folder is created if it does not exist."""
        from speechperf.data.audio import write_wav

        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        written = []
        for i, sid in enumerate(self.sample_ids):
            out = self.final_outputs.get(sid)
            if out is None or "waveform" not in out:
                continue
            path = out_dir / f"{prefix}_{i}_pred.wav"
            written.append(write_wav(path, out["waveform"], int(out["sample_rate"]), target_sr))
        return written

    def stage_outputs(self) -> list[dict[str, StageIO]]:
        """Every stage's output per sample id, first stage first (what ``--save-outputs`` writes)."""
        return [*self.handoff_outputs, dict(self.final_outputs)] if self.stages else []

    # -- helpers ---------------------------------------------------------------------------------------------------

    def backend_of(self, stage: int):
        """The backend stage ``stage`` runs on: the one it is pinned to (``stageN.backend``), else the run's."""
        return getattr(self.stages[stage], "backend", None) or self.backend

    def generate_stage_inputs(self, dataset: Sequence[Sample]) -> None:
        """Every stage's input for every sample, made before anything is timed (fairseq's generate_*_outputs)."""
        for sample in dataset:
            try:
                self.inputs[0][sample.id] = self.stages[0].from_sample(sample)
            except Exception as exc:
                self._fail(0, sample.id, "input preparation", exc)
        if self.batched:
            first = self.stages[0]
            lengths = {sid: first.batch_length(inp) for sid, inp in self.inputs[0].items()}
            self._groups = batching.group_by_length(lengths, self._batch_size)
            self._batched_handoff()
            return
        for index in range(1, len(self.stages)):
            previous, stage = self.stages[index - 1], self.stages[index]
            for n, (sid, inp) in enumerate(self.inputs[index - 1].items()):
                self.progress(previous.label, "inputs for the next stage", n, len(self.inputs[index - 1]))
                try:
                    out = previous.finish(inp, previous.forward(inp))
                    self.handoff_outputs[index - 1][sid] = out
                    self.inputs[index][sid] = stage.from_previous(out)
                except Exception as exc:
                    self._fail(index - 1, sid, "the hand-off to the next stage", exc)
            total = len(self.inputs[index - 1])
            self.progress(previous.label, "inputs for the next stage", total, total)

    @property
    def batched(self) -> bool:
        """Whether the passes run batches (``batch_size`` > 1 on a dataset of more than one sample)."""
        return self._batch_size > 1

    def _batches(self, stage: int) -> list[tuple[str, tuple[str, ...]]]:
        """(batch key, its sample ids) of stage ``stage``: the groups, less the samples without an input there or
        that failed."""
        inputs = self.inputs[stage]
        out = []
        for key, ids in self._groups.items():
            kept = tuple(sid for sid in ids if sid in inputs and sid not in self.failed)
            if kept:
                out.append((key, kept))
        return out

    def _batched_handoff(self) -> None:
        for index in range(1, len(self.stages)):
            previous, stage = self.stages[index - 1], self.stages[index]
            batches = self._batches(index - 1)
            for n, (_, ids) in enumerate(batches):
                self.progress(previous.label, "inputs for the next stage", n, len(batches))
                try:
                    outs = previous.forward_batch([self.inputs[index - 1][sid] for sid in ids])
                except Exception as exc:
                    for sid in ids:
                        self._fail(index - 1, sid, "the hand-off to the next stage", exc)
                    continue
                for sid, out in zip(ids, outs):
                    try:
                        out = previous.finish(self.inputs[index - 1][sid], out)
                        self.handoff_outputs[index - 1][sid] = out
                        self.inputs[index][sid] = stage.from_previous(out)
                    except Exception as exc:
                        self._fail(index - 1, sid, "the hand-off to the next stage", exc)
            self.progress(previous.label, "inputs for the next stage", len(batches), len(batches))

    def _each_batch(self, stage: int, meter_name: str, measure) -> None:
        """``measure(batch key, sample ids, inputs)`` per batch; a failed batch fails each of its samples."""
        label = self.stages[stage].label
        batches = self._batches(stage)
        total = sum(len(ids) for _, ids in batches)
        done = 0
        for key, ids in batches:
            self.progress(label, meter_name, done, total)
            record = measure(key, ids, [self.inputs[stage][sid] for sid in ids])
            if isinstance(record, SampleFailure):
                for one in batching.expand_failures([record], {key: ids}):
                    self._stage_failures[stage].append(one)
                    self.failed.setdefault(one.sample_id, f"stage{stage + 1} ({label}): {one.message}")
            done += len(ids)
        self.progress(label, meter_name, total, total)

    def _each(
        self, stage: int, meter_name: str, measure: Callable[[str, StageIO], object], display: str | None = None
    ) -> None:
        inputs = self.inputs[stage]
        label = self.stages[stage].label
        for n, (sid, inp) in enumerate(inputs.items()):
            self.progress(label, display or meter_name, n, len(inputs))
            if sid in self.failed:
                continue
            record = measure(sid, inp)
            if isinstance(record, SampleFailure):
                self._stage_failures[stage].append(record)
                # A FLOP count that cannot be made (e.g. a format the counter cannot read) leaves the sample's
                # runtime and memory valid: it is reported, not counted as a failed sample.
                if meter_name != "flops":
                    self.failed.setdefault(sid, f"stage{stage + 1} ({label}): {record.message}")
        self.progress(label, display or meter_name, len(inputs), len(inputs))

    def _final_pass(self, stage: int) -> None:
        if stage != len(self.stages) - 1:
            return
        if self.batched:
            for _, ids in self._batches(stage):
                try:
                    self.final_outputs.update(
                        zip(ids, self.stages[stage].forward_batch([self.inputs[stage][s] for s in ids]))
                    )
                except Exception as exc:
                    for sid in ids:
                        self._fail(stage, sid, "the forward", exc)
                    continue
                for sid in ids:
                    self._finish(stage, sid, self.inputs[stage][sid])
            return
        for sid, inp in self.inputs[stage].items():
            if sid not in self.failed:
                try:
                    self.final_outputs[sid] = self.stages[stage].forward(inp)
                except Exception as exc:
                    self._fail(stage, sid, "the forward", exc)
                    continue
                self._finish(stage, sid, inp)

    def _finish(self, stage: int, sid: str, inp: StageIO) -> None:
        """The last stage's kept output after its untimed step (``Stage.finish``: a mask's resynthesis)."""
        if stage != len(self.stages) - 1 or sid not in self.final_outputs or sid in self.failed:
            return
        try:
            self.final_outputs[sid] = self.stages[stage].finish(inp, self.final_outputs[sid])
        except Exception as exc:
            del self.final_outputs[sid]
            self._fail(stage, sid, "the untimed step after the forward (resynthesis)", exc)

    def _fail(self, stage: int, sid: str, what: str, exc: BaseException) -> None:
        """A failure outside the meters: ``what`` is the step (preparing the input, the hand-off, the forward)."""
        record = failure(sid, what, exc)
        self._stage_failures[stage].append(record)
        self.failed.setdefault(
            sid, f"stage{stage + 1} ({self.stages[stage].label}): sample {sid!r} failed in {what}: {record.error}"
        )

    def snapshot(self, complete: bool = True) -> BenchResult:
        """The result from what has been measured so far (all of it after gather_all_metrics)."""
        stage_results: list[StageResult] = []
        for index, stage in enumerate(self.stages):
            live = self._meters[index]
            runtime = live.runtime.result() if live.runtime is not None else None
            batch_figures = None
            if runtime is not None and live.batches is not None:
                batch_figures = batching.figures(runtime, live.batches, self._batch_size)
                runtime = batching.amortized(runtime, live.batches)
            elif runtime is not None:  # each sample its own batch
                batch_figures = batching.BatchFigures(
                    1, tuple(batching.BatchTiming(t.sample_id, (t.sample_id,), t.seconds) for t in runtime.samples)
                )
            memory = live.memory.result() if live.memory is not None else None
            flops = live.flops.result() if live.flops is not None else None
            rtf = self._rtf(index, runtime)
            stage_results.append(
                StageResult(
                    index + 1,
                    stage.role,
                    stage.label,
                    runtime,
                    memory,
                    flops,
                    rtf,
                    tuple(self._stage_failures[index]),
                    stage.load_seconds,
                    self._first_call[index],
                    batch_figures,
                    self.backend_of(index).name,
                    stage.padded_to_s,
                )
            )
        finished = tuple(stage_results)
        audio_s, side = self._total_audio_seconds()
        return BenchResult(
            model_type=self.model_type,
            backend=self.backend.name,
            device=self.device,
            threads=self.threads,
            warmup=self.warmup,
            repeat=self.repeat,
            warmup_per_shape=self.warmup_per_shape,
            samples=self.sample_ids,
            stages=finished,
            totals=totals(finished, self.sample_ids, audio_s, side),
            batch_size=self._batch_size,
            failed=dict(self.failed),
            outputs={sid: describe_output(out) for sid, out in self.final_outputs.items()},
            complete=complete,
        )

    def _audio_seconds(self, index: int) -> dict[str, float]:
        stage = self.stages[index]
        seconds = {}
        for sid, inp in self.inputs[index].items():
            out = self.final_outputs.get(sid) if index == len(self.stages) - 1 else None
            value = stage.audio_seconds(inp, out)
            if value:
                seconds[sid] = value
        return seconds

    def _rtf(self, index: int, runtime):
        from speechperf.meters.rtf import real_time_factor

        stage = self.stages[index]
        if runtime is None or not runtime.samples or stage.audio_side is None:
            return None
        seconds = self._audio_seconds(index)
        timed = {k: v for k, v in runtime.per_sample_seconds.items() if k in seconds}
        return real_time_factor(timed, seconds, stage.audio_side) if timed else None

    def _total_audio_seconds(self) -> tuple[dict[str, float], str | None]:
        """A cascade's RTF divides by its input audio when it starts from speech, else by its output audio."""
        if self.stages and self.stages[0].audio_side == "input":
            return self._audio_seconds(0), "input"
        if self.stages and self.stages[-1].audio_side == "output":
            return self._audio_seconds(len(self.stages) - 1), "output"
        return {}, None


class _ShapeCachedFlops:
    """The backend, with ``count_flops`` remembered per session and feed shapes: an analytic count depends only on
    the graph and the shapes, and a decoding loop calls the same step graph at the same shapes many times."""

    def __init__(self, backend):
        self._backend = backend
        self._counts: dict = {}

    def __getattr__(self, name):
        return getattr(self._backend, name)

    def count_flops(self, session, feeds):
        key = (id(session), tuple((k, v.shape, str(v.dtype)) for k, v in sorted(feeds.items())))
        if key not in self._counts:
            self._counts[key] = self._backend.count_flops(session, feeds)
        return self._counts[key]


class Processing(BenchmarkingBase):
    """One stage whose output is text, tokens or segments: S2T (ASR / ST), MT, VAD."""

    ROLE_CHAINS = (("s2t",), ("mt",), ("vad",))


class SpeechGeneration(BenchmarkingBase):
    """One stage whose output is speech: TTS (text -> mel -> waveform), or a direct speech-to-speech model."""

    ROLE_CHAINS = (("tts",), ("s2s",))


class S2UT(BenchmarkingBase):
    """Speech-to-unit translation, plus the unit vocoder when given (fairseq's S2UT with its CodeHiFiGAN)."""

    ROLE_CHAINS = (("s2u",), ("s2u", "unit_vocoder"))


class Cascaded2StageS2ST(BenchmarkingBase):
    """S2T then TTS."""

    ROLE_CHAINS = (("s2t", "tts"),)


class Cascaded3StageS2ST(BenchmarkingBase):
    """ASR then MT then TTS."""

    ROLE_CHAINS = (("s2t", "mt", "tts"),)


CLASSES = {
    "S2T": Processing,
    "MT": Processing,
    "VAD": Processing,
    "TTS": SpeechGeneration,
    "S2S": SpeechGeneration,
    "S2UT": S2UT,
    "2StageS2ST": Cascaded2StageS2ST,
    "3StageS2ST": Cascaded3StageS2ST,
}


def benchmark_for(model_type: str, stages: Sequence[Stage], backend, **kwargs) -> BenchmarkingBase:
    if model_type not in CLASSES:
        raise SpeechperfError(f"unknown model_type {model_type!r}; allowed: {', '.join(CLASSES)}")
    return CLASSES[model_type](stages, backend, model_type=model_type, **kwargs)
