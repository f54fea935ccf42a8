"""The core of ``speechperf tune`` with fake bench processes: the search space (bf16 only where it can run, int8
failures named), successive halving, the resume ledger, the quality judgement and the Pareto front. The real
frameworks and processes are in tests/test_tune.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from speechperf.config import load_config
from speechperf.errors import SpeechperfError
from speechperf.launch.cell import Cell
from speechperf.launch.result import RunResult
from speechperf.optimize.fidelity import QualityBudget
from speechperf.tune import combine
from speechperf.tune.combine import Pipeline
from speechperf.tune.runs import Budget, Runner
from speechperf.tune.screen import Rung, ScreenPlan, screen
from speechperf.tune.space import (
    Dropped,
    StageCandidate,
    cpu_has_bf16,
    float_candidates,
    pending_int8_candidates,
    with_int8_files,
)

REPO = Path(__file__).resolve().parents[1]


def config(name: str):
    return load_config(REPO / "configs" / name, {}, {"preset": "tiny"}, [])


def test_bf16_needs_the_cpu_flags_and_a_bf16_variant():
    assert cpu_has_bf16("flags : fpu avx512f avx512_bf16 amx_tile") and cpu_has_bf16("flags: amx_bf16")
    assert not cpu_has_bf16("flags : fpu avx2 avx512f avx512_vnni")
    cfg = config("S2T.yaml")
    found, dropped = float_candidates(cfg, ["onnxruntime", "torch"], ["fp32", "bf16"], [1], bf16_cpu=False)
    assert {(d.backend, d.reason) for d in dropped} == {
        (b, "this CPU has no AVX-512 BF16 or AMX (cpuinfo flags avx512_bf16, amx_bf16)")
        for b in ("onnxruntime", "torch")
    }
    assert {c.precision for c in found} == {"fp32"}
    found, dropped = float_candidates(cfg, ["onnxruntime", "torch"], ["fp32", "bf16"], [1, 2], bf16_cpu=True)
    assert [(d.backend, d.reason) for d in dropped] == [
        ("onnxruntime", "backend 'onnxruntime' declares no bf16 variant")
    ] * 2
    bf16 = [c for c in found if c.precision == "bf16"]
    assert [(c.backend, c.variant, c.threads) for c in bf16] == [("torch", "eager-bf16", 1), ("torch", "eager-bf16", 2)]
    assert bf16[0].sets == (
        "stage1.backend=torch",
        "stage1.format=torch-eager",
        'stage1.options={"torch": {"dtype": "bfloat16"}}',
    )
    assert len({c.key for c in found}) == len(found)


def test_a_whisper_stage_keeps_its_format_so_variants_that_differ_only_by_format_are_measured_once():
    cfg = config("WhisperTinyEn.yaml")
    found, _ = float_candidates(cfg, ["torch"], ["fp32"], [1], bf16_cpu=False)
    names = [c.variant for c in found]
    assert "eager" in names and "torchscript" not in names  # the same sets as eager: Whisper has no format to switch
    assert "torchscript-frozen" in names  # its option makes it another path


def test_int8_candidates_load_the_quantized_files_and_failures_are_dropped_with_their_reason():
    first, second = (c for c in pending_int8_candidates(2, ["onnxruntime"], [1]) if c.precision == "int8:ort-dynamic")
    cand = with_int8_files(first, {"model_dir": "/q/s1", "format": "onnx-torch", "preset": "tiny"})
    assert cand.key == "stage1 onnxruntime:default int8:ort-dynamic t=1" and cand.is_int8 and not cand.pending
    assert cand.sets == ("stage1.backend=onnxruntime", 'stage1.format="onnx-torch"', 'stage1.model_dir="/q/s1"')
    gone = with_int8_files(second, SpeechperfError("ort-dynamic quantized no operator of decoder.onnx"))
    assert isinstance(gone, Dropped)
    assert (gone.stage, gone.reason) == (2, "could not quantize: ort-dynamic quantized no operator of decoder.onnx")


def bench_json(path: Path, stage_ms: dict[int, float], bleu: float | None = None) -> None:
    stages = [
        {"runtime": {"stats": {"mean": stage_ms[i] / 1e3}}, "memory": {"peak_mib": 100.0 + i}} for i in sorted(stage_ms)
    ]
    quality = (
        {"scores": [{"stage": "total", "metric": "bleu", "samples": 2, "bleu": bleu, "chrf": 50.0}]} if bleu else {}
    )
    path.write_text(json.dumps({"result": {"stages": stages, "quality": quality}, "complete": True}))


class FakeRunner(Runner):
    """Every process "runs" at once: its stage times come from ``times`` (candidate key -> ms), or it fails."""

    def __init__(self, folder: Path, times: dict[str, float], budget_s: float = 1e6):
        super().__init__(folder, "d", Budget(budget_s))
        self.times, self.calls = times, []

    def run(self, cell, run, key, min_left_s=0.0, expect_s=0.0):
        if self.budget.left - min_left_s <= max(0.0, expect_s):
            return None
        self.calls.append(key)
        path = self.folder / f"{len(self.calls)}.json"
        name = cell.label.split(" @")[0]
        if self.times.get(name) == "fail":
            return RunResult(cell.label, run, False, 1, None, "exit 1: boom", str(path), "", "")
        stage_ms = {i: self.times.get(name, 50.0) for i in (1, 2)}
        bench_json(path, stage_ms)
        return RunResult(cell.label, run, True, 0, None, None, str(path), str(self.folder / "none.npz"), "", wall_s=1.0)


def cands(stage: int, backends: list[str]) -> list[StageCandidate]:
    return [StageCandidate(stage, b, "v", "fp32", 1, (f"stage{stage}.backend={b}",)) for b in backends]


def test_successive_halving_keeps_each_stages_faster_half_and_names_what_became_of_the_rest(tmp_path):
    first = cands(1, ["a", "b", "c", "d", "e"])
    second = cands(2, ["x", "y"])
    times = {c.key: t for c, t in zip(first, [5.0, 4.0, 3.0, 2.0, 1.0])} | {second[0].key: 7.0, second[1].key: "fail"}
    runner = FakeRunner(tmp_path, times)
    plan = ScreenPlan("onnxruntime", {"general": {}}, (), "latency")
    ladder = [Rung(1, 1, 1), Rung(4, 3, 1), Rung(4, 3, 2)]
    found = screen([*first, *second], [], plan, ladder, runner, lambda s: 0.0)
    status = {k.split()[1]: r.status for k, r in found.rows.items()}
    assert status["a:v"] == status["b:v"] == "halved out at rung 1 (slower than the stage's best 3)"
    assert status["c:v"] == "halved out at rung 2 (slower than the stage's best 2)"
    assert (status["e:v"], status["d:v"]) == ("best", "kept")
    assert status["x:v"] == "best" and status["y:v"] == "failed: exit 1: boom"
    assert found.rows[first[4].key].rung == 3 and len(found.rows[first[4].key].values) == 2  # two runs: a σ
    assert [r.candidate.key for r in found.survivors(1)] == [first[4].key, first[3].key]
    # the reference runs at every rung: once, once, twice
    assert sum(1 for k in runner.calls if k.startswith("reference")) == 4


def test_a_spent_budget_leaves_candidates_not_tried(tmp_path):
    runner = FakeRunner(tmp_path, {}, budget_s=-1)
    found = screen(
        cands(1, ["a", "b"]), [], ScreenPlan("onnxruntime", {}, (), "latency"), [Rung(1, 1, 1)], runner, lambda s: 0.0
    )
    assert {r.status for r in found.rows.values()} == {"not tried: budget spent"} and runner.calls == []


def test_no_process_of_a_rung_starts_when_the_references_time_at_that_rung_no_longer_fits(tmp_path):
    runner = FakeRunner(tmp_path, {})  # every process takes 1 s; the reference on 1 sample of 4: 4 s for the dataset
    ladder = [Rung(1, 1, 1), Rung(4, 3, 1)]
    plan = ScreenPlan("onnxruntime", {"general": {}}, (), "latency")
    found = screen(cands(1, ["a", "b"]), [], plan, ladder, runner, lambda s: runner.budget.seconds - 2.0)
    assert found.reference_wall_s == 4.0
    assert runner.calls and not [k for k in runner.calls if "rung2" in k]  # 2 s left after the reserve: none fits
    assert all(r.rung == 1 for r in found.rows.values())


def test_a_rerun_reuses_what_finished_and_nothing_of_another_digest(tmp_path, monkeypatch):
    from speechperf.launch import launcher
    from speechperf.launch.cell import Cell

    launched = []

    def fake_run_cells(cells, runs, workdir, executor="local", timeout_s=None, jobs=1):
        launched.append(cells[0].label)
        workdir.mkdir(parents=True, exist_ok=True)
        path = workdir / "run.json"
        bench_json(path, {1: 3.0})
        ok = cells[0].label != "broken"
        return [
            RunResult(
                cells[0].label, 0, ok, 0 if ok else 1, None, None if ok else "exit 1: x", str(path), "", "", wall_s=2.0
            )
        ]

    monkeypatch.setattr(launcher, "run_cells", fake_run_cells)
    first = Runner(tmp_path, "d1", Budget(100))
    assert first.run(Cell("a", "onnxruntime"), 0, "a run0").ok
    assert not first.run(Cell("broken", "onnxruntime"), 0, "broken run0").ok
    again = Runner(tmp_path, "d1", Budget(100))
    got = again.run(Cell("a again", "onnxruntime"), 1, "a run0")
    assert (got.label, got.run, again.reused, again.ran) == ("a again", 1, 1, 0)
    again.run(Cell("broken", "onnxruntime"), 0, "broken run0")  # a failure is tried again
    assert launched == ["a", "broken", "broken"]
    other = Runner(tmp_path, "d2", Budget(100))  # another config or machine: nothing reused
    other.run(Cell("a", "onnxruntime"), 0, "a run0")
    assert other.reused == 0 and launched[-1] == "a"
    (tmp_path / "runs.jsonl").write_text((tmp_path / "runs.jsonl").read_text() + '{"key": "torn')  # a kill mid-line
    assert Runner(tmp_path, "d1", Budget(100)).known.keys() == {"a run0"}


def pipeline(tmp_path: Path, name: str, ms: float, bleu: float, peak: float, size: int) -> Pipeline:
    path = tmp_path / f"{name}.json"
    bench_json(path, {1: ms}, bleu=bleu)
    run = RunResult(name, 0, True, 0, None, None, str(path), "", "")
    p = Pipeline(name, (StageCandidate(1, "onnxruntime", name, "fp32", 1),), runs=[run], mean_s=ms / 1e3)
    p.peak_mib, p.size_bytes, p.value, p.metric, p.status = peak, size, bleu, "BLEU", "measured"
    return p


def test_the_winner_is_the_fastest_within_the_quality_budget_and_the_front_keeps_every_trade_off(tmp_path):
    reference = pipeline(tmp_path, "ref", 30.0, 30.0, 500, 100)
    fast_bad = pipeline(tmp_path, "int8-bad", 10.0, 27.5, 300, 30)
    fast_ok = pipeline(tmp_path, "int8-ok", 15.0, 29.5, 300, 30)
    slow = pipeline(tmp_path, "fp32", 20.0, 30.0, 400, 100)
    dominated = pipeline(tmp_path, "worse", 25.0, 29.0, 450, 120)
    winner = combine.judge(reference, [fast_bad, fast_ok, slow, dominated], QualityBudget(max_bleu_drop=1.0), "latency")
    assert winner is fast_ok and fast_ok.status == "winner"
    assert fast_bad.status == "over quality budget (BLEU -2.5 points)"
    assert slow.status == dominated.status == "within budget"
    front = combine.pareto_front([fast_bad, fast_ok, slow, dominated], "latency")
    assert {p.name for p in front} == {"int8-bad", "int8-ok", "fp32"}  # "worse" is slower, larger and worse than fp32
    assert combine.judge(reference, [fast_bad], QualityBudget(max_bleu_drop=1.0), "latency") is None


def test_combinations_take_each_stages_best_and_its_fastest_fp32_within_the_pipeline_cap(tmp_path):
    first = [*cands(1, ["a", "b", "c"]), StageCandidate(1, "q", "default", "int8:m", 1, ("stage1.backend=q",))]
    second = cands(2, ["x", "y", "z"])
    times = {first[3].key: 1.0, first[0].key: 2.0, first[1].key: 3.0, first[2].key: 4.0}
    times |= {second[0].key: 1.0, second[1].key: 2.0, second[2].key: 3.0}
    found = screen(
        [*first, *second],
        [],
        ScreenPlan("o", {}, (), "latency"),
        [Rung(1, 1, 1)],
        FakeRunner(tmp_path, times),
        lambda s: 0.0,
    )
    made = combine.combinations(found, 2, 4, "latency")
    assert [p.name for p in made] == ["q:default int8:m + x:v", "q:default int8:m + y:v", "a:v + x:v", "a:v + y:v"]
    assert made[0].predicted == pytest.approx(2.0 * 1e-3)


def test_with_jobs_the_processes_go_out_together_and_one_timed_on_another_kind_of_machine_fails(tmp_path, monkeypatch):
    from speechperf.launch import launcher
    from speechperf.launch.cell import Cell
    from speechperf.results.environment import cpu_model

    calls = []

    def fake_run_cells(cells, runs, workdir, executor="local", timeout_s=None, jobs=1):
        calls.append(([c.label for c in cells], executor, jobs))
        out = []
        for i, cell in enumerate(cells):
            path = workdir / f"{i}.json"
            workdir.mkdir(parents=True, exist_ok=True)
            data = {"result": {"stages": []}, "environment": {"cpu": "Other CPU" if cell.label == "b" else cpu_model(),
                                                                "cpu_count": __import__("os").cpu_count()}}  # fmt: skip
            path.write_text(json.dumps(data))
            out.append(RunResult(cell.label, 0, True, 0, None, None, str(path), "", "", node=f"node-{cell.label}"))
        return out

    monkeypatch.setattr(launcher, "run_cells", fake_run_cells)
    runner = Runner(tmp_path, "d", Budget(100), executor="ray", jobs=2)
    runner.known["c run0"] = RunResult("c", 0, True, 0, None, None, str(tmp_path / "c.json"), "", "")
    got = runner.run_many([(Cell(x, "onnxruntime"), 0, f"{x} run0") for x in ("a", "b", "c")])
    assert calls == [(["a", "b"], "ray", 2)] and runner.reused == 1  # c came from the ledger
    assert got[0].ok and got[2].label == "c"
    assert not got[1].ok and got[1].reason.startswith("timed on node-b (Other CPU, ")
    assert "candidates are compared only on one kind of machine" in got[1].reason
    assert list(runner.known) == ["c run0", "a run0"]


def test_the_winners_score_is_read_against_the_fp32_all_default_pipeline_of_the_final_compare():
    from speechperf.tune.run import _quality_vs_fp32

    fp32 = {"metric": "ASR-BLEU", "value": 13.896}
    assert _quality_vs_fp32({"metric": "ASR-BLEU", "value": 17.933}, fp32) == (
        "final compare: the winner's ASR-BLEU 17.93 against all default (fp32) 13.90: +4.04 points"
    )
    assert _quality_vs_fp32({"metric": "WER", "value": 20.0}, fp32).endswith("scored in WER, all default in ASR-BLEU")
    assert _quality_vs_fp32({"metric": "ASR-BLEU", "value": None}, fp32) is None
    assert _quality_vs_fp32(None, fp32) is None


def test_the_markdown_ends_with_the_answer_and_the_notes():
    from speechperf.results import Document
    from speechperf.views import tune as report

    row = {c: None for c in report.COLUMNS} | {"candidate": "reference (fp32, default paths)", "mean_ms": 12.5}
    doc = Document("tune", rows=[row], notes=["a note"], body={"answer": ["winner: x: out/winner.yaml", "x ran 2x"]})
    text = report.markdown(doc)
    table, answer = text.split("\n## The answer\n\n")
    assert "| reference (fp32, default paths) |" in table
    assert answer == "- winner: x: out/winner.yaml\n- x ran 2x\n- a note\n"
    assert "## The answer" not in report.markdown(Document("tune", rows=[row], body={"answer": []}))


def test_the_final_compare_leaves_out_the_slowest_single_framework_pipelines_until_its_runs_fit_the_budget():
    from speechperf.tune.run import _fit_final_cells

    names = ("all default", "tune winner: w", "paddle only", "torch only", "onnxruntime only")
    cells = [Cell(n, "onnxruntime", 1, "c.yaml") for n in names]
    walls = [20.0, 15.0, 60.0, 50.0, 20.0]  # seconds a process: torch compiles, paddle loads for long
    speeds = [0.0, 0.0, 1.07, 0.54, 0.71]  # seconds a sample: torch's pipeline is the fastest competitor
    lines = _fit_final_cells(cells, walls, speeds, 3, 400.0)  # 3 runs of every cell: 495 s
    assert [c.label for c in cells] == ["all default", "tune winner: w", "torch only", "onnxruntime only"]
    assert walls == [20.0, 15.0, 50.0, 20.0] and speeds == [0.0, 0.0, 0.54, 0.71]
    assert lines == [
        "final compare: paddle only left out (the slowest per sample of those left): its 3 run(s) need about 180 s,"
        " and 400 s of --budget are left for every cell"
    ]
    lines = _fit_final_cells(cells, walls, speeds, 3, 200.0)  # onnxruntime goes, then torch: only the first two stay
    assert [line.split(": ")[1].split(" left out")[0] for line in lines] == ["onnxruntime only", "torch only"]
    assert len(cells) == 2  # the caller skips the compare if even these do not fit
    assert _fit_final_cells(cells, walls, speeds, 3, 1000.0) == [] and len(cells) == 2


def test_each_rung_tries_one_of_each_backend_and_precision_in_turn_so_a_short_budget_still_reaches_int8():
    from speechperf.tune.order import round_robin as _round_robin

    def cand(stage, backend, variant, precision):
        return StageCandidate(stage, backend, variant, precision, 1, ())

    alive = [cand(1, "onnxruntime", v, "fp32") for v in ("all", "basic", "disable")]
    alive += [cand(1, "torch", v, "fp32") for v in ("eager", "compile")]
    alive += [cand(1, "onnxruntime", "default", "int8:ort-dynamic"), cand(2, "onnxruntime", "all", "fp32")]
    order = [(c.stage, c.backend, c.variant, c.precision) for c in _round_robin(alive)]
    assert order == [
        (1, "onnxruntime", "all", "fp32"),
        (2, "onnxruntime", "all", "fp32"),
        (1, "torch", "eager", "fp32"),
        (1, "onnxruntime", "default", "int8:ort-dynamic"),
        (1, "onnxruntime", "basic", "fp32"),
        (1, "torch", "compile", "fp32"),
        (1, "onnxruntime", "disable", "fp32"),
    ]


def test_each_backends_default_then_each_techniques_most_promising_variant_come_first():
    from speechperf.tune.order import round_robin

    def cand(backend, variant, precision):
        return StageCandidate(1, backend, variant, precision, 1, ())

    alive = [cand("onnxruntime", m, "fp32") for m in ("all", "extended", "basic")]
    alive += [cand("onnxruntime", "default", f"int8:{m}") for m in ("ort-static-qdq", "ort-dynamic")]
    alive += [cand("paddle", "predictor", "fp32"), cand("paddle", "default", "int8:paddle-ptq")]
    alive += [cand("torch", v, "fp32") for v in ("eager", "compile")] + [cand("torch", "eager-bf16", "bf16")]
    alive += [cand("torch", "default", f"int8:{m}") for m in ("torchao-dynamic", "pt2e-static", "legacy-dynamic")]
    order = [(c.backend, c.precision.partition(":")[2] or c.variant) for c in round_robin(alive)]
    assert order[:3] == [("onnxruntime", "all"), ("paddle", "predictor"), ("torch", "eager")]  # the defaults
    assert order[3:7] == [  # then each technique's best guess per backend, most promising first: int8, then bf16
        ("onnxruntime", "ort-dynamic"), ("torch", "legacy-dynamic"), ("paddle", "paddle-ptq"), ("torch", "eager-bf16")
    ]  # fmt: skip
    assert order[7:] == [  # then the rest, one of each (backend, technique) in turn
        ("onnxruntime", "extended"), ("torch", "compile"), ("onnxruntime", "ort-static-qdq"),
        ("torch", "torchao-dynamic"), ("onnxruntime", "basic"), ("torch", "pt2e-static"),
    ]  # fmt: skip


def test_int8_files_are_made_when_their_candidate_comes_up_and_a_spent_budget_never_makes_them(tmp_path):
    fp32 = cands(1, ["onnxruntime", "torch"])
    pending = pending_int8_candidates(1, ["onnxruntime"], [1])
    assert [c.precision for c in pending] == ["int8:ort-dynamic", "int8:ort-static-qdq"] and pending[0].pending
    runner = FakeRunner(tmp_path, {})
    made = []

    def prepare(cand, reserve_s, expect_s):
        made.append((cand.key, len(runner.calls)))  # how many processes had run when its files were made
        if cand.precision == "int8:ort-static-qdq":
            return Dropped(cand.key, 1, cand.backend, cand.precision, "could not quantize: no MatMul")
        return with_int8_files(cand, {"model_dir": "/q/s1", "preset": "tiny"})

    plan = ScreenPlan("onnxruntime", {"general": {}}, (), "latency")
    found = screen([*pending, *fp32], [], plan, [Rung(1, 1, 1)], runner, lambda s: 0.0, prepare)
    assert [m[0] for m in made] == [pending[0].key, pending[1].key]
    assert made[0][1] == 3  # the reference and both fp32 defaults ran before any int8 file was made
    dynamic = found.rows[pending[0].key]
    assert dynamic.candidate.sets == ("stage1.backend=onnxruntime", 'stage1.model_dir="/q/s1"') and dynamic.values
    assert found.rows[pending[1].key].status == "dropped: could not quantize: no MatMul"
    assert not [k for k in runner.calls if "ort-static-qdq" in k]

    runner = FakeRunner(tmp_path / "short", {}, budget_s=1e6)
    made.clear()
    never = screen(pending, [], plan, [Rung(1, 1, 1)], runner, lambda s: 0.0, lambda c, r, e: None)  # unaffordable
    assert {r.status for r in never.rows.values()} == {"not tried: budget spent"} and made == []


def per_sample_json(path: Path, errors: list[int], words: list[int], ms: float = 10.0) -> None:
    samples = [{"id": f"u{i}", "errors": e, "words": w} for i, (e, w) in enumerate(zip(errors, words))]
    wer = sum(errors) / sum(words)
    total = {"stage": "total", "metric": "wer", "samples": len(errors), "wer": wer, "cer": wer, "per_sample": samples}
    stages = [{"runtime": {"stats": {"mean": ms / 1e3}}}]
    path.write_text(json.dumps({"result": {"stages": stages, "quality": {"scores": [total]}}, "complete": True}))


def wer_pipeline(tmp_path: Path, name: str, errors: list[int], ms: float) -> Pipeline:
    path = tmp_path / f"{name}.json"
    per_sample_json(path, errors, [4] * len(errors), ms)
    run = RunResult(name, 0, True, 0, None, None, str(path), "", "")
    p = Pipeline(name, (StageCandidate(1, "onnxruntime", name, "int8:m", 1),), runs=[run], mean_s=ms / 1e3)
    p.status = "measured"
    return p


def test_over_the_wer_budget_only_where_a_paired_bootstrap_over_the_utterances_shows_it(tmp_path):
    from speechperf.tune.verdict import paired_bootstrap, resolution_note

    # 5 utterances of 4 words: 20 reference words, one error is 5 WER points against a 1-point budget
    reference = wer_pipeline(tmp_path, "ref", [0, 1, 0, 0, 0], 30.0)
    one_more = wer_pipeline(tmp_path, "one-more-error", [0, 1, 1, 0, 0], 10.0)
    broken = wer_pipeline(tmp_path, "broken", [4, 4, 3, 4, 4], 5.0)
    winner = combine.judge(reference, [one_more, broken], QualityBudget(max_wer_increase=1.0), "latency")
    assert broken.status.startswith("over quality budget (WER +90.0 points, 95% CI +")
    assert winner is one_more  # +5 points, but the interval reaches 0: the data does not show it past 1 point
    (delta,) = one_more.deltas
    assert (delta.metric, delta.points, delta.low, delta.utterances) == ("WER", 5.0, 0.0, 5) and delta.high > 5.0
    assert delta.text().startswith("WER +5.0 points, 95% CI +0.0 to +")
    record = combine.record(one_more)
    assert record["utterance_errors"][2] == {"id": "u2", "errors": 1, "words": 4}
    assert record["quality_deltas"][0]["points"] == 5.0
    low, high = paired_bootstrap([1.0] * 10, [4] * 10)  # the same loss on every utterance: no spread
    assert low == high == 25.0
    assert resolution_note(20, 1.0) == (
        "quality budget finer than the dataset resolves: with 20 reference words one error is 5.0 WER points,"
        " more than --max-wer-increase 1; a pipeline is ruled over it only where a paired bootstrap over the "
        "utterances shows the loss (95% interval)"
    )
    assert resolution_note(200, 1.0) is None and resolution_note(20, None) is None


class _State:
    def __init__(self, winner, reference, final):
        self.winner, self.reference, self.final = winner, reference, final


def test_a_winner_not_significantly_faster_than_the_reference_in_the_final_compare_is_a_tie(tmp_path):
    from speechperf.tune.answer import settle

    def final(fast, slow, p, rows=()):
        return {"comparisons": [{"fast": fast, "slow": slow, "ratio": 1.01, "sigma": 0.07, "p_value": p}],
                "rows": list(rows)}  # fmt: skip

    w = pipeline(tmp_path, "w", 10.0, 30.0, 1, 1)
    label = "tune winner: w"
    got = settle(_State(w, None, final("all default", label, 0.89)))  # the issue's: all default ran 1.01x faster
    assert got["answer"] == "reference" and w.status == "tie: not significantly faster than the reference"
    assert got["sentence"] == "all default ran 1.01 ± 0.07 times faster than tune winner: w (not significant, p = 0.89)"
    w.status = "winner"
    assert settle(_State(w, None, final(label, "all default", 0.3)))["answer"] == "reference"  # faster, not shown
    w.status = "winner"
    assert settle(_State(w, None, final(label, "all default", 0.001)))["answer"] == "winner" and w.status == "winner"
    # torch only was fastest: no direct comparison; Welch's test from the two cells' rows decides
    rows = [
        {"cell": label, "mean_ms": 300.0, "stdev_ms": 2.0, "runs_ok": 3},
        {"cell": "all default", "mean_ms": 320.0, "stdev_ms": 3.0, "runs_ok": 3},
    ]
    got = settle(_State(w, None, final("torch only", label, 0.01, rows)))
    assert got["answer"] == "winner" and got["p_value"] < 0.01 and got["from"] == "final compare"
    rows[1]["mean_ms"] = 301.0
    assert settle(_State(w, None, final("torch only", label, 0.01, rows)))["answer"] == "reference"


CHATTER = """
import logging, os, sys
from speechperf import logs
from speechperf.tune.quiet import third_party_to_log

for level in (logging.INFO, logging.DEBUG):  # the console, then -v
    logs.configure(level)
    with third_party_to_log():
        os.write(2, b"USDT profiler_start at 0x7f\\n")  # C++ on file descriptor 2
        os.write(1, b"Folding constants of the graph\\n")  # and on 1
        logging.getLogger("torchao").warning("Failed to load _C_mxfp8.so")  # Python's last-resort handler
        logging.getLogger("speechperf.tune").info("tune: quantizing stage1 ...")
    print("the report", flush=True)
"""


@pytest.mark.slow
def test_framework_output_in_tunes_process_goes_to_the_debug_log_and_speechperfs_own_lines_to_the_console():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", CHATTER], capture_output=True, text=True, timeout=60)
    assert done.stdout == "the report\nthe report\n"
    assert done.stderr.splitlines() == [
        "tune: quantizing stage1 ...",  # the console: speechperf's line alone
        "tune: quantizing stage1 ...",  # -v: and what the frameworks said, at DEBUG
        "framework output: USDT profiler_start at 0x7f",
        "framework output: Folding constants of the graph",
        "framework output: Failed to load _C_mxfp8.so",
    ]


def test_the_pass_estimate_counts_each_file_set_once_in_the_candidates_order():
    from speechperf.tune.run import pass_cover

    fp32 = [StageCandidate(1, b, "default", "fp32", 1) for b in ("torch", "onnxruntime")]
    # two thread counts of one int8 method share its files; a cached set costs nothing, an unknown one the guess
    dyn = [StageCandidate(1, "onnxruntime", "default", "int8:ort-dynamic", t, pending=True) for t in (1, 2)]
    cached = StageCandidate(1, "torch", "default", "int8:pt2e-static", 1, pending=True)
    costs = {("onnxruntime", "ort-dynamic", 1): None, ("torch", "pt2e-static", 1): 0.0}
    total, covers = pass_cover([*fp32, *dyn, cached], 10.0, costs, 75.0, room_s=120.0)
    assert total == 5 * 10.0 + 75.0  # 125: the set is made once, the cached one is free
    assert covers == 4  # in order, the passes end at 10, 20, 105 (the set made), 115 and 125 s
    assert pass_cover([*fp32, *dyn, cached], 10.0, costs, 75.0, room_s=125.0)[1] == 5
    # the making does not fit: the fp32 candidates alone, not every process as if no file had to be made
    assert pass_cover([*fp32, *dyn], 10.0, costs, 75.0, room_s=100.0)[1] == 2
