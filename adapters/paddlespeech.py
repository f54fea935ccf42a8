"""Drop-ins for PaddleSpeech users: ``ProfilerOptions``, ``add_profiler_step`` and the "Benchmark Options" group.

They keep ``paddlespeech.s2t.utils.profiler``'s semantics and drive any backend's step profiler (paddle by
default, as in PaddleSpeech; ``backend=torch`` in the option string, or the ``backend`` argument, picks another):

- ``add_profiler_step(None)`` does nothing, so a trainer without ``--profiler-options`` pays nothing;
- the option string is parsed once, on the first call;
- each call is one step: the first call begins step 0, steps ``batch_range[0]..batch_range[1]-1`` are recorded
  (the same steps as PaddleSpeech's start at ``batch_range[0]`` and stop at ``batch_range[1]``), the summary is
  printed when the range ends, and the process exits with status 0 then if ``exit_on_finished`` is set.

A PaddleSpeech-style trainer wires it in ``after_train_batch`` (``tests/test_profiler_paddlespeech.py`` runs this):

    import argparse, sys
    from speechperf.adapters.paddlespeech import add_benchmark_options, add_profiler_step

    parser = argparse.ArgumentParser()
    add_benchmark_options(parser)   # --profiler-options, --benchmark-batch-size, --benchmark-max-step

    class Trainer:
        def __init__(self, args):
            self.args, self.iteration = args, 0

        def after_train_batch(self):
            if self.args.benchmark_max_step:
                add_profiler_step(self.args.profiler_options)
                if self.iteration > self.args.benchmark_max_step:
                    sys.exit(0)

        def train(self, batches):
            for batch in batches:
                self.train_batch(batch)   # forward, loss, backward, optimizer step
                self.iteration += 1
                self.after_train_batch()

    # python train.py --benchmark-max-step 40 --profiler-options "batch_range=[10,20]; profile_path=/tmp/prof"

click users decorate their command with ``@benchmark_options`` instead. onnxruntime profiles a session rather than
the process: after the first call, ``current_profiler().attach(session)`` gives the session to run. This module imports no framework: the
backend is reached through the registry by name.
"""

from __future__ import annotations

import argparse
import sys

from speechperf.profiler.options import ProfilerOptionError
from speechperf.profiler.options import ProfilerOptions as _Options
from speechperf.registry import get_backend

DEFAULT_BACKEND = "paddle"

PROFILER_OPTIONS_HELP = (
    'The option of profiler, which should be in format "key1=value1;key2=value2;key3=value3", e.g. '
    '"batch_range=[10,20]; state=All; sorted_key=total; profile_path=/tmp/profile; timer_only=false".'
)
BATCH_SIZE_HELP = "The batch size for benchmark: it overrides the batch size of the config."
MAX_STEP_HELP = "The maximum number of training steps for benchmark; the trainer stops after it."


def ProfilerOptions(options_str: str = "") -> _Options:  # noqa: N802 - PaddleSpeech's name for a constructor
    """PaddleSpeech's ``ProfilerOptions(options_str)``: the parsed, validated options."""
    return _Options.parse(options_str)


class _HookState:
    def __init__(self) -> None:
        self.options: _Options | None = None
        self.profiler = None
        self.finished = False


_state = _HookState()


def add_profiler_step(options_str: str | None = None, backend: str | None = None) -> None:
    """One training step ended. See the module docstring for the semantics."""
    if options_str is None:
        return
    state = _state
    if state.finished:
        return
    if state.options is None:
        state.options = _Options.parse(options_str)
        print(f"profiler options: {options_str!r} -> {state.options!r}", file=sys.stderr)
    if state.profiler is None:
        name = backend or state.options.backend or DEFAULT_BACKEND
        state.profiler = get_backend(name).step_profiler(state.options)
        state.profiler.__enter__()
    else:
        state.profiler.step()
    if state.profiler.finished:
        state.profiler.__exit__(None, None, None)
        state.finished = True
        if state.options.exit_on_finished:
            sys.exit(0)


def current_profiler():
    """The step profiler the hook drives (its ``summary`` once the range ended), or None before the first call."""
    return _state.profiler


def reset_profiler_step() -> None:
    """Forget the parsed options and the profiler, so the next call starts over (tests, several runs in one
    process). A profiler still recording is stopped."""
    global _state
    if _state.profiler is not None and not _state.finished:
        _state.profiler.echo = False
        _state.profiler.__exit__(None, None, None)
    _state = _HookState()


# -- the "Benchmark Options" group ---------------------------------------------------------------------------------


def _profiler_options_type(text: str) -> str:
    """argparse type: reject a malformed option string at parse time, keep the string as PaddleSpeech does."""
    try:
        _Options.parse(text)
    except ProfilerOptionError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def add_benchmark_options(parser: argparse.ArgumentParser):
    """Add PaddleSpeech's "Benchmark Options" group to an argparse parser; returns the group."""
    group = parser.add_argument_group(title="Benchmark Options", description=None)
    group.add_argument("--profiler-options", type=_profiler_options_type, default=None, help=PROFILER_OPTIONS_HELP)
    group.add_argument("--benchmark-batch-size", type=int, default=None, help=BATCH_SIZE_HELP)
    group.add_argument("--benchmark-max-step", type=int, default=None, help=MAX_STEP_HELP)
    return group


def benchmark_options(command):
    """The same three options for a click command (``profiler_options``, ``benchmark_batch_size``,
    ``benchmark_max_step`` parameters)."""
    import click

    def check(ctx, param, value):
        if value is not None:
            try:
                _Options.parse(value)
            except ProfilerOptionError as exc:
                raise click.BadParameter(str(exc)) from None
        return value

    for decorator in reversed(
        [
            click.option("--profiler-options", default=None, callback=check, help=PROFILER_OPTIONS_HELP),
            click.option("--benchmark-batch-size", type=int, default=None, help=BATCH_SIZE_HELP),
            click.option("--benchmark-max-step", type=int, default=None, help=MAX_STEP_HELP),
        ]
    ):
        command = decorator(command)
    return command
