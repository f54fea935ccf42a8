"""The ``speechperf`` command line.

Data goes to stdout, status and errors to stderr. Exit codes: 0 success; 1 a measurement or check failed;
2 bad input (a one-line error, never a traceback); 130 interrupted. The library logs its notes and progress
(``speechperf.logs``); the group sets where they go (stderr) and how many: ``-v`` adds debug lines, ``-q`` keeps only
warnings and errors.
Each command lives in its own module and imports no framework at import time.
"""

from __future__ import annotations

import sys

import click

from speechperf import __version__, logs
from speechperf.errors import Interrupted, SpeechperfError, cut_text


class InputError(click.ClickException):
    """A SpeechperfError shown as one line on stderr, exit code 2."""

    exit_code = 2


class SpeechperfGroup(click.Group):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        from speechperf.results.document import set_command

        set_command(["speechperf", *args])  # every result document records the command line it came from
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except SpeechperfError as exc:
            raise InputError(cut_text(str(exc))) from None
        except KeyboardInterrupt as exc:
            note = str(exc) if isinstance(exc, Interrupted) else ""
            click.echo(f"interrupted; {note}" if note else "interrupted", err=True)
            sys.exit(130)


@click.group(cls=SpeechperfGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="speechperf")
@click.option("--verbose", "-v", count=True, help="More on stderr: debug lines too.")
@click.option("--quiet", "-q", is_flag=True, help="Less on stderr: only warnings and errors, no notes or progress.")
def main(verbose: int, quiet: bool) -> None:
    """Benchmark and profile speech models the same way on PyTorch, PaddlePaddle and ONNX Runtime."""
    logs.configure(logs.level_of(verbose, quiet))


def _register() -> None:
    from speechperf.cli.backends_cmd import backends
    from speechperf.cli.bench_cmd import bench
    from speechperf.cli.check_cmd import check
    from speechperf.cli.compare_cmd import compare
    from speechperf.cli.config_cmd import config
    from speechperf.cli.data_cmd import data
    from speechperf.cli.diff_cmd import diff
    from speechperf.cli.history_cmd import history
    from speechperf.cli.loadgen_cmd import loadgen
    from speechperf.cli.optimize_cmd import optimize
    from speechperf.cli.plugin_cmd import plugin
    from speechperf.cli.profile_cmd import profile
    from speechperf.cli.profile_compare_cmd import profile_compare
    from speechperf.cli.run_cmd import run
    from speechperf.cli.show_cmd import show
    from speechperf.cli.tune_cmd import tune

    main.add_command(backends)
    from speechperf.cli.zoo_cmd import zoo

    main.add_command(zoo)
    main.add_command(check)
    main.add_command(run)
    main.add_command(config)
    main.add_command(data)
    main.add_command(bench)
    main.add_command(profile)
    main.add_command(profile_compare)
    main.add_command(optimize)
    main.add_command(tune)
    main.add_command(compare)
    main.add_command(loadgen)
    main.add_command(plugin)
    main.add_command(diff)
    main.add_command(history)
    main.add_command(show)


_register()
