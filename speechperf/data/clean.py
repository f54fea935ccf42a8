"""Clean references of a speech-enhancement dataset (``general.clean_reference_dir``): the clean recording of each
noisy input, which PESQ and STOI score the enhanced speech against (docs/benchmark.md, Quality).

The folder is matched the way the field's test sets are laid out:

- the same file name (the same relative path as the manifest's entry): VoiceBank-DEMAND's ``clean_testset_wav/``
  beside ``noisy_testset_wav/``, and most folders of parallel recordings;
- else the DNS Challenge's names: a noisy ``..._fileid_12.wav`` is the clean ``clean_fileid_12.wav`` (its test
  set's ``noisy/`` and ``clean/`` folders).

The noisy files are a ``raw`` manifest's entries or a ``fairseq_s2t`` manifest's ``audio`` column. A sample whose
clean file is missing is refused in one line before anything is loaded; the clean files are read at 16 kHz, the
rate PESQ (wide band) and STOI are scored at here.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from speechperf.data.audio import read_audio
from speechperf.data.files import DatasetError
from speechperf.data.formats import read_fairseq_manifest, read_manifest
from speechperf.data.sample import Sample

KEY = "general.clean_reference_dir"
RATE = 16000
_DNS_ID = re.compile(r"fileid_(\d+)$")


def noisy_files(general) -> dict[str, str]:
    """The file each sample id was read from, as its manifest names it (relative to the audio root, or as written
    in fairseq's ``audio`` column)."""
    kind, path = general.dataset_type, Path(general.dataset_path or "")
    if kind == "raw":
        return {Path(rel).with_suffix("").as_posix(): rel for _, rel, _ in read_manifest(path)[1]}
    if kind == "fairseq_s2t":
        return {row["id"]: row["audio"] for _, row in read_fairseq_manifest(path)}
    raise DatasetError(
        f"{KEY} matches clean files to the noisy audio files by name, so it needs a raw or fairseq_s2t manifest; "
        f"dataset_type is {kind!r}"
    )


def clean_file(folder: Path, noisy: str) -> Path | None:
    """The clean file of the noisy file ``noisy`` in ``folder`` (see the module's docstring), or None."""
    rel = Path(noisy)
    if rel.is_absolute():  # a fairseq audio column may hold absolute paths: match by the file's name
        rel = Path(rel.name)
    same = folder / rel
    if same.is_file():
        return same
    dns = _DNS_ID.search(rel.stem)
    if dns:
        candidate = folder / rel.parent / f"clean_fileid_{dns.group(1)}{rel.suffix}"
        if candidate.is_file():
            return candidate
    return None


def load_clean(general, samples: list[Sample]) -> dict[str, tuple[np.ndarray, int]]:
    """The clean recording of every sample (id -> samples at 16 kHz, 16000); {} without ``clean_reference_dir``."""
    if not general.clean_reference_dir:
        return {}
    folder = Path(general.clean_reference_dir)
    if not folder.is_dir():
        raise DatasetError(f"{KEY} {folder} is not a folder")
    files = noisy_files(general)
    found = {}
    for sample in samples:
        noisy = files[sample.id]
        path = clean_file(folder, noisy)
        if path is None:
            raise DatasetError(
                f"{KEY}: no clean file for sample {sample.id!r} ({noisy}) in {folder}: expected "
                f"{folder / Path(noisy).name} (the same name) or, for DNS Challenge names, clean_fileid_N"
                f"{Path(noisy).suffix}"
            )
        found[sample.id] = (read_audio(path, RATE, f"{KEY} {folder}"), RATE)
    return found
