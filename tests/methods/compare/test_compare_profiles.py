"""The ``compare`` metric: the shipped comparator as the detector's score, its card, its
signature, and a profile moved onto it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch

from padformer_edge import weights
from padformer_edge.detect.detection import Detection
from padformer_edge.detect.images import to_unit_tensor
from padformer_edge.detect.map_geometry import frame_map
from padformer_edge.detect.parity import PARITY_RTOL, parity_gap, verdicts_agree
from padformer_edge.detect.readout import shrink_factor
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.detect.signature import signature_text
from padformer_edge.errors import UserError
from padformer_edge.files.digest import file_sha256
from padformer_edge.methods.compare.checkpoint import load_comparator, save_comparator
from padformer_edge.methods.compare.detector import CompareDetector
from padformer_edge.methods.compare.model import ComparatorConfig, ComparisonModel
from padformer_edge.methods.compare.scorer import (
    SCORE_SIGMA,
    CompareMetric,
    compare,
    compare_signature,
    load_compare_metric,
    reference_cells,
)
from padformer_edge.model.padformer import build_model
from padformer_edge.profiles.calibrate import pin_threshold
from padformer_edge.profiles.create import create_profile, set_model
from padformer_edge.profiles.profile import load_profile
from tests.compare_readout import read_score
from tests.detect_images import product_image, with_defect
from tests.line.make_fixture import write_image

CPU = torch.device("cpu")
SETTINGS = DetectionSettings(passes=2, device="cpu", metric="compare")


@pytest.fixture(scope="module")
def references() -> list[np.ndarray]:
    return [product_image(80, 120, seed=s) for s in range(3)]


@pytest.fixture(scope="module")
def queries() -> list[np.ndarray]:
    good = product_image(80, 120, seed=1)  # a reference itself, and with a square pasted
    return [good, with_defect(good, (30, 40, 16, 16))]


def another_comparator(folder: Path) -> Path:
    """A comparator with other (random) weights and the card that vouches for it."""
    torch.manual_seed(7)
    net = ComparisonModel(ComparatorConfig(aligned_k=0, use_stn=False, dim=32, depth=1))
    torch.nn.init.normal_(net.comparator.head.weight, std=0.5)  # a correction that is not 0
    path = folder / "other-comparator.safetensors"
    save_comparator(path, net, {"step": 0})
    card = {f: "test" for f in weights.CARD_FIELDS} | {"sha256": file_sha256(path)}
    weights.card_path(path).write_text(json.dumps(card))
    return path


def test_the_shipped_comparator_is_found_and_checked_against_its_card() -> None:
    path = weights.locate_comparator()
    card = weights.read_card(path)
    assert card["sha256"] == file_sha256(path)
    net, metadata = load_comparator(path)
    assert card["steps"] == metadata["step"] and not net.config.aligned_k


def test_a_comparator_that_differs_from_its_card_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "comparator.safetensors"
    shutil.copyfile(weights.locate_comparator(), copy)
    card = weights.read_card(weights.locate_comparator())
    weights.card_path(copy).write_text(json.dumps(card | {"sha256": "0" * 64}))
    monkeypatch.setenv(weights.COMPARATOR_ENV_VAR, str(copy))
    with pytest.raises(UserError, match="does not match the sha256 in its card"):
        weights.locate_comparator()
    monkeypatch.setenv(weights.COMPARATOR_ENV_VAR, str(tmp_path / "gone.safetensors"))
    with pytest.raises(UserError, match="PADFORMER_EDGE_COMPARATOR points at"):
        weights.locate_comparator()


def test_the_detector_scores_exactly_what_the_comparator_reads(references, queries) -> None:
    """The detector's score and map are the comparator's per-cell scores read as the
    evaluation reads them (upsampled, smoothed, maximum): one computation, two callers.
    A frame this small is blurred at its own size, so the map is carried there and
    ``frame_map`` leaves it as it is."""
    detector = CompareDetector(references, SETTINGS)
    assert isinstance(detector.metric, CompareMetric) and not detector.reads_passes
    found = detector.detect(queries)
    comparator, _ = load_comparator(weights.locate_comparator())
    cells = reference_cells(comparator, [to_unit_tensor(r, CPU) for r in references])
    expected = compare(comparator, [to_unit_tensor(q, CPU) for q in queries], cells).score
    for detection, query, cell_scores in zip(found, queries, expected, strict=True):
        amap = read_score(cell_scores, query.shape[:2], comparator.config.input_size)
        assert detection.anomaly_map.shape == query.shape[:2]
        np.testing.assert_array_equal(frame_map(detection.anomaly_map, query.shape[:2]), amap)
        assert detection.score == float(amap.max())
        assert detection.pass_mean_error == []  # no reconstruction pass ran
    assert found[1].score > found[0].score  # the pasted square is seen


@pytest.mark.parametrize(
    "size, shrunk",
    [((1500, 2700), True), ((1024, 1280), False)],
    ids=["blurred-shrunk", "blurred-at-full-size"],
)
def test_a_large_frame_keeps_its_map_small_and_its_score_within_parity(
    references, queries, size, shrunk
) -> None:
    """On a frame whose blur runs shrunk (2700 px wide: by 2 or more) the map is
    carried on the shrunk grid, never drawn at the frame's size; where the blur
    is narrow enough it is read at the frame's own size. Brought to the frame by
    ``frame_map`` it is the map the readout drew there before (cells upsampled to the
    frame, then read: ``read_score``) within ``PARITY_RTOL``, and so are the score and
    the verdicts. The shrunk read is the one ``readout.smooth`` always made; only the
    last upsample moved to whatever shows the map."""
    detector = CompareDetector(references, SETTINGS)
    comparator, _ = load_comparator(weights.locate_comparator())
    cells = reference_cells(comparator, [to_unit_tensor(r, CPU) for r in references])
    large = [cv2.resize(query, size[::-1], interpolation=cv2.INTER_LINEAR) for query in queries]
    found = detector.detect(large)
    expected = compare(comparator, [to_unit_tensor(q, CPU) for q in large], cells).score
    old = []
    for detection, cell_scores in zip(found, expected, strict=True):
        factor = shrink_factor(SCORE_SIGMA * max(size) / comparator.config.input_size)
        assert (factor > 1) == shrunk
        assert detection.anomaly_map.shape == tuple(-(-side // factor) for side in size)
        amap = read_score(cell_scores, size, comparator.config.input_size).numpy()
        old.append(Detection(float(amap.max()), amap, [], []))
    moved = [Detection(d.score, frame_map(d.anomaly_map, size), [], []) for d in found]
    assert parity_gap(old, moved) <= PARITY_RTOL
    threshold = (old[0].score + old[1].score) / 2
    assert verdicts_agree(old, moved, threshold)
    assert [d.score > threshold for d in moved] == [False, True]


def test_a_call_scores_each_image_as_it_scores_alone(references, queries) -> None:
    from tests.methods.padformer.test_distance_search import assert_same_detections

    detector = CompareDetector(references, SETTINGS)
    together = detector.detect(queries)
    assert_same_detections(together, [detector.detect([image])[0] for image in queries])
    assert together[1].score > together[0].score


def test_detect_on_a_graph_runtime_scores_the_comparator_in_torch(references, queries) -> None:
    """``detect --runtime onnxruntime`` has PADFormer's graphs, not the comparator's: the
    comparison runs in torch on the CPU and scores as on runtime torch."""
    on_graphs = CompareDetector(references, SETTINGS.replace(runtime="onnxruntime"))
    on_torch = CompareDetector(references, SETTINGS)
    assert on_graphs.device.type == "cpu"
    assert [d.score for d in on_graphs.detect(queries)] == [
        d.score for d in on_torch.detect(queries)
    ]


def test_other_references_change_the_score(references, queries) -> None:
    first = CompareDetector(references, SETTINGS).detect(queries[:1])[0].score
    other = [product_image(80, 120, seed=s) for s in (11, 12)]
    assert CompareDetector(other, SETTINGS).detect(queries[:1])[0].score != first


def test_the_signature_names_the_comparator_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped = compare_signature(load_compare_metric(CPU, None))
    assert shipped["comparator"] == file_sha256(weights.locate_comparator())
    assert "comparator " + shipped["comparator"][:12] in signature_text(shipped)
    monkeypatch.setenv(weights.COMPARATOR_ENV_VAR, str(another_comparator(tmp_path)))
    other = compare_signature(load_compare_metric(CPU, None))
    assert other["comparator"] != shipped["comparator"]
    assert {k: v for k, v in other.items() if k != "comparator"} == {
        k: v for k, v in shipped.items() if k != "comparator"
    }


def test_a_threshold_from_one_comparator_is_refused_with_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, references
) -> None:
    root = make_sources(tmp_path, references)
    profile = create_profile(
        root / "profiles", "part", root / "model.safetensors", root / "refs", settings=SETTINGS
    ).profile
    pin_threshold(profile, 0.3)
    load_profile(root / "profiles", "part").build_detector()  # the shipped one: accepted
    monkeypatch.setenv(weights.COMPARATOR_ENV_VAR, str(another_comparator(tmp_path)))
    with pytest.raises(UserError, match="calibrate"):
        load_profile(root / "profiles", "part").build_detector()


def make_sources(tmp_path: Path, references: list[np.ndarray]) -> Path:
    from padformer_edge.model.checkpoint import save_checkpoint

    torch.manual_seed(0)
    save_checkpoint(tmp_path / "model.safetensors", build_model("tiny"))
    for index, image in enumerate(references):
        write_image(tmp_path / f"refs/{index}.png", image)
    return tmp_path


def test_set_model_moves_a_profile_to_the_comparison_and_drops_its_threshold(
    tmp_path: Path, references
) -> None:
    root = make_sources(tmp_path, references)
    fast = DetectionSettings(metric="auto", passes=2, device="cpu")
    made = create_profile(
        root / "profiles", "part", root / "model.safetensors", root / "refs", settings=fast
    ).profile
    pin_threshold(made, 0.5)
    moved = set_model(root / "profiles", "part", None, "compare")
    assert moved.detection.metric == "compare" and moved.threshold is None
    assert moved.model_sha256 == made.model_sha256  # the checkpoint stays
    assert moved.detection.passes == fast.passes  # every other setting too
    assert isinstance(moved.build_detector().metric, CompareMetric)


def test_scoring_settings_under_compare_are_refused_not_ignored() -> None:
    from padformer_edge.cli.detection_options import detection_settings

    params = {
        "passes": 2, "mask_ratio": 0.4, "schedule": "random", "metric": "compare", "seed": 0,
        "device": "cpu", "precision": "fp32", "batch_size": 4, "scoring": ["map.sigma=4"],
    }  # fmt: skip
    with pytest.raises(UserError, match="metric compare reads no setting 'scoring'"):
        detection_settings(params)
    assert detection_settings({**params, "metric": "fused"}).section.scoring.map.sigma == 4
    with pytest.raises(UserError, match="metric lab reads none of them"):
        detection_settings({**params, "metric": "lab"})  # the paper's colour error


def earlier_sha256() -> str:
    return weights.read_card(weights.package_folder() / weights.EARLIER_COMPARATORS[0])["sha256"]


def test_the_default_comparator_is_shipped_beside_the_earlier_one(monkeypatch) -> None:
    """Without the variable: the default is the package's newest comparator, checked
    against its card, and the earlier one is found by the sha256 a profile records."""
    monkeypatch.delenv(weights.COMPARATOR_ENV_VAR)
    default = weights.locate_comparator()
    assert default == weights.package_folder() / weights.COMPARATOR_NAME
    net, metadata = load_comparator(default)
    card = weights.read_card(default)
    assert ComparatorConfig(**card["config"]) == net.config and card["steps"] == metadata["step"]
    earlier = weights.locate_comparator(earlier_sha256())
    assert earlier.name == weights.EARLIER_COMPARATORS[0] and earlier != default
    with pytest.raises(UserError, match="profile set-model NAME --metric compare"):
        weights.locate_comparator("0" * 64)


def test_a_profile_keeps_the_comparator_it_was_made_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, references
) -> None:
    """A ``compare`` profile records its comparator's sha256 and scores with it after a
    newer default ships; ``doctor`` names the move, and ``set-model`` makes it."""
    from padformer_edge.tools.doctor import earlier_score

    monkeypatch.delenv(weights.COMPARATOR_ENV_VAR)
    root = make_sources(tmp_path, references)
    on_earlier = SETTINGS.replace(comparator=earlier_sha256())
    profile = create_profile(
        root / "profiles", "part", root / "model.safetensors", root / "refs", settings=on_earlier
    ).profile
    pin_threshold(profile, 0.3)
    profile = load_profile(root / "profiles", "part")
    assert profile.detection.section.comparator == earlier_sha256()
    assert profile.build_detector().metric.sha256 == earlier_sha256()  # threshold accepted
    hint = earlier_score(profile)
    assert "earlier comparator (192 px)" in hint and "set-model part --metric compare" in hint
    moved = set_model(root / "profiles", "part", None, "compare")
    default = file_sha256(weights.locate_comparator())
    assert moved.detection.section.comparator == default != earlier_sha256()
    assert moved.threshold is None and earlier_score(moved) == ""
    fresh = create_profile(
        root / "profiles", "new", root / "model.safetensors", root / "refs", settings=SETTINGS
    ).profile
    assert fresh.detection.section.comparator == default  # made now: the default, named


def test_a_compare_profile_that_named_no_comparator_reads_the_earlier_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, references
) -> None:
    """Profiles written before comparators were named were made with the earlier one
    (or the one their calibration names): that is what they load with."""
    import yaml

    from padformer_edge.profiles.schema import ProfileConfig

    monkeypatch.delenv(weights.COMPARATOR_ENV_VAR)
    root = make_sources(tmp_path, references)
    create_profile(
        root / "profiles", "part", root / "model.safetensors", root / "refs", settings=SETTINGS
    )
    file = root / "profiles/part/profile.yaml"
    written = yaml.safe_load(file.read_text())
    del written["detection"]["comparator"]
    # such a file named the checkpoint, not its comparator
    del written["weights"]
    model = root / "model.safetensors"
    written["model"] = {"path": str(model), "sha256": file_sha256(model)}
    file.write_text(yaml.safe_dump(written))
    loaded = load_profile(root / "profiles", "part")
    assert loaded.detection.section.comparator == earlier_sha256()
    calibrated = {**written, "calibration": {"scoring": {"comparator": "a" * 64}}}
    filled = ProfileConfig._fill_what_earlier_files_left_out(calibrated)
    assert filled["detection"]["comparator"] == "a" * 64
    fused = {**written, "detection": {**written["detection"], "metric": "fused"}}
    assert "comparator" not in ProfileConfig._fill_what_earlier_files_left_out(fused)["detection"]
    # the sections hold a profile file: an unknown metric, a comparator its method does
    # not read
    for detection, fault in (
        ({"metric": "colour"}, "metric 'colour' is unknown; choose one of compare, fused"),
        ({"metric": "fused", "comparator": "a" * 64}, "metric fused reads no setting 'comparator'"),
    ):
        file.write_text(yaml.safe_dump({**written, "detection": detection}))
        with pytest.raises(UserError, match=re.escape(fault)):
            load_profile(root / "profiles", "part")


def test_a_comparator_under_another_metric_is_refused() -> None:
    fault = (
        "metric fused reads no setting 'comparator': leave comparator out, or choose metric compare"
    )
    with pytest.raises(ValueError, match=re.escape(fault)):
        DetectionSettings(metric="fused", comparator="a" * 64)
    assert DetectionSettings(metric="compare", comparator="a" * 64).section.comparator == "a" * 64
    # what earlier versions wrote into every profile, unset, still loads
    assert DetectionSettings(metric="fused", comparator=None).metric == "fused"
    assert DetectionSettings(metric="compare", scoring={}).metric == "compare"


PADFORMER_MODULES = (
    "padformer_edge.model.padformer",
    "padformer_edge.model.checkpoint",
    "padformer_edge.methods.padformer.detector",
    "padformer_edge.detect.masks",
    "padformer_edge.methods.padformer.fused_metric",
    "padformer_edge.methods.padformer.distance_search",
    "padformer_edge.methods.padformer.passes",
    "padformer_edge.methods.padformer.paper_metrics",
)
"""PADFormer, its checkpoint loader, pass masks and metrics: what a ``compare`` profile
must not load."""

LOADED_BY_A_COMPARE_PROFILE = """
import sys
from pathlib import Path
from padformer_edge.detect.images import read_image
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.profiles.create import create_profile
root = Path(sys.argv[1])
settings = DetectionSettings(device="cpu", metric="compare")
made = create_profile(root / "profiles", "part", root / "model.safetensors", root / "refs",
                      shots=2, settings=settings)
score = made.profile.build_detector().detect([read_image(root / "query.png")])[0].score
assert score > 0
sys.stderr.write("loaded: " + " ".join(sorted(m for m in sys.modules if m in sys.argv[2:])))
"""


def test_a_compare_profile_is_made_and_scores_without_loading_padformer(
    tmp_path: Path, references, queries
) -> None:
    """Made (references chosen in the comparator's features), built and run once in a
    fresh process: no PADFormer module was imported on the way."""
    import subprocess
    import sys

    root = make_sources(tmp_path, references)
    write_image(root / "query.png", queries[1])
    done = subprocess.run(
        [sys.executable, "-c", LOADED_BY_A_COMPARE_PROFILE, str(root), *PADFORMER_MODULES],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr.rstrip().endswith("loaded:"), done.stderr
    profile = load_profile(root / "profiles", "part")
    assert profile.config.selection.method == "farthest-point" and len(profile.reference_paths) == 2


def test_a_compare_profile_keeps_its_reference_cells_for_the_next_start(
    tmp_path: Path, references, queries, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first build computes the cells and writes them; the next reads them and gives
    the same score bits; another comparator does not read them (its key differs)."""
    from padformer_edge.deploy.cache_files import stored_key
    from padformer_edge.methods.compare.cells_cache import cells_key

    root = make_sources(tmp_path, references)
    profile = create_profile(
        root / "profiles", "part", root / "model.safetensors", root / "refs", settings=SETTINGS
    ).profile
    comparator = file_sha256(weights.locate_comparator())
    shas = tuple(profile.verify_references())
    assert stored_key(profile.cache_path) == cells_key(comparator, shas)
    profile.cache_path.unlink()
    fresh = profile.build_detector()
    assert not fresh.cache_hit and profile.cache_path.is_file()
    cached = load_profile(root / "profiles", "part").build_detector()
    assert cached.cache_hit
    for one, other in zip(fresh.detect(queries), cached.detect(queries), strict=True):
        assert one.score == other.score
        np.testing.assert_array_equal(one.anomaly_map, other.anomaly_map)
    monkeypatch.setenv(weights.COMPARATOR_ENV_VAR, str(another_comparator(tmp_path)))
    profile.cache_path.write_bytes(profile.cache_path.read_bytes())  # the same file
    moved = set_model(root / "profiles", "part", None, "compare")  # names the new default
    assert not moved.build_detector().cache_hit


def test_a_compare_profile_never_reads_a_checkpoint(tmp_path: Path, references) -> None:
    """It scores with the comparator alone: a checkpoint handed in is not opened (not even
    a file that is none), the checkpoint gone, the detector still builds, and doctor's
    check names what was read."""
    root = make_sources(tmp_path, references)
    (root / "not-a-checkpoint.safetensors").write_bytes(b"text")
    unread = create_profile(root / "profiles", "unread", root / "not-a-checkpoint.safetensors",
                            root / "refs", settings=SETTINGS).profile  # fmt: skip
    assert unread.config.model is None
    profile = create_profile(
        root / "profiles", "part", root / "model.safetensors", root / "refs", settings=SETTINGS
    ).profile
    (root / "model.safetensors").unlink()
    assert load_profile(root / "profiles", "part").build_detector().detect(references[:1])
    checked = profile.verify_runnable()
    assert "model" not in checked and "matches its card" in checked


def test_a_compare_profile_names_its_comparator_and_an_earlier_file_its_checkpoint(
    tmp_path: Path, references, queries
) -> None:
    """Issue 62: a new compare profile is pinned to its comparator (name and sha256), not
    to a PADFormer checkpoint it never reads; a file written before, which names the
    checkpoint, still loads and scores the same bits with its threshold kept."""
    import yaml

    root = make_sources(tmp_path, references)
    made = create_profile(
        root / "profiles", "part", root / "model.safetensors", root / "refs", settings=SETTINGS
    ).profile
    assert made.config.model is None and made.config.weights is not None
    shipped = weights.locate_comparator(made.detection.section.comparator)
    assert made.config.weights.sha256 == file_sha256(shipped)
    assert made.config.weights.name == weights.read_card(shipped)["name"]
    with pytest.raises(UserError, match="names no checkpoint; give it one with"):
        _ = made.model_path
    pin_threshold(made, 0.3)
    new = load_profile(root / "profiles", "part")
    scored = new.build_detector().detect(queries)
    assert new.calibration is not None and new.calibration.model_sha256 == new.model_sha256
    # the same profile as an earlier version wrote it: the checkpoint named, no weights
    earlier = root / "profiles" / "earlier"
    shutil.copytree(new.folder, earlier)
    data = yaml.safe_load((earlier / "profile.yaml").read_text())
    checkpoint_sha = file_sha256(root / "model.safetensors")
    data |= {"name": "earlier", "weights": None}
    data["model"] = {"path": str(root / "model.safetensors"), "sha256": checkpoint_sha}
    data["calibration"]["model_sha256"] = checkpoint_sha
    (earlier / "profile.yaml").write_text(yaml.safe_dump(data))
    old = load_profile(root / "profiles", "earlier")
    assert old.model_sha256 == checkpoint_sha and old.threshold == new.threshold
    for a, b in zip(old.build_detector().detect(queries), scored, strict=True):
        assert a.score == b.score
        np.testing.assert_array_equal(a.anomaly_map, b.anomaly_map)
    # a weights record that is not the comparator the detection section names is refused
    data["weights"] = {"name": "other", "sha256": "0" * 64}
    (earlier / "profile.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(UserError, match="weights: sha256 000000000000 is not what detection"):
        load_profile(root / "profiles", "earlier")
