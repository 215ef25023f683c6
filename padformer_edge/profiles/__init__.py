"""Inspection profiles: one product's model, references, detection settings and threshold.

The daemon loads a profile by name and runs it exactly as ``profile test`` does::

    profile = load_profile(profiles_root(), "bracket")
    detector = profile.build_detector()          # verifies the checkpoint's sha256
    score = detector.detect([image])[0].score
    profile.is_anomaly(score), profile.normalised_score(score)
"""

from padformer_edge.profiles.create import CreateResult, create_profile, set_model
from padformer_edge.profiles.layout import profiles_root
from padformer_edge.profiles.profile import Profile, list_profile_names, load_profile

__all__ = [
    "CreateResult",
    "Profile",
    "create_profile",
    "list_profile_names",
    "load_profile",
    "profiles_root",
    "set_model",
]
