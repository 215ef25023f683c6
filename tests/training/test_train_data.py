"""Dataset layouts and training samples, on image trees written and decoded by OpenCV."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from padformer_edge.errors import UserError
from padformer_edge_training.data.images import read_rgb
from padformer_edge_training.data.layouts import index_dataset, natural_key
from padformer_edge_training.data.samples import (
    EpochSampler,
    ReferenceSamples,
    StageSampler,
    resolve_num_refs,
)
from tests.train_helpers import mvtec_like_tree, object_image, visa_like_tree, write

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def test_mad_sim_layout_sorts_numerically_and_matches_masks_by_name(tmp_path: Path) -> None:
    root = mvtec_like_tree(tmp_path / "MAD-Sim", {"01Gorilla": 12, "02Unicorn": 3}, padded=False)
    index = index_dataset(root)
    assert index.layout == "mad-sim"
    names = [p.name for p in index.good_train()["01Gorilla"]]
    assert names[:3] == ["0.png", "1.png", "2.png"] and names[-2:] == ["10.png", "11.png"]
    defects = [r for r in index.records if r.label == "Stains"]
    assert defects and all(r.mask is not None and r.mask.name == r.path.name for r in defects)
    assert index.summary() == {"01Gorilla": 12, "02Unicorn": 3}


def test_mvtec_layout_finds_padded_names_and_mask_suffix(tmp_path: Path) -> None:
    root = mvtec_like_tree(tmp_path / "mvtec", {"bottle": 4, "screw": 4}, padded=True)
    index = index_dataset(root)
    assert index.layout == "mvtec"
    assert [p.name for p in index.good_train()["screw"]] == [
        "000.png",
        "001.png",
        "002.png",
        "003.png",
    ]
    masks = {r.path.name: r.mask.name for r in index.records if r.mask is not None}
    assert masks == {"000.png": "000_mask.png", "001.png": "001_mask.png"}
    assert {r.label for r in index.records if r.split == "test"} == {"good", "Stains"}


def test_visa_layout_reads_the_split_csv(tmp_path: Path) -> None:
    index = index_dataset(visa_like_tree(tmp_path / "visa"))
    assert index.layout == "visa"
    assert index.summary() == {"candle": 3, "pcb1": 3}
    anomalies = [r for r in index.records if r.split == "test"]
    assert len(anomalies) == 2 and all(r.label == "anomaly" and r.mask.is_file() for r in anomalies)


def test_plain_folder_is_one_product(tmp_path: Path) -> None:
    for i in (2, 10, 1):
        write(tmp_path / "widget" / f"img{i}.jpg", object_image(i))
    (tmp_path / "widget" / "notes.txt").write_text("not an image")
    index = index_dataset(tmp_path / "widget")
    assert index.layout == "folder"
    assert [p.name for p in index.good_train()["widget"]] == ["img1.jpg", "img2.jpg", "img10.jpg"]


def test_category_filter_and_its_error(tmp_path: Path) -> None:
    root = mvtec_like_tree(tmp_path / "d", {"a": 3, "b": 3}, padded=True, with_test=False)
    assert index_dataset(root, categories=["b"]).summary() == {"b": 3}
    with pytest.raises(UserError, match=r"class\(es\) \['c'\] not found"):
        index_dataset(root, categories=["c"])


def test_missing_or_empty_data_folder_is_one_clear_sentence(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist; pass --data"):
        index_dataset(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="no good training images found"):
        index_dataset(tmp_path / "empty")


def test_natural_key_orders_numbers_by_value() -> None:
    assert sorted(["10.png", "9.png", "100.png"], key=natural_key) == ["9.png", "10.png", "100.png"]


def test_read_rgb_resizes_and_converts_bgr_to_rgb(tmp_path: Path) -> None:
    image = object_image(0, 96)
    image[:] = (255, 0, 0)  # pure blue in OpenCV's BGR order
    x = read_rgb(write(tmp_path / "blue.png", image), 32)
    assert x.shape == (3, 32, 32) and x.dtype == torch.float32
    assert torch.allclose(x[2], torch.ones(32, 32)) and x[:2].abs().max() == 0
    (tmp_path / "broken.png").write_bytes(b"not a png")
    with pytest.raises(UserError, match="cannot be decoded"):
        read_rgb(tmp_path / "broken.png", 32)


def test_too_few_images_for_n_references(tmp_path: Path) -> None:
    root = mvtec_like_tree(tmp_path / "d", {"big": 6, "small": 3}, padded=True, with_test=False)
    good = index_dataset(root).good_train()
    assert resolve_num_refs(good, 2) == 2
    assert resolve_num_refs(good, "all") == 2  # bounded by the smallest class
    with pytest.raises(UserError, match=r"\{'small': 3\} have fewer than num_refs \+ 1 = 5"):
        resolve_num_refs(good, 4)


def test_cross_view_references_are_other_images_of_the_same_class(tmp_path: Path) -> None:
    root = mvtec_like_tree(tmp_path / "d", {"a": 5, "b": 5}, padded=True, with_test=False)
    good = index_dataset(root).good_train()
    samples = ReferenceSamples(good, "cross_view", 3, 32, MEAN, STD, seed=1)
    pixels = {
        (name, i): samples._normalise(read_rgb(p, 32))
        for name in good
        for i, p in enumerate(good[name])
    }
    for index in range(len(samples)):
        item = samples[(0, index)]
        category, position = samples.items[index]
        assert item["refs"].shape == (3, 3, 32, 32)
        matches = [key for ref in item["refs"] for key, x in pixels.items() if torch.equal(ref, x)]
        assert len(matches) == 3 and len(set(matches)) == 3
        assert all(name == category and i != position for name, i in matches)
    # Keyed randomness: the same (epoch, index) gives the same sample, another epoch may not.
    assert torch.equal(samples[(0, 0)]["refs"], samples[(0, 0)]["refs"])
    assert any(not torch.equal(samples[(0, i)]["refs"], samples[(1, i)]["refs"]) for i in range(10))


def test_epoch_sampler_splits_ranks_and_resumes(tmp_path: Path) -> None:
    full = list(EpochSampler(10, epoch=3, seed=7))
    assert sorted(i for _, i in full) == list(range(10)) and {e for e, _ in full} == {3}
    ranks = [list(EpochSampler(10, 3, 7, rank=r, world_size=3)) for r in range(3)]
    assert all(len(r) == 3 for r in ranks)
    assert len({i for r in ranks for _, i in r}) == 9
    assert list(EpochSampler(10, 3, 7, start=4)) == full[4:]
    assert list(EpochSampler(10, 4, 7)) != full


def test_stage_sampler_is_the_epochs_used_samples_in_a_row() -> None:
    """One loader per stage must see what a loader per epoch saw: each epoch's first
    ``per_epoch`` samples in that epoch's order, a resume skipping into the first epoch."""
    epochs = [list(EpochSampler(10, e, 7, rank=1, world_size=2))[:4] for e in range(3)]
    stage = StageSampler(10, 0, 3, 4, seed=7, rank=1, world_size=2)
    assert list(stage) == epochs[0] + epochs[1] + epochs[2] and len(stage) == 12
    resumed = StageSampler(10, 1, 3, 4, seed=7, rank=1, world_size=2, start=2)
    assert list(resumed) == epochs[1][2:] + epochs[2] and len(resumed) == 6
    assert list(StageSampler(10, 3, 3, 4, seed=7)) == [] and len(StageSampler(10, 3, 3, 4)) == 0
    with pytest.raises(ValueError, match="samples per epoch"):
        StageSampler(10, 0, 1, 6, world_size=2)
