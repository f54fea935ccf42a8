"""``speechperf tune`` through the real CLI, real onnxruntime and its real int8 methods on the tiny S2T: Ctrl-C keeps
the document (complete: false) and exits 130, a rerun resumes (every finished process reused), the winner is a
config bench runs, the final compare is in the document, ``speechperf show`` of the run's JSON and of its stored id
prints and writes what the run did, and bad input is one line.

A tune costs tens of seconds, so one run (interrupted, then resumed) serves every check of it, show's too: its test
used to run a tune of its own."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.needs import LIBRIVOX, needs
from tests.show_again import assert_shown_from_json_and_store, stored_id

REPO = Path(__file__).resolve().parents[1]


def tune_args(tmp_path: Path) -> list[str]:
    """The tune of this file; its exports are the stem ``tmp_path / "tune"``, its runs stored in ``store.sqlite``."""
    return [
        sys.executable, "-m", "speechperf", "tune", "--config", str(REPO / "configs" / "S2T.yaml"), "--preset", "tiny",
        "--dataset-size", "2", "--set", "general.repeat=1", "--backends", "onnxruntime", "--precisions", "bf16,int8",
        "--calibration-size", "1", "--final-runs", "2", "--budget", "900", "--out-dir", str(tmp_path / "out"),
        "-o", str(tmp_path / "tune.json"), "--csv", str(tmp_path / "tune.csv"), "--markdown", str(tmp_path / "tune.md"),
        "--store", str(tmp_path / "store.sqlite"),
    ]  # fmt: skip


@pytest.mark.slow
def test_tune_interrupted_then_resumed_writes_a_winner_that_bench_runs_and_show_gives_again(tmp_path, monkeypatch):
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.Popen(tune_args(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    ledger = tmp_path / "out" / "state" / "runs.jsonl"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if ledger.is_file() and len(ledger.read_text().splitlines()) >= 3:
            break
        time.sleep(0.2)
    assert proc.poll() is None, proc.communicate()[1][-2000:]
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    interrupted = json.loads((tmp_path / "tune.json").read_text())
    assert interrupted["kind"] == "tune" and interrupted["complete"] is False
    finished_before = len(ledger.read_text().splitlines())
    assert finished_before >= 3

    done = subprocess.run(tune_args(tmp_path), capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads((tmp_path / "tune.json").read_text())
    assert doc["complete"] is True and doc["processes"]["reused"] >= finished_before
    assert f"{doc['processes']['reused']} reused from an earlier run of this tune" in done.stdout
    rows = {r["candidate"]: r for r in doc["rows"]}
    bf16 = [r for r in doc["rows"] if r["precision"] == "bf16"]
    assert bf16 and all(r["status"].startswith("dropped: ") for r in bf16)  # no bf16 path in onnxruntime (or CPU)
    int8 = [r for r in doc["rows"] if r["phase"] == "stage" and str(r["precision"]).startswith("int8")]
    assert {r["precision"] for r in int8} == {"int8:ort-dynamic", "int8:ort-static-qdq"}
    assert all(r["mean_ms"] > 0 and r["size_mb"] > 0 for r in int8)
    assert rows["reference (fp32, default paths)"]["status"] == "reference"
    winner = doc["winner"]
    tie = doc["verdict"]["answer"] == "reference"  # not significantly faster in the final compare: the reference
    assert winner["status"] == ("tie: not significantly faster than the reference" if tie else "winner")
    assert doc["front"]
    assert winner["mean_ms"] == min(
        r["mean_ms"] for r in doc["rows"] if r["phase"] == "end to end" and r["status"] in (winner["status"], "within budget (no quality to judge: no score against references)")
    )  # fmt: skip
    final = doc["final_compare"]
    # the winner against the all-default pipeline; no onnxruntime-only one: no fp32 candidate was searched
    assert [r["cell"] for r in final["rows"]] == ["all default", f"tune winner: {winner['pipeline']}"]
    assert any(s.startswith("tune winner") or "than tune winner" in s for s in final["sentences"])
    markdown = (tmp_path / "tune.md").read_text()  # the rows, then the answer: the winner and the final sentences
    answer = markdown.split("\n## The answer\n\n")[1]
    said = "- answer: the reference (all default) stays: " if tie else f"- winner: {winner['pipeline']}: "
    assert answer.startswith(said) and f"- {final['sentences'][0]}\n" in answer
    assert (
        "final compare: no onnxruntime-only pipeline: a stage has no onnxruntime fp32 candidate that passed"
        in doc["notes"]
    )
    csv_lines = (tmp_path / "tune.csv").read_text().splitlines()
    assert csv_lines[0].startswith("phase,candidate,stage,backend") and len(csv_lines) == len(doc["rows"]) + 1

    # show, from the JSON and from the stored id, prints what the resumed run printed and writes its Markdown and CSV.
    # stdout is the tune's report alone: its stage table, the pipelines and the answer (the final compare's own table
    # goes to stderr). show runs in this process: the same terminal width as the run's.
    assert ": stage1 (s2t)" in done.stdout and ": end to end" in done.stdout
    assert ("\nanswer: the reference (all default) stays: " if tie else "\nwinner: ") in done.stdout
    assert "\n## The answer\n" in markdown
    monkeypatch.setenv("COLUMNS", env["COLUMNS"])
    store = tmp_path / "store.sqlite"
    assert_shown_from_json_and_store(done.stdout, tmp_path / "tune", store, stored_id(done, "tune"))

    config = Path(doc["winner_config"])
    assert config.parent == tmp_path / "out"
    bench = subprocess.run(
        [sys.executable, "-m", "speechperf", "bench", "--config", str(config), "--no-store", "-o", str(tmp_path / "b.json")],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert bench.returncode == 0, bench.stderr[-2000:]
    result = json.loads((tmp_path / "b.json").read_text())["result"]
    assert [s["backend"] for s in result["stages"]] == ["onnxruntime"]
    candidate = config.with_name("tied.yaml") if tie else config  # a tie: winner.yaml runs the reference
    assert candidate.is_file() and ("int8" not in winner["pipeline"] or str(tmp_path / "out" / "models") in candidate.read_text())  # fmt: skip


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--precisions", "fp16"], "Error: --precisions fp16: unknown fp16; allowed: fp32, bf16, int8, pruned"),
        (["--batch-sizes", "4"], "Error: --batch-sizes 4: only with --objective throughput (latency and memory are per sample)"),
        (["--batch-sizes", "0", "--objective", "throughput"], "Error: --batch-sizes 0: expected whole numbers from 1 to 4096, comma-separated"),
        (["--backends", "tensorflow"], "Error: --backends: unknown backend 'tensorflow'; known backends:"),
        (["--executor", "inprocess"], "Error: --executor inprocess: tune cannot use it (its runs share this process, so their timings are not measurements, and no timeout stops them at --budget); allowed: local, ray"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, message):
    from click.testing import CliRunner

    from speechperf.cli import main

    result = CliRunner().invoke(main, ["tune", "--out-dir", str(tmp_path / "o"), *args])
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines()[-1].startswith(message)
    assert "Traceback" not in result.output and not (tmp_path / "o").exists()


def librivox_manifest(folder: Path, count: int = 5) -> Path:
    """The LibriVox clips as a raw manifest, their transcripts (pocketsphinx's) as the .wrd beside it."""
    import soundfile as sf

    texts = {}
    for line in (LIBRIVOX / "transcription").read_text().splitlines():
        texts[line.rsplit("(", 1)[1].rstrip(")")] = line.split("</s>")[0].replace("<s>", "").strip()
    clips = sorted(p.stem for p in LIBRIVOX.glob("*.wav"))[:count]
    lines = [str(LIBRIVOX), *(f"{c}.wav\t{sf.info(LIBRIVOX / f'{c}.wav').frames}" for c in clips)]
    (folder / "test.tsv").write_text("\n".join(lines) + "\n")
    (folder / "test.wrd").write_text("".join(texts[c] + "\n" for c in clips))
    return folder / "test.tsv"


@pytest.mark.slow
@needs("librivox")
def test_a_budget_too_short_to_measure_anything_says_so_in_one_line_with_the_budget_a_first_pass_needs(tmp_path):
    """Whisper tiny.en on the 5 LibriVox clips with 2 s of budget: the reference cannot finish, so nothing is
    measured: one line names the budget a first pass needs, exit 3; the quality budget (1 WER point) is finer than
    the clips' words resolve, said at the start; no framework's chatter on the console."""
    manifest = librivox_manifest(tmp_path)
    args = [
        sys.executable, "-m", "speechperf", "tune", "--config", str(REPO / "configs" / "WhisperTinyEn.yaml"),
        "--dataset-path", str(manifest), "--dataset-type", "raw", "--backends", "torch", "--precisions", "fp32",
        "--budget", "2", "--out-dir", str(tmp_path / "out"), "-o", str(tmp_path / "tune.json"), "--no-store",
    ]  # fmt: skip
    done = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert done.returncode == 3, done.stderr[-2000:]
    (line,) = done.stdout.strip().splitlines()
    assert line.startswith("nothing measured: the reference pipeline did not finish within --budget 2 s; a first ")
    needed = int(line.rsplit("--budget ", 1)[1].split()[0])
    assert needed > 2 and needed % 60 == 0
    words = sum(len(t.split()) for t in (tmp_path / "test.wrd").read_text().splitlines())
    assert f"with {words} reference words one error is {100 / words:.1f} WER points" in done.stderr
    assert "no pipeline finished within the quality budget" not in done.stdout + done.stderr
    for chatter in ("Failed to load", "Detected no triton", "USDT", "Traceback"):
        assert chatter not in done.stderr
    doc = json.loads((tmp_path / "tune.json").read_text())
    assert doc["nothing_measured"] == line and doc["answer"] == [line] and doc["winner"] is None
