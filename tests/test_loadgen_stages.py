"""``general.serving: stages``: a queue and a pool per stage, dynamic batching (speechperf.loadgen.stages).

The batcher's choices are checked on plain requests; batching's outputs against batch 1 on the real tiny S2T
reference model (onnxruntime), in process and through the real LoadGen (accuracy mode's log); the config's refusals
through the CLI, one line each.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from speechperf.benchmark.stage import StageError
from speechperf.cli import main
from speechperf.loadgen.stages import Batcher, Request, StageServing, check_batch_parity
from tests.test_loadgen import loadgen


def _request(n: int, length: int, arrived: float = 0.0) -> Request:
    return Request(n, n, {}, length, arrived)


def test_a_batch_is_the_oldest_request_and_those_nearest_it_in_length():
    batcher = Batcher(max_batch=3, max_queue_delay_ms=0)
    for n, length in enumerate([50, 10, 48, 90, 52, 49]):
        batcher.put(_request(n, length))
    assert [r.index for r in batcher.take()] == [0, 5, 2]  # 50, then 49 and 48 (|1|, |2|); 52 ties 48 later
    assert [r.index for r in batcher.take()] == [1, 4, 3]  # the oldest left (10), then the rest by distance
    batcher.close()
    assert batcher.take() is None


def test_a_batch_waits_for_more_requests_at_most_the_queue_delay():
    """No bound on how late a batch leaves (a loaded machine schedules late), only that it never leaves early."""
    batcher = Batcher(max_batch=4, max_queue_delay_ms=1000)
    arrived = time.perf_counter()
    batcher.put(_request(0, 5, arrived))
    later = threading.Timer(0.05, lambda: batcher.put(_request(1, 5, time.perf_counter())))
    later.start()
    batch = batcher.take()
    assert [r.index for r in batch] == [0, 1]  # the second arrived within the delay and joined
    assert time.perf_counter() - arrived >= 1.0  # the batch, not full, waited out the delay
    nobody = Batcher(max_batch=4, max_queue_delay_ms=0)
    nobody.put(_request(0, 5, time.perf_counter()))
    assert len(nobody.take()) == 1  # no delay: what is queued goes


class _Padded:
    """A stage whose batched forward changes its outputs (pads without masking): what the check must refuse."""

    label = "padded"
    batch_refusal = None

    def batch_length(self, inp):
        return len(inp["x"])

    def forward(self, inp):
        return {"tokens": np.asarray([len(inp["x"])]), "scores": inp["x"].astype(np.float32).sum(keepdims=True)}

    def forward_batch(self, inps):
        width = max(len(i["x"]) for i in inps)
        return [{"tokens": np.asarray([width]), "scores": i["x"].astype(np.float32).sum(keepdims=True)} for i in inps]


def test_batch_parity_refuses_a_batch_whose_outputs_differ_from_batch_1():
    inputs = [{"x": np.ones(n)} for n in (3, 5, 4)]
    with pytest.raises(StageError, match=r"stage1.max_batch = 2: a batch of 2 changes the outputs .*tokens DIFFER"):
        check_batch_parity([[_Padded()]], [StageServing(max_batch=2)], inputs, [None])
    assert check_batch_parity([[_Padded()]], [StageServing(max_batch=1)], inputs, [None]) == []


class _FakeLoadGen:
    """LoadGen's calls the SUT makes, recording each completion (the real LoadGen drives the CLI test below)."""

    def __init__(self):
        self.done = threading.Semaphore(0)

    def ConstructSUT(self, issue, flush):  # noqa: N802  (LoadGen's names)
        return issue

    def DestroySUT(self, handle):  # noqa: N802
        pass

    def QuerySampleResponse(self, sample_id, data, size):  # noqa: N802
        return sample_id

    def QuerySamplesComplete(self, responses):  # noqa: N802
        for _ in responses:
            self.done.release()


class _Sample:
    def __init__(self, n):
        self.id, self.index = n, n


@pytest.mark.slow
def test_dynamic_batching_outputs_equal_batch_1_on_the_tiny_s2t_reference(tmp_path):
    """Every sample's every stage output served by the staged SUT in batches of up to 4 (S2T then MT, the
    reference models) against the same stages one sample at a time: tokens identical."""
    pytest.importorskip("onnxruntime")
    from speechperf.benchmark import build
    from speechperf.config.load import parse_config
    from speechperf.data import load_dataset
    from speechperf.loadgen.stages import StagedSystemUnderTest, serving_of
    from speechperf.registry import require_backend

    text = (
        "general: {model_type: 3StageS2ST, dataset_type: generated, dataset_size: 7, preset: tiny, serving: stages,"
        " max_batch: 4, max_queue_delay_ms: 200}\nstage1: {model: s2t, max_len_b: 20}\n"
        "stage2: {model: mt, max_len_b: 20}\nstage3: {model: tts, vocoder: mel_vocoder, max_batch: 1}\n"
    )
    cfg = parse_config(text, "staged.yaml")
    cfg = type(cfg)(cfg.general, cfg.stages[:2], cfg.source)  # S2T and MT: both batch
    backend = require_backend("onnxruntime")
    serving = serving_of(cfg)
    pools = build.open_stage_pools(cfg, backend, tmp_path, serving)
    inputs = [pools[0][0].from_sample(s) for s in load_dataset(cfg.general, cfg.roles[0])]
    lines = check_batch_parity(pools, serving, inputs, [None, None])
    assert [line.split(" (")[0] for line in lines] == ["batch parity: stage1", "batch parity: stage2"]
    lg = _FakeLoadGen()
    sut = StagedSystemUnderTest(lg, pools, inputs, backend, "cpu", serving)
    sut.keep_outputs = True
    sut._issue([_Sample(n) for n in range(len(inputs))])  # all at once: the queue fills, the batches too
    for _ in inputs:
        assert lg.done.acquire(timeout=120)
    sut.close()
    assert not sut.served.failed
    assert max(sut.batch_sizes[0]) > 1 and max(sut.batch_sizes[1]) > 1  # batched, in both stages
    for n, inp in enumerate(inputs):
        alone, times = sut.run_chain([pool[0] for pool in pools], inp)
        for stage, (got, want) in enumerate(zip(sut.outputs[n], alone), 1):
            assert np.array_equal(got["tokens"], want["tokens"]), f"sample {n} stage{stage}"


@pytest.mark.slow
def test_loadgen_serves_stages_in_batches_and_its_accuracy_log_equals_the_chain_s(tmp_path):
    """The real LoadGen, Offline accuracy mode (every sample at once): the staged SUT in batches of up to 4 writes
    the same tokens per sample into mlperf_log_accuracy.json as today's chain, and says how it batched."""
    pytest.importorskip("onnxruntime")
    common = ["-b", "onnxruntime", "--dataset-size", "6", "--scenario", "Offline", "--accuracy"]
    done, chain = loadgen(tmp_path, *common)
    assert done.returncode == 0, done.stderr
    staged_sets = ["--set", "general.serving=stages", "--set", "stage1.max_batch=4"]
    done, staged = loadgen(tmp_path, *common, *staged_sets, "--set", "stage1.max_queue_delay_ms=100")
    assert done.returncode == 0, done.stderr
    assert staged["serving"]["stages"] == [{"instances": 1, "threads": 1, "max_batch": 4, "max_queue_delay_ms": 100.0}]
    assert staged["serving"]["batch_parity"][0].startswith("batch parity: stage1")
    assert staged["runs"][0]["stages"][0]["mean_batch"] > 1
    assert chain["runs"][0]["stages"][0]["mean_batch"] is None

    def tokens(doc):
        log = Path(doc["runs"][0]["log_dir"]) / "mlperf_log_accuracy.json"
        entries = json.loads(log.read_text())
        return {e["qsl_idx"]: json.loads(bytes.fromhex(e["data"]))["tokens"] for e in entries}

    assert tokens(staged) == tokens(chain) and len(tokens(chain)) == 6


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("stage1: {model: s2t, max_batch: 4}", "stage1.max_batch = 4: only with general.serving: stages"),
        (
            "general: {model_type: VAD, serving: stages}\nstage1: {model: silero_vad, max_batch: 2}",
            "stage1.max_batch = 2: stage1 (silero_vad) cannot batch",
        ),
        ("general: {serving: pipeline}\nstage1: {model: s2t}", "general.serving"),
    ],
)
def test_serving_keys_that_cannot_apply_are_one_line_with_exit_2(tmp_path, text, expected):
    config = tmp_path / "serving.yaml"
    config.write_text(text + "\n")
    result = CliRunner().invoke(main, ["config", "check", str(config)])
    assert result.exit_code == 2, result.output
    assert expected in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_instances_beside_the_stages_pools_is_one_line(tmp_path):
    pytest.importorskip("mlperf_loadgen")
    done, _ = loadgen(tmp_path, "-b", "onnxruntime", "--scenario", "Offline", "--instances", "2",
                      "--set", "general.serving=stages")  # fmt: skip
    assert done.returncode == 2
    assert "--instances 2: with general.serving: stages each stage has its own pool" in done.stderr


def test_the_pools_capacity_is_the_slowest_pools_rate():
    """LoadGen's expected rate (Offline's query size, the peak search's start) for a pool per stage: each stage's
    instances x a full batch over its warm-up time, the slowest of them, not the whole chain's rate (a staged
    Offline run sized from the chain ended before its minimum duration, INVALID)."""
    from types import SimpleNamespace

    from speechperf.loadgen.stages import StagedSystemUnderTest

    pools = SimpleNamespace(serving=[StageServing(2, 1, 4, 5.0), StageServing(1, 1)])
    assert StagedSystemUnderTest.capacity(pools, [0.1, 0.05]) == pytest.approx(20.0)  # 80 and 20 a second
    assert StagedSystemUnderTest.capacity(pools, [0.5, 0.01]) == pytest.approx(16.0)  # 16 and 100
