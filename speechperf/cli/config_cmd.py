"""``speechperf config``: the key reference, and checking / showing a config after merging."""

from __future__ import annotations

from pathlib import Path

import click


@click.group()
def config() -> None:
    """Benchmark configs: list every key, check a file, show it merged."""


@config.command()
def keys() -> None:
    """Print every config key (type, default, allowed values, meaning) as Markdown."""
    from speechperf.config.reference import markdown

    click.echo(markdown(), nl=False)


@config.command("list")
def list_() -> None:
    """The configs that ship with speechperf, one line each; `--config NAME` runs one (no such file needed)."""
    from speechperf.config import shipped

    found = shipped.names()
    width = max(map(len, found), default=0)
    for name in found:
        click.echo(f"{name:<{width}}  {shipped.summary(shipped.find(name))}")


@config.command()
@click.argument("path", required=False, type=click.Path(dir_okay=False))
def show(path: str | None) -> None:
    """Print the config at PATH (or a shipped config by name, or the built-in default) after merging, with every
    default filled in and every relative path made absolute, so the output is a config that reads the same files
    from any folder."""
    import yaml

    from speechperf.config import default_config, load_config, shipped

    cfg = load_config(shipped.find(path)) if path else default_config()
    click.echo(yaml.safe_dump(_plain(cfg.to_dict()), sort_keys=False), nl=False)


@config.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(dir_okay=False, allow_dash=True))
@click.option(
    "--backend",
    "-b",
    "backend_name",
    metavar="NAME",
    default=None,
    help="Also check what this backend loads (default: general.backend, if set): its formats, and each `path` "
    "stage's file loaded, its input and output names and count against those declared, its declared input shapes "
    "against the inputs' layout and features.n_mels.",
)
def check(paths: tuple[str, ...], backend_name: str | None) -> None:
    """Check config files (or shipped configs by name) as bench does before measuring (keys, models, presets, model
    files, dataset path); print one line per file and exit 2 on the first bad one. ``-`` reads a config from stdin,
    its relative paths from the working folder (``speechperf config show X | speechperf config check -``)."""
    import sys

    from speechperf.benchmark.plan import check_startable
    from speechperf.config import load_config, shipped
    from speechperf.config.load import parse_config

    for path in paths:
        cfg = (
            parse_config(sys.stdin.read(), "<stdin>", base=Path.cwd())
            if path == "-"
            else load_config(shipped.find(path))
        )
        backend = backend_name or cfg.general.backend
        check_startable(cfg, backend)  # as bench refuses it: the config, the pinned backends, the backend installed
        if backend:
            _load_files(cfg, backend)
        click.echo(f"{path}: ok ({cfg.general.model_type}, {len(cfg.stages)} stage(s))")


def _load_files(cfg, backend_name: str) -> None:
    """Load each ``path`` stage's file on the backend as bench would, so a layout or a feature size the model's
    declared input shape does not take (80 mels fed to a model declaring 161) is refused here, in bench's line."""
    from speechperf.benchmark import build
    from speechperf.benchmark.backend_files import derives_for
    from speechperf.benchmark.derive import config_for_backend
    from speechperf.cache import cache_dir
    from speechperf.registry import require_backend

    if not any(s.path and not derives_for(s, s.runs_on(backend_name)) for s in cfg.stages):
        return
    resolved = config_for_backend(cfg, backend_name)
    with build.stdout_to_stderr():
        for index, (stage, role) in enumerate(zip(resolved.stages, resolved.roles), 1):
            runs_on = stage.runs_on(backend_name)  # a pinned stage loads on its own backend
            if cfg.stages[index - 1].path and not derives_for(cfg.stages[index - 1], runs_on):
                general = resolved.general
                backend = require_backend(runs_on)
                build.build_stage(stage, role, index, resolved, backend, general.device, general.threads, cache_dir())


def _plain(value):
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
