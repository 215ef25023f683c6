"""``profile publish``: a profile version, as the workstation has it, into the database.

What a line needs to run the version travels: ``profile.yaml`` (threshold, detection
settings, the model's and comparator's sha256), every reference and, for an exported
profile, every graph and scoring file, each with its sha256. The checkpoint itself does
not: an exported profile's graphs carry the weights, and a profile run with torch names
the checkpoint by its sha256, which the line checks against its own copy.

Every file is checked against the sha256 ``profile.yaml`` records before it is sent, so
a reference changed on the workstation is refused here, not on every line. No torch.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from sqlalchemy import Engine

from padformer_edge.errors import UserError
from padformer_edge.profiles.layout import PROFILE_FILE, REFERENCES_DIR
from padformer_edge.profiles.profile import Profile, load_profile
from padformer_edge.profiles.schema import ProfileConfig
from padformer_edge.store.published import PublishedVersion, publish


def file_paths(config: ProfileConfig) -> dict[str, str | None]:
    """Every file of a version by its path in the profile folder, with the sha256
    ``profile.yaml`` records for it (None for ``profile.yaml`` itself)."""
    paths: dict[str, str | None] = {PROFILE_FILE: None}
    for entry in config.references:
        paths[f"{REFERENCES_DIR}/{entry.file}"] = entry.sha256
    if config.exported is not None:
        for name, sha in config.exported.files.items():
            paths[f"{config.exported.folder}/{name}"] = sha
    return paths


def profile_files(profile: Profile) -> dict[str, tuple[str, bytes]]:
    """Path -> (sha256, bytes) of every file of ``profile``'s current version, each
    checked against the sha256 ``profile.yaml`` records."""
    files = {}
    for relative, recorded in file_paths(profile.config).items():
        path = profile.folder / relative
        if not path.is_file():
            raise UserError(
                f"profile '{profile.name}': {path} is missing, so its version cannot be "
                "published; put the file back (or export the profile again)."
            )
        content = path.read_bytes()
        sha = hashlib.sha256(content).hexdigest()
        if recorded is not None and sha != recorded:
            raise UserError(
                f"profile '{profile.name}': {path} differs from the sha256 profile.yaml "
                f"records ({recorded[:12]}..., the file has {sha[:12]}...); put the original "
                "back before publishing."
            )
        files[relative] = (sha, content)
    return files


def publish_profile(
    root: str | Path, name: str, engine: Engine, by: str
) -> tuple[PublishedVersion, bool]:
    """Publish the current version of profile ``name`` under ``root``; returns it and
    whether it is new (the same version with the same files is published once)."""
    profile = load_profile(root, name)
    identity = version_identity(profile)
    return publish(engine, identity, profile_files(profile), by)


def version_identity(profile: Profile) -> dict[str, object]:
    """What the database records of a version beside its files (name, version, metric,
    runtime, model and comparator sha256, threshold): taken from ``profile.yaml`` here at
    publish, and compared with the pulled ``profile.yaml`` on the line before install."""
    threshold = profile.require_threshold()  # a line cannot run a version without one
    detection = profile.detection
    return {
        "name": profile.name, "version": profile.config.version, "metric": detection.metric,
        "runtime": detection.runtime, "model_sha256": profile.model_sha256,
        "comparator_sha256": getattr(detection.section, "comparator", None),
        "threshold": threshold,
    }  # fmt: skip
