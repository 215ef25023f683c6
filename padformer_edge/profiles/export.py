"""``profile export``: a profile's graphs and scoring files for the onnxruntime runtime.

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
from padformer_edge.log import get_logger
from padformer_edge.profiles.layout import EXPORTED_DIR, PROFILE_FILE, write_yaml_atomic
from padformer_edge.profiles.profile import Profile, load_profile
from padformer_edge.profiles.schema import ExportedFiles, ProfileConfig


def export_into(
    folder: Path, config: ProfileConfig, checkpoint: Path, settings: DetectionSettings
) -> ProfileConfig:
    """Export ``checkpoint``'s model for ``settings`` into ``folder``/exported (replacing
    any earlier export) and return ``config`` with those settings and the files' sha256."""
    from padformer_edge.deploy.line_detector import import_onnxruntime
    from padformer_edge.deploy.line_export import export_line
    from padformer_edge.model.checkpoint import load_checkpoint

    import_onnxruntime()  # the onnx extra brings both: one sentence if it is missing
    model, _ = load_checkpoint(checkpoint)
    staging = Path(tempfile.mkdtemp(prefix=".exporting-", dir=folder))
    try:
        files = export_line(model, settings, staging)
        final = folder / EXPORTED_DIR
        if final.exists():
            shutil.rmtree(final)
        staging.rename(final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    exported = ExportedFiles(folder=EXPORTED_DIR, model_sha256=config.model.sha256, files=files)
    return config.model_copy(update={"detection": settings, "exported": exported})


def export_profile(root: str | Path, name: str) -> Profile:
    """Export profile ``name``'s model for its detection settings and switch the profile
    to the onnxruntime runtime. The threshold is kept: both runtimes compute the same
    scoring (the recorded signature is checked when the detector is built)."""
    profile = load_profile(root, name)
    profile.verify_model()
    settings = profile.detection.replace(runtime="onnxruntime", device="auto")
    config = export_into(profile.folder, profile.config, profile.model_path, settings)
    write_yaml_atomic(profile.folder / PROFILE_FILE, config.model_dump(mode="json"))
    exported = load_profile(root, name)
    exported.build_detector()  # verifies the files and fills the numpy reference cache
    get_logger("profiles").info("profile.exported", name=name, files=sorted(config.exported.files))
    return exported
