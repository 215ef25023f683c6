"""Inspection profiles: one product's model, references, detection settings and threshold.

The daemon loads a profile by name and runs it exactly as ``profile test`` does::

    profile = load_profile(profiles_root(), "bracket")
    detector = profile.build_detector()          # verifies the checkpoint's sha256
    score = detector.detect([image])[0].score
    profile.is_anomaly(score), profile.normalised_score(score)

Names resolve lazily (PEP 562): the CLI's start-up and commands that never build a
detector should not pay for importing torch and the model.
"""

from __future__ import annotations

from padformer_edge.lazy import lazy_exports

_EXPORTS = {
    "CalibrationReport": "padformer_edge.profiles.calibrate",
    "calibrate_profile": "padformer_edge.profiles.calibrate",
    "CreateResult": "padformer_edge.profiles.create",
    "create_profile": "padformer_edge.profiles.create",
    "set_model": "padformer_edge.profiles.create",
    "delete_profile": "padformer_edge.profiles.delete",
    "existing_profile_folder": "padformer_edge.profiles.delete",
    "profiles_root": "padformer_edge.profiles.layout",
    "Profile": "padformer_edge.profiles.profile",
    "list_profile_names": "padformer_edge.profiles.profile",
    "load_profile": "padformer_edge.profiles.profile",
    "Verdict": "padformer_edge.profiles.verdicts",
    "inspect_images": "padformer_edge.profiles.verdicts",
}

__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
