"""Drop-ins for PaddleSpeech's s2t profiler (``paddlespeech.s2t.utils.profiler``): ``ProfilerOptions``,
``add_profiler_step`` and the "Benchmark Options" group; the t2s sister is ``speechperf.adapters.paddlespeech_t2s``.
docs/profiler.md describes both and lists every difference from PaddleSpeech.

Change the import line and the trainer runs as it did:

- ``add_profiler_step(None)`` does nothing, so a trainer without ``--profiler-options`` pays nothing;
- the option string is read once, on the first call, as PaddleSpeech reads it: what PaddleSpeech ignores or
  defaults (``batch_range=[20,10]``, an unknown or repeated key, ``exit_on_finished=maybe``) is accepted with one
  warning line on stderr naming what was ignored and the value used (``strict=True`` refuses it instead); the
  effective options, the backend included, are printed to stderr;
- each call is one step: the first call begins step 0, steps ``batch_range[0]..batch_range[1]-1`` are recorded
  (the same steps as PaddleSpeech's start at ``batch_range[0]`` and stop at ``batch_range[1]``), the summary is
  printed when the range ends, and the process exits with status 0 then if ``exit_on_finished`` is set; a process
  that ends inside the range (``--benchmark-max-step`` below ``batch_range[1]``) prints what was recorded as it exits
  and says the range was not reached;
- the s2t flavour profiles paddle with the legacy profiler as PaddleSpeech's s2t does (``api=legacy``: paddle's
  report on stdout, the profile at ``profile_path``), and ``timer_only`` is false.

The framework is the loop's: ``backend=`` in the options or the ``backend`` argument, else the framework of the
objects the first step used (``uses=`` passed, else the caller's frames: speechperf.adapters.loop_framework), never
the one merely imported; when they do not say, one warning line and paddle. ``num_samples`` (or
``--benchmark-batch-size`` of the option group) makes ips samples/s. The timer figures average paddle's own timer's
steps (``timer_window=paddle_timer``: from the 10th step after the first call to the range's end); ``timer_window=range``
averages ``batch_range`` only.

A PaddleSpeech-style trainer wires it in ``after_train_batch`` (docs/profiler.md has complete paddle and torch
scripts, which ``tests/test_profiler_dropin.py`` runs):

    import argparse, sys
    from speechperf.adapters.paddlespeech import add_benchmark_options, add_profiler_step

    parser = argparse.ArgumentParser()
    add_benchmark_options(parser)   # --profiler-options, --benchmark-batch-size, --benchmark-max-step

    class Trainer:
        def after_train_batch(self):
            if self.args.benchmark_max_step:
                add_profiler_step(self.args.profiler_options)
                if self.iteration > self.args.benchmark_max_step:
                    sys.exit(0)

click users decorate their command with ``@benchmark_options`` instead. onnxruntime profiles a session rather than
the process: after the first call, ``current_profiler().attach(session)`` gives the session to run. This module
imports no framework: the backend is reached through the registry by name.
"""

from __future__ import annotations

import argparse
import atexit
import os
import sys

import attrs

from speechperf.adapters.loop_framework import DEFAULT_BACKEND as DEFAULT_BACKEND  # re-exported: the default
from speechperf.adapters.loop_framework import batch_size, caller_values, decide, votes
from speechperf.backend import hooks
from speechperf.profiler.base import StepProfiler, warn_line
from speechperf.profiler.options import ProfilerOptionError
from speechperf.profiler.options import ProfilerOptions as _Options
from speechperf.registry import get_backend, known_backends

PROFILER_OPTIONS_HELP = (
    'The option of profiler, which should be in format "key1=value1;key2=value2;key3=value3", e.g. '
    '"batch_range=[10,20]; state=All; sorted_key=total; profile_path=/tmp/profile; timer_only=false".'
)
BATCH_SIZE_HELP = "The batch size for benchmark: it overrides the batch size of the config (and is each step's ips)."
MAX_STEP_HELP = "The maximum number of training steps for benchmark; the trainer stops after it."


@attrs.frozen
class Flavour:
    """What differs between PaddleSpeech's two profiler modules."""

    name: str
    #: Defaults that differ from ``speechperf.profiler.ProfilerOptions``'s.
    defaults: dict = attrs.field(factory=dict)
    #: Arguments of paddle's own ``Profiler.summary`` printed with the uniform tables (api=new), or None.
    native_summary: dict | None = None
    #: Keys whose value the replaced module stores and never checks: a bad value is a warning, never an error.
    unchecked: tuple[str, ...] = ()
    #: Keys the replaced module ignores that the drop-in honours: each, when given, is one warning line.
    ignored: tuple[str, ...] = ()
    #: The replaced module reads an empty option string as the defaults (s2t: ``if not options_str: return``); t2s
    #: splits it and raises a ValueError (its trainer never calls it with one: ``if self.profiler_options:``).
    empty_is_defaults: bool = True
    #: The one word the replaced module reads ``timer_only`` as true by (t2s: ``str(value) == str(True)``), or None.
    timer_only_true_word: str | None = None


S2T = Flavour(
    "s2t",
    {"api": "legacy", "timer_window": "paddle_timer"},
    # paddle's legacy stop_profiler writes nowhere, and stops nothing, given an empty path; state, tracer_option
    # and sorted_key it checks (a ValueError), as the drop-in does
    unchecked=("profile_path",),
    ignored=("timer_only",),
)


def training_backends() -> dict[str, str]:
    """Module root -> backend name, for every backend that profiles training loops (torch, paddle)."""
    roots = {}
    for name in known_backends():
        backend = get_backend(name)
        module = hooks(backend).framework_module  # a backend that names none is never picked
        if hooks(backend).profiles_training_loops and module:
            roots[module.split(".", 1)[0]] = name
    return roots


def detect_backend(uses: object = None, skip: int = 1) -> tuple[str, str | None]:
    """(backend, warning line or None): the framework of the objects passed in ``uses``, else of the objects in the
    caller's frames (``skip`` frames above this one), never of what is imported (speechperf.adapters.loop_framework).
    """
    roots = training_backends()
    counts = votes([uses], roots) if uses is not None else None
    if not counts:
        counts = votes(caller_values(skip + 1), roots)
    imported = [name for root, name in roots.items() if root in sys.modules]
    return decide(counts, imported)


class ProfilerHook:
    """``add_profiler_step``'s state: the options read on the first call and the step profiler it drives."""

    def __init__(self, flavour: Flavour):
        self.flavour = flavour
        self._clear()

    def _clear(self) -> None:
        """The state before the first call."""
        self.options: _Options | None = None
        self.profiler: StepProfiler | None = None
        self.finished = False
        #: Each step's sample count when a call gives none (``--benchmark-batch-size``).
        self.default_num_samples: int | None = None
        self._at_exit_registered = False

    def parse(self, options_str: str, strict: bool = False) -> _Options:
        flavour = self.flavour
        if options_str == "" and not strict and not flavour.empty_is_defaults:
            raise ProfilerOptionError(
                f"the profiler option string is empty; PaddleSpeech's {flavour.name} ProfilerOptions stops on it too "
                "(ValueError: not enough values to unpack); give None for no profiling, or e.g. 'batch_range=[10,20]'"
            )
        options = _Options.parse(options_str, strict=strict, defaults=flavour.defaults, unchecked=flavour.unchecked)
        if strict:
            return options
        return attrs.evolve(options, warnings=self._differences(options))

    def _differences(self, options: _Options) -> tuple[str, ...]:
        """The warning lines of lenient parsing, with one line per thing this flavour's original reads otherwise."""
        flavour, texts = self.flavour, options.texts
        given = [key for key in flavour.ignored if key in options.given]
        # a key the original ignores has no "as in PaddleSpeech" reading of its value: its one line says what it is
        lines = [line for line in options.warnings if not any(line.startswith(f"{key}=") for key in given)]
        # ... said only where honouring it changes the run: timer_only=true profiles no operators, and under
        # timer_only the profiler's keys (state, sorted_key, tracer_option, profile_path) are used by neither
        ignored = [key for key in given if options.timer_only == (key == "timer_only")]
        if ignored:
            read = []
            for key in ignored:
                value = getattr(options, key)
                read.append(f"{key}={str(value).lower() if isinstance(value, bool) else repr(value)}")
            them = "it" if len(ignored) == 1 else "them"
            lines.append(
                f"{', '.join(ignored)}: PaddleSpeech's {flavour.name} profiler never uses {them}; honoured here, "
                f"read as {', '.join(read)}"
            )
        word = flavour.timer_only_true_word
        if word is not None and "timer_only" in options.given:
            theirs = texts.get("timer_only") == word
            if theirs != options.timer_only:
                said = texts.get("timer_only")
                lines.append(
                    f"timer_only={said!r} is read as {str(options.timer_only).lower()} here (timer figures only: "
                    f"{'yes' if options.timer_only else 'no'}); PaddleSpeech's {flavour.name} reads only {word!r} as "
                    f"true, so it would {'profile operators and write a trace' if not theirs else 'time only'}"
                )
        return tuple(lines)

    def step(self, options_str, backend, num_samples, strict, uses=None) -> None:
        if options_str is None or self.finished:
            return
        if self.profiler is None:
            profiler = self._begin(options_str, backend, strict, uses)
        else:
            profiler = self.profiler
            count = num_samples if num_samples is not None else self.default_num_samples
            profiler.step(num_samples=count)
        if profiler.finished:
            profiler.__exit__(None, None, None)
            self.finished = True
            if profiler.options.exit_on_finished:  # the options _begin gave it (self.options)
                sys.exit(0)

    def _begin(self, options_str: str, backend: str | None, strict: bool, uses: object) -> StepProfiler:
        options = self.parse(options_str, strict)
        if self.default_num_samples is None:
            # PaddleSpeech's own "Benchmark Options" group: its --benchmark-batch-size is in the trainer's args
            self.default_num_samples = batch_size(caller_values(3))
        name = backend or options.backend
        if name is None:
            # the frames above: _begin, step, add_profiler_step, then the trainer's
            name, why = detect_backend(uses, skip=3)
            if why is not None:
                options = attrs.evolve(options, warnings=(*options.warnings, why))
        chosen = get_backend(name)
        profilers = getattr(getattr(chosen, "capabilities", None), "profilers", ())  # a bare test double has none
        if "api" not in options.given and not any(f"api={options.api}" in p for p in profilers):
            options = attrs.evolve(options, api="new")  # the flavour's api=legacy is paddle's; others have one API
        if "profile_path" not in options.given:
            options = _own_default_path(options)
        self.options = attrs.evolve(options, backend=name)
        # PaddleSpeech's add_profiler_step prints its options; the drop-in runs in a user's training script, where
        # no speechperf CLI sets logging up, and docs/profiler.md promises this line on stderr: the one print kept.
        print(f"profiler options: {options_str!r} -> {self.options!r}", file=sys.stderr)
        profiler: StepProfiler = hooks(chosen).step_profiler(self.options)
        profiler.ends_loop_when_finished = True
        if self.flavour.native_summary is not None and hasattr(profiler, "native_summary"):
            profiler.native_summary = dict(self.flavour.native_summary)
        self.profiler = profiler
        profiler.__enter__()
        if not self._at_exit_registered:
            atexit.register(self.at_exit)
            self._at_exit_registered = True
        return profiler

    def at_exit(self) -> None:
        """The process ends inside the range: stop the profiler, print what it recorded and say so."""
        if self.profiler is not None and not self.finished:
            self.finished = True
            self.profiler.__exit__(None, None, None)

    def reset(self) -> None:
        if self.profiler is not None and not self.finished:
            self.profiler.echo = False
            self.profiler.__exit__(None, None, None)
        if self._at_exit_registered:
            atexit.unregister(self.at_exit)
        self._clear()


def _own_default_path(options: _Options) -> _Options:
    """The default profile path made this process's own: two trainers started at once on the default (TIPC's
    strings may leave it unset) would otherwise write, and read back, the same file. A file path gets
    ``.pid<N>`` (s2t: ``/tmp/profile.pid1234``, one warning line, as PaddleSpeech writes ``/tmp/profile`` itself);
    a folder gets a ``pid<N>/`` folder inside it (t2s: ``profiler_log/pid1234/``; PaddleSpeech's t2s names its
    files in ``./profiler_log`` by host and process id too, so no line)."""
    path, pid = options.profile_path, os.getpid()
    if path.endswith(("/", os.sep)):
        return attrs.evolve(options, profile_path=f"{path}pid{pid}/")
    own = f"{path}.pid{pid}"
    if options.timer_only:  # nothing is written
        return attrs.evolve(options, profile_path=own)
    line = f"profile_path not given: the profile goes to {own!r}, not {path!r}, so that runs at once never share it"
    return attrs.evolve(options, profile_path=own, warnings=(*options.warnings, line))


# -- the "Benchmark Options" group ---------------------------------------------------------------------------------

#: Both spellings: s2t's ``--profiler-options`` and t2s's ``--profiler_options``.
PROFILER_FLAGS = ("--profiler-options", "--profiler_options")


def _check(hook: ProfilerHook, text: str) -> None:
    """Refuse at parse time what PaddleSpeech itself cannot read; what it ignores is warned about at the first step.
    An empty string passes: PaddleSpeech's trainers call the hook only when the option is set (t2s: ``if
    self.profiler_options:``), or read it as the defaults (s2t)."""
    if text:
        hook.parse(text, strict=False)


def add_benchmark_options_for(hook: ProfilerHook, parser: argparse.ArgumentParser):
    """The "Benchmark Options" group bound to ``hook`` (its ``--benchmark-batch-size`` is the hook's sample count)."""

    def options_type(text: str) -> str:
        try:
            _check(hook, text)
        except ProfilerOptionError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return text

    class BatchSize(argparse.Action):
        def __call__(self, parser, namespace, value, option_string=None):
            setattr(namespace, self.dest, value)
            hook.default_num_samples = value

    group = parser.add_argument_group(title="Benchmark Options", description=None)
    group.add_argument(
        *PROFILER_FLAGS, dest="profiler_options", type=options_type, default=None, help=PROFILER_OPTIONS_HELP
    )
    group.add_argument("--benchmark-batch-size", type=int, default=None, action=BatchSize, help=BATCH_SIZE_HELP)
    group.add_argument("--benchmark-max-step", type=int, default=None, help=MAX_STEP_HELP)
    return group


def benchmark_options_for(hook: ProfilerHook, command):
    """The same three options for a click command, bound to ``hook``."""
    import click

    def check(ctx, param, value):
        if value is not None:
            try:
                _check(hook, value)
            except ProfilerOptionError as exc:
                raise click.BadParameter(str(exc)) from None
        return value

    def batch_size(ctx, param, value):
        if value is not None:
            hook.default_num_samples = value
        return value

    for decorator in reversed(
        [
            click.option(*PROFILER_FLAGS, "profiler_options", default=None, callback=check, help=PROFILER_OPTIONS_HELP),
            click.option("--benchmark-batch-size", type=int, default=None, callback=batch_size, help=BATCH_SIZE_HELP),
            click.option("--benchmark-max-step", type=int, default=None, help=MAX_STEP_HELP),
        ]
    ):
        command = decorator(command)
    return command


def exports(hook: ProfilerHook, module: str) -> tuple:
    """The functions a drop-in module exports, bound to its hook: ``ProfilerOptions``, ``add_profiler_step``,
    ``current_profiler``, ``reset_profiler_step``, ``add_benchmark_options``, ``benchmark_options``. They are plain
    functions of ``module`` (pydoc lists them there)."""

    def ProfilerOptions(options_str: str = "", strict: bool = False) -> _Options:  # noqa: N802 - PaddleSpeech's name
        """PaddleSpeech's ``ProfilerOptions(options_str)``: the options as PaddleSpeech reads them (one warning line
        per thing ignored or defaulted); ``strict=True`` refuses those instead. ``options['batch_range']`` works, and
        a key it does not have raises a ``ValueError``, as in PaddleSpeech."""
        options = hook.parse(options_str, strict)
        for line in options.warnings:
            warn_line(line)
        return options

    def add_profiler_step(
        options_str: str | None = None,
        backend: str | None = None,
        num_samples: int | None = None,
        strict: bool = False,
        uses: object = None,
    ) -> None:
        """One training step ended (``num_samples`` in it, for ips in samples/s); ``None`` does nothing. Steps
        ``batch_range[0]..batch_range[1]-1`` are profiled, the first call beginning step 0; ``backend`` overrides the
        framework detected from the step's objects (``uses``: the model, optimizer or a tensor, if the caller's
        frames do not hold them). See the module docstring and docs/profiler.md."""
        hook.step(options_str, backend, num_samples, strict, uses)

    def current_profiler():
        """The step profiler the hook drives (its ``summary`` once the range ended), or None before the first call."""
        return hook.profiler

    def reset_profiler_step() -> None:
        """Forget the parsed options and the profiler, so the next call starts over (tests, several runs in one
        process). A profiler still recording is stopped."""
        hook.reset()

    def add_benchmark_options(parser: argparse.ArgumentParser):
        """Add PaddleSpeech's "Benchmark Options" group to an argparse parser (``--profiler-options`` or
        ``--profiler_options``, ``--benchmark-batch-size``, ``--benchmark-max-step``); returns the group."""
        return add_benchmark_options_for(hook, parser)

    def benchmark_options(command):
        """The same three options for a click command (``profiler_options``, ``benchmark_batch_size``,
        ``benchmark_max_step`` parameters)."""
        return benchmark_options_for(hook, command)

    functions = (
        ProfilerOptions,
        add_profiler_step,
        current_profiler,
        reset_profiler_step,
        add_benchmark_options,
        benchmark_options,
    )
    for function in functions:
        function.__module__ = module
        function.__qualname__ = function.__name__
    return functions


_hook = ProfilerHook(S2T)
(
    ProfilerOptions,
    add_profiler_step,
    current_profiler,
    reset_profiler_step,
    add_benchmark_options,
    benchmark_options,
) = exports(_hook, __name__)
