"""Cases that test_openvino_cases.py runs in a pytest process of their own.

A profile made with one runtime scores the same with every other: torch, onnxruntime
and openvino (its IR stored and pinned in the profile like the ONNX graphs).

Tolerances are the parity tests' (``test_line_parity``): image scores within 1e-4
relative, anomaly maps within ``float32_bound`` of the model scaled by the map's largest
value, and the same verdict for every image at the profile's threshold."""

from __future__ import annotations

import sys

import pytest
import yaml

from padformer_edge.deploy.sessions import IrGraph
from padformer_edge.errors import UserError
from padformer_edge.files.digest import file_sha256
from padformer_edge.methods.padformer.line_detector import LineDetector
from padformer_edge.model.checkpoint import load_checkpoint
from padformer_edge.profiles.calibrate import pin_threshold
from padformer_edge.profiles.create import create_profile
from padformer_edge.profiles.export import export_profile
from padformer_edge.profiles.layout import PROFILE_FILE
from padformer_edge.profiles.profile import load_profile
from tests.deploy.parity import float32_bound, relative_error
from tests.deploy.test_profile_graphs import FAST, SCORE_RTOL, queries, sources  # noqa: F401

IR_GRAPHS = ("references", "reference_terms", "query", "features", "cells")


def detections(root, name):
    return load_profile(root, name).build_detector().detect(queries())


def assert_same(found, expected, bound: float, threshold: float) -> None:
    for ours, theirs in zip(found, expected, strict=True):
        assert ours.score == pytest.approx(theirs.score, rel=SCORE_RTOL, abs=0)
        assert ours.anomaly_map.shape == theirs.anomaly_map.shape
        assert relative_error(ours.anomaly_map, theirs.anomaly_map) < bound
        assert (ours.score > threshold) == (theirs.score > threshold)


@pytest.mark.parametrize("made_with", ["torch", "onnxruntime", "openvino"])
def test_a_profile_made_with_one_runtime_scores_the_same_with_every_other(sources, made_with):  # noqa: F811
    """Made with ``made_with`` and calibrated there, then exported (or set back to torch)
    to each other runtime: the scores, maps and verdicts of the first hold."""
    root = sources / "profiles"
    settings = FAST.replace(runtime=made_with)
    profile = create_profile(
        root, "part", sources / "edge.safetensors", sources / "references", settings=settings
    ).profile
    first = profile.build_detector().detect(queries())
    ordered = sorted(d.score for d in first)
    pin_threshold(profile, (ordered[0] + ordered[1]) / 2)  # one image on one side, two on the other
    threshold = load_profile(root, "part").require_threshold()
    model, _ = load_checkpoint(sources / "edge.safetensors")
    bound = float32_bound(model)
    for runtime in ("onnxruntime", "openvino"):
        exported = export_profile(root, "part", runtime)
        assert exported.detection.runtime == runtime
        assert exported.require_threshold() == threshold  # the same scoring: it still holds
        assert_same(detections(root, "part"), first, bound, threshold)
    config = yaml.safe_load((profile.folder / PROFILE_FILE).read_text())
    config["detection"]["runtime"] = "torch"
    (profile.folder / PROFILE_FILE).write_text(yaml.safe_dump(config, sort_keys=False))
    assert_same(detections(root, "part"), first, bound, threshold)


def test_an_openvino_profile_pins_its_ir_and_runs_it(sources):  # noqa: F811
    root = sources / "profiles"
    settings = FAST.replace(runtime="openvino")
    profile = create_profile(
        root, "part", sources / "edge.safetensors", sources / "references", settings=settings
    ).profile
    exported = profile.config.exported
    assert exported is not None
    folder = profile.folder / exported.folder
    for graph in IR_GRAPHS:
        for suffix in (".onnx", ".xml", ".bin"):
            name = graph + suffix
            assert exported.files[name] == file_sha256(folder / name)
    recorded = yaml.safe_load((profile.folder / PROFILE_FILE).read_text())
    assert recorded["detection"]["runtime"] == "openvino"
    assert recorded["exported"]["files"] == exported.files
    detector = load_profile(root, "part").build_detector()
    assert isinstance(detector, LineDetector) and detector.cache_hit  # create filled it
    assert all(isinstance(graph, IrGraph) for graph in detector.sessions.values())
    checked = load_profile(root, "part").verify_runnable()
    assert checked.startswith(f"{len(exported.files)} exported files")


def test_a_changed_ir_file_is_refused_in_one_sentence(sources):  # noqa: F811
    root = sources / "profiles"
    settings = FAST.replace(runtime="openvino")
    profile = create_profile(
        root, "part", sources / "edge.safetensors", sources / "references", settings=settings
    ).profile
    with (profile.folder / "exported" / "query.bin").open("ab") as handle:
        handle.write(b"\0")
    with pytest.raises(UserError, match="differs from the sha256 its profile records") as err:
        load_profile(root, "part").build_detector()
    message = str(err.value)
    assert "\n" not in message and "profile export part --runtime openvino" in message


def test_an_onnxruntime_export_set_to_openvino_says_to_export_the_ir(sources):  # noqa: F811
    root = sources / "profiles"
    settings = FAST.replace(runtime="onnxruntime")
    profile = create_profile(
        root, "part", sources / "edge.safetensors", sources / "references", settings=settings
    ).profile
    config = yaml.safe_load((profile.folder / PROFILE_FILE).read_text())
    config["detection"]["runtime"] = "openvino"
    (profile.folder / PROFILE_FILE).write_text(yaml.safe_dump(config, sort_keys=False))
    with pytest.raises(UserError, match="holds no OpenVINO IR") as err:
        load_profile(root, "part").build_detector()
    assert "profile export part --runtime openvino" in str(err.value)


def test_missing_openvino_is_one_sentence_on_the_line_and_at_export(sources, monkeypatch):  # noqa: F811
    root = sources / "profiles"
    settings = FAST.replace(runtime="openvino")
    create_profile(
        root, "part", sources / "edge.safetensors", sources / "references", settings=settings
    )
    monkeypatch.setitem(sys.modules, "openvino", None)  # import now raises ImportError
    with pytest.raises(UserError) as err:
        load_profile(root, "part").build_detector()
    message = str(err.value)
    assert "\n" not in message and "pip install 'padformer-edge[line-openvino]'" in message
    with pytest.raises(UserError) as err:
        export_profile(root, "part", "openvino")
    message = str(err.value)
    assert "\n" not in message and "pip install 'padformer-edge[openvino]'" in message


def test_profile_export_runtime_openvino_from_the_command_line(sources):  # noqa: F811
    """``profile export NAME --runtime openvino`` switches the profile, and ``profile test``
    then gives torch's scores within 1e-4 relative."""
    import json

    from typer.testing import CliRunner

    from padformer_edge.cli.app import app
    from tests.line.make_fixture import write_image

    root = sources / "profiles"
    create_profile(
        root, "part", sources / "edge.safetensors", sources / "references", settings=FAST
    )
    paths = [write_image(sources / f"q/{i}.png", image) for i, image in enumerate(queries())]
    by_torch = [d.score for d in detections(root, "part")]
    pin_threshold(load_profile(root, "part"), sum(sorted(by_torch)[:2]) / 2)

    def invoke(*args: str):
        result = CliRunner().invoke(app, [*args, "--root", str(root)], env={"COLUMNS": "300"})
        assert result.exit_code == 0, result.output
        return result.stdout

    said = invoke("profile", "export", "part", "--runtime", "openvino")
    assert "runtime: openvino" in said
    assert load_profile(root, "part").detection.runtime == "openvino"
    heatmaps = str(sources / "heatmaps")
    tested = invoke(
        "profile", "test", "part", *map(str, paths), "--out", heatmaps, "--json", "--no-fail"
    )
    rows = json.loads(tested)
    assert [row["score"] for row in rows] == pytest.approx(by_torch, rel=SCORE_RTOL, abs=0)
    threshold = load_profile(root, "part").require_threshold()
    assert [row["anomalous"] for row in rows] == [s > threshold for s in by_torch]


def test_the_daemons_runtime_overrides_every_profiles(sources):  # noqa: F811
    """``worker.runtime`` in the daemon's config runs a torch profile on its exported
    graphs (same scores), and names the fix when the profile holds none for it."""
    from padformer_edge.daemon.inspectors import build_inspector
    from padformer_edge.daemon.settings import WorkerConfig

    root = sources / "profiles"
    profile = create_profile(
        root, "part", sources / "edge.safetensors", sources / "references", settings=FAST
    ).profile
    first = profile.build_detector().detect(queries())
    pin_threshold(profile, max(d.score for d in first) + 1.0)
    profile = load_profile(root, "part")
    with pytest.raises(UserError, match="profile export part"):
        build_inspector(profile, profile.require_threshold(), None, "onnxruntime")
    export_profile(root, "part", "openvino")
    config = yaml.safe_load((profile.folder / PROFILE_FILE).read_text())
    config["detection"]["runtime"] = "torch"  # exported, but the profile itself stays on torch
    (profile.folder / PROFILE_FILE).write_text(yaml.safe_dump(config, sort_keys=False))
    profile = load_profile(root, "part")
    assert profile.detection.runtime == "torch"
    inspector = build_inspector(profile, profile.require_threshold(), None, "openvino")
    assert isinstance(inspector.detector, LineDetector)
    model, _ = load_checkpoint(sources / "edge.safetensors")
    threshold = profile.require_threshold()
    assert_same(inspector.detector.detect(queries()), first, float32_bound(model), threshold)
    assert WorkerConfig(runtime="openvino").runtime == "openvino"
    with pytest.raises(ValueError, match="runtime"):
        WorkerConfig(runtime="tensorrt")


def test_openvino_runs_a_one_image_call_on_fixed_shapes_and_other_batches_as_well(sources):  # noqa: F811
    """The query and feature graphs are compiled again for one image's shapes; a call of
    two images (6 pass rows, not 3) compiles the dynamic graph again and scores the same."""
    root = sources / "profiles"
    settings = FAST.replace(runtime="openvino")
    create_profile(
        root, "part", sources / "edge.safetensors", sources / "references", settings=settings
    )
    detector = load_profile(root, "part").build_detector()
    assert isinstance(detector, LineDetector)
    query = detector.sessions["query.onnx"]
    assert isinstance(query, IrGraph) and query.fixed is not None
    assert query.fixed[0]["query"] == (settings.passes, 3, detector.img_size, detector.img_size)
    assert query.request is None  # the dynamic compile was dropped
    images = queries()[:2]
    alone = [detector.detect([image])[0] for image in images]
    assert query.request is None  # one image at a time ran on the fixed shapes only
    together = detector.detect(images)
    assert query.request is not None  # two images' passes needed the dynamic graph
    for ours, theirs in zip(together, alone, strict=True):
        assert ours.score == pytest.approx(theirs.score, rel=SCORE_RTOL, abs=0)
        assert relative_error(ours.anomaly_map, theirs.anomaly_map) < 1e-5
