"""Read the tensors of a ``torch.save`` file with numpy alone, running no code from it.

A checkpoint is a pickle, and unpickling an arbitrary pickle runs code. This reader does what
``torch.load(weights_only=True)`` does: an unpickler whose ``find_class`` resolves only the few globals a state
dict needs (``collections.OrderedDict``, ``torch._utils._rebuild_tensor_v2`` and the ``torch.*Storage`` types, each
mapped to a plain function or a dtype here) and refuses every other, so nothing from the file is ever called.

Both layouts ``torch.save`` has written are read:

- zip (torch >= 1.6): ``<name>/data.pkl`` whose persistent ids ``('storage', type, key, location, numel)`` name the
  members ``<name>/data/<key>``, raw little-endian elements;
- legacy (before 1.6, e.g. the HiFi-GAN ``.pth.tar`` files): five pickles in a row (magic number, protocol
  version, system info, the object, the sorted storage keys), then per key an int64 element count and the raw
  elements.
"""

from __future__ import annotations

import collections
import io
import pickle
import struct
import zipfile
from pathlib import Path

import attrs
import numpy as np

from speechperf.errors import ModelFileError

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
#: The module a checkpoint's pickle names for its storage classes (``torch.FloatStorage``): a file-format name.
STORAGE_MODULE = "torch"
STORAGE_DTYPES = {
    "FloatStorage": np.dtype("<f4"),
    "DoubleStorage": np.dtype("<f8"),
    "HalfStorage": np.dtype("<f2"),
    "LongStorage": np.dtype("<i8"),
    "IntStorage": np.dtype("<i4"),
    "ShortStorage": np.dtype("<i2"),
    "CharStorage": np.dtype("i1"),
    "ByteStorage": np.dtype("u1"),
    "BoolStorage": np.dtype("?"),
}


class CheckpointFormatError(ModelFileError):
    pass


@attrs.frozen
class _Storage:
    key: str
    dtype: np.dtype
    numel: int


@attrs.frozen
class _TensorRef:
    storage: _Storage
    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]


def _rebuild_tensor(storage, offset, shape, stride, *_rest) -> _TensorRef:
    return _TensorRef(storage, int(offset), tuple(shape), tuple(stride))


class _SafeUnpickler(pickle.Unpickler):
    def __init__(self, file, path: Path):
        super().__init__(file)
        self.path = path

    def find_class(self, module: str, name: str):
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return _rebuild_tensor
        if module == STORAGE_MODULE and name in STORAGE_DTYPES:
            return STORAGE_DTYPES[name]
        raise CheckpointFormatError(
            f"{self.path}: the checkpoint refers to {module}.{name}, which a weights-only reader does not load; "
            "allowed: OrderedDict, tensors and their storages"
        )

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage"):
            raise CheckpointFormatError(f"{self.path}: unknown persistent id {pid!r:.80}")
        _, dtype, key, _location, numel = pid[:5]
        if not isinstance(dtype, np.dtype):
            raise CheckpointFormatError(f"{self.path}: storage {key!r} has type {dtype!r:.80}")
        return _Storage(str(key), dtype, int(numel))


def _materialize(obj, data: dict[str, bytes], path: Path):
    if isinstance(obj, _TensorRef):
        storage = obj.storage
        if storage.key not in data:
            raise CheckpointFormatError(f"{path}: storage {storage.key!r} is missing")
        flat = np.frombuffer(data[storage.key], dtype=storage.dtype, count=storage.numel)
        itemsize = storage.dtype.itemsize
        if obj.shape and (obj.offset + sum((n - 1) * s for n, s in zip(obj.shape, obj.stride)) >= storage.numel):
            raise CheckpointFormatError(f"{path}: a tensor of shape {obj.shape} overruns its storage")
        view = np.lib.stride_tricks.as_strided(
            flat[obj.offset :], obj.shape, tuple(s * itemsize for s in obj.stride), writeable=False
        )
        return np.ascontiguousarray(view)
    if isinstance(obj, dict):
        return {k: _materialize(v, data, path) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_materialize(v, data, path) for v in obj)
    return obj


def _legacy(raw: bytes, path: Path):
    stream = io.BytesIO(raw)
    magic = _SafeUnpickler(stream, path).load()
    if magic != LEGACY_MAGIC:
        raise CheckpointFormatError(f"{path} is not a torch.save file (no zip, no legacy magic number)")
    _SafeUnpickler(stream, path).load()  # protocol version
    _SafeUnpickler(stream, path).load()  # system info (endianness, type sizes)
    obj = _SafeUnpickler(stream, path).load()
    keys = _SafeUnpickler(stream, path).load()
    storages: dict[str, _Storage] = {}

    def collect(o):
        if isinstance(o, _TensorRef):
            storages[o.storage.key] = o.storage
        elif isinstance(o, dict):
            for v in o.values():
                collect(v)
        elif isinstance(o, (list, tuple)):
            for v in o:
                collect(v)

    collect(obj)
    data = {}
    for key in keys:
        (count,) = struct.unpack("<q", stream.read(8))
        storage = storages.get(str(key))
        itemsize = storage.dtype.itemsize if storage is not None else 1
        chunk = stream.read(count * itemsize)
        if len(chunk) != count * itemsize:
            raise CheckpointFormatError(f"{path} is truncated in storage {key!r}")
        data[str(key)] = chunk
    return obj, data


def _zip(path: Path):
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        pickles = [n for n in names if n.endswith("/data.pkl")]
        if len(pickles) != 1:
            raise CheckpointFormatError(f"{path}: a torch zip checkpoint holds one data.pkl; found {len(pickles)}")
        root = pickles[0][: -len("data.pkl")]
        obj = _SafeUnpickler(io.BytesIO(archive.read(pickles[0])), path).load()
        data = {n[len(root) + len("data/") :]: archive.read(n) for n in names if n.startswith(root + "data/")}
    return obj, data


def load_checkpoint(path: str | Path):
    """The object ``torch.save`` wrote to ``path``, every tensor as a numpy array; one-line errors."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointFormatError(f"checkpoint {path} does not exist")
    try:
        obj, data = _zip(path) if zipfile.is_zipfile(path) else _legacy(path.read_bytes(), path)
    except (pickle.UnpicklingError, EOFError, ValueError, struct.error) as exc:
        raise CheckpointFormatError(f"{path} is not a readable torch.save file: {exc}") from None
    return _materialize(obj, data, path)
