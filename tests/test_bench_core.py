"""The benchmark classes on fake stages and a fake backend: fairseq's aggregation rules, untimed hand-offs,
failed samples, reports, the waveform dump and Ctrl-C. No framework is needed."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
import soundfile as sf

from speechperf.backend import Availability, Capabilities, Session, TensorInfo
from speechperf.benchmark import Cascaded2StageS2ST, Cascaded3StageS2ST, Processing, benchmark_for, report
from speechperf.benchmark.stage import Stage
from speechperf.data.generated import generated_audio
from speechperf.errors import SpeechperfError
from speechperf.meters.check import resident_block
from speechperf.meters.flops import FlopCount


class FakeBackend:
    name = "fake"
    extra = ""
    capabilities = Capabilities(devices=("cpu",))

    def availability(self):
        return Availability(True, "", "0")

    def synchronize(self, device="cpu"):
        pass

    def set_threads(self, n):
        pass

    def seed(self, n):
        pass

    def count_flops(self, session, feeds):
        return FlopCount(session.flops_per_call, "analytic", ("fake.op",))


class FakeSession(Session):
    backend = "fake"
    inputs = (TensorInfo("x"),)
    outputs = (TensorInfo("y"),)

    def __init__(self, flops_per_call, seconds=0.0, allocate_mib=0):
        self.flops_per_call = flops_per_call
        self.seconds = seconds
        self.allocate_mib = allocate_mib
        self.calls = 0

    def run(self, feeds):
        self.calls += 1
        if self.allocate_mib:
            with resident_block(self.allocate_mib * 2**20):  # new touched pages: a real RSS peak
                pass
        if self.seconds:
            time.sleep(self.seconds)
        return {"y": feeds["x"]}


class FakeStage(Stage):
    """Calls its session once per 1000 audio samples (a stand-in for a decoding loop)."""

    def __init__(
        self,
        role,
        flops_per_call=10,
        seconds=0.0,
        handoff_seconds=0.0,
        allocate_mib=0,
        fail_on=(),
        interrupt_on=None,
        speech=False,
    ):
        self.role = role
        self.label = f"fake-{role}"
        self.sessions = {"main": FakeSession(flops_per_call, seconds, allocate_mib)}
        self.handoff_seconds = handoff_seconds
        self.fail_on = set(fail_on)
        self.interrupt_on = interrupt_on
        self.speech = speech

    def from_sample(self, sample):
        return {"id": sample.id, "audio": sample.audio, "sample_rate": sample.sample_rate}

    def from_previous(self, output):
        time.sleep(self.handoff_seconds)  # an expensive hand-off must never be inside a timing
        return dict(output)

    def run(self, sessions, inp):
        if inp["id"] in self.fail_on:
            raise RuntimeError(f"cannot decode {inp['id']}")
        if inp["id"] == self.interrupt_on:
            raise KeyboardInterrupt
        for _ in range(max(1, len(inp["audio"]) // 1000)):
            sessions["main"]({"x": np.zeros(1, np.float32)})
        out = dict(inp)
        if self.speech:
            t = np.arange(int(0.5 * 22050)) / 22050
            out["waveform"], out["sample_rate"] = (0.5 * np.sin(2 * np.pi * 440 * t)).astype(np.float32), 22050
        out["tokens"] = np.array([5, 6, 7])
        return out


def dataset(n=3):
    return generated_audio(n, 16000, (0.25, 0.5), seed=1)  # 4000..8000 samples: 4..8 session calls


def run(stages, **kw):
    kw.setdefault("meters", ("runtime", "memory", "flops"))
    bench = benchmark_for(kw.pop("model_type"), stages, FakeBackend(), warmup=1, repeat=2, **kw)
    return bench, bench.gather_all_metrics(dataset())


@pytest.mark.slow
def test_cascade_totals_sum_runtime_and_flops_and_take_max_memory():
    stages = [
        FakeStage("s2t", flops_per_call=10, seconds=0.001),
        FakeStage("mt", flops_per_call=100),
        FakeStage("tts", flops_per_call=1000, allocate_mib=40, speech=True),
    ]
    bench, result = run(stages, model_type="3StageS2ST")
    assert isinstance(bench, Cascaded3StageS2ST)
    s1, s2, s3 = result.stages
    for sid in result.samples:
        assert result.totals.per_sample_s[sid] == pytest.approx(
            sum(s.runtime.per_sample_seconds[sid] for s in result.stages)
        )
    # FLOPs: calls per sample are 4, 6, 8 (audio length / 1000); per stage 10, 100, 1000 FLOPs a call.
    assert s1.flops.per_sample == {"gen0": 40, "gen1": 60, "gen2": 80}
    assert result.totals.flops_per_sample == pytest.approx(6 * 10 + 6 * 100 + 6 * 1000)  # mean 6 calls a sample
    assert result.totals.peak_mib == max(s.memory.peak_mib for s in result.stages)
    assert s3.memory.peak_mib >= s1.memory.peak_mib + 30  # the 40 MiB allocation is seen, and only in stage 3
    assert (result.totals.rtf.audio, s1.rtf.audio, s2.rtf, s3.rtf.audio) == ("input", "input", None, "output")
    assert s1.flops.uncounted == ("fake.op",)
    assert result.outputs["gen0"]["tokens"] == [5, 6, 7]


def test_handoffs_are_generated_up_front_and_not_timed():
    stages = [FakeStage("s2t"), FakeStage("tts", handoff_seconds=0.05)]
    bench, result = run(stages, model_type="2StageS2ST", meters=("runtime",))
    assert isinstance(bench, Cascaded2StageS2ST)
    assert result.totals.runtime.max < 0.05  # 50 ms of hand-off per sample is in no timing
    # Stage 1 ran once per sample up front (to make stage 2's inputs), then warm-up 1 + 3 samples x repeat 2.
    assert stages[0].sessions["main"].calls == (4 + 6 + 8) + 4 + 2 * (4 + 6 + 8)


def test_a_failed_sample_is_recorded_and_the_rest_runs():
    stages = [FakeStage("s2t", fail_on={"gen1"}), FakeStage("tts", speech=True)]
    _, result = run(stages, model_type="2StageS2ST")
    assert set(result.totals.per_sample_s) == {"gen0", "gen2"}
    assert result.failed == {
        "gen1": "stage1 (fake-s2t): sample 'gen1' failed in the hand-off to the next stage: "
        "RuntimeError: cannot decode gen1"
    }
    assert set(result.stages[1].runtime.per_sample_seconds) == {"gen0", "gen2"}
    rows = report.rows(result)
    assert rows[-1]["ok"] == 2 and rows[-1]["failed"] == 1


def test_the_class_checks_its_stages():
    with pytest.raises(SpeechperfError, match="Cascaded2StageS2ST takes stages s2t\\+tts; got s2t\\+mt"):
        Cascaded2StageS2ST([FakeStage("s2t"), FakeStage("mt")], FakeBackend())
    assert isinstance(benchmark_for("VAD", [FakeStage("vad")], FakeBackend()), Processing)


def test_dump_is_named_as_fairseq_and_really_resampled(tmp_path):
    stages = [FakeStage("tts", speech=True)]
    bench, _ = run(stages, model_type="TTS", meters=("runtime",))
    out = tmp_path / "new" / "dir"
    written = bench.dump_final_speech_output(out, "pred", 16000)
    assert [p.name for p in written] == ["pred_0_pred.wav", "pred_1_pred.wav", "pred_2_pred.wav"]
    audio, rate = sf.read(written[0])
    assert rate == 16000 and len(audio) == 8000  # 0.5 s at 16 kHz, from 22.05 kHz
    spectrum = np.abs(np.fft.rfft(audio))
    assert np.fft.rfftfreq(len(audio), 1 / 16000)[np.argmax(spectrum)] == pytest.approx(440, abs=3)


def test_reports_json_csv_markdown(tmp_path):
    from speechperf.exports import Exports
    from speechperf.results import read

    _, result = run([FakeStage("s2t"), FakeStage("tts", speech=True)], model_type="2StageS2ST")
    env = report.environment(1, "cpu", "fake", "0")
    doc = report.document(result, {"general": {"model_type": "2StageS2ST"}}, env)
    path, csv_path, md_path = tmp_path / "r.json", tmp_path / "r.csv", tmp_path / "r.md"
    Exports(json=path, csv=csv_path, markdown=md_path).write(doc)  # CSV and Markdown: the bench view's
    loaded = json.loads(path.read_text())
    assert loaded["kind"] == "bench" and loaded["schema_version"] == 4 and loaded["complete"] is True
    assert set(loaded["environment"]) >= {"packages", "cpu", "threads", "device", "backend", "git_commit"}
    raw = loaded["result"]["stages"][0]["runtime"]["samples"][0]
    assert len(raw["ns"]) == 2 and all(isinstance(v, int) and v > 0 for v in raw["ns"])  # every raw timing
    assert [r["stage"] for r in loaded["rows"]] == ["stage1 s2t", "stage2 tts", "total"]
    assert {r["backend"] for r in loaded["rows"]} == {"fake"}
    assert set(loaded["length_fit"]) == {"stage1 s2t", "stage2 tts"}
    assert read(path).rows == loaded["rows"]  # the reader takes it as it is
    csv_text = csv_path.read_text()
    assert csv_text.splitlines()[0].startswith("backend,stage,model,ok,failed,mean_ms,stdev_ms,median_ms,p90_ms,")
    assert [line.split(",")[0] for line in csv_text.splitlines()[1:]] == ["fake"] * 3
    md = md_path.read_text()
    assert md.splitlines()[0].startswith("| backend | stage | model |")
    assert "| fake | total | 2StageS2ST |" in md


def test_interrupt_keeps_what_was_measured(tmp_path, monkeypatch):
    from speechperf.benchmark import build, runner
    from speechperf.config import default_config
    from speechperf.exports import Exports
    from speechperf.registry import register_backend, unregister_backend

    register_backend("fake", FakeBackend)
    monkeypatch.setattr(build, "prepare_stages", lambda *a, **k: None)
    monkeypatch.setattr(build, "build_stages", lambda *a, **k: [FakeStage("s2t", interrupt_on="gen2")])
    cfg = default_config({"backend": "fake", "dataset_size": 3, "generated_seconds": [0.25, 0.5]})
    out, csv_path, md_path = tmp_path / "partial.json", tmp_path / "partial.csv", tmp_path / "partial.md"
    try:
        exports = Exports(json=out, csv=csv_path, markdown=md_path)
        with pytest.raises(KeyboardInterrupt, match=r"what was measured is in .*partial.json, .*partial.csv"):
            runner.run_benchmark(cfg, runner.BenchOptions(workdir=tmp_path, exports=exports, progress=False))
    finally:
        unregister_backend("fake")
    data = json.loads(out.read_text())
    assert data["kind"] == "bench" and data["complete"] is False
    assert "busy_cores_others" in data["environment"]["load"]  # the load while it timed, up to the interrupt
    timed = data["result"]["stages"][0]["runtime"]["samples"]
    assert [s["sample_id"] for s in timed] == ["gen0", "gen1"]
    assert csv_path.read_text().splitlines()[1].startswith("fake,stage1 s2t,fake-s2t,2,")
    assert "| fake | total |" in md_path.read_text()
