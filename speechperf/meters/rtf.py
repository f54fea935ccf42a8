"""Real-time factor and throughput, from per-sample runtimes and audio durations.

Definitions (docs/architecture.md, "Measurements"):

- ``RTF = runtime / audio seconds``. The audio is the stage's **input** for ASR, S2T, S2UT and VAD, and its
  **output** for TTS and vocoders; ``RtfResult.audio`` says which. Over a dataset, RTF is the total runtime over the
  total audio seconds (so long samples weigh more, as in a real workload); per-sample RTFs are kept too.
- ``RTFx = 1 / RTF`` (audio seconds processed per second of compute).
- Throughput: ``samples_per_s`` = samples / total runtime and ``audio_s_per_s`` = total audio seconds / total
  runtime, over the samples that succeeded.

Use::

    rtf = real_time_factor(runtime_result.per_sample_seconds, {"utt1": 3.2, ...}, audio="input")
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from speechperf.meters.samples import MeterError

AUDIO_SIDES = ("input", "output")


@attrs.frozen
class RtfResult:
    audio: str  # "input" or "output": whose audio duration the runtime is divided by
    rtf: float
    rtfx: float
    samples_per_s: float
    audio_s_per_s: float
    per_sample: Mapping[str, float]  # sample id -> RTF
    total_runtime_s: float
    total_audio_s: float
    #: sample id -> the audio seconds its runtime was divided by (the cost-against-length fit uses them)
    audio_per_sample: Mapping[str, float] = attrs.Factory(dict)


def real_time_factor(runtime_s: Mapping[str, float], audio_s: Mapping[str, float], audio: str = "input") -> RtfResult:
    if audio not in AUDIO_SIDES:
        raise MeterError(f"audio must be one of {', '.join(AUDIO_SIDES)}, got {audio!r}")
    if not runtime_s:
        raise MeterError("no sample has a runtime; RTF needs at least one measured sample")
    missing = [k for k in runtime_s if k not in audio_s]
    if missing:
        raise MeterError(f"no {audio} audio duration for sample {missing[0]!r}; RTF needs one per measured sample")
    for key in runtime_s:
        if not audio_s[key] > 0:
            raise MeterError(f"{audio} audio duration of sample {key!r} is {audio_s[key]!r}; it must be > 0 seconds")
    total_runtime = sum(runtime_s.values())
    total_audio = sum(audio_s[k] for k in runtime_s)
    rtf = total_runtime / total_audio
    return RtfResult(
        audio=audio,
        rtf=rtf,
        rtfx=1.0 / rtf if rtf > 0 else float("inf"),
        samples_per_s=len(runtime_s) / total_runtime if total_runtime > 0 else float("inf"),
        audio_s_per_s=total_audio / total_runtime if total_runtime > 0 else float("inf"),
        per_sample={k: runtime_s[k] / audio_s[k] for k in runtime_s},
        total_runtime_s=total_runtime,
        total_audio_s=total_audio,
        audio_per_sample={k: audio_s[k] for k in runtime_s},
    )
