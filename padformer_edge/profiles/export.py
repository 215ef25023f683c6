"""``profile export``: a profile's graphs and scoring files for the onnxruntime or
OpenVINO runtime (the OpenVINO export adds each graph's IR beside its ONNX file).

Written into the profile's own ``exported/`` folder, and their sha256 into profile.yaml,
so a profile copied to a line PC carries everything that PC runs and the proof that
nothing changed on the way. Runs where torch is installed (it traces the model); the
line only reads the result.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.devices.runtimes import RuntimeName
from padformer_edge.errors import UserError
from padformer_edge.methods.interface import PadformerSource
from padformer_edge.profiles.layout import EXPORTED_DIR, PROFILE_FILE, write_yaml_atomic
from padformer_edge.profiles.profile import Profile, load_profile
from padformer_edge.profiles.schema import ExportedFiles, ProfileConfig
from padformer_edge.reporting.log import get_logger


def export_into(
    folder: Path,
    config: ProfileConfig,
    checkpoint: Path | None,
    settings: DetectionSettings,
    padformer: PadformerSource | None = None,
) -> ProfileConfig:
    """Export what the method of ``settings`` scores with (``checkpoint``'s model for a
    PADFormer metric, the comparator for ``compare``), for a runtime onnxruntime or
    openvino, into ``folder``/exported (replacing any earlier export) and return
    ``config`` with those settings and the files' sha256. ``padformer`` hands in the
    model when the caller has loaded it already (``profile create``)."""
    from padformer_edge.deploy.onnx_runner import import_onnxruntime
    from padformer_edge.deploy.sessions import import_openvino
    from padformer_edge.methods.registry import method_for
    from padformer_edge.model.checkpoint import load_checkpoint

    # before the checkpoint loads: a missing package is one sentence at once, naming the
    # extra that writes the graphs (onnx, which brings onnxruntime; openvino on top)
    import_onnxruntime()
    if settings.runtime == "openvino":
        import_openvino()
    method = method_for(settings.metric)
    staging = Path(tempfile.mkdtemp(prefix=".exporting-", dir=folder))
    try:
        source = padformer or (lambda: load_checkpoint(checkpoint)[0])
        files = method.export(settings, staging, source)
        final = folder / EXPORTED_DIR
        if final.exists():
            shutil.rmtree(final)
        staging.rename(final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    exported = ExportedFiles(folder=EXPORTED_DIR, model_sha256=config.weights_sha256, files=files)
    return config.model_copy(update={"detection": settings, "exported": exported})


def export_profile(root: str | Path, name: str, runtime: RuntimeName = "onnxruntime") -> Profile:
    """Export profile ``name``'s model for its detection settings and switch the profile
    to ``runtime`` (onnxruntime or openvino). The threshold is kept: every runtime
    computes the same scoring (the recorded signature is checked when the detector is
    built, and the tests hold the scores to the same values)."""
    if runtime == "torch":
        raise UserError(
            "profile export writes graphs for onnxruntime or openvino; to run a profile "
            "with torch again, set detection.runtime: torch in its profile.yaml."
        )
    profile = load_profile(root, name)
    checkpoint = None  # a method that reads no checkpoint exports from its own weights
    if profile.method.reads_padformer:
        profile.verify_model()
        checkpoint = profile.model_path
    settings = profile.detection.replace(runtime=runtime, device="auto")
    config = export_into(profile.folder, profile.config, checkpoint, settings)
    write_yaml_atomic(profile.folder / PROFILE_FILE, config.model_dump(mode="json"))
    exported = load_profile(root, name)
    exported.build_detector()  # verifies the files and fills the numpy reference cache
    get_logger("profiles").info(
        "profile.exported", name=name, runtime=runtime, files=sorted(config.exported.files)
    )
    return exported
