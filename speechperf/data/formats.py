"""Dataset formats: ``raw`` TSV manifests, fairseq's speech_to_text TSV (``fairseq_s2t``), ``.npz`` arrays, fairseq's pickled ``.npy`` (opt-in), text files, and
a generated dataset that needs no files.

Each reader returns a list of ``Sample``. Errors name the file and, for manifests, the line.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from speechperf.data.audio import AudioError, read_audio
from speechperf.data.files import DatasetError, file_problem, read_lines, require_file
from speechperf.data.sample import Sample

PICKLE_FLAG = "--unsafe-pickle-runs-code"


# -- raw: wav2vec2-style TSV --------------------------------------------------------------------------------------


def read_manifest(path: Path) -> tuple[Path, list[tuple[int, str, int]]]:
    """The root folder and (line number, relative path, num_samples) of each entry of a TSV manifest.

    A relative root is taken relative to the manifest's folder, so a dataset folder can be moved as a whole.
    """
    lines = read_lines(
        path,
        "manifest",
        ", so not a raw manifest: a raw dataset is a TSV whose first line is the audio root folder (for .npz / "
        ".npy / text files pass --dataset-type npz, npy or text)",
    )
    if not lines or not lines[0].strip():
        raise DatasetError(f"{path}:1: the first line must be the root folder of the audio files")
    root = Path(lines[0].strip())
    if not root.is_absolute():
        root = path.parent / root
    entries = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        parts = line.rstrip("\n").split("\t")
        if len(parts) < 2:
            raise DatasetError(f"{path}:{number}: expected 'relative/path.wav<TAB>num_samples', got {line!r}")
        try:
            count = int(parts[1])
        except ValueError:
            raise DatasetError(f"{path}:{number}: num_samples {parts[1]!r} is not an integer") from None
        if count < 1:  # an empty file has no frame to run; bench would fail on it only after loading the model
            raise DatasetError(
                f"{path}:{number}: {parts[0]} has num_samples {count}; an audio file needs at least 1 sample"
            )
        entries.append((number, parts[0], count))
    return root, entries


def audio_frames(where: str, audio_path: Path, count: int) -> tuple[int, int]:
    """Frames and rate of a manifest entry's audio file, which must exist, be readable and have ``count`` frames."""
    import soundfile as sf

    problem = file_problem(audio_path)
    if problem is not None:
        raise AudioError(f"{where}: audio file {problem}: {audio_path}")
    try:
        info = sf.info(str(audio_path))
    except Exception as exc:  # soundfile raises LibsndfileError / RuntimeError / TypeError on corrupt files
        raise AudioError(f"{where}: cannot read audio file {audio_path}: {str(exc).strip().splitlines()[0]}") from None
    if info.frames != count:
        raise DatasetError(
            f"{where}: manifest says {count} samples but {audio_path} has {info.frames}; "
            "regenerate the manifest or fix the count"
        )
    return info.frames, info.samplerate


def transcripts_of(manifest: Path, entries: int | None = None) -> list[str] | None:
    """The ``.wrd`` transcripts beside a manifest (one line per entry, wav2vec2 style), if there are any; with
    ``entries``, a file with another number of lines is refused (each line is matched to an entry by position)."""
    wrd = manifest.with_suffix(".wrd")
    if not wrd.is_file():
        return None
    lines = read_lines(wrd, "transcript file")
    while lines and not lines[-1].strip():  # a trailing blank line is an editor's, not an empty transcript
        lines.pop()
    if entries is not None and len(lines) != entries:
        raise DatasetError(
            f"{wrd} has {len(lines)} transcript line(s) for the {entries} entries of {manifest}; "
            "it needs one line per manifest entry, in the same order"
        )
    return lines


def load_raw(path: Path, sample_rate: int, size: int | None = None) -> list[Sample]:
    root, entries = read_manifest(path)
    texts = transcripts_of(path, len(entries))
    samples = []
    for index, (number, rel, count) in enumerate(entries[:size] if size else entries):
        where = f"{path}:{number}"
        audio_path = root / rel
        audio_frames(where, audio_path, count)
        audio = read_audio(audio_path, sample_rate, where)
        text = texts[index] if texts and index < len(texts) else None
        sample_id = Path(rel).with_suffix("").as_posix()  # the relative path: unique where file names repeat
        samples.append(Sample(id=sample_id, audio=audio, sample_rate=sample_rate, text=text))
    return samples


# -- fairseq_s2t: fairseq's speech_to_text TSV manifest ----------------------------------------------------------

FAIRSEQ_REQUIRED = ("id", "audio", "n_frames", "tgt_text")
FAIRSEQ_OPTIONAL = ("src_text", "speaker", "tgt_lang", "src_lang")


def read_fairseq_manifest(path: Path) -> list[tuple[int, dict[str, str]]]:
    """(line number, row) of fairseq's speech_to_text manifest: a header line naming the columns, then one row per
    utterance, tab-separated (fairseq's ``S2TDataConfig`` datasets; rows are read as csv.QUOTE_NONE)."""
    lines = read_lines(path, "fairseq speech_to_text manifest")
    header = lines[0].split("\t") if lines else []
    missing = [c for c in FAIRSEQ_REQUIRED if c not in header]
    if missing:
        raise DatasetError(
            f"{path}:1: a fairseq speech_to_text manifest starts with a header naming the columns "
            f"{', '.join(FAIRSEQ_REQUIRED)} (optional: {', '.join(FAIRSEQ_OPTIONAL)}); missing: {', '.join(missing)}"
        )
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != len(header):
            raise DatasetError(f"{path}:{number}: {len(parts)} column(s); the header names {len(header)}")
        rows.append((number, dict(zip(header, parts))))
    return rows


def fairseq_audio_path(manifest: Path, value: str, where: str) -> Path:
    """fairseq's ``audio`` column: a path, relative ones resolved against the manifest's folder. The
    ``file.zip:offset:length`` form (fbank features stored in a zip) is not read."""
    if value.count(":") >= 2 and value.split(":")[-1].isdigit() and value.split(":")[-2].isdigit():
        raise DatasetError(
            f"{where}: audio {value!r} is a path:offset:length slice of a zip; speechperf reads audio files "
            "(a path, absolute or relative to the manifest's folder)"
        )
    audio = Path(value)
    return audio if audio.is_absolute() else manifest.parent / audio


def load_fairseq_s2t(path: Path, sample_rate: int, size: int | None = None) -> list[Sample]:
    rows = read_fairseq_manifest(path)
    samples, seen = [], set()
    for number, row in rows[:size] if size else rows:
        where = f"{path}:{number}"
        if row["id"] in seen:
            raise DatasetError(f"{where}: id {row['id']!r} appears more than once; ids must be unique")
        seen.add(row["id"])
        audio = read_audio(fairseq_audio_path(path, row["audio"], where), sample_rate, where)
        samples.append(
            Sample(
                id=row["id"],
                audio=audio,
                sample_rate=sample_rate,
                text=row["tgt_text"],
                source_text=row.get("src_text") or None,
                language=row.get("tgt_lang") or None,
            )
        )
    return samples


# -- npz: one array per sample -------------------------------------------------------------------------------------


def load_npz(path: Path, sample_rate: int, feat_dim: int, size: int | None = None) -> list[Sample]:
    """Each array of the ``.npz`` is one sample, keyed by its id: float (frames, feat_dim) = features,
    integer (length,) = token ids, float (length,) = a waveform at ``sample_rate``."""
    require_file(path)
    try:
        archive = np.load(str(path), allow_pickle=False)
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise DatasetError(f"cannot read {path} as .npz: {exc}") from None
    samples = []
    with archive:
        for key in list(archive.files)[:size] if size else archive.files:
            try:
                array = archive[key]
            except ValueError as exc:  # an object array: it would need pickle
                raise DatasetError(
                    f"{path}: array {key!r} cannot be read without pickle ({exc}); store plain numeric arrays"
                ) from None
            samples.append(_sample_from_array(key, array, sample_rate, feat_dim, f"{path}: array {key!r}"))
    return samples


def _sample_from_array(key: str, array: np.ndarray, sample_rate: int, feat_dim: int, where: str) -> Sample:
    array = np.asarray(array)
    while array.ndim > 1 and array.shape[0] == 1:  # a leading batch axis of 1, as fairseq stores it
        array = array[0]
    if np.issubdtype(array.dtype, np.integer) and array.ndim == 1:
        return Sample(id=key, tokens=array.astype(np.int64))
    if np.issubdtype(array.dtype, np.floating) and array.ndim == 2:
        if array.shape[1] != feat_dim:
            raise DatasetError(
                f"{where} has shape {array.shape}; features must be (frames, feat_dim={feat_dim}) "
                "(set general.feat_dim)"
            )
        return Sample(id=key, features=array.astype(np.float32))
    if np.issubdtype(array.dtype, np.floating) and array.ndim == 1:
        return Sample(id=key, audio=array.astype(np.float32), sample_rate=sample_rate)
    raise DatasetError(
        f"{where} has dtype {array.dtype} and shape {array.shape}; allowed: integer (length,) "
        f"token ids, float (frames, {feat_dim}) features, float (length,) waveform"
    )


# -- npy: fairseq's pickled list of dicts --------------------------------------------------------------------------


def load_npy(path: Path, sample_rate: int, feat_dim: int, allow_pickle: bool, size: int | None = None) -> list[Sample]:
    """fairseq's ``.npy``: a pickled list of ``{id, net_input: {src_tokens, src_lengths}}``.

    Unpickling runs code stored in the file, so it happens only when the user passes the explicit flag.
    """
    require_file(path)
    try:
        data = np.load(str(path), allow_pickle=False)
    except ValueError:
        if not allow_pickle:
            raise DatasetError(
                f"{path} is a pickled .npy (fairseq's list of dicts); unpickling runs code from the file, so it "
                f"is refused unless you pass {PICKLE_FLAG} (general.unsafe_pickle_runs_code: true) for a file "
                "you trust, or convert it to .npz"
            ) from None
        try:
            data = np.load(str(path), allow_pickle=True)
        except Exception as exc:
            raise DatasetError(f"cannot unpickle {path}: {type(exc).__name__}: {exc}") from None
    except OSError as exc:
        raise DatasetError(f"cannot read {path} as .npy: {exc}") from None
    if data.ndim == 0 and data.dtype != object:
        raise DatasetError(
            f"{path} holds a single value (a 0-d {data.dtype} array); a .npy dataset is an array with one sample "
            "per row, or fairseq's pickled list of dicts"
        )
    if data.dtype != object:  # a plain numeric array: one sample per row
        items = [(str(i), row) for i, row in enumerate(data)]
    else:
        items = []
        for i, entry in enumerate(data.tolist() if data.ndim else [data.item()]):
            try:
                items.append((str(entry.get("id", i)), entry["net_input"]["src_tokens"]))
            except (AttributeError, KeyError, TypeError):
                raise DatasetError(f"{path}: item {i} is not {{id, net_input: {{src_tokens, src_lengths}}}}") from None
    items = items[:size] if size else items
    return [
        _sample_from_array(key, np.asarray(value), sample_rate, feat_dim, f"{path}: item {key!r}")
        for key, value in items
    ]


# -- text ----------------------------------------------------------------------------------------------------------


def load_text(path: Path, size: int | None = None) -> list[Sample]:
    """One sentence per non-empty line (MT and TTS inputs); the id is the line number."""
    lines = read_lines(path, "text dataset")
    samples = [Sample(id=str(n), text=line.strip()) for n, line in enumerate(lines, 1) if line.strip()]
    return samples[:size] if size else samples
