"""Subsets of a dataset (random, shortest, longest, as fairseq's ``data_utils.py`` makes them) and length statistics.

Subsets are taken from the index of a dataset (its ids and lengths), without decoding audio: a raw manifest's
num_samples column, an .npz's array shapes, a text file's word counts. A subset is written in the same format as its
source, except fairseq's pickled .npy, which is written as the safe .npz.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import numpy as np

from speechperf.data.files import read_lines
from speechperf.data.formats import DatasetError, audio_frames, load_npy, load_npz, load_text, read_manifest
from speechperf.errors import SpeechperfError, shorten_path
from speechperf.outputs import atomic_path, check_output_path, refuse_same_file, write_text_atomic

SUBSET_KINDS = ("random", "short", "long")


@attrs.frozen
class Entry:
    id: str
    length: int  # in ``unit``
    seconds: float | None  # audio duration, when the entry is audio
    line: str = ""  # the raw manifest line or text line, written back by a subset


@attrs.frozen
class DatasetIndex:
    path: Path
    dataset_type: str
    unit: str
    entries: tuple[Entry, ...]
    root_line: str = ""  # raw manifests: the first line
    arrays: dict | None = None  # npz/npy: id -> array, to write an .npz subset


def index_dataset(
    path: Path, dataset_type: str, sample_rate: int = 16000, feat_dim: int = 80, allow_pickle: bool = False
) -> DatasetIndex:
    path = Path(path)
    if dataset_type == "raw":
        root, entries = read_manifest(path)
        rows = []
        for number, rel, count in entries:
            # a missing or corrupt file, or a count that is not the file's, is an error here as it is in bench
            _, rate = audio_frames(f"{path}:{number}", root / rel, count)
            sample_id = Path(rel).with_suffix("").as_posix()
            rows.append(Entry(sample_id, count, count / rate, f"{rel}\t{count}"))
        root_line = read_lines(path, "manifest")[0]
        if (wrd := path.with_suffix(".wrd")).is_file():  # its transcripts, checked before a subset is written
            read_lines(wrd, "transcript file")
        return DatasetIndex(path, "raw", "samples", tuple(rows), root_line=root_line)
    if dataset_type in ("npz", "npy"):
        samples = (
            load_npz(path, sample_rate, feat_dim)
            if dataset_type == "npz"
            else load_npy(path, sample_rate, feat_dim, allow_pickle)
        )
        arrays = {s.id: next(a for a in (s.audio, s.features, s.tokens) if a is not None) for s in samples}
        unit = samples[0].unit if samples else "frames"
        return DatasetIndex(
            path, dataset_type, unit, tuple(Entry(s.id, s.length, s.seconds) for s in samples), arrays=arrays
        )
    if dataset_type == "text":
        samples = load_text(path)
        return DatasetIndex(path, "text", "words", tuple(Entry(s.id, s.length, None, s.text or "") for s in samples))
    raise DatasetError(f"dataset type {dataset_type!r} has no index; allowed: raw, npz, npy, text")


def choose(index: DatasetIndex, kind: str, n: int, seed: int = 1) -> list[Entry]:
    """``n`` entries: a seeded random draw, or the ``n`` shortest / longest (ties kept in file order)."""
    if kind not in SUBSET_KINDS:
        raise SpeechperfError(f"subset kind {kind!r} is not known; allowed: {', '.join(SUBSET_KINDS)}")
    if n < 1:
        raise SpeechperfError(f"subset size {n} must be >= 1")
    entries = list(index.entries)
    n = min(n, len(entries))
    if kind == "random":
        picked = np.random.default_rng(seed).choice(len(entries), size=n, replace=False)
        return [entries[i] for i in sorted(picked)]
    order = sorted(range(len(entries)), key=lambda i: entries[i].length, reverse=(kind == "long"))
    return [entries[i] for i in order[:n]]


def check_subset_output(source: Path, dataset_type: str, out: Path) -> None:
    """Before the dataset is read: ``out`` (and, for a raw manifest, the ``.wrd`` written beside it) can be
    written and is not the input itself; an array subset is written as .npz."""
    source, out = Path(source), Path(out)
    pairs = [(source, out)]
    if dataset_type == "raw":
        pairs.append((source.with_suffix(".wrd"), out.with_suffix(".wrd")))
        pairs.append((source, out.with_suffix(".wrd")))
    for given, written in pairs:
        check_output_path(written, "--output")
        refuse_same_file(given, written, "--output")
    if dataset_type in ("npz", "npy") and out.suffix != ".npz":
        raise SpeechperfError(f"an {dataset_type} subset is written as .npz; got output {shorten_path(out)}")


def write_subset(index: DatasetIndex, entries: list[Entry], out: Path) -> Path:
    out = Path(out)
    if index.dataset_type == "raw":
        root = Path(index.root_line.strip())
        if not root.is_absolute():  # keep the subset pointing at the same files wherever it is written
            root = (index.path.parent / root).resolve()
        text = "\n".join([str(root)] + [e.line for e in entries]) + "\n"
        write_text_atomic(out, text)
        wrd = index.path.with_suffix(".wrd")
        if wrd.is_file():  # carry the transcripts of the chosen lines along
            lines = read_lines(wrd, "transcript file")
            position = {e.id: i for i, e in enumerate(index.entries)}
            write_text_atomic(
                out.with_suffix(".wrd"),
                "".join(lines[position[e.id]] + "\n" for e in entries if position[e.id] < len(lines)),
            )
    elif index.dataset_type == "text":
        write_text_atomic(out, "".join(e.line + "\n" for e in entries))
    else:
        if out.suffix != ".npz":
            raise SpeechperfError(f"an {index.dataset_type} subset is written as .npz; got output {out}")
        arrays = index.arrays
        if arrays is None:  # every loader of an array dataset sets them
            raise DatasetError(
                f"{index.path}: its arrays were not loaded, so no {index.dataset_type} subset is written"
            )
        with atomic_path(out, "--output") as tmp:
            np.savez(tmp, **{e.id: arrays[e.id] for e in entries})
    return out


@attrs.frozen
class Stats:
    count: int
    unit: str
    max_len: int
    min_len: int
    avg_len: float
    total_audio_s: float | None


def stats(index: DatasetIndex) -> Stats:
    lengths = [e.length for e in index.entries]
    if not lengths:
        raise DatasetError(f"{index.path} holds no samples")
    seconds = [e.seconds for e in index.entries]
    known = [s for s in seconds if s is not None]
    total = sum(known) if len(known) == len(seconds) else None
    return Stats(len(lengths), index.unit, max(lengths), min(lengths), sum(lengths) / len(lengths), total)
