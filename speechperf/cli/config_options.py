"""The options that pick a benchmark config and its data, shared by ``bench`` and ``profile``, and the config
they make (moved here from ``bench_cmd.py``, unchanged, so both commands read a config the same way)."""

from __future__ import annotations

from pathlib import Path

import click

from speechperf.cli.options import stacked
from speechperf.config.schema import DATASET_TYPES, MODEL_TYPES


def config_options(without: str):
    """--config, --model-type, --set, --preset and the --dataset-* options; ``without``: what runs with no --config."""
    options = [
        click.option(
            "--config",
            "config_path",
            type=click.Path(dir_okay=False, path_type=Path),
            default=None,
            callback=_shipped_config,
            help=f"Benchmark YAML (see `speechperf config keys`), or the name of a shipped config when no such file "
            f"exists (`speechperf config list`). Without it: {without}.",
        ),
        click.option(
            "--model-type", type=click.Choice(tuple(MODEL_TYPES)), default=None, help="Replaces general.model_type."
        ),
        click.option(
            "--set",
            "sets",
            multiple=True,
            metavar="SECTION.KEY=VALUE",
            help="Replace one config key, e.g. --set stage1.max_len_b=10 (repeatable; the value is YAML).",
        ),
        click.option(
            "--preset", default=None, help="Size preset of every reference model (tiny, base); replaces stageN.preset."
        ),
        click.option("--dataset-path", default=None, help="Dataset file; replaces general.dataset_path."),
        click.option("--dataset-type", type=click.Choice(DATASET_TYPES), default=None),
        click.option("--dataset-size", type=click.IntRange(min=1), default=None, help="Use only the first N samples."),
        click.option(
            "--unsafe-pickle-runs-code",
            "allow_pickle",
            is_flag=True,
            default=None,
            help="Allow fairseq's pickled .npy datasets: unpickling runs code from the file.",
        ),
    ]
    return stacked(options)


def _shipped_config(ctx, param, value: Path | None) -> Path | None:
    """--config NAME: the file if it exists, else the shipped config of that name (resolved here, so that compare's
    children get its path)."""
    from speechperf.config import shipped

    return None if value is None else shipped.find(value)


def config_overrides(config_args: dict, **more) -> dict:
    """The general keys ``config_options`` set (``config_args``: the values a command took as ``**config_args``),
    as ``config_from_options`` takes them, with ``more`` after them (a command's own: backend, threads, warmup, ...);
    in this order, which compare's children's arguments follow."""
    return dict(
        model_type=config_args["model_type"],
        dataset_path=config_args["dataset_path"],
        dataset_type=config_args["dataset_type"],
        dataset_size=config_args["dataset_size"],
        unsafe_pickle_runs_code=config_args["allow_pickle"],
        **more,
    )


def config_from_args(config_args: dict, **more):
    """The merged config of a command that took ``config_options`` as ``**config_args``, with ``more`` general keys
    of its own (None: the config's value)."""
    return config_from_options(
        config_args["config_path"], config_overrides(config_args, **more), config_args["preset"], config_args["sets"]
    )


def config_from_options(config_path: Path | None, overrides: dict, preset: str | None, sets):
    """The merged config: ``config_path`` (or the built-in default) with the command line's values over it."""
    from speechperf.config import default_config, load_config

    if overrides.get("dataset_path") is not None and overrides.get("dataset_type") is None:
        overrides["dataset_type"] = _type_from_suffix(overrides["dataset_path"])
    stage_overrides = {"preset": preset}
    return (
        load_config(config_path, overrides, stage_overrides, sets)
        if config_path
        else default_config(overrides, stage_overrides, sets)
    )


def _type_from_suffix(path: str) -> str:
    from speechperf.data.formats import require_file
    from speechperf.errors import SpeechperfError

    if Path(path).is_dir():
        require_file(Path(path))  # says it is a folder and which manifests it holds
    suffix = Path(path).suffix
    types = {".tsv": "raw", ".npz": "npz", ".npy": "npy", ".txt": "text"}
    if suffix not in types:
        raise SpeechperfError(
            f"cannot tell the dataset type of {path} from its suffix {suffix!r}; pass "
            "--dataset-type (raw for .tsv, npz, npy, text for .txt)"
        )
    return types[suffix]
