"""One scoring configuration: validated once, stored in the checkpoint's header (earlier
headers converted), overridden by a profile and the command line, signed structurally."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml
from safetensors import safe_open

from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.detect.signature import paper_signature, same_scoring, signature_text
from padformer_edge.errors import UserError
from padformer_edge.methods.padformer.detector import Detector
from padformer_edge.methods.padformer.fused_scoring import (
    PRODUCT_SCORING,
    JobScoring,
    ScoringConfig,
    resolve_scoring,
    scoring_changes,
)
from padformer_edge.model.checkpoint import (
    LEGACY_SCORING_FIELDS,
    load_checkpoint,
    save_checkpoint,
)
from padformer_edge.weights import CHECKPOINT_NAME, package_folder
from tests.detect_images import product_image, with_defect

GENERIC = package_folder() / CHECKPOINT_NAME
SETTINGS = DetectionSettings(metric="auto", passes=3, max_batch=3, device="cpu")


@pytest.fixture(scope="module")
def images() -> tuple[list[np.ndarray], list[np.ndarray]]:
    references = [product_image(72, 96, seed=s) for s in range(3)]
    queries = [
        product_image(72, 96, seed=7),
        with_defect(product_image(72, 96, seed=8), (20, 30, 12, 12)),
    ]
    return references, queries


def _scores(model, images, settings: DetectionSettings) -> list[tuple[float, bytes]]:
    references, queries = images
    results = Detector(model, references, settings).detect(queries)
    return [(r.score, r.anomaly_map.tobytes()) for r in results]


def test_the_shipped_models_earlier_header_converts_and_scores_bit_identically(
    tmp_path: Path, images
) -> None:
    """generic.safetensors holds its fused settings as ``fused_*`` fields of the model
    config (the earlier header). Loaded, they become the model's scoring entry; saved
    again in the current form and loaded back, the model scores the same bits, and so
    does the product default model given the same values as a detection's own layer."""
    with safe_open(str(GENERIC), framework="pt") as fh:
        header = fh.metadata()
    config = json.loads(header["config"])
    assert "scoring" not in header and "fused_lab_weight" in config  # the earlier form
    old, _ = load_checkpoint(GENERIC)
    expected: dict[str, dict] = {}
    for name, (job, key) in LEGACY_SCORING_FIELDS.items():
        expected.setdefault(job, {})[key] = config[name]
    assert old.scoring == expected
    resaved = tmp_path / "generic-new.safetensors"
    save_checkpoint(resaved, old)
    with safe_open(str(resaved), framework="pt") as fh:
        new_header = fh.metadata()
    assert not any(k.startswith("fused_") for k in json.loads(new_header["config"]))
    assert json.loads(new_header["scoring"]) == expected
    new, _ = load_checkpoint(resaved)
    as_layer = new.reconfigured().eval()
    as_layer.scoring = {}  # the same values given by a detection instead of the header
    given = SETTINGS.replace(scoring=ScoringConfig.model_validate(expected))
    before = {}
    for metric in ("fused", "distance"):
        before[metric] = _scores(old, images, SETTINGS.replace(metric=metric))
        assert _scores(new, images, SETTINGS.replace(metric=metric)) == before[metric]
        assert _scores(as_layer, images, given.replace(metric=metric)) == before[metric]
    # the product's settings are not the generic model's: the conversion is what kept them
    assert _scores(as_layer, images, SETTINGS.replace(metric="fused")) != before["fused"]


def test_layers_stack_field_by_field_over_the_products() -> None:
    model_layer = ScoringConfig(map=JobScoring(sigma=4.0, lab_weight=0.0))
    profile_layer = ScoringConfig(map=JobScoring(sigma=8.0), score=JobScoring(reference_zoom=1))
    resolved = resolve_scoring(model_layer, None, profile_layer)
    assert resolved.map.sigma == 8.0 and resolved.map.lab_weight == 0.0
    assert resolved.score.reference_zoom == 1
    assert resolved.map.reference_weight == PRODUCT_SCORING.map.reference_weight
    assert resolved.is_complete and not profile_layer.is_complete
    assert profile_layer.changes() == {"map": {"sigma": 8.0}, "score": {"reference_zoom": 1}}


def test_the_command_lines_scoring_items_are_read_and_checked_with_one_sentence() -> None:
    layer = scoring_changes(["map.sigma=4", "score.reference_turns=false", "map.lab_weight=0"])
    assert layer.changes() == {
        "map": {"sigma": 4.0, "lab_weight": 0.0},
        "score": {"reference_turns": False},
    }
    with pytest.raises(UserError, match=r"'sigmaa' is not a scoring key; choose one of"):
        scoring_changes(["map.sigmaa=4"])
    with pytest.raises(UserError, match=r"names job 'maps'; the jobs are map and score"):
        scoring_changes(["maps.sigma=4"])
    with pytest.raises(UserError, match=r"is not JOB\.KEY=VALUE; write e\.g\."):
        scoring_changes(["sigma=4"])
    with pytest.raises(UserError, match=r"map\.sigma: input should be less than or equal to 32"):
        scoring_changes(["map.sigma=40"])
    with pytest.raises(UserError, match=r"score\.reference_zoom: input should be a valid integer"):
        scoring_changes(["score.reference_zoom=two"])


def test_a_profiles_detection_section_carries_only_the_values_it_sets() -> None:
    settings = DetectionSettings(metric="auto", scoring={"score": {"sigma": 2}})
    assert settings.section.scoring.score.sigma == 2.0
    assert settings.model_dump(mode="json")["scoring"] == {"score": {"sigma": 2.0}}
    assert DetectionSettings(metric="auto").model_dump(mode="json")["scoring"] == {}
    with pytest.raises(ValueError, match=r"scoring\.map\.weight: extra inputs are not permitted"):
        DetectionSettings.model_validate({"metric": "fused", "scoring": {"map": {"weight": 1}}})


def test_signatures_compare_as_values_and_read_the_text_of_earlier_versions() -> None:
    paper = paper_signature("lab")
    assert signature_text(paper) == "lab; map: filtered, sigma 0; score: filtered, sigma 0"
    assert same_scoring(None, paper) and same_scoring(json.loads(json.dumps(paper)), paper)
    assert same_scoring(signature_text(paper), paper)
    assert not same_scoring(None, paper_signature("feature") | {"hidden_patches_only": True})
    fused = {
        "metric": "fused",
        "map": {"lab_weight": 0.25, "reference_weight": 12.0, "reference_zoom": 2,
                "reference_turns": True, "consistency_filter": False, "sigma": 2.0},
        "score": {"lab_weight": 0.0, "reference_weight": 192.0, "reference_zoom": 2,
                  "reference_turns": True, "consistency_filter": True, "sigma": 0.0},
        "hidden_patches_only": False,
    }  # fmt: skip
    # the text earlier versions recorded for the product's fused score, verbatim
    earlier = (
        "fused; map: LAB weight 0.25, reference weight 12 at zoom 2 with quarter turns, mean, "
        "sigma 2; score: LAB weight 0, reference weight 192 at zoom 2 with quarter turns, "
        "filtered, sigma 0"
    )
    assert signature_text(fused) == earlier and same_scoring(earlier, fused)
    changed = json.loads(json.dumps(fused))
    changed["map"]["sigma"] = 4.0
    assert not same_scoring(fused, changed) and not same_scoring(earlier, changed)
    assert not same_scoring(None, fused)


def test_a_fused_profile_is_refused_after_its_scoring_settings_change(
    tmp_path: Path, images
) -> None:
    """A profile calibrated under one scoring configuration is refused under another (its
    own detection.scoring edited, or a model carrying other settings), as a changed metric
    is; the earlier text signature of the same scoring still passes."""
    from padformer_edge.profiles.calibrate import calibrate_profile
    from padformer_edge.profiles.create import create_profile
    from padformer_edge.profiles.profile import load_profile

    folder = tmp_path / "good"
    folder.mkdir()
    for index in range(32):
        image = product_image(72, 96, seed=100 + index)
        cv2.imwrite(str(folder / f"{index}.png"), image[:, :, ::-1])
    model = tmp_path / "generic.safetensors"
    shutil.copy(GENERIC, model)
    root = tmp_path / "profiles"
    create_profile(root, "part", model, folder, 3, SETTINGS.replace(metric="fused"))
    calibrate_profile(root, "part", folder, None, 0.1)
    profile = load_profile(root, "part")
    recorded = profile.calibration.scoring
    assert isinstance(recorded, dict) and recorded["score"]["reference_zoom"] == 1
    path = profile.folder / "profile.yaml"
    calibrated = yaml.safe_load(path.read_text())

    def rewrite(change) -> None:
        data = yaml.safe_load(yaml.safe_dump(calibrated))
        change(data)
        path.write_text(yaml.safe_dump(data))

    rewrite(lambda d: d["detection"].update(scoring={"score": {"reference_zoom": 2}}))
    with pytest.raises(UserError, match="calibrated on scores computed another way"):
        load_profile(root, "part").build_detector()
    rewrite(lambda d: d["detection"].update(scoring={"score": {"reference_zoom": 1}}))
    load_profile(root, "part").build_detector()  # the model's own value, set again: same
    rewrite(lambda d: d["calibration"].update(scoring=signature_text(recorded)))
    load_profile(root, "part").build_detector()
    rewrite(lambda d: d["detection"].update(scoring={"map": {"sigmaa": 1}}))
    with pytest.raises(UserError, match="sigmaa"):
        load_profile(root, "part")


def test_the_command_line_sets_scoring_over_the_models_own(tmp_path: Path, images) -> None:
    """``--scoring JOB.KEY=VALUE`` reaches the detector (the score moves as the same
    setting given in Python moves it), and a bad item is one sentence, status 2."""
    from tests.cli_process import run_cli

    references, queries = images
    refs = tmp_path / "refs"
    refs.mkdir(exist_ok=True)
    for index, image in enumerate(references):
        cv2.imwrite(str(refs / f"{index}.png"), image[:, :, ::-1])
    query = tmp_path / "query.png"
    cv2.imwrite(str(query), queries[1][:, :, ::-1])
    base = ["detect", "-r", str(refs), str(query), "--passes", "3", "--device", "cpu", "--json"]
    base += ["--metric", "auto"]  # the fused score (the default, compare, reads no scoring)
    item = "score.reference_weight=0"
    default, given = run_cli(*base), run_cli(*base, "--scoring", item)
    assert default.returncode == given.returncode == 0, default.stderr + given.stderr
    scores = [json.loads(done.stdout)[0]["score"] for done in (default, given)]
    model, _ = load_checkpoint(GENERIC)
    settings = DetectionSettings(metric="auto", passes=3, device="cpu")
    expected = [
        Detector(model, [cv2.imread(str(refs / f"{i}.png"))[:, :, ::-1] for i in range(3)],
                 layered).detect([cv2.imread(str(query))[:, :, ::-1]])[0].score
        for layered in (settings, settings.replace(scoring=scoring_changes([item])))
    ]  # fmt: skip
    assert scores == pytest.approx(expected, rel=1e-6) and scores[0] != scores[1]
    refused = run_cli(*base, "--scoring", "map.sigmaa=4")
    assert refused.returncode == 2 and refused.stderr.strip().count("\n") == 0
    assert "'sigmaa' is not a scoring key; choose one of lab_weight" in refused.stderr
