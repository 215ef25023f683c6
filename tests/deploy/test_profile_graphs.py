"""A profile that stores its exported graphs: made, verified, refused when tampered with,
and scoring like the same profile on torch."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import yaml

from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.errors import UserError
from padformer_edge.files.digest import file_sha256
from padformer_edge.methods.padformer.line_detector import LineDetector
from padformer_edge.model.checkpoint import save_checkpoint
from padformer_edge.profiles.calibrate import pin_threshold
from padformer_edge.profiles.create import create_profile, set_model
from padformer_edge.profiles.export import export_profile
from padformer_edge.profiles.layout import PROFILE_FILE
from padformer_edge.profiles.profile import load_profile
from tests.deploy.parity import tiny_model
from tests.detect_images import product_image, with_defect
from tests.line.make_fixture import write_image

SCORE_RTOL = 1e-4
FAST = DetectionSettings(metric="auto", passes=3, max_batch=6, device="cpu")


@pytest.fixture
def sources(tmp_path):
    """A small edge checkpoint and three references."""
    save_checkpoint(tmp_path / "edge.safetensors", tiny_model("edge"))
    for seed in range(3):
        write_image(tmp_path / f"references/{seed}.png", product_image(60, 80, seed))
    return tmp_path


def queries() -> list[np.ndarray]:
    good = product_image(60, 80, seed=9)
    return [good, with_defect(good, (15, 20, 18, 18)), product_image(120, 160, seed=10)]


def test_create_on_onnxruntime_stores_graphs_with_their_sha256(sources):
    root = sources / "profiles"
    settings = FAST.replace(runtime="onnxruntime")
    profile = create_profile(
        root, "part", sources / "edge.safetensors", sources / "references", settings=settings
    ).profile
    exported = profile.config.exported
    assert exported is not None and exported.model_sha256 == profile.model_sha256
    folder = profile.folder / exported.folder
    assert {"query.onnx", "features.onnx", "passes.safetensors"} <= set(exported.files)
    for name, digest in exported.files.items():
        assert file_sha256(folder / name) == digest
    recorded = yaml.safe_load((profile.folder / PROFILE_FILE).read_text())
    assert recorded["exported"]["files"] == exported.files
    assert recorded["detection"]["runtime"] == "onnxruntime"
    detector = load_profile(root, "part").build_detector()
    assert isinstance(detector, LineDetector) and detector.cache_hit  # create filled it


def test_export_switches_a_torch_profile_and_scores_the_same(sources):
    root = sources / "profiles"
    create_profile(
        root, "part", sources / "edge.safetensors", sources / "references", settings=FAST
    )
    profile = load_profile(root, "part")
    by_torch = [d.score for d in profile.build_detector().detect(queries())]
    ordered = sorted(by_torch)
    pin_threshold(profile, (ordered[0] + ordered[1]) / 2)  # one image on one side, two on the other
    exported = export_profile(root, "part")
    assert exported.detection.runtime == "onnxruntime"
    assert exported.calibration is not None  # the same scoring: the threshold still holds
    by_line = [d.score for d in exported.build_detector().detect(queries())]
    np.testing.assert_allclose(by_line, by_torch, rtol=SCORE_RTOL, atol=0)
    threshold = exported.require_threshold()
    assert [s > threshold for s in by_line] == [s > threshold for s in by_torch]


def test_a_pointer_profile_exports_and_shares_its_cache_file_with_torch(sources):
    """A model that reads its references' CNN features: the line reads the cache file the
    torch detector wrote (features and targets), writes one the torch reader accepts,
    and scores like torch."""
    import torch

    from padformer_edge.methods.padformer.reference_cache import read_cache
    from padformer_edge.model.checkpoint import load_checkpoint

    save_checkpoint(sources / "pointer.safetensors", tiny_model("edge-pointer"))
    root = sources / "profiles"
    create_profile(
        root, "part", sources / "pointer.safetensors", sources / "references", settings=FAST
    )
    profile = load_profile(root, "part")
    by_torch = [d.score for d in profile.build_detector().detect(queries())]
    exported = export_profile(root, "part")
    line = exported.build_detector()
    assert isinstance(line, LineDetector) and line.cache_hit  # torch's file, targets too
    by_line = [d.score for d in line.detect(queries())]
    np.testing.assert_allclose(by_line, by_torch, rtol=SCORE_RTOL, atol=0)
    exported.cache_path.unlink()
    fresh = exported.build_detector()
    assert not fresh.cache_hit and exported.cache_path.is_file()
    model, _ = load_checkpoint(sources / "pointer.safetensors")
    cache = read_cache(exported.cache_path, exported.reference_key(), model, torch.device("cpu"))
    assert cache is not None and cache.targets is not None
    assert tuple(cache.targets.shape[:2]) == (1, 3)
    np.testing.assert_allclose(
        [d.score for d in fresh.detect(queries())], by_torch, rtol=SCORE_RTOL, atol=0
    )


def test_a_changed_file_is_refused_in_one_sentence(sources):
    root = sources / "profiles"
    settings = FAST.replace(runtime="onnxruntime")
    profile = create_profile(
        root, "part", sources / "edge.safetensors", sources / "references", settings=settings
    ).profile
    with (profile.folder / "exported" / "scoring.json").open("a") as handle:
        handle.write(" ")
    with pytest.raises(UserError, match="differs from the sha256 its profile records") as err:
        load_profile(root, "part").build_detector()
    assert "\n" not in str(err.value) and "profile export part" in str(err.value)
    (profile.folder / "exported" / "query.onnx").unlink()
    with pytest.raises(UserError, match=r"query\.onnx is missing"):
        load_profile(root, "part").build_detector()


def test_changed_settings_or_model_need_a_new_export(sources):
    root = sources / "profiles"
    settings = FAST.replace(runtime="onnxruntime")
    profile = create_profile(
        root, "part", sources / "edge.safetensors", sources / "references", settings=settings
    ).profile
    config = yaml.safe_load((profile.folder / PROFILE_FILE).read_text())
    config["detection"]["passes"] = 5
    (profile.folder / PROFILE_FILE).write_text(yaml.safe_dump(config, sort_keys=False))
    with pytest.raises(UserError, match="exported for detection settings"):
        load_profile(root, "part").build_detector()
    save_checkpoint(sources / "other.safetensors", tiny_model("edge", seed=1))
    moved = set_model(root, "part", sources / "other.safetensors")
    assert moved.config.exported is None
    with pytest.raises(UserError, match="holds no exported graphs"):
        moved.build_detector()


def test_missing_onnxruntime_is_one_sentence(sources, monkeypatch):
    root = sources / "profiles"
    settings = FAST.replace(runtime="onnxruntime")
    create_profile(
        root, "part", sources / "edge.safetensors", sources / "references", settings=settings
    )
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import now raises ImportError
    with pytest.raises(UserError) as err:
        load_profile(root, "part").build_detector()
    message = str(err.value)
    assert "\n" not in message and "pip install 'padformer-edge[line]'" in message


@pytest.mark.parametrize("runtime", ["onnxruntime", "openvino"])
def test_a_profile_on_the_comparison_exports_its_comparator_and_scores_the_same(sources, runtime):
    """The ``compare`` metric on the line: the comparator's two graphs (and their IR for
    openvino) replace the model's, and the scores and verdicts are torch's."""
    from padformer_edge.methods.compare.line import LineCompareDetector

    root = sources / "profiles"
    compare = FAST.replace(metric="compare")
    create_profile(
        root, "part", sources / "edge.safetensors", sources / "references", settings=compare
    )
    by_torch = [d.score for d in load_profile(root, "part").build_detector().detect(queries())]
    ordered = sorted(by_torch)
    pin_threshold(load_profile(root, "part"), (ordered[0] + ordered[1]) / 2)
    exported = export_profile(root, "part", runtime)
    files = set(exported.config.exported.files)
    assert {"compare.onnx", "compare_cells.onnx", "scoring.json"} <= files
    assert "query.onnx" not in files  # no reconstruction on the line
    detector = exported.build_detector()
    assert isinstance(detector, LineCompareDetector)
    by_line = [d.score for d in detector.detect(queries())]
    np.testing.assert_allclose(by_line, by_torch, rtol=SCORE_RTOL, atol=0)
    threshold = exported.require_threshold()
    assert [s > threshold for s in by_line] == [s > threshold for s in by_torch]


@pytest.mark.parametrize("runtime", ["onnxruntime", "openvino"])
@pytest.mark.parametrize(
    "cells",
    [{"neighbourhood": 3}, {"stages": (2, 3), "channels": 120}],
    ids=["neighbourhood", "stride16"],
)
def test_a_comparator_reading_finer_cells_scores_the_same_on_the_line(
    sources, runtime, cells, monkeypatch
):
    """A comparator whose cells are the mean of their 3 x 3 neighbourhood, or stack the
    stride-16 map upsampled onto the stride-8 one (the finer grids of the small-defect
    work): both are in the exported cells graph, so the line scores as torch does."""
    import json
    import shutil

    import torch

    from padformer_edge import weights
    from padformer_edge.methods.compare.checkpoint import save_comparator
    from padformer_edge.methods.compare.model import ComparatorConfig, ComparisonModel

    torch.manual_seed(0)
    config = ComparatorConfig(
        input_size=64, dim=16, depth=1, heads=2, top_k=2, aligned_k=0, use_stn=False, **cells
    )
    model = ComparisonModel(config)
    model.features.load_imagenet()
    torch.nn.init.normal_(model.comparator.head.weight, std=0.5)  # a correction that shows
    path = sources / "pooled" / "comparator.safetensors"
    path.parent.mkdir()
    save_comparator(path, model, {"step": 0})
    card = json.loads(weights.card_path(weights.comparator_path()).read_text())
    card |= {"sha256": file_sha256(path), "config": config.to_json()}
    weights.card_path(path).write_text(json.dumps(card))
    monkeypatch.setenv(weights.COMPARATOR_ENV_VAR, str(path))
    root = sources / "profiles"
    compare = FAST.replace(metric="compare")
    create_profile(
        root, "part", sources / "edge.safetensors", sources / "references", settings=compare
    )
    by_torch = [d.score for d in load_profile(root, "part").build_detector().detect(queries())]
    exported = export_profile(root, "part", runtime)
    by_line = [d.score for d in exported.build_detector().detect(queries())]
    np.testing.assert_allclose(by_line, by_torch, rtol=SCORE_RTOL, atol=0)
    shutil.rmtree(path.parent)
