"""The references the quality meter scores against, read from what users already have (docs/benchmark.md).

In this order, the first that exists:

1. ``general.reference_path``: one line per sample of the whole dataset, in dataset order: a transcript or a
   translation, or for a VAD run the speech segments of the clip as ``start-end`` seconds separated by spaces (an
   empty line: no speech).
2. From the dataset itself: the ``.wrd`` file beside a raw manifest (wav2vec2's convention, one transcript per
   entry); the ``tgt_text`` column of a fairseq speech_to_text manifest (with ``src_text``, the source transcripts
   of a translation set, and ``tgt_lang``); the ``.ref`` file beside a text dataset (``test.txt`` -> ``test.ref``,
   its parallel reference translations); the ``.seg`` file beside a raw manifest for VAD (the format above).
3. For a TTS run (speech from text) the input text itself: intelligibility is scored against what the model was
   asked to say.

Beside any of them, a speech-enhancement dataset's clean recordings (``general.clean_reference_dir``,
speechperf.data.clean), which PESQ and STOI score the enhanced speech against.

A generated dataset's audio is speech-shaped noise: the sentences it carries are no transcripts of it, so they are
never references. A file of references whose line count is not the dataset's sample count is refused in one line.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import numpy as np

from speechperf.data.clean import KEY as CLEAN_KEY
from speechperf.data.clean import load_clean
from speechperf.data.files import read_lines
from speechperf.data.formats import DatasetError, read_fairseq_manifest, read_manifest
from speechperf.data.sample import Sample

Segments = tuple[tuple[float, float], ...]


@attrs.frozen
class References:
    """Per sample id: the reference text of the final output (a transcript, or a translation), the source
    transcript where a translation set has one, VAD segments, and the language of the text."""

    origin: str  # where ``texts`` came from, as printed: ".wrd beside data/test.tsv", "tgt_text of data/st.tsv"
    texts: dict[str, str] = attrs.Factory(dict)
    sources: dict[str, str] = attrs.Factory(dict)
    segments: dict[str, Segments] = attrs.Factory(dict)
    languages: dict[str, str] = attrs.Factory(dict)
    #: the texts are translations (a fairseq manifest with src_text, a text dataset's .ref, S2ST targets)
    translation: bool = False
    #: the texts are the inputs themselves (TTS): present for every run, so not a reason to score by default
    from_inputs: bool = False
    #: where ``sources`` came from ("src_text of data/st.tsv"), None without them
    sources_origin: str | None = None
    #: the texts are transcripts of the speech (a .wrd), never translations
    transcripts: bool = False
    #: speech enhancement: the clean recording of each noisy input (samples at 16 kHz, 16000), for PESQ / STOI
    clean: dict[str, tuple[np.ndarray, int]] = attrs.field(factory=dict, eq=False)
    #: where ``clean`` came from ("general.clean_reference_dir data/clean"), None without them
    clean_origin: str | None = None

    def language(self, sample_id: str, default: str) -> str:
        return self.languages.get(sample_id) or default


def parse_segments(line: str, where: str) -> Segments:
    segments = []
    for item in line.split():
        start, sep, end = item.partition("-")
        try:
            a, b = float(start), float(end)
        except ValueError:
            a = b = -1.0
        if not sep or not 0 <= a < b:
            raise DatasetError(f"{where}: segment {item!r} is not start-end in seconds with 0 <= start < end")
        segments.append((a, b))
    return tuple(segments)


def _lines(path: Path, count: int, what: str) -> list[str]:
    lines = read_lines(path, what)
    while lines and not lines[-1].strip():
        lines.pop()
    if len(lines) != count:
        raise DatasetError(
            f"{what} {path} has {len(lines)} line(s) for {count} sample(s); it needs one line per sample, in "
            "dataset order"
        )
    return lines


def dataset_count(general) -> int:
    """How many samples the whole dataset holds (before dataset_size), for checking a reference file against."""
    kind, path = general.dataset_type, Path(general.dataset_path or "")
    if kind == "raw":
        return len(read_manifest(path)[1])
    if kind == "fairseq_s2t":
        return len(read_fairseq_manifest(path))
    if kind == "text":
        return sum(1 for line in read_lines(path, "text dataset") if line.strip())
    if kind == "generated":
        return general.dataset_size or 8
    from speechperf.data import load_npy, load_npz

    # Only counted: whatever the samples hold (tokens for a TTS, features for an ASR), the first stage checks that.
    if kind == "npz":
        return len(load_npz(path, general.sample_rate, general.feat_dim, None))
    return len(load_npy(path, general.sample_rate, general.feat_dim, general.unsafe_pickle_runs_code, None))


def load_references(general, samples: list[Sample], roles: tuple[str, ...]) -> References | None:
    """The references of ``samples`` (the run's, in order), or None when there are none; with the clean
    recordings of an enhancement dataset (speechperf.data.clean) where ``general.clean_reference_dir`` names them."""
    refs = _text_references(general, samples, roles)
    clean = load_clean(general, samples)
    if not clean:
        return refs
    origin = f"{CLEAN_KEY} {general.clean_reference_dir}"
    if refs is None:
        return References(origin, clean=clean, clean_origin=origin)
    return attrs.evolve(refs, clean=clean, clean_origin=origin)


def _text_references(general, samples: list[Sample], roles: tuple[str, ...]) -> References | None:
    ids = [s.id for s in samples]
    vad = roles[-1] == "vad"
    if general.reference_path:
        path = Path(general.reference_path)
        lines = _lines(path, dataset_count(general), "general.reference_path")[: len(samples)]
        origin = f"general.reference_path {path}"
        if vad:
            segs = {sid: parse_segments(line, f"{path}:{n}") for n, (sid, line) in enumerate(zip(ids, lines), 1)}
            return References(origin, segments=segs)
        return References(origin, texts=dict(zip(ids, lines)), translation=_translates(roles))
    kind, path = general.dataset_type, Path(general.dataset_path or "")
    if vad:
        seg = path.with_suffix(".seg") if kind == "raw" else None
        if seg is not None and seg.is_file():
            lines = _lines(seg, dataset_count(general), "segments file")[: len(samples)]
            segs = {sid: parse_segments(line, f"{seg}:{n}") for n, (sid, line) in enumerate(zip(ids, lines), 1)}
            return References(f"{seg.name} beside {path}", segments=segs)
        return None
    if kind == "raw" and any(s.text is not None for s in samples):
        texts = {s.id: s.text for s in samples if s.text is not None}
        where = f"{path.with_suffix('.wrd').name} beside {path}"
        return References(where, texts, translation=_translates(roles), transcripts=True)
    if kind == "fairseq_s2t":
        return References(
            f"tgt_text of {path}",
            {s.id: s.text for s in samples if s.text is not None},
            {s.id: s.source_text for s in samples if s.source_text is not None},
            languages={s.id: s.language for s in samples if s.language},
            translation=any(s.source_text is not None for s in samples) or _translates(roles),
            sources_origin=f"src_text of {path}" if any(s.source_text is not None for s in samples) else None,
        )
    if kind == "text":
        ref = path.with_suffix(".ref")
        if ref.is_file() and ref != path:
            lines = _lines(ref, dataset_count(general), "reference file")[: len(samples)]
            return References(f"{ref.name} beside {path}", dict(zip(ids, lines)), translation=True)
    inputs = {s.id: s.text for s in samples if s.text is not None}
    if roles[0] == "tts" and len(inputs) == len(samples):
        return References("the input text (what the TTS was asked to say)", inputs, from_inputs=True)
    return None


def _translates(roles: tuple[str, ...]) -> bool:
    """A chain with an MT stage, or a speech-to-speech one, ends in another language than its input."""
    return "mt" in roles or roles[0] in ("s2u", "s2s")
