"""The roofline's traffic bound of one model is the same on torch, paddle and onnxruntime: the weights one call reads
(``Session.parameter_bytes``) come from the model's own weights on every backend (TorchScript or module parameters,
ONNX initializers and constants of the branches that run, paddle layer parameters or ``.pdiparams``), so the same
model lands on the same side of the ridge everywhere."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("paddle")
pytest.importorskip("onnxruntime")
pytest.importorskip("silero_vad")

from speechperf.adapters.vad import CHUNK, CONTEXT, HIDDEN, SAMPLE_RATE, silero_model_spec  # noqa: E402
from speechperf.registry import get_backend  # noqa: E402
from speechperf.zoo.build import ensure_built, load_session, zoo_formats  # noqa: E402
from speechperf.zoo.catalog import get_model  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore")]


def test_the_silero_vad_reads_the_same_weights_on_every_backend(tmp_path):
    # The 16 kHz network: 309 633 float32 weights (the STFT basis, four convs, the LSTM cell, the head).
    feeds = {"input": np.zeros((1, CONTEXT + CHUNK), np.float32), "state": np.zeros((2, 1, HIDDEN), np.float32)}
    read = {}
    for name in ("torch", "onnxruntime", "paddle"):
        backend = get_backend(name)
        session = backend.load(silero_model_spec(backend, tmp_path), "cpu", 1)
        mine = {**feeds, "sr": np.array(SAMPLE_RATE, np.int64)} if "sr" in session.input_names else feeds
        read[name] = session.parameter_bytes(mine)
    assert read["torch"] == read["paddle"] == 309_633 * 4, read
    # the ONNX file's weights are Constant nodes in the taken branch of an If on sr; the other branch (8 kHz) is
    # not read, and a few shape constants are
    assert read["torch"] <= read["onnxruntime"] <= 1.01 * read["torch"], read


def test_a_zoo_model_reads_the_same_weights_in_every_format():
    folder = ensure_built("s2t", "tiny")
    reference = get_model("s2t")
    for component in reference.components:
        feeds = reference.example_feeds(component.name, "tiny", 2, component.test_lengths[0], np.random.default_rng(0))
        read = {
            fmt: load_session(folder, component.name, fmt, threads=1).parameter_bytes(feeds) for fmt in zoo_formats()
        }
        assert read["torch-eager"] == read["paddle-eager"] > 0, (component.name, read)
        # ONNX exports fold a few constants in, .pdiparams add a header per tensor: within 10%, not equal
        assert all(got == pytest.approx(read["torch-eager"], rel=0.1) for got in read.values()), (component.name, read)
