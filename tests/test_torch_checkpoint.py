"""The torch-free, code-free reader of torch.save files (``speechperf.zoo.torch_checkpoint``): both layouts torch
writes, views with strides and offsets, and a pickle that would run code refused in one line."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from speechperf.zoo.torch_checkpoint import CheckpointFormatError, load_checkpoint


@pytest.mark.parametrize("zip_layout", [True, False], ids=["zip", "legacy"])
def test_both_layouts_read_back_as_torch_wrote_them(tmp_path, zip_layout):
    torch = pytest.importorskip("torch")
    state = {
        "generator": {
            "w": torch.arange(12.0).reshape(3, 4).t(),  # a transposed view: strides (1, 4)
            "tail": torch.arange(10, dtype=torch.int64)[3:7],  # an offset into its storage
            "half": torch.tensor([0.5, -1.5], dtype=torch.float16),
        },
        "step": 7,
    }
    path = tmp_path / "ckpt.pt"
    torch.save(state, path, _use_new_zipfile_serialization=zip_layout)
    got = load_checkpoint(path)
    assert got["step"] == 7 and set(got["generator"]) == {"w", "tail", "half"}
    for key, tensor in state["generator"].items():
        assert got["generator"][key].dtype == tensor.numpy().dtype, key
        np.testing.assert_array_equal(got["generator"][key], tensor.numpy(), err_msg=key)


class _RunsCode:
    def __reduce__(self):
        import os

        return (os.system, ("echo pwned",))


def test_a_pickle_that_would_run_code_is_refused(tmp_path):
    path = tmp_path / "evil.pt"
    with open(path, "wb") as f:
        for obj in (0x1950A86A20F9469CFC6C, 1001, {}):
            pickle.dump(obj, f)
        pickle.dump({"generator": _RunsCode()}, f)
    with pytest.raises(CheckpointFormatError, match=r"refers to posix\.system, which a weights-only reader"):
        load_checkpoint(path)


def test_not_a_checkpoint_is_one_line(tmp_path):
    path = tmp_path / "junk.pt"
    path.write_bytes(b"\x00\x01junk")
    with pytest.raises(CheckpointFormatError, match=r"junk\.pt is not a readable torch\.save file") as info:
        load_checkpoint(path)
    assert "\n" not in str(info.value)
    with pytest.raises(CheckpointFormatError, match="does not exist"):
        load_checkpoint(tmp_path / "absent.pt")
