"""Read a CTranslate2 ``model.bin`` with numpy alone (no ctranslate2, no framework).

The layout, all little-endian, as CTranslate2's ``ModelSpec`` writes it (binary version 6)::

    uint32 binary version
    string model spec name            (e.g. "WhisperSpec")
    uint32 spec revision
    uint32 number of variables
    per variable:
        string name                   ("encoder/layer_0/self_attention/linear_0/weight")
        uint8  rank
        uint32 dims[rank]
        uint8  dtype id               (DTYPES below)
        uint32 number of bytes
        bytes  data                   (row-major)
    uint32 number of aliases          (versions >= 5)
    per alias: string alias, string variable name

where a string is a uint16 length that counts a trailing NUL, then that many bytes (UTF-8, NUL-terminated).
Versions 1-4 stored strings and dims differently; only the layout above is read, and any other version is refused.
"""

from __future__ import annotations

import struct
from pathlib import Path

import attrs
import numpy as np

from speechperf.errors import ModelFileError

#: Binary versions whose layout is the one above.
SUPPORTED_VERSIONS = (5, 6)
#: CTranslate2's DataType enum -> numpy dtype.
DTYPES: dict[int, np.dtype] = {
    0: np.dtype("<f4"),
    1: np.dtype("i1"),
    2: np.dtype("<i2"),
    3: np.dtype("<i4"),
    4: np.dtype("<f2"),
    # 5 is bfloat16, which numpy cannot hold; read as raw uint16 and widened to float32 by ``as_float32``.
    5: np.dtype("<u2"),
}
BFLOAT16 = 5
DTYPE_NAMES = "0 float32, 1 int8, 2 int16, 3 int32, 4 float16, 5 bfloat16"


class CTranslate2FormatError(ModelFileError):
    pass


@attrs.frozen
class CTranslate2Model:
    """Everything in a ``model.bin``: the stored variables by name, and aliases (another name for one of them)."""

    path: Path
    version: int
    spec: str
    revision: int
    variables: dict[str, np.ndarray] = attrs.field(repr=False)
    dtype_ids: dict[str, int] = attrs.field(repr=False)
    aliases: dict[str, str] = attrs.field(factory=dict)

    def array(self, name: str) -> np.ndarray:
        """A variable by its name or an alias, as stored."""
        target = self.aliases.get(name, name)
        if target not in self.variables:
            raise CTranslate2FormatError(f"{self.path} ({self.spec}) has no variable {name!r}")
        return self.variables[target]

    def as_float32(self, name: str) -> np.ndarray:
        """A variable as float32 (fp16 and bf16 widened exactly)."""
        value = self.array(name)
        if self.dtype_ids[self.aliases.get(name, name)] == BFLOAT16:
            return (value.astype(np.uint32) << 16).view(np.float32)
        return value.astype(np.float32)

    def scalar(self, name: str) -> int | float:
        return self.array(name).reshape(-1)[0].item()


class _Reader:
    def __init__(self, path: Path, data: bytes):
        self.path, self.data, self.pos = path, data, 0

    def take(self, n: int, what: str) -> bytes:
        if self.pos + n > len(self.data):
            raise CTranslate2FormatError(
                f"{self.path} is truncated: {what} needs {n} bytes at offset {self.pos}, the file has {len(self.data)}"
            )
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def unpack(self, fmt: str, what: str):
        values = struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt), what))
        return values if len(values) > 1 else values[0]

    def string(self, what: str) -> str:
        length = self.unpack("H", f"length of {what}")
        raw = self.take(length, what)
        if length == 0 or raw[-1] != 0:
            raise CTranslate2FormatError(f"{self.path}: {what} at offset {self.pos - length} is not NUL-terminated")
        try:
            return raw[:-1].decode("utf-8")
        except UnicodeDecodeError:
            raise CTranslate2FormatError(f"{self.path}: {what} at offset {self.pos - length} is not UTF-8") from None


def read_model(path: str | Path, *more_parts: str | Path) -> CTranslate2Model:
    """Parse ``path`` (a CTranslate2 ``model.bin``), or ``path`` and ``more_parts`` joined in order (a file split
    over several packages); a malformed file raises one line naming it."""
    paths = [Path(p) for p in (path, *more_parts)]
    for part in paths:
        if not part.is_file():
            raise CTranslate2FormatError(f"CTranslate2 model file {part} does not exist")
    path = paths[0]
    reader = _Reader(path, b"".join(part.read_bytes() for part in paths))
    version = reader.unpack("I", "binary version")
    if version not in SUPPORTED_VERSIONS:
        allowed = ", ".join(map(str, SUPPORTED_VERSIONS))
        raise CTranslate2FormatError(
            f"{path} is not a CTranslate2 model.bin this reader knows: binary version {version}; allowed: {allowed}"
        )
    spec = reader.string("model spec name")
    revision = reader.unpack("I", "spec revision")
    count = reader.unpack("I", "variable count")
    variables, dtype_ids = {}, {}
    for index in range(count):
        name = reader.string(f"name of variable {index}")
        rank = reader.unpack("B", f"rank of {name}")
        dims = tuple(reader.unpack("I", f"dims of {name}") for _ in range(rank))
        dtype_id = reader.unpack("B", f"dtype of {name}")
        if dtype_id not in DTYPES:
            raise CTranslate2FormatError(f"{path}: variable {name!r} has dtype id {dtype_id}; known ids: {DTYPE_NAMES}")
        nbytes = reader.unpack("I", f"byte count of {name}")
        dtype = DTYPES[dtype_id]
        expected = int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
        if nbytes != expected:
            raise CTranslate2FormatError(
                f"{path}: variable {name!r} of shape {dims} and dtype id {dtype_id} declares {nbytes} bytes; "
                f"expected {expected}"
            )
        data = reader.take(nbytes, f"data of {name}")
        variables[name] = np.frombuffer(data, dtype=dtype).reshape(dims)
        dtype_ids[name] = dtype_id
    aliases = {}
    if reader.pos < len(reader.data):
        for index in range(reader.unpack("I", "alias count")):
            alias = reader.string(f"alias {index}")
            target = reader.string(f"target of alias {alias!r}")
            if target not in variables:
                raise CTranslate2FormatError(f"{path}: alias {alias!r} points to unknown variable {target!r}")
            aliases[alias] = target
    if reader.pos != len(reader.data):
        raise CTranslate2FormatError(f"{path} has {len(reader.data) - reader.pos} bytes after the last alias")
    return CTranslate2Model(path, version, spec, revision, variables, dtype_ids, aliases)
