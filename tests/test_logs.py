"""Library code logs (speechperf.logs); the CLI sends the records to stderr, as many as -v / -q ask for."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

from speechperf import logs

ROOT = Path(__file__).resolve().parents[1]


def test_configure_writes_the_message_alone_to_the_current_stderr_once(capsys):
    logs.configure(logging.INFO)
    logs.configure(logging.INFO)  # a second call replaces the handler: still one line per record
    log = logging.getLogger("speechperf.benchmark.runner")
    log.info("note: stage%d %s", 1, "asr")
    log.debug("hidden at INFO")
    captured = capsys.readouterr()
    assert captured.err == "note: stage1 asr\n" and captured.out == ""


def test_levels_of_the_cli_flags():
    assert logs.level_of() == logging.INFO
    assert logs.level_of(verbose=1) == logging.DEBUG
    assert logs.level_of(quiet=True) == logging.WARNING


def test_the_cli_quiet_flag_keeps_warnings_and_drops_notes():
    # A CLI run in a child process, as a user runs it: the group option configures logging before the command.
    code = (
        "import logging, sys; from speechperf.cli import main; "
        "cmd = __import__('click').command('say')(lambda: ["
        "logging.getLogger('speechperf.x').info('a note'), logging.getLogger('speechperf.x').warning('a warning')]); "
        "main.add_command(cmd); main(sys.argv[1:])"
    )
    runs = {
        flags: subprocess.run([sys.executable, "-c", code, *flags, "say"], capture_output=True, text=True, cwd=ROOT)
        for flags in ((), ("-q",))
    }
    assert runs[()].returncode == 0 and runs[()].stderr == "a note\na warning\n"
    assert runs[("-q",)].stderr == "a warning\n" and runs[("-q",)].stdout == ""


#: The PaddleSpeech drop-in prints its options as PaddleSpeech does, in a user's training script (docs/profiler.md).
KEPT_PRINTS = {"adapters/paddlespeech.py": 1}


def test_library_code_does_not_print():
    # Only speechperf/cli prints; everything else logs or writes to a stream it was given.
    offenders: list[str] = []
    for folder in ("speechperf", "backends", "adapters"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.is_relative_to(ROOT / "speechperf" / "cli"):
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if line.lstrip().startswith("print(") or " print(" in line.split("#")[0]:
                    offenders.append(f"{path.relative_to(ROOT)}:{number}")
    counts: dict[str, int] = {}
    for offender in offenders:
        counts[offender.split(":")[0]] = counts.get(offender.split(":")[0], 0) + 1
    assert counts == KEPT_PRINTS, offenders
