import numpy as np
import pytest

from speechperf.adapters.units import (
    assign,
    assign_batch,
    batch_waveforms,
    deduplicate,
    extract_units,
    load_codebook,
)
from speechperf.errors import FeedError, ModelFileError


def test_each_frame_goes_to_its_nearest_centroid():
    codebook = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]], np.float32)
    feats = np.array([[[9.0, 1.0], [1.0, 1.0], [2.0, 8.0]]], np.float32)
    assert assign(feats, codebook).tolist() == [[1, 0, 2]]


def test_assignment_matches_brute_force_distances():
    rng = np.random.default_rng(0)
    codebook = rng.standard_normal((100, 16)).astype(np.float32)
    feats = rng.standard_normal((3, 20, 16)).astype(np.float32)
    brute = ((feats[..., None, :] - codebook) ** 2).sum(-1).argmin(-1)
    np.testing.assert_array_equal(assign(feats, codebook), brute)


def test_batch_is_cut_to_lengths():
    codebook = np.eye(4, dtype=np.float32)
    feats = np.eye(4, dtype=np.float32)[[[0, 1, 2, 3], [3, 3, 0, 0]]]
    assert [u.tolist() for u in assign_batch(feats, np.array([4, 2]), codebook)] == [[0, 1, 2, 3], [3, 3]]


def test_deduplicate_collapses_runs_only():
    assert deduplicate(np.array([1, 1, 5, 5, 5, 2, 1, 1])).tolist() == [1, 5, 2, 1]
    assert deduplicate(np.array([], np.int64)).tolist() == []


def test_dimension_mismatch_and_bad_codebook_are_named(tmp_path):
    with pytest.raises(FeedError, match="dimension 3; the codebook's centroids have 2"):
        assign(np.zeros((1, 3), np.float32), np.zeros((4, 2), np.float32))
    np.save(tmp_path / "cb.npy", np.zeros(5, np.float32))
    with pytest.raises(ModelFileError, match="expected \\(units, dim\\)"):
        load_codebook(tmp_path / "cb.npy")
    np.save(tmp_path / "ok.npy", np.ones((3, 2), np.float32))
    assert load_codebook(tmp_path / "ok.npy").shape == (3, 2)


def test_extract_units_pads_runs_the_session_and_assigns():
    codebook = np.eye(3, dtype=np.float32)
    seen = {}

    def encoder(feeds):
        seen.update(feeds)
        frames = (feeds["waveform_lengths"] - 400) // 320 + 1
        feats = np.eye(3, dtype=np.float32)[[[0, 0, 1, 1, 2], [2, 2, 2, 0, 0]]]
        return {"features": feats, "feature_lengths": frames}

    units = extract_units(encoder, [np.ones(1680), np.ones(1000)], codebook, dedup=True)
    assert seen["waveform"].shape == (2, 1680) and seen["waveform_lengths"].tolist() == [1680, 1000]
    assert (seen["waveform"][1, 1000:] == 0).all()
    assert [u.tolist() for u in units] == [[0, 1, 2], [2]]


def test_too_short_waveform_is_named():
    with pytest.raises(FeedError, match="waveform 1 has 399 samples; the unit extractor needs at least 400"):
        batch_waveforms([np.ones(500), np.ones(399)])
