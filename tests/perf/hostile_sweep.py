"""A sweep of a few hundred hostile inputs (issue 18), tried through the real CLI as a new user would, across every
command that takes input or writes output.

Run it from the repository root (it runs ``python -m speechperf`` of this checkout, one subprocess per case, each
under ``nice -n 19`` with a timeout; a timeout counts as a "hang")::

    SPEECHPERF_CACHE_DIR=$PWD/.cache nice -n 19 .venv/bin/python tests/perf/hostile_sweep.py
    ... tests/perf/hostile_sweep.py --family A --only plot --keep -v

Families: A output paths (FIFO, a private device node made with os.mknod, folder / file where the other is
wanted, a parent that is a file, a 5,000-character name; symlinks written through), B numbers, C lists and keys,
D YAML configs, E datasets, F model files, G zoo manifests. A case expects exit 2 (bad input) unless it says
otherwise (README: 0 success, 1 a measurement failed, 2 bad input). Every case is checked for: the exit code, no
"Traceback" on stdout or stderr, for exit 2 exactly one "Error:" line on stderr, which is its last non-empty line,
at most 1,000 characters long and holding the case's needle (the option, key or path it is about), and every
hostile object it names unchanged (its file type and, for a link, where it points). One line per failing case,
then a table per family. It needs root for os.mknod (the node is private, in the sweep's tmp folder; /dev is never
touched). The exit status is 1 when a case failed.
"""

from __future__ import annotations

import argparse
import os
import pickle
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import wave
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
QUICK = ["--dataset-size", "2", "--repeat", "1", "--warmup", "0"]
MAX_LINE = 1000


@dataclass
class Case:
    family: str
    name: str
    args: list[str]
    expect: int = 2
    needle: str | None = None  # must be in the Error line (case-insensitive; "a|b": either)
    watch: list[Path] = field(default_factory=list)  # hostile objects that must stay as they were
    check: Callable[[], str | None] | None = None  # after the run: None, or what is wrong
    stdin: bytes | None = None
    timeout: float = 120.0


def state(path: Path) -> str:
    """File type (and link target) of ``path``, without following a final link."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return "absent"
    except OSError as e:
        return f"unreachable ({e.strerror})"
    kind = stat.filemode(mode)[0]
    if stat.S_ISLNK(mode):
        kind += " -> " + os.readlink(path)
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        kind += f" {os.major(path.lstat().st_rdev)},{os.minor(path.lstat().st_rdev)}"
    if stat.S_ISREG(mode) and path.lstat().st_size < 10_000:
        kind += f" {path.read_bytes()!r}"
    return kind


class Assets:
    """Every file the cases use, made once in one tmp folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.n = 0
        self.voc_config = self._voc()
        self.voc = root / "voc.onnx"
        self.text = root / "in.txt"
        self.text.write_text("one two\nthree four five\n")
        self.feeds = root / "feeds.npz"
        np.savez(self.feeds, mel=np.zeros((1, 4, 4), np.float32))
        self.marker = root / "UNPICKLED"  # a pickle in a case creates it when it is loaded
        self.bench_json = root / "base.json"  # a real `bench -o`, for diff
        subprocess.run(
            [sys.executable, "-m", "speechperf", "bench", "-b", "onnxruntime", "--config", str(self.voc_config), *QUICK]
            + ["--meters", "runtime", "-q", "-o", str(self.bench_json)],
            check=True,
            capture_output=True,
            env=dict(os.environ, PYTHONPATH=str(REPO)),
        )

    def _voc(self) -> Path:
        sys.path.insert(0, str(REPO))
        from tests.test_hostile_outputs import vocoder_config

        return vocoder_config(self.root)

    def fresh(self, stem: str = "c") -> Path:
        """A new empty folder per case, so that no case sees another's leftovers."""
        self.n += 1
        folder = self.root / f"{self.n:04d}-{stem}"
        folder.mkdir()
        return folder

    def hostile(self, kind: str, want: str, suffix: str = ".json") -> tuple[Path, str]:
        """A path of ``kind`` where a ``want`` ("file" or "folder") is to be written, and the words of the refusal."""
        d = self.fresh(kind)
        p = d / ("out" + suffix if want == "file" else "out")
        if kind == "fifo":
            os.mkfifo(p)
            return p, "FIFO" if want == "file" else "FIFO|not a folder"
        if kind == "device":  # the null device's numbers, on a private node
            os.mknod(p, stat.S_IFCHR | 0o600, os.makedev(1, 3))
            return p, "character device" if want == "file" else "character device|not a folder"
        if kind == "other-kind":  # a folder where a file is wanted, a file where a folder is
            if want == "file":
                p.mkdir()
                (p / "keep").write_text("keep")
                return p, "folder|directory"  # ours or click's words
            p.write_text("keep")
            return p, "file"
        if kind == "under-a-file":
            (d / "plain").write_text("x")
            return d / "plain" / p.name, "file"
        if kind == "long-name":
            return d / ("n" * 5000 + (suffix if want == "file" else "")), "long"
        raise AssertionError(kind)

    def link_to(self, want: str, suffix: str = ".json") -> tuple[Path, Path]:
        d = self.fresh("link")
        target = d / "real" / ("target" + (suffix if want == "file" else ""))
        target.parent.mkdir()
        if want == "file":
            target.write_text("old")
        else:
            target.mkdir()
        link = d / ("link" + (suffix if want == "file" else ""))
        link.symlink_to(target)
        return link, target

    def wav(self, folder: Path, name: str, samples: int, rate: int = 16000) -> Path:
        path = folder / name
        with wave.open(str(path), "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(rate)
            w.writeframes(np.zeros(samples, np.int16).tobytes())
        return path

    def evil_pickle(self, path: Path) -> Path:
        class Evil:
            def __reduce__(self):  # loading it creates the marker: proof that something unpickled the file
                return (open, (str(self_marker), "w"))

        self_marker = self.marker
        path.write_bytes(pickle.dumps(Evil()))
        return path


def written_through(link: Path, target: Path, folder: bool = False) -> Callable[[], str | None]:
    before = os.readlink(link)

    def check() -> str | None:
        if not link.is_symlink() or os.readlink(link) != before:
            return f"{link} is no longer the link to {before}: {state(link)}"
        if folder:
            return None if any(target.iterdir()) else f"nothing written into the link's target {target}"
        if not target.is_file() or target.read_bytes() == b"old":
            return f"the link's target {target} did not get the data: {state(target)}"
        return None

    return check


# ---------------------------------------------------------------- A: output paths


def family_a(a: Assets) -> list[Case]:
    voc = ["--config", str(a.voc_config)]
    ort = ["-b", "onnxruntime"]
    lg = [
        "loadgen",
        *ort,
        *voc,
        "--scenario",
        "SingleStream",
        "--duration",
        "1",
        "--min-queries",
        "1",
        "--dataset-size",
        "2",
    ]
    prof = ["profile", *ort, "--model", str(a.voc), "--input", "mel:1x4x4"]
    cmp_ = ["compare", "--backends", "onnxruntime", "--runs", "1", *voc, *QUICK]
    opt = ["optimize", *ort, "--method", "ort-dynamic", "--runs", "1", "--dataset-size", "2"]
    bench = ["bench", *ort, *voc, *QUICK]
    subset = ["data", "subset", str(a.text), "-n", "1"]
    # (name, args with FILE, suffix)
    files = [
        ("bench -o", [*bench, "-o", "FILE"], ".json"),
        ("bench --csv", [*bench, "--csv", "FILE"], ".csv"),
        ("bench --markdown", [*bench, "--markdown", "FILE"], ".md"),
        ("bench --save-outputs", [*bench, "--save-outputs", "FILE"], ".npz"),
        ("bench --save-text", [*bench, "--save-text", "FILE"], ".tsv"),
        ("compare -o", [*cmp_, "-o", "FILE"], ".json"),
        ("compare --csv", [*cmp_, "--csv", "FILE"], ".csv"),
        ("compare --markdown", [*cmp_, "--markdown", "FILE"], ".md"),
        ("compare --plot", [*cmp_, "--plot", "FILE"], ".png"),
        ("optimize -o", [*opt, "-o", "FILE"], ".json"),
        ("optimize --csv", [*opt, "--csv", "FILE"], ".csv"),
        ("optimize --markdown", [*opt, "--markdown", "FILE"], ".md"),
        ("loadgen -o", [*lg, "-o", "FILE"], ".json"),
        ("loadgen --csv", [*lg, "--csv", "FILE"], ".csv"),
        ("loadgen --markdown", [*lg, "--markdown", "FILE"], ".md"),
        ("profile profile_path", [*prof, "--profiler-options", "batch_range=[1,3]; profile_path=FILE"], ".json"),
        ("data subset -o", [*subset, "-o", "FILE"], ".txt"),
    ]
    folders = [
        ("bench --dump-speech-waveforms-dir", [*bench, "--dump-speech-waveforms-dir", "DIR"]),
        ("compare --workdir", [*cmp_, "--workdir", "DIR"]),
        ("optimize --out-dir", [*opt, "--out-dir", "DIR"]),
        ("loadgen --log-dir", [*lg, "--log-dir", "DIR"]),
        ("profile profile_path=DIR/", [*prof, "--profiler-options", "batch_range=[1,3]; profile_path=DIR/"]),
        ("zoo build --out", ["zoo", "build", "--model", "s2t", "--out", "DIR"]),
        ("data synth OUT_DIR", ["data", "synth", "DIR", "-n", "1"]),
        ("plugin new --dir", ["plugin", "new", "mybackend", "--dir", "DIR"]),
    ]

    def put(args: list[str], slot: str, path: Path) -> list[str]:
        return [x.replace(slot + "/", f"{path}/").replace(slot, str(path)) for x in args]

    cases = []
    for name, args, suffix in files:
        for kind in ("fifo", "device", "other-kind", "under-a-file", "long-name"):
            p, words = a.hostile(kind, "file", suffix)
            # docs/profiler.md: a profile_path that is an existing folder takes the trace inside it
            ok = name.startswith("profile") and kind == "other-kind"
            cases.append(
                Case(
                    "A",
                    f"{name} <- {kind}",
                    put(args, "FILE", p),
                    expect=0 if ok else 2,
                    needle=words,
                    watch=[p, p.parent],
                )
            )
    for name, args in folders:
        for kind in ("fifo", "device", "other-kind", "under-a-file", "long-name"):
            p, words = a.hostile(kind, "folder")
            cases.append(Case("A", f"{name} <- {kind}", put(args, "DIR", p), needle=words, watch=[p, p.parent]))
    # a link to a FIFO is written through: to a FIFO, which is refused
    for name, args, _suffix in files[:1] + files[5:6] + files[-1:]:
        d = a.fresh("link-fifo")
        os.mkfifo(d / "fifo")
        (d / "l").symlink_to(d / "fifo")
        cases.append(
            Case(
                "A", f"{name} <- link to a FIFO", put(args, "FILE", d / "l"), needle="FIFO", watch=[d / "l", d / "fifo"]
            )
        )
    # data subset never writes its input, through its name or a link
    d = a.fresh("self")
    (d / "in.txt").write_text("one two\nthree four five\n")
    (d / "l.txt").symlink_to(d / "in.txt")
    for out in ("in.txt", "l.txt"):
        cases.append(
            Case(
                "A",
                f"data subset in -o {out} (its own input)",
                ["data", "subset", str(d / "in.txt"), "-n", "1", "-o", str(d / out)],
                needle="input",
                watch=[d / "in.txt", d / "l.txt"],
            )
        )
    # an empty dataset writes nothing over -o
    d = a.fresh("empty")
    (d / "e.txt").write_text("\n\n")
    (d / "kept.txt").write_text("keep")
    cases.append(
        Case(
            "A",
            "data subset of no samples -o existing",
            ["data", "subset", str(d / "e.txt"), "-n", "1", "-o", str(d / "kept.txt")],
            needle="no samples",
            watch=[d / "kept.txt"],
        )
    )
    # data synth: each entry of its folder checked first
    for entry in ("manifest.tsv", "wav/utt000.wav"):
        d = a.fresh("synth")
        (d / "wav").mkdir()
        os.mkfifo(d / entry)
        cases.append(
            Case(
                "A",
                f"data synth with a FIFO as {entry}",
                ["data", "synth", str(d), "-n", "1"],
                needle="FIFO",
                watch=[d / entry],
            )
        )
    d = a.fresh("synth")
    (d / "wav").write_text("keep")
    cases.append(
        Case(
            "A", "data synth with a file as wav/", ["data", "synth", str(d), "-n", "1"], needle="wav", watch=[d / "wav"]
        )
    )
    # compare's children's files in --workdir, profile's categories beside the trace
    d = a.fresh("work")
    (d / "run1" / "onnxruntime").mkdir(parents=True)
    os.mkfifo(d / "run1" / "onnxruntime" / "stderr.txt")
    cases.append(
        Case(
            "A",
            "compare --workdir with a FIFO as a child's stderr.txt",
            [*cmp_, "--workdir", str(d)],
            needle="FIFO",
            watch=[d / "run1" / "onnxruntime" / "stderr.txt"],
        )
    )
    d = a.fresh("cats")
    os.mkfifo(d / "t.categories.json")
    cases.append(
        Case(
            "A",
            "profile with a FIFO beside the trace (t.categories.json)",
            [*prof, "--profiler-options", f"batch_range=[1,3]; profile_path={d / 't.json'}"],
            needle="FIFO",
            watch=[d / "t.categories.json"],
        )
    )

    # symlinks: written through, the link stays a link (cheap successful runs)
    def through(name: str, args: list[str], links: list[tuple[Path, Path, bool]], timeout: float = 180.0) -> Case:
        checks = [written_through(link, target, folder) for link, target, folder in links]

        def check() -> str | None:
            return next((m for m in (c() for c in checks) if m), None)

        return Case("A", name, args, expect=0, check=check, timeout=timeout)

    link, target = a.link_to("file", ".txt")
    cases.append(through("data subset -o symlink", [*subset, "-o", str(link)], [(link, target, False)]))
    for opt_name, suffix in (("-o", ".json"), ("--csv", ".csv"), ("--markdown", ".md"), ("--save-outputs", ".npz")):
        link, target = a.link_to("file", suffix)
        cases.append(
            through(
                f"bench {opt_name} symlink",
                [*bench, "--meters", "runtime", opt_name, str(link)],
                [(link, target, False)],
            )
        )
    link, target = a.link_to("folder")
    cases.append(
        through(
            "bench --dump-speech-waveforms-dir symlink",
            [*bench, "--meters", "runtime", "--dump-speech-waveforms-dir", str(link)],
            [(link, target, True)],
        )
    )
    ls = {k: a.link_to("file", k) for k in (".json", ".csv", ".md", ".png")}
    wl, wt = a.link_to("folder")
    cases.append(
        through(
            "compare -o/--csv/--markdown/--plot/--workdir symlinks",
            [
                *cmp_,
                "--meters",
                "runtime",
                "-o",
                str(ls[".json"][0]),
                "--csv",
                str(ls[".csv"][0]),
                "--markdown",
                str(ls[".md"][0]),
                "--plot",
                str(ls[".png"][0]),
                "--workdir",
                str(wl),
            ],
            [(lk, tg, False) for lk, tg in ls.values()] + [(wl, wt, True)],
            timeout=300,
        )
    )
    link, target = a.link_to("file")
    cases.append(
        through(
            "profile profile_path symlink",
            [*prof, "--profiler-options", f"batch_range=[1,3]; profile_path={link}"],
            [(link, target, False)],
        )
    )
    link, target = a.link_to("file")
    ll, lt = a.link_to("folder")
    cases.append(
        through(
            "loadgen -o / --log-dir symlinks",
            [*lg, "-o", str(link), "--log-dir", str(ll)],
            [(link, target, False), (ll, lt, True)],
        )
    )
    link, target = a.link_to("folder")
    cases.append(
        through("plugin new --dir symlink", ["plugin", "new", "mybackend", "--dir", str(link)], [(link, target, True)])
    )
    if shutil.which("espeak-ng") and shutil.which("sox"):
        link, target = a.link_to("folder")
        cases.append(
            through("data synth OUT_DIR symlink", ["data", "synth", str(link), "-n", "1"], [(link, target, True)])
        )
    return cases


# ---------------------------------------------------------------- B: numbers


def family_b(a: Assets) -> list[Case]:
    voc = ["--config", str(a.voc_config)]
    bench = ["bench", "-b", "onnxruntime", *voc]
    cmp_ = ["compare", "--backends", "onnxruntime", "--runs", "1", *voc, "--dataset-size", "2"]
    lg = [
        "loadgen",
        "-b",
        "onnxruntime",
        *voc,
        "--scenario",
        "Server",
        "--duration",
        "1",
        "--min-queries",
        "1",
        "--dataset-size",
        "2",
    ]
    opt = ["optimize", "-b", "onnxruntime", "--method", "ort-dynamic", "--runs", "1", "--dataset-size", "2"]
    run = ["run", "-b", "onnxruntime", "--model", str(a.voc), "--feeds", str(a.feeds)]
    prof = ["profile", "-b", "onnxruntime", "--model", str(a.voc), "--input", "mel:1x4x4"]
    cases = []

    def add(name: str, args: list[str], needle: str | None, timeout: float = 60.0) -> None:
        cases.append(Case("B", name, args, needle=needle, timeout=timeout))

    for v in ("0", "-1", "9999", "nan", "1e100"):
        add(f"bench --threads {v}", [*bench, *QUICK, "--threads", v], "threads")
        add(f"compare --threads {v}", [*cmp_, "--threads", v], "threads")
        add(f"loadgen --threads {v}", [*lg, "--threads", v], "threads")
        add(f"run --threads {v}", [*run, "--threads", v], "threads")
        add(f"profile --threads {v}", [*prof, "--threads", v], "threads")
    for v in ("0", "-1", "9999", "nan", "1,0", "1,,2", "a"):
        add(f"check --threads {v}", ["check", "--meters", "roofline", "--quick", "--threads", v], "threads")
    add("compare --threads 1,9999", [*cmp_, "--threads", "1,9999"], "threads")
    for v in ("-5", str(2**33), "nan"):
        add(f"bench --seed {v}", [*bench, *QUICK, "--seed", v], "seed")
        add(
            f"data subset --seed {v}",
            ["data", "subset", str(a.text), "-n", "1", "-o", str(a.fresh() / "s.txt"), "--seed", v],
            "seed",
        )
        add(f"profile --seed {v}", [*prof, "--seed", v], "seed")
        add(f"--set general.seed={v}", [*bench, *QUICK, "--set", f"general.seed={v}"], "seed")
    big = str(10**12)
    for opt_name in ("--repeat", "--dataset-size", "--warmup"):
        for v in ("-1", big) + (("0",) if opt_name != "--warmup" else ()):
            rest = [x for i, x in enumerate(QUICK) if not (x == opt_name or (i and QUICK[i - 1] == opt_name))]
            add(
                f"bench {opt_name} {v}",
                [*bench, *rest, opt_name, v],
                opt_name.strip("-") + "|" + opt_name.strip("-").replace("-", "_"),
                timeout=30,
            )
    for v in ("0", "-1", big):
        add(
            f"compare --runs {v}",
            ["compare", "--backends", "onnxruntime", *voc, "--dataset-size", "2", "--runs", v],
            "runs",
            timeout=30,
        )
        add(
            f"optimize --runs {v}",
            ["optimize", "-b", "onnxruntime", "--method", "ort-dynamic", "--dataset-size", "2", "--runs", v],
            "runs",
            timeout=30,
        )
        add(f"optimize --calibration-size {v}", [*opt, "--calibration-size", v], "calibration", timeout=30)
        add(f"compare --jobs {v}", [*cmp_, "--jobs", v], "jobs", timeout=30)
        add(
            f"data subset -n {v}",
            ["data", "subset", str(a.text), "-o", str(a.fresh() / "s.txt"), "-n", v],
            "-n",
            timeout=30,
        )
        if v == big:  # more than the dataset holds: all of it, and it says how many ("wrote 2 random samples")
            cases[-1].expect = 0
        add(f"data synth -n {v}", ["data", "synth", str(a.fresh() / "syn"), "-n", v], "-n", timeout=30)
    for v in ("nan", "inf", "0", "-1"):
        add(f"compare --timeout {v}", [*cmp_, "--timeout", v], "timeout")
        add(f"optimize --timeout {v}", [*opt, "--timeout", v], "timeout")
    for v in ("0", "nan", "-1", "inf"):
        add(f"compare --best --best-budget {v}", [*cmp_, "--best", "--best-budget", v], "budget")
    for v in ("0", "-1", "nan", "inf", "1e300"):
        add(f"loadgen --target-qps {v}", [*lg, "--target-qps", v], "qps")
    for v in ("0", "-1", "nan", "inf"):
        add(f"loadgen --duration {v}", [*lg, "--duration", v], "duration")
        add(f"loadgen --target-latency-ms {v}", [*lg, "--target-latency-ms", v], "latency")
    for v in ("0", "100", "nan"):
        add(f"loadgen --percentile {v}", [*lg, "--percentile", v], "percentile")
    for v in ("0", "10000"):
        add(f"loadgen --instances {v}", [*lg, "--instances", v], "instances", timeout=60)
    add(
        "loadgen --samples-per-query 0",
        [
            "loadgen",
            "-b",
            "onnxruntime",
            *voc,
            "--scenario",
            "MultiStream",
            "--duration",
            "1",
            "--samples-per-query",
            "0",
        ],
        "samples",
    )
    add("loadgen --find-peak --budget 0", [*lg, "--find-peak", "--budget", "0"], "budget")
    for v in ("nan", "-1", "inf"):
        add(f"optimize --max-wer-increase {v}", [*opt, "--max-wer-increase", v], "wer")
        add(f"optimize --min-agreement {v}", [*opt, "--min-agreement", v], "agreement")
    add(
        "data synth --sample-rate 0",
        ["data", "synth", str(a.fresh() / "syn"), "-n", "1", "--sample-rate", "0"],
        "sample",
    )
    add(
        "data synth --sample-rate 1e9",
        ["data", "synth", str(a.fresh() / "syn"), "-n", "1", "--sample-rate", "1000000000"],
        "sample",
    )
    add("bench --target-sr 0", [*bench, *QUICK, "--target-sr", "0"], "target")
    for v in ("nan", "-5", "1e400"):
        add(f"diff --fail-above {v}", ["diff", str(a.bench_json), str(a.bench_json), "--fail-above", v], "fail-above")
    sets = {
        "general.generated_seconds": (".inf", "1e12", "[1, .inf]", "[0, 1]", "[-1, 2]", "[.nan, 1]", "[]", "[3, 1, 2]"),
        "general.threads": ("9999", "0", ".nan"),
        "general.dataset_size": ("0", big),
        "general.repeat": (big, "0"),
        "general.warmup": (big, "-1", ".nan"),
        "general.sample_rate": ("0", str(10**9), "-16000", ".nan", "16000.5"),
        "general.target_sr": ("0", str(10**9)),
        "general.feat_dim": ("0", str(10**9)),
        "general.batch_size": ("0", str(10**6)),
        "stage1.beam": ("0", str(10**6), "-1", "1.5"),
        "stage1.max_len_a": ("-1", ".inf", ".nan"),
        "stage1.max_len_b": ("0", str(10**12)),
        "stage1.min_len": ("-1", str(10**12)),
        "stage1.output_sample_rate": ("0", str(10**9)),
        "stage1.vad_threshold": ("0", "1", ".nan"),
    }
    for key, values in sets.items():
        option = "--" + key.split(".")[1].replace("_", "-")  # a --set is replaced by the option of the same key
        rest = [x for i, x in enumerate(QUICK) if not (x == option or (i and QUICK[i - 1] == option))]
        for v in values:
            add(f"bench --set {key}={v}", [*bench, *rest, "--set", f"{key}={v}"], key.split(".")[1], timeout=30)
    # the same numbers from a config file, through config check: refused the same way
    for key, v in (
        ("general.generated_seconds", ".inf"),
        ("general.threads", "9999"),
        ("stage1.beam", "0"),
        ("general.sample_rate", "0"),
        ("general.seed", "-5"),
    ):
        d = a.fresh("cfg")
        section, k = key.split(".")
        (d / "c.yaml").write_text(f"{section}:\n  {k}: {v}\n")
        add(f"config check {key}: {v}", ["config", "check", str(d / "c.yaml")], k)
    # input shapes of profile --model
    for v in (
        "mel:0x4x4",
        "mel:1x-4x4",
        "mel:axbxc",
        "mel:100000x100000x100000",
        "mel:1x4x4:nosuch",
        "mel",
        "nosuch:1x4x4",
    ):
        add(f"profile --input {v}", [*prof[:-2], "--input", v], "input", timeout=60)
    return cases


# ---------------------------------------------------------------- C: lists and keys


def family_c(a: Assets) -> list[Case]:
    voc = ["--config", str(a.voc_config)]
    bench = ["bench", "-b", "onnxruntime", *voc, *QUICK]
    cmp_ = ["compare", "--runs", "1", *voc, "--dataset-size", "2"]
    cases = []

    def add(name: str, args: list[str], needle: str | None) -> None:
        cases.append(Case("C", name, args, needle=needle, timeout=60))

    for v in ("", " , ", "torch,,paddle", "nosuch", "onnxruntime,nosuch", "onnxruntime,onnxruntime", ","):
        add(f"compare --backends {v!r}", [*cmp_, "--backends", v], "backend")
    for v in ("", "nosuch", " ", "ONNXRUNTIME"):
        add(f"bench -b {v!r}", ["bench", "-b", v, *voc, *QUICK], "backend")
        add(f"run -b {v!r}", ["run", "-b", v, "--model", str(a.voc), "--feeds", str(a.feeds)], "backend")
    add("check --backend nosuch", ["check", "--quick", "--meters", "runtime", "--backend", "nosuch"], "backend")
    add("loadgen -b nosuch", ["loadgen", "-b", "nosuch", *voc, "--scenario", "Offline", "--duration", "1"], "backend")
    add("profile -b nosuch", ["profile", "-b", "nosuch", "--model", str(a.voc), "--input", "mel:1x4x4"], "backend")
    for v in ("", "runtime,,memory", "nosuch", " , ", "runtime,nosuch", "papi"):
        add(f"bench --meters {v!r}", [*bench, "--meters", v], "meter")
        add(f"compare --meters {v!r}", [*cmp_, "--backends", "onnxruntime", "--meters", v], "meter")
    for v in ("", "nosuch", "runtime,,memory"):
        add(f"check --meters {v!r}", ["check", "--quick", "--meters", v], "meter")
    for v in (
        "preset",
        "=tiny",
        "preset=",
        "nosuch=1,2",
        "general.threads=a,b",
        "preset=tiny,,base",
        "general.nosuch=1,2",
        "stage9.beam=1,2",
        "general.seed=1,2=3",
    ):
        add(f"compare --sweep {v!r}", [*cmp_, "--backends", "onnxruntime", "--sweep", v], None)
    for v in (
        "noequals",
        "general.nosuch=1",
        "nosection.key=1",
        "=1",
        "general.=1",
        "stage9.beam=1",
        "general.threads=[1",
        "general.model_type=NOPE",
        "stage1.nosuch=1",
        "general.meters=5",
        "general.threads={a: 1}",
        ".threads=1",
    ):
        add(f"bench --set {v!r}", [*bench, "--set", v], None)
    for v in ("Nosuch", "singlestream", ""):
        add(
            f"loadgen --scenario {v!r}",
            ["loadgen", "-b", "onnxruntime", *voc, "--scenario", v, "--duration", "1"],
            "scenario",
        )
    add("bench --model-type NOPE", [*bench, "--model-type", "NOPE"], "model-type")
    add("bench --dataset-type nosuch", [*bench, "--dataset-type", "nosuch"], "dataset-type")
    add("bench --preset nosuch", ["bench", "-b", "onnxruntime", *QUICK, "--preset", "nosuch"], "nosuch")
    add("bench --device nosuch", [*bench, "--device", "nosuch"], "device")
    add(
        "optimize --method nosuch",
        ["optimize", "-b", "onnxruntime", "--method", "nosuch", "--runs", "1", "--dataset-size", "2"],
        "method",
    )
    add(
        "optimize --method ''",
        ["optimize", "-b", "onnxruntime", "--method", "", "--runs", "1", "--dataset-size", "2"],
        "method",
    )
    add(
        "optimize --method ort-dynamic,,ort-dynamic",
        ["optimize", "-b", "onnxruntime", "--method", "ort-dynamic,,", "--runs", "1", "--dataset-size", "2"],
        "method",
    )
    add("zoo build --model nosuch", ["zoo", "build", "--model", "nosuch", "--out", str(a.fresh() / "z")], "model")
    add("zoo build --preset nosuch", ["zoo", "build", "--preset", "nosuch", "--out", str(a.fresh() / "z")], "preset")
    prof = ["profile", "-b", "onnxruntime", "--model", str(a.voc), "--input", "mel:1x4x4"]
    for v in (
        "garbage",
        "batch_range=[a,b]",
        "nosuch=1",
        "batch_range=[20,10]",
        "batch_range=[-1,3]",
        "sorted_key=nosuch",
        "batch_range=[1,10000000000000]",
        "profile_path=",
    ):
        add(f"profile --profiler-options {v!r}", [*prof, "--profiler-options", v], None)
    for v in ("", "../evil", "a/b", "x y", "-x", "." * 3, "n" * 300):
        add(f"plugin new {v[:20]!r}", ["plugin", "new", v, "--dir", str(a.fresh())], None)
    add("profile --format nosuch", [*prof, "--format", "nosuch"], "format")
    add(
        "run --format nosuch",
        ["run", "-b", "onnxruntime", "--model", str(a.voc), "--feeds", str(a.feeds), "--format", "nosuch"],
        "format",
    )
    add(
        "bench --set stage1.options={onnxruntime: {nosuch: 1}}",
        [*bench, "--set", "stage1.options={onnxruntime: {nosuch: 1}}"],
        "nosuch",
    )
    add("bench --set stage1.backend=nosuch", [*bench, "--set", "stage1.backend=nosuch"], "nosuch")
    add("bench --set stage1.derive=nosuch", [*bench, "--set", "stage1.derive=nosuch"], "derive")
    return cases


# ---------------------------------------------------------------- D: YAML configs


def laughs(levels: int = 9) -> str:
    parts = ['&a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi"[: levels - 1], strict=False):
        parts.append(f"&{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "general:\n  model_type: [" + ", ".join(parts) + "]\n"


def family_d(a: Assets) -> list[Case]:
    texts: dict[str, bytes | None] = {
        "non-string key": b"general: {1: 2}\n",
        "null key": b"general: {null: 2}\n",
        "bool key": b"general:\n  yes: 2\n",
        "top-level int key": b"1: {model: s2t}\n",
        "complex key": b"general:\n  ? [a, b]\n  : 1\n",
        "billion laughs": laughs().encode(),
        "recursive alias": b"general:\n  meters: &a [runtime, *a]\n",
        "1 MB value": b"general:\n  model_type: " + b"x" * 1_000_000 + b"\n",
        "huge integer": b"general:\n  seed: " + b"9" * 5000 + b"\n",
        "merge of a scalar": b"general:\n  <<: 5\n",
        "merge of an unknown key": b"x-b: &b {nosuch: 1}\nstage1:\n  <<: *b\n",
        "duplicate key": b"general: {model_type: S2T}\nstage1:\n  beam: 1\n  beam: 2\n",
        "tabs": b"general:\n\tmodel_type: S2T\n",
        "empty file": b"",
        "only a comment": b"# nothing\n",
        "binary garbage": np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes(),
        "UTF-16": "general: {model_type: S2T}\n".encode("utf-16"),
        "top-level list": b"- general\n- stage1\n",
        "top-level string": b"hello\n",
        "section is a list": b"general: [1, 2]\n",
        "unknown section": b"stage9: {beam: 1}\n",
        "unknown key": b"general: {nosuch: 1}\n",
        "python tag": b"general: !!python/object/apply:os.system ['touch " + str(a.marker).encode() + b"']\n",
        "custom tag": b"general: !foo {a: 1}\n",
        "deep nesting": b"general: " + b"[" * 5000 + b"]" * 5000 + b"\n",
        "nosuch model": b"stage1: {model: nosuch}\n",
        "format nosuch": b"stage1: {model: s2t, preset: tiny, format: nosuch}\n",
        "model_dir missing": b"stage1: {model: s2t, model_dir: /nonexistent/zoo/s2t}\n",
        "path is a folder": f"general: {{model_type: S2S}}\nstage1: {{path: {a.root}, inputs: [{{name: mel, source: features}}], outputs: [wave]}}\n".encode(),
        "path missing": b"general: {model_type: S2S}\nstage1: {path: /nonexistent.onnx, inputs: [{name: mel, source: features}], outputs: [wave]}\n",
        "wrong input name": f"general: {{model_type: S2S}}\nstage1: {{path: {a.voc}, inputs: [{{name: nosuch, source: features}}], outputs: [wave]}}\n".encode(),
        "wrong output name": f"general: {{model_type: S2S}}\nstage1: {{path: {a.voc}, inputs: [{{name: mel, source: features}}], outputs: [nosuch]}}\n".encode(),
        "dataset_path missing": b"general: {dataset_type: raw, dataset_path: /nonexistent.tsv}\n",
    }
    cases = []
    for name, text in texts.items():
        d = a.fresh("yaml")
        config = d / "c.yaml"
        config.write_bytes(text or b"")
        backend = ["-b", "onnxruntime"] if name.startswith(("wrong ", "path ")) else []
        empty_ok = False  # an empty config has no stages: one line, exit 2 ("model_type S2T needs stage1")
        for cmd in (
            ["config", "check", *backend, str(config)],
            ["bench", "-b", "onnxruntime", "--config", str(config), *QUICK],
        ):
            if empty_ok and cmd[0] == "bench":
                continue
            check = (lambda: "the python tag ran code" if a.marker.exists() else None) if "tag" in name else None
            cases.append(
                Case(
                    "D",
                    f"{cmd[0]} {cmd[1] if cmd[0] == 'config' else ''}: {name}".replace("  ", " "),
                    cmd,
                    expect=0 if empty_ok else 2,
                    needle=None if empty_ok else str(config),
                    check=check,
                    timeout=60,
                )
            )
    # a merge key: valid YAML, works
    d = a.fresh("merge")
    config = d / "c.yaml"
    config.write_text(
        f"x-voc: &voc {{path: {a.voc}, inputs: [{{name: mel, source: features}}], outputs: [wave]}}\n"
        "general: {model_type: S2S, generated_seconds: [0.5, 0.5]}\nstage1:\n  <<: *voc\n"
    )
    cases.append(
        Case("D", "config check: merge keys (valid)", ["config", "check", "-b", "onnxruntime", str(config)], expect=0)
    )
    cases.append(
        Case(
            "D",
            "bench: merge keys (valid)",
            ["bench", "-b", "onnxruntime", "--config", str(config), *QUICK, "--meters", "runtime"],
            expect=0,
        )
    )
    # not a file
    d = a.fresh("notfile")
    os.mkfifo(d / "fifo.yaml")
    os.mknod(d / "zero.yaml", stat.S_IFCHR | 0o600, os.makedev(1, 5))  # a private /dev/zero node
    (d / "dir.yaml").mkdir()
    for name, path, needle in (
        ("a folder", d / "dir.yaml", "dir.yaml"),
        ("a missing file", d / "missing.yaml", "missing.yaml"),
        ("/dev/zero", Path("/dev/zero"), "/dev/zero"),
        ("a private /dev/zero node", d / "zero.yaml", "zero.yaml"),
        ("a FIFO", d / "fifo.yaml", "fifo.yaml"),
        ("/proc/self/mem", Path("/proc/self/mem"), "/proc/self/mem"),
    ):
        watch = [path] if path.parent == d else []
        cases.append(
            Case(
                "D",
                f"config check: {name} as config",
                ["config", "check", str(path)],
                needle=needle,
                watch=watch,
                timeout=30,
            )
        )
        cases.append(
            Case(
                "D",
                f"bench: {name} as config",
                ["bench", "-b", "onnxruntime", "--config", str(path), *QUICK],
                needle=needle,
                watch=watch,
                timeout=30,
            )
        )
    cases.append(
        Case(
            "D",
            "config check -: binary garbage on stdin",
            ["config", "check", "-"],
            stdin=texts["binary garbage"],
            needle="stdin",
        )
    )
    cases.append(
        Case(
            "D",
            "config check -: billion laughs on stdin",
            ["config", "check", "-"],
            stdin=laughs().encode(),
            needle="stdin",
        )
    )
    cases.append(
        Case(
            "D",
            "bench --set general.meters=<alias bomb>",
            ["bench", "-b", "onnxruntime", "--set", "general.meters=" + laughs().split("model_type: ", 1)[1].strip()],
            needle="--set",
        )
    )
    cases.append(
        Case("D", "config show: billion laughs", ["config", "show", str(a.fresh("y") / "c.yaml")], needle="c.yaml")
    )
    (Path(cases[-1].args[-1])).write_text(laughs())
    return cases


# ---------------------------------------------------------------- E: datasets


def family_e(a: Assets) -> list[Case]:
    bench = ["bench", "-b", "onnxruntime", "--dataset-size", "1", "--repeat", "1", "--warmup", "0", "-q"]
    cases = []

    def raw_manifest(d: Path, lines: list[str], wrd: bytes | None = None) -> Path:
        m = d / "m.tsv"
        m.write_text("".join(line + "\n" for line in lines))
        if wrd is not None:
            (d / "m.wrd").write_bytes(wrd)
        return m

    def on_all(name: str, path: Path, kind: str, needle: str | None, watch: list[Path] | None = None) -> None:
        watch = watch or []
        cases.append(
            Case(
                "E",
                f"bench {kind}: {name}",
                [*bench, "--dataset-type", kind, "--dataset-path", str(path)],
                needle=needle,
                watch=watch,
                timeout=60,
            )
        )
        t = {"raw": "raw", "npz": "npz", "npy": "npy", "text": "text"}.get(kind)
        if t:
            cases.append(
                Case(
                    "E",
                    f"data stats {kind}: {name}",
                    ["data", "stats", str(path), "--type", t],
                    needle=needle,
                    watch=watch,
                    timeout=60,
                )
            )
            out = a.fresh("sub") / ("s.npz" if kind in ("npz", "npy") else "s.tsv" if kind == "raw" else "s.txt")
            cases.append(
                Case(
                    "E",
                    f"data subset {kind}: {name}",
                    ["data", "subset", str(path), "--type", t, "-n", "1", "-o", str(out)],
                    needle=needle,
                    watch=watch,
                    check=lambda o=out: f"{o} was written" if o.exists() else None,
                    timeout=60,
                )
            )

    d = a.fresh("raw")
    a.wav(d, "a.wav", 16000)
    on_all("non-UTF-8 .wrd", raw_manifest(d, [str(d), "a.wav\t16000"], b"caf\xe9 au lait\n"), "raw", "not UTF-8")
    d = a.fresh("raw")
    m = d / "m.tsv"
    m.write_bytes(f"{d}\n".encode() + b"\xff.wav\t5\n")
    on_all("non-UTF-8 manifest", m, "raw", "not UTF-8")
    d = a.fresh("raw")
    on_all("/proc/self/mem as audio", raw_manifest(d, ["/", "proc/self/mem\t100"]), "raw", "/proc")
    d = a.fresh("raw")
    os.mknod(d / "zero.wav", stat.S_IFCHR | 0o600, os.makedev(1, 5))
    on_all(
        "a device node as audio",
        raw_manifest(d, [str(d), "zero.wav\t100"]),
        "raw",
        "character device",
        [d / "zero.wav"],
    )
    d = a.fresh("raw")
    os.mkfifo(d / "p.wav")
    on_all("a FIFO as audio", raw_manifest(d, [str(d), "p.wav\t100"]), "raw", "FIFO", [d / "p.wav"])
    d = a.fresh("raw")
    (d / "m.tsv").write_text("")
    on_all("an empty manifest", d / "m.tsv", "raw", "m.tsv")
    d = a.fresh("raw")
    on_all("a manifest of its root line only", raw_manifest(d, [str(d)]), "raw", "m.tsv")
    d = a.fresh("raw")
    on_all("a manifest naming missing audio", raw_manifest(d, [str(d), "missing.wav\t16000"]), "raw", "missing.wav")
    d = a.fresh("raw")
    (d / "g.wav").write_bytes(b"RIFF\x00\x00garbage" + bytes(range(256)) * 4)
    on_all("a garbage wav", raw_manifest(d, [str(d), "g.wav\t1000"]), "raw", "g.wav")
    d = a.fresh("raw")
    a.wav(d, "z.wav", 0)
    on_all("a 0-sample wav", raw_manifest(d, [str(d), "z.wav\t0"]), "raw", "z.wav")
    d = a.fresh("raw")
    a.wav(d, "a.wav", 16000)
    on_all("a manifest with a bad frame count", raw_manifest(d, [str(d), "a.wav\tlots"]), "raw", "m.tsv")
    d = a.fresh("raw")
    a.wav(d, "a.wav", 16000)
    on_all("a manifest with a negative frame count", raw_manifest(d, [str(d), "a.wav\t-5"]), "raw", "m.tsv")
    d = a.fresh("raw")
    (d / "a.wav").mkdir()
    on_all("a folder as audio", raw_manifest(d, [str(d), "a.wav\t100"]), "raw", "a.wav", [d / "a.wav"])
    d = a.fresh("raw")
    (d / "m.tsv").mkdir()
    on_all("a folder as manifest", d / "m.tsv", "raw", "m.tsv", [d / "m.tsv"])
    d = a.fresh("npy")
    np.save(d / "z.npy", np.array(5))
    on_all("a 0-d .npy", d / "z.npy", "npy", "0-d")
    d = a.fresh("npy")
    a.evil_pickle(d / "p.npy")  # a bare pickle named .npy
    cases.append(
        Case(
            "E",
            "bench npy: a pickle, without --unsafe-pickle-runs-code",
            [*bench, "--dataset-type", "npy", "--dataset-path", str(d / "p.npy")],
            check=lambda: "unpickled" if a.marker.exists() else None,
        )
    )
    d = a.fresh("npy")
    arr = np.empty(2, object)
    arr[0], arr[1] = np.zeros((3, 80), np.float32), np.zeros((4, 80), np.float32)
    np.save(d / "o.npy", arr, allow_pickle=True)
    cases.append(
        Case(
            "E",
            "bench npy: an object .npy, without --unsafe-pickle-runs-code",
            [*bench, "--dataset-type", "npy", "--dataset-path", str(d / "o.npy")],
            needle="unsafe-pickle",
        )
    )
    cases.append(
        Case(
            "E",
            "data stats npy: an object .npy, without --unsafe-pickle-runs-code",
            ["data", "stats", str(d / "o.npy")],
            needle="unsafe-pickle",
        )
    )
    d = a.fresh("npz")
    np.savez(d / "e.npz")
    on_all("an empty .npz", d / "e.npz", "npz", "e.npz")
    d = a.fresh("npz")
    np.savez(d / "z.npz", a=np.array(5))
    on_all("an .npz of a 0-d array", d / "z.npz", "npz", "z.npz")
    d = a.fresh("npz")
    (d / "g.npz").write_bytes(b"PK\x03\x04 not a zip")
    on_all("a garbage .npz", d / "g.npz", "npz", "g.npz")
    on_all("/proc/self/mem as .npz", Path("/proc/self/mem"), "npz", "/proc")
    d = a.fresh("txt")
    (d / "t.txt").write_bytes(b"one\ntwo \x80\n")
    on_all("a non-UTF-8 text dataset", d / "t.txt", "text", "not UTF-8")
    d = a.fresh("txt")
    os.mkfifo(d / "p.txt")
    on_all("a FIFO as text dataset", d / "p.txt", "text", "FIFO", [d / "p.txt"])
    d = a.fresh("txt")
    os.mknod(d / "z.txt", stat.S_IFCHR | 0o600, os.makedev(1, 5))
    on_all("a private /dev/zero node as text dataset", d / "z.txt", "text", "character device", [d / "z.txt"])
    on_all("a missing file", a.root / "missing.txt", "text", "missing.txt")
    d = a.fresh("txt")
    (d / "e.txt").write_text("")
    cases.append(
        Case(
            "E",
            "bench text: an empty text dataset",
            [*bench, "--model-type", "MT", "--dataset-type", "text", "--dataset-path", str(d / "e.txt")],
            needle="e.txt",
        )
    )
    d = a.fresh("ref")
    (d / "r.txt").write_bytes(b"\xff\xfe bad\n")
    cases.append(
        Case(
            "E",
            "bench: non-UTF-8 general.reference_path",
            [*bench, "--set", f"general.reference_path={d / 'r.txt'}"],
            needle="r.txt",
        )
    )
    os.mkfifo(d / "r.fifo")
    cases.append(
        Case(
            "E",
            "bench: a FIFO as general.reference_path",
            [*bench, "--set", f"general.reference_path={d / 'r.fifo'}"],
            needle="FIFO",
            watch=[d / "r.fifo"],
        )
    )
    # diff and profile-compare read files too
    d = a.fresh("diff")
    os.mkfifo(d / "p.json")
    os.mknod(d / "z.json", stat.S_IFCHR | 0o600, os.makedev(1, 5))
    (d / "dir.json").mkdir()
    (d / "list.json").write_text("[1, 2]")
    (d / "g.json").write_bytes(b"\xff\xfe{garbage")
    (d / "empty.json").write_text("")
    (d / "obj.json").write_text('{"nosuch": 1}')
    for name in ("p.json", "z.json", "dir.json", "list.json", "g.json", "empty.json", "obj.json", "missing.json"):
        p = d / name
        cases.append(
            Case(
                "E",
                f"diff: {name} as BASE.json",
                ["diff", str(p), str(a.bench_json)],
                needle=name,
                watch=[p],
                timeout=30,
            )
        )
        cases.append(
            Case(
                "E",
                f"profile-compare: {name} as a table",
                ["profile-compare", str(p), str(p)],
                needle=name,
                watch=[p],
                timeout=30,
            )
        )
    return cases


# ---------------------------------------------------------------- F: model files


def family_f(a: Assets) -> list[Case]:
    cases = []
    garbage = np.random.default_rng(1).integers(0, 256, 3000, dtype=np.uint8).tobytes()
    real = a.voc.read_bytes()
    suffixes = {"onnxruntime": [".onnx"], "torch": [".pt", ".pt2"], "paddle": [".json", ".pdmodel"]}
    for backend, sfx in suffixes.items():
        for s in sfx:
            for kind in ("garbage bytes", "empty file", "folder", "FIFO", "truncated real onnx", "a pickle", "missing"):
                d = a.fresh("model")
                m = d / f"x{s}"
                watch = []
                if kind == "garbage bytes":
                    m.write_bytes(garbage)
                elif kind == "empty file":
                    m.write_bytes(b"")
                elif kind == "folder":
                    m.mkdir()
                    watch = [m]
                elif kind == "FIFO":
                    os.mkfifo(m)
                    watch = [m]
                elif kind == "truncated real onnx":
                    m.write_bytes(real[: len(real) // 2])
                elif kind == "a pickle":
                    a.evil_pickle(m)
                if s in (".json", ".pdmodel") and kind not in ("missing",):
                    (d / "x.pdiparams").write_bytes(garbage)
                feeds = d / "feeds.npz"
                np.savez(feeds, x=np.zeros((1, 4), np.float32), mel=np.zeros((1, 4, 4), np.float32))
                cases.append(
                    Case(
                        "F",
                        f"run -b {backend} --model x{s}: {kind}",
                        ["run", "-b", backend, "--model", str(m), "--feeds", str(feeds)],
                        needle=str(m.name),
                        watch=watch,
                        check=lambda: "something unpickled the model file" if a.marker.exists() else None,
                        timeout=180,
                    )
                )
    # the feeds file
    for kind in ("garbage", "a pickle", "a folder", "an object array", "a FIFO"):
        d = a.fresh("feeds")
        f = d / "feeds.npz"
        if kind == "garbage":
            f.write_bytes(b"PK\x03\x04garbage")
        elif kind == "a pickle":
            a.evil_pickle(f)
        elif kind == "a folder":
            f.mkdir()
        elif kind == "an object array":
            np.savez(f, mel=np.array([None, 1], object))
        else:
            os.mkfifo(f)
        cases.append(
            Case(
                "F",
                f"run --feeds: {kind}",
                ["run", "-b", "onnxruntime", "--model", str(a.voc), "--feeds", str(f)],
                needle="feeds",
                watch=[f] if kind in ("a folder", "a FIFO") else [],
                check=lambda: "something unpickled the feeds" if a.marker.exists() else None,
            )
        )
    d = a.fresh("feeds")
    np.savez(d / "f.npz", nosuch=np.zeros((1, 4, 4), np.float32))
    cases.append(
        Case(
            "F",
            "run --feeds without the model's input",
            ["run", "-b", "onnxruntime", "--model", str(a.voc), "--feeds", str(d / "f.npz")],
            needle="mel",
        )
    )
    np.savez(d / "w.npz", mel=np.zeros((1, 4, 4), np.int64))
    cases.append(
        Case(
            "F",
            "run --feeds of the wrong dtype",
            ["run", "-b", "onnxruntime", "--model", str(a.voc), "--feeds", str(d / "w.npz")],
            needle="mel",
        )
    )
    # profile and bench take model files too
    d = a.fresh("model")
    (d / "g.onnx").write_bytes(garbage)
    cases.append(
        Case(
            "F",
            "profile --model garbage.onnx",
            ["profile", "-b", "onnxruntime", "--model", str(d / "g.onnx"), "--input", "mel:1x4x4"],
            needle="g.onnx",
        )
    )
    (d / "dir.onnx").mkdir()
    cases.append(
        Case(
            "F",
            "profile --model folder.onnx",
            ["profile", "-b", "onnxruntime", "--model", str(d / "dir.onnx"), "--input", "mel:1x4x4"],
            needle="folder",
            watch=[d / "dir.onnx"],
        )
    )
    cfg = d / "c.yaml"
    cfg.write_text(
        f"general: {{model_type: S2S}}\nstage1: {{path: {d / 'g.onnx'}, inputs: [{{name: mel, source: features}}], outputs: [wave]}}\n"
    )
    cases.append(
        Case(
            "F",
            "bench: a stage path of garbage .onnx",
            ["bench", "-b", "onnxruntime", "--config", str(cfg), *QUICK],
            needle="g.onnx",
        )
    )
    cases.append(
        Case(
            "F",
            "config check -b onnxruntime: a stage path of garbage .onnx",
            ["config", "check", "-b", "onnxruntime", str(cfg)],
            needle="g.onnx",
        )
    )
    return cases


# ---------------------------------------------------------------- G: zoo manifests


def family_g(a: Assets) -> list[Case]:
    bench = ["bench", "-b", "onnxruntime", "--dataset-size", "1", "--repeat", "1", "--warmup", "0", "-q"]
    cases = []
    for name, content in (
        ("a list", b"[1, 2]"),
        ("a number", b"5"),
        ("a string", b'"s2t"'),
        ("null", b"null"),
        ("a folder", None),
        ("not JSON", b"{not json"),
        ("binary garbage", b"\xff\xfe{"),
        ("empty", b""),
        ("an empty object", b"{}"),
        ("an object of the wrong types", b'{"model": 5, "files": "x", "formats": [1]}'),
        ("a FIFO", "fifo"),
    ):
        d = a.fresh("zoo")
        folder = d / "s2t"
        folder.mkdir()
        manifest = folder / "manifest.json"
        if content is None:
            manifest.mkdir()
        elif content == "fifo":
            os.mkfifo(manifest)
        else:
            manifest.write_bytes(content)
        watch = [manifest]
        cases.append(
            Case(
                "G",
                f"bench model_dir: manifest.json is {name}",
                [*bench, "--set", f"stage1.model_dir={folder}"],
                needle=str(folder),
                watch=watch,
                timeout=30,
            )
        )
        cfg = d / "c.yaml"
        cfg.write_text(f"stage1: {{model: s2t, preset: tiny, model_dir: {folder}}}\n")
        cases.append(
            Case(
                "G",
                f"config check model_dir: manifest.json is {name}",
                ["config", "check", str(cfg)],
                needle=str(folder),
                watch=watch,
                timeout=30,
            )
        )
        cases.append(
            Case(
                "G",
                f"zoo list --dir: manifest.json is {name}",
                ["zoo", "list", "--dir", str(d), "--json"],
                expect=0,
                watch=watch,
                timeout=30,
            )
        )
    d = a.fresh("zoo")
    (d / "file").write_text("x")
    cases.append(
        Case("G", "bench model_dir: a file", [*bench, "--set", f"stage1.model_dir={d / 'file'}"], needle="file")
    )
    cases.append(
        Case("G", "bench model_dir: missing", [*bench, "--set", f"stage1.model_dir={d / 'missing'}"], needle="missing")
    )
    cases.append(Case("G", "zoo list --dir: a file", ["zoo", "list", "--dir", str(d / "file")], needle="file"))
    return cases


FAMILIES = {
    "A": ("output paths", family_a),
    "B": ("numbers", family_b),
    "C": ("lists and keys", family_c),
    "D": ("YAML configs", family_d),
    "E": ("datasets", family_e),
    "F": ("model files", family_f),
    "G": ("zoo manifests", family_g),
}


def judge(case: Case, rc: int | None, out: str, err: str, before: dict[Path, str]) -> list[str]:
    """What is wrong with one run: empty if it passed."""
    wrong = []
    if rc is None:
        return [f"hang (no exit in {case.timeout:.0f} s)"]
    if rc != case.expect:
        wrong.append(f"exit {rc}, expected {case.expect}")
    if "Traceback" in out or "Traceback" in err:
        wrong.append("a traceback")
    if case.expect == 2:
        lines = [line for line in err.splitlines() if line.strip()]
        errors = [line for line in lines if line.startswith("Error:")]
        if len(errors) != 1:
            wrong.append(f"{len(errors)} 'Error:' lines on stderr")
        elif not lines or not lines[-1].startswith("Error:"):
            wrong.append("the last stderr line is not the Error line")
        elif len(errors[0]) > MAX_LINE:
            wrong.append(f"the Error line is {len(errors[0])} characters long")
        elif case.needle and not any(n.lower() in errors[0].lower() for n in case.needle.split("|")):
            wrong.append(f"the Error line does not name {case.needle!r}")
    for path, was in before.items():
        now = state(path)
        if now != was:
            wrong.append(f"{path} changed: {was[:80]} -> {now[:80]}")
    if case.check and (problem := case.check()):
        wrong.append(problem)
    return wrong


def run_case(case: Case, env: dict[str, str], cwd: Path) -> tuple[int | None, str, str, float]:
    if "fifo" in case.name.lower():
        case.timeout = min(case.timeout, 30.0)  # a FIFO is refused at once, or the command blocks on it for ever
    cmd = ["nice", "-n", "19", sys.executable, "-m", "speechperf", *case.args]
    start = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(case.stdin or b"", timeout=case.timeout)
        rc: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)  # the case's own process group, started above
        out, err = proc.communicate()
        rc = None
    return rc, out.decode(errors="replace"), err.decode(errors="replace"), time.monotonic() - start


def short(args: list[str]) -> str:
    text = " ".join(x if len(x) < 120 else x[:60] + f"...({len(x)} chars)" for x in args)
    return "speechperf " + text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", action="append", choices=sorted(FAMILIES), help="only these families")
    parser.add_argument("--only", help="only cases whose name holds this")
    parser.add_argument("--keep", action="store_true", help="keep the tmp folder")
    parser.add_argument("-v", "--verbose", action="store_true", help="a line for every case")
    opts = parser.parse_args()
    if os.geteuid() != 0:
        print("note: not root, os.mknod fails: run as root (in a container) for the device-node cases", file=sys.stderr)
    root = Path(tempfile.mkdtemp(prefix="hostile-sweep-"))
    env = dict(
        os.environ,
        PYTHONPATH=str(REPO),
        PYTHONUNBUFFERED="1",
        SPEECHPERF_CACHE_DIR=os.environ.get("SPEECHPERF_CACHE_DIR", str(REPO / ".cache")),
    )
    cwd = root / "cwd"  # relative defaults (loadgen-logs/) land here, not in the checkout
    try:
        assets = Assets(root)
        cwd.mkdir()
        tally: dict[str, list[int]] = {}
        started = time.monotonic()
        for key in opts.family or sorted(FAMILIES):
            for case in FAMILIES[key][1](assets):
                if opts.only and opts.only not in case.name:
                    continue
                before = {p: state(p) for p in case.watch}
                rc, out, err, took = run_case(case, env, cwd)
                wrong = judge(case, rc, out, err, before)
                t = tally.setdefault(key, [0, 0])
                t[0] += 1
                t[1] += not wrong
                if wrong or opts.verbose:
                    tail = " | ".join(line[:300] for line in [ln for ln in err.splitlines() if ln.strip()][-3:])
                    head = "FAIL" if wrong else "ok  "
                    print(f"{head} [{key}] {case.name}: {'; '.join(wrong) or f'exit {rc}'} ({took:.1f} s)")
                    if wrong:
                        print(f"     $ {short(case.args)}\n     stderr tail: {tail}")
                    sys.stdout.flush()
        print(f"\n{'family':<22} {'tried':>6} {'passed':>7}")
        for key, (tried, passed) in tally.items():
            print(f"{key + ' ' + FAMILIES[key][0]:<22} {tried:>6} {passed:>7}")
        total = [sum(t[i] for t in tally.values()) for i in (0, 1)]
        print(f"{'total':<22} {total[0]:>6} {total[1]:>7}   ({time.monotonic() - started:.0f} s)")
        return 0 if total[0] == total[1] else 1
    finally:
        if opts.keep:
            print(f"kept {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
