"""The one resolved plan of a run: every decision made before a command measures, made once, by one rule each, so
that bench, loadgen, optimize, profile, compare and tune cannot disagree (docs/architecture.md, "The plan").

``check`` is the half that can be refused without loading data or a framework's model: the config as bench would
refuse it, the stages pinned to another backend installed, a derived file per backend exported and gated. compare
and tune call it in the parent for each backend before any child runs; ``resolve`` calls it too, then reads the
dataset and the references, decides what is scored, and gets the backend.

The rules, each in one place:
- a config is checked as ``speechperf config check`` checks it (``validate.check_config``), for the backend named;
- every backend a stage is pinned to must be installed (``validate.require_pinned_backends``), before any data;
- references are read, and refused when they do not fit the dataset, before any model is loaded;
- quality is scored where ``quality.wanted`` says; a text reference of the wrong kind is an error when quality was
  asked for (``quality`` in the meters, or loadgen's accuracy mode) and a note otherwise;
- the backend's own config (``derive.config_for_backend``) comes after the references, since it may export a file;
- the texts the quality meter scores (none empty after its normalizer) are checked where quality is scored, before
  the backend is got: its framework is imported last;
- what a ``path`` stage's output is (``output_kinds.decide``: audio only when declared or shaped as one axis of
  samples) is decided where its model's declared shapes are first known, when the stage is loaded, the same for
  every command (a module of its own: the stages it decides for sit below this plan).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import attrs

from speechperf.backend import Backend
from speechperf.config.schema import BenchConfig
from speechperf.errors import SpeechperfError

log = logging.getLogger(__name__)

#: What a command asks of the quality meter: ``meters`` as the config's meters say (bench); ``asked`` scored and
#: required (loadgen's accuracy mode, optimize's quality budget); ``off`` never (profile).
QUALITY = ("meters", "asked", "off")


@attrs.frozen
class Plan:
    """A run, resolved: ``cfg`` is the backend's own config (a derived file in place of the source's)."""

    cfg: BenchConfig
    backend: Backend
    pinned: dict[str, Backend]
    dataset: list[Any]
    references: Any  # speechperf.data.references.References | None
    score_quality: bool
    #: Why quality is not scored (or what limits it), said once by the command that logs it; None: nothing to say.
    quality_note: str | None
    #: The dataset's cut (``general.dataset_size``), never silent; None: no cut.
    size_note: str | None

    def notes(self) -> list[str]:
        return [note for note in (self.size_note, self.quality_note) if note]


def backend_name(cfg: BenchConfig, given: str | None = None) -> str:
    """The backend a run uses: ``given`` (a command's --backend) or the config's; none is a one-line error."""
    from speechperf.benchmark.validate import require_backend_name

    return given or require_backend_name(cfg)


def check(cfg: BenchConfig, backend: str | None, workdir: Path | None = None) -> dict[str, Backend]:
    """The checking half, no data read and no model loaded: the config for ``backend`` (None: the pinned stages
    alone), the pinned backends installed (returned), and with ``workdir`` the backend's derived files made."""
    from speechperf.benchmark.derive import config_for_backend

    pinned = _refuse(cfg, backend)
    if backend is not None and workdir is not None:
        config_for_backend(cfg, backend, workdir)  # a derived file is exported and gated here, once
    return pinned


def check_startable(cfg: BenchConfig, backend: str | None) -> None:
    """What ``config check`` says ok to is what bench starts: ``check``'s refusals, then the backend named installed,
    refused in bench's own line (``registry.require_backend``, which imports its framework)."""
    from speechperf.registry import require_backend

    _refuse(cfg, backend)
    if backend is not None:
        require_backend(backend)


def _refuse(cfg: BenchConfig, backend: str | None) -> dict[str, Backend]:
    """The config as bench would refuse it, then the pinned backends installed (returned)."""
    from speechperf.benchmark.validate import check_config, require_pinned_backends

    check_config(cfg, backend)
    return require_pinned_backends(cfg, backend)


def resolve(cfg: BenchConfig, backend: str | None = None, *, workdir: Path, quality: str = "meters") -> Plan:
    """Everything a run needs before it measures, in the order that refuses the cheapest mistakes first."""
    from speechperf.benchmark.derive import config_for_backend
    from speechperf.data import load_dataset, size_note
    from speechperf.data.references import load_references
    from speechperf.meters import quality as quality_meter
    from speechperf.registry import require_backend

    if quality not in QUALITY:
        raise ValueError(f"quality={quality!r}; allowed: {', '.join(QUALITY)}")
    name = backend_name(cfg, backend)
    pinned = _refuse(cfg, name)  # the cheap refusals first: derived and imported below
    general = cfg.general
    dataset = load_dataset(general, cfg.roles[0])
    references = load_references(general, dataset, cfg.roles)  # one that does not fit the dataset fails here
    score, note = _quality(cfg, references, quality)
    resolved = config_for_backend(cfg, name, workdir)
    if score:  # the texts that are scored, each with at least one word
        quality_meter.check_references(references, general)
    return Plan(
        cfg=resolved,
        backend=require_backend(name),  # imports the framework
        pinned=pinned,
        dataset=dataset,
        references=references,
        score_quality=score,
        quality_note=note,
        size_note=size_note(general, len(dataset)),
    )


def _quality(cfg: BenchConfig, references, quality: str) -> tuple[bool, str | None]:
    """(scored?, the note): ``quality.wanted``'s decision, then the run's text output checked to have references of
    its kind (``resolve`` checks their texts for the meter)."""
    from speechperf.benchmark import quality as quality_pass
    from speechperf.benchmark import text_reference

    if quality == "off":
        return False, None
    general = cfg.general
    if quality == "asked" and "quality" not in general.meters:
        general = attrs.evolve(general, meters=(*general.meters, "quality"))
    score, note = quality_pass.wanted(general, references, cfg.roles)
    if not score:
        return False, note
    try:  # the run's text output has references of its kind (a transcript's src_text, a translation's)
        text_reference.check(cfg, references)
    except SpeechperfError as exc:
        if "quality" in general.meters:  # asked for: what cannot be scored is refused, before any timing
            raise SpeechperfError(f"{cfg.source}: quality: {exc}") from None
        return False, f"quality not scored: {exc}"
    return True, note
