"""``speechperf zoo``: build the reference models for every backend, and list them."""

from __future__ import annotations

import json
from pathlib import Path

import click

from speechperf.zoo.catalog import MODEL_MODULES, PRESETS, known_models, models_at

_preset = click.option("--preset", type=click.Choice(PRESETS), default="tiny", show_default=True, help="Model sizes.")


@click.group()
def zoo() -> None:
    """Reference speech models, identical in torch and paddle, exported to every format."""


@zoo.command("build")
@_preset
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Output folder (default: <cache>/zoo/<preset>; the cache is $SPEECHPERF_CACHE_DIR, else the platform's "
    "user cache folder, ~/.cache/speechperf on Linux).",
)
@click.option(
    "--model",
    "models",
    multiple=True,
    type=click.Choice(known_models()),
    help="Only this model (repeatable); without it, every seeded model of the preset (a pretrained one, such as "
    "whisper-base or hifigan-v1-lj, is built only by name: its weights come from an optional package).",
)
def build_cmd(preset: str, out: Path | None, models: tuple[str, ...]) -> None:
    """Write every artifact of every model plus a manifest per model into OUT/<model>."""
    from speechperf.outputs import check_output_folder
    from speechperf.zoo.build import build_model, cache_dir, installed_formats

    out = check_output_folder(out if out is not None else cache_dir(preset), "--out")
    names = models or MODEL_MODULES
    for name in names:  # each model's folder too, before the first build: a FIFO or a file there is refused
        check_output_folder(out / name, f"--out {out}: model folder")
    formats = installed_formats()  # a framework not installed: its formats are left out, saying so
    for name in names:
        click.echo(f"building {name} ({preset}) ...", err=True)
        manifest = build_model(name, preset, out, formats)
        size = sum(f["bytes"] for f in manifest["files"])
        files = len(manifest["files"])
        click.echo(f"{out / name}\t{manifest['parameter_count']} parameters\t{files} files\t{size} bytes")


@zoo.command("list")
@_preset
@click.option(
    "--dir",
    "folder",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder the models were built into (default: the cache for the preset).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the manifests (or the catalog) as JSON.")
def list_cmd(preset: str, folder: Path | None, as_json: bool) -> None:
    """Every reference model: its task, components and, where built, parameters and files."""
    from speechperf.zoo.build import cache_dir, is_built, read_manifest
    from speechperf.zoo.catalog import get_model

    folder = folder if folder is not None else cache_dir(preset)
    rows = []
    for name in models_at(preset):
        model = get_model(name)
        built = is_built(folder / name)
        manifest = read_manifest(folder / name) if built else None
        rows.append((model, manifest))
    if as_json:
        click.echo(json.dumps([m or {"model": r.name, "task": r.task, "built": False} for r, m in rows], indent=2))
        return

    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"speechperf reference models ({preset}, {folder})")
    for column in ("model", "task", "components", "parameters", "files", "size (MB)"):
        table.add_column(column)
    for model, manifest in rows:
        if manifest is None:
            params, files, size = "not built", "-", "-"
        else:
            params = f"{manifest['parameter_count']:,}"
            files = str(len(manifest["files"]))
            size = f"{sum(f['bytes'] for f in manifest['files']) / 1e6:.2f}"
        table.add_row(model.name, model.task, ", ".join(model.component_names), params, files, size)
    Console(soft_wrap=False).print(table)
