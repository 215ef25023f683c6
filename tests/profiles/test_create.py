"""``create_profile``, ``load_profile`` and ``build_detector`` on real files."""

from __future__ import annotations

import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest

from padformer_edge.detect.images import read_image
from padformer_edge.errors import UserError
from padformer_edge.methods.padformer.reference_cache import ReferenceCacheFile, stored_key
from padformer_edge.model.checkpoint import file_sha256
from padformer_edge.profiles.create import create_profile, set_model
from padformer_edge.profiles.layout import CACHE_FILE
from padformer_edge.profiles.profile import list_profile_names, load_profile
from tests.profiles.conftest import FAST, write_checkpoint


def test_create_copies_chosen_references_and_loads_back(tmp_path, product, checkpoint):
    refs = shutil.copytree(product / "train" / "good", tmp_path / "refs")
    root = tmp_path / "profiles"
    result = create_profile(root, "duck", checkpoint, refs, 4, FAST)
    profile = load_profile(root, "duck")
    assert list_profile_names(root) == ["duck"]
    assert [p.name for p in result.chosen] == [e.file for e in profile.config.references]
    assert len(result.chosen) == 4 and result.offered == 24
    assert profile.config.selection.method == "farthest-point"
    assert profile.model_sha256 == file_sha256(checkpoint)
    assert profile.threshold is None and profile.calibration is None
    assert profile.detection.passes == 3
    for source, copied in zip(result.chosen, profile.reference_paths, strict=True):
        assert copied.read_bytes() == source.read_bytes()
    source = result.chosen[0]
    source.write_bytes(b"changed later")  # the profile keeps its own copy
    assert read_image(profile.reference_paths[0]).shape == (64, 64, 3)


def test_detector_scores_like_a_plain_detector_and_reuses_the_cache(tmp_path, product, checkpoint):
    root = tmp_path / "profiles"
    create_profile(root, "duck", checkpoint, product / "train" / "good", 3, FAST)
    profile = load_profile(root, "duck")
    assert stored_key(profile.cache_path) == profile.reference_key()
    detector = profile.build_detector()
    assert isinstance(detector.encodings, ReferenceCacheFile) and detector.cache_hit
    query = read_image(product / "test" / "good" / "0.png")
    cached_score = detector.detect([query])[0].score
    profile.cache_path.unlink()
    fresh = profile.build_detector()
    assert not fresh.cache_hit and profile.cache_path.is_file()
    assert fresh.detect([query])[0].score == cached_score


def test_changed_model_file_is_refused_and_invalidates_the_cache(tmp_path, product, checkpoint):
    root = tmp_path / "profiles"
    create_profile(root, "duck", checkpoint, product / "train" / "good", 3, FAST)
    profile = load_profile(root, "duck")
    old_key = profile.reference_key()
    before = (profile.folder / "profile.yaml").read_bytes()
    write_checkpoint(checkpoint, seed=1)  # same path, other weights
    with pytest.raises(UserError, match=r"profile 'duck': checkpoint .* changed.*set-model"):
        profile.build_detector()
    assert (profile.folder / "profile.yaml").read_bytes() == before
    adopted = set_model(root, "duck", checkpoint)
    assert adopted.threshold is None and adopted.model_sha256 == file_sha256(checkpoint)
    assert adopted.reference_key() != old_key
    assert stored_key(adopted.cache_path) == old_key  # stale until the next build
    detector = adopted.build_detector()
    assert not detector.cache_hit
    assert stored_key(adopted.cache_path) == adopted.reference_key()


def test_edited_reference_file_is_refused_not_encoded_again(tmp_path, product, checkpoint):
    """A reference edited in place no longer matches the sha256 profile.yaml recorded:
    the detector refuses it (the threshold was calibrated on the original) instead of
    rebuilding its cache from the new pixels."""
    root = tmp_path / "profiles"
    create_profile(root, "duck", checkpoint, product / "train" / "good", 2, FAST)
    profile = load_profile(root, "duck")
    image = cv2.imread(str(profile.reference_paths[0]))
    cv2.imwrite(str(profile.reference_paths[0]), np.ascontiguousarray(image[:, ::-1]))
    with pytest.raises(UserError, match=r"differs from the sha256 profile\.yaml records"):
        profile.build_detector()


def test_mixed_reference_sizes_are_refused_and_nothing_is_left(tmp_path, product, checkpoint):
    refs = tmp_path / "refs"
    shutil.copytree(product / "train" / "good", refs)
    cv2.imwrite(str(refs / "zz_big.png"), np.zeros((80, 96, 3), np.uint8))
    root = tmp_path / "profiles"
    with pytest.raises(UserError, match=r"zz_big\.png is 96x80 pixels.*one camera setting"):
        create_profile(root, "duck", checkpoint, refs, 3, FAST)
    assert not root.exists() or list(root.iterdir()) == []


@pytest.mark.parametrize(
    ("name", "shots", "message"),
    [
        ("../escape", 2, "profile name '../escape' is not allowed"),
        ("duck", 0, "--shots 0 does not fit the 24 images"),
        ("duck", 25, "--shots 25 does not fit the 24 images"),
    ],
)
def test_bad_create_arguments(tmp_path, product, checkpoint, name, shots, message):
    with pytest.raises(UserError, match=message.replace(".", r"\.")):
        create_profile(tmp_path / "p", name, checkpoint, product / "train" / "good", shots, FAST)


def test_existing_profile_is_not_overwritten(tmp_path, product, checkpoint):
    root = tmp_path / "profiles"
    create_profile(root, "duck", checkpoint, product / "train" / "good", 2, FAST)
    before = (root / "duck" / "profile.yaml").read_bytes()
    with pytest.raises(UserError, match="profile 'duck' already exists"):
        create_profile(root, "duck", checkpoint, product / "train" / "good", 3, FAST)
    assert (root / "duck" / "profile.yaml").read_bytes() == before


def test_unknown_profile_names_the_known_ones(tmp_path, product, checkpoint):
    root = tmp_path / "profiles"
    create_profile(root, "duck", checkpoint, product / "train" / "good", 2, FAST)
    with pytest.raises(UserError, match=r"profile 'goose' does not exist .*known: duck"):
        load_profile(root, "goose")


def test_uncalibrated_profile_has_no_verdict(tmp_path, product, checkpoint):
    root = tmp_path / "profiles"
    create_profile(root, "duck", checkpoint, product / "train" / "good", 2, FAST)
    with pytest.raises(UserError, match="has no threshold yet; run `padformer-edge profile"):
        load_profile(root, "duck").is_anomaly(1.0)


def test_all_images_are_used_without_shots(tmp_path, product, checkpoint):
    refs = tmp_path / "refs"
    refs.mkdir()
    for name in ("0.png", "1.png"):
        shutil.copy(product / "train" / "good" / name, refs / name)
    result = create_profile(tmp_path / "p", "duck", checkpoint, refs, None, FAST)
    assert result.profile.config.selection.method == "all"
    assert (result.profile.folder / CACHE_FILE).is_file()
    assert [Path(p).name for p in result.chosen] == ["0.png", "1.png"]


def test_damaged_cache_file_is_rebuilt(tmp_path, product, checkpoint):
    root = tmp_path / "profiles"
    create_profile(root, "duck", checkpoint, product / "train" / "good", 2, FAST)
    profile = load_profile(root, "duck")
    data = profile.cache_path.read_bytes()
    profile.cache_path.write_bytes(data[: len(data) // 2])
    assert not profile.build_detector().cache_hit
    assert stored_key(profile.cache_path) == profile.reference_key()


def test_create_decodes_hashes_and_loads_each_thing_once(
    tmp_path, product, checkpoint, monkeypatch
):
    """``profile create`` with the default metric decodes every offered image once, hashes
    each reference once (its copy, the bytes the profile keeps) and loads the comparator
    once, for choosing the references and for the detector that fills the cache alike:
    it used to decode and hash the references again to build that detector, and load the
    comparator again for it."""
    import hashlib

    from padformer_edge.detect import images as image_module
    from padformer_edge.methods.compare import checkpoint as comparator_file

    decoded, hashed, loaded = [], [], []
    decode, digest, load = (
        image_module.decode_image, hashlib.file_digest, comparator_file.load_comparator
    )  # fmt: skip

    def counted_digest(handle, name):
        hashed.append(Path(handle.name).resolve())
        return digest(handle, name)

    monkeypatch.setattr(
        image_module, "decode_image", lambda data, **kw: decoded.append(1) or decode(data, **kw)
    )
    monkeypatch.setattr(hashlib, "file_digest", counted_digest)
    monkeypatch.setattr(
        comparator_file, "load_comparator", lambda *a, **kw: loaded.append(a) or load(*a, **kw)
    )
    comparator_file.forget_shared_comparators()  # as in a fresh `profile create` process
    root = tmp_path / "profiles"
    result = create_profile(root, "duck", checkpoint, product / "train" / "good", 4)
    profile = load_profile(root, "duck")
    assert profile.detection.metric == "compare"  # the one default metric
    assert len(decoded) == result.offered == 24
    copies = [path.name for path in hashed if path.parent.name == "references"]
    assert sorted(copies) == sorted(entry.file for entry in profile.config.references)
    assert not [path for path in hashed if path.parent == (product / "train" / "good").resolve()]
    assert len(loaded) == 1
    # the checkpoint the comparison never reads is neither hashed nor recorded: the
    # profile is pinned to its comparator instead
    assert Path(checkpoint).resolve() not in hashed
    assert profile.config.model is None
    assert profile.config.weights is not None
    assert profile.config.weights.sha256 == profile.detection.section.weights_sha256()
    assert profile.model_sha256 == profile.config.weights.sha256
