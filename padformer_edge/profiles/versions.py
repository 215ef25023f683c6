"""Profile versions: keeping each replaced version, switching files in, and rollback.

A profile's ``version`` (in ``profile.yaml``) rises with every ``refresh`` and
``rollback``; the version being replaced is copied first to ``versions/<n>/``
(its ``profile.yaml`` and ``references/``), so any earlier version can be brought back.
A rollback is a change like any other: it makes a new version whose references and
calibration are the restored one's, and the history (which only grows) says who rolled
back, to what and when. Version numbers never repeat, so an inspection's
``profile_version`` always names one set of references and one threshold.

Switching (``install``) is ordered for a daemon reading the folder at any moment: new
reference files are added beside the old ones, then ``profile.yaml`` is replaced
atomically (the daemon takes up a version when this file changes), and only then are
reference files no longer named removed. Nothing here imports torch: a line PC rolls
back without it.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

from padformer_edge.config import load_config
from padformer_edge.errors import UserError
from padformer_edge.files.atomic import write_atomic
from padformer_edge.profiles.layout import (
    PROFILE_FILE,
    REFERENCES_DIR,
    VERSIONS_DIR,
    write_yaml_atomic,
)
from padformer_edge.profiles.profile import Profile, load_profile
from padformer_edge.profiles.schema import ProfileChange, ProfileConfig
from padformer_edge.reporting.log import get_logger


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def version_folder(profile: Profile, version: int) -> Path:
    return profile.folder / VERSIONS_DIR / str(version)


def kept_versions(profile: Profile) -> list[int]:
    """The earlier versions kept under ``versions/``, oldest first."""
    folder = profile.folder / VERSIONS_DIR
    if not folder.is_dir():
        return []
    found = [p for p in folder.iterdir() if p.name.isdigit() and (p / PROFILE_FILE).is_file()]
    return sorted(int(p.name) for p in found)


def next_version(profile: Profile) -> int:
    """The number a new version of ``profile`` gets: above the current one and every
    kept one, so a number never names two versions (a rollback makes a new one)."""
    return max([profile.config.version, *kept_versions(profile)]) + 1


def alters_scoring(old: ProfileConfig, new: ProfileConfig) -> bool:
    """True when ``new`` would score or decide differently from ``old``: another
    threshold, references, model, belt photo, ignored regions or detection settings
    (the device and runtime aside: every runtime computes the same scores)."""
    before, after = old.calibration, new.calibration
    if (before is None) != (after is None):
        return True
    if before is not None and after is not None and before.threshold != after.threshold:
        return True
    same_run = {"runtime": old.detection.runtime, "device": old.detection.device}
    return (
        old.references != new.references
        or old.model != new.model
        or old.background != new.background
        or old.ignore_regions != new.ignore_regions
        or old.detection != new.detection.replace(**same_run)
    )


def version_for(profile: Profile, config: ProfileConfig) -> int:
    """The version ``config`` is saved as over ``profile``: a new one when it alters
    scoring and the current version could score (it has a threshold), else the same
    (a new profile's first threshold: no result was scored by version 1 without it)."""
    if profile.calibration is not None and alters_scoring(profile.config, config):
        return next_version(profile)
    return profile.config.version


def save_profile(profile: Profile, config: ProfileConfig) -> Profile:
    """Write ``config`` (references unchanged) over ``profile``. When its ``version``
    is new the replaced one is kept first (``install``), as ``refresh`` keeps it;
    otherwise ``profile.yaml`` is replaced atomically in place."""
    if config.version != profile.config.version:
        return install(profile, config, {})
    write_yaml_atomic(profile.folder / PROFILE_FILE, config.model_dump(mode="json"))
    return load_profile(profile.folder.parent, profile.name)


def keep_version(profile: Profile) -> Path:
    """Copy the current ``profile.yaml`` and references to ``versions/<version>/``
    (staged, then renamed: a half-copied version is never taken for a whole one)."""
    target = version_folder(profile, profile.config.version)
    if (target / PROFILE_FILE).is_file():
        return target  # kept before (a refresh that failed after this step)
    staging = target.with_name(f".{target.name}.keeping")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / REFERENCES_DIR).mkdir(parents=True)
    for path in profile.reference_paths:
        shutil.copyfile(path, staging / REFERENCES_DIR / path.name)
    shutil.copyfile(profile.folder / PROFILE_FILE, staging / PROFILE_FILE)
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target


def install(profile: Profile, config: ProfileConfig, references: dict[str, Path]) -> Profile:
    """Make ``config`` the profile's current version: ``references`` (file name -> where
    its bytes are now) copied into ``references/``, ``profile.yaml`` replaced, then the
    reference files ``config`` no longer names removed. The version replaced is kept
    first (``keep_version``)."""
    keep_version(profile)
    folder = profile.folder / REFERENCES_DIR
    for entry in config.references:
        source = references.get(entry.file)
        if source is not None and source.resolve() != (folder / entry.file).resolve():
            write_atomic(folder / entry.file, source.read_bytes())
    installed = Profile(profile.folder, config)
    installed.verify_references()  # every named file present with its recorded sha256
    write_yaml_atomic(profile.folder / PROFILE_FILE, config.model_dump(mode="json"))
    _drop_unnamed_references(profile.folder, config)
    return load_profile(profile.folder.parent, profile.name)


def _drop_unnamed_references(profile_folder: Path, config: ProfileConfig) -> None:
    """Remove the reference files ``config`` does not name (after it is in place)."""
    named = {entry.file for entry in config.references}
    for path in (profile_folder / REFERENCES_DIR).iterdir():
        if path.is_file() and path.name not in named:
            path.unlink(missing_ok=True)


def install_staged(profile: Profile, staged: Path) -> Profile:
    """Make the complete, verified profile folder ``staged`` (a version pulled from the
    plant database: its ``profile.yaml``, references and exported graphs, byte for byte
    as published) the current version of ``profile``, in ``install``'s order: the
    current version kept, new references added beside the old, the exported graphs
    swapped in, ``profile.yaml`` replaced (the moment the daemon takes the version up),
    then the references no longer named removed. ``staged`` is consumed."""
    keep_version(profile)
    config = load_config(staged / PROFILE_FILE, ProfileConfig)
    folder = profile.folder / REFERENCES_DIR
    folder.mkdir(exist_ok=True)
    for entry in config.references:
        write_atomic(folder / entry.file, (staged / REFERENCES_DIR / entry.file).read_bytes())
    if config.exported is not None:
        target = profile.folder / config.exported.folder
        retired = target.with_name(f".{target.name}.retired")
        shutil.rmtree(retired, ignore_errors=True)
        if target.exists():
            target.rename(retired)
        (staged / config.exported.folder).rename(target)
        shutil.rmtree(retired, ignore_errors=True)
    (staged / PROFILE_FILE).replace(profile.folder / PROFILE_FILE)
    _drop_unnamed_references(profile.folder, config)
    shutil.rmtree(staged, ignore_errors=True)
    return load_profile(profile.folder.parent, profile.name)


def rollback_profile(root: str | Path, name: str, by: str, to: int | None = None) -> Profile:
    """Bring back version ``to`` (default: the newest kept version) as a new version,
    recorded in the history under ``by``. The restored version must run on the model
    the profile names now: a threshold holds only for the model it was calibrated on."""
    profile = load_profile(root, name)
    kept = kept_versions(profile)
    if not kept:
        raise UserError(
            f"profile '{name}' keeps no earlier version to roll back to; versions are kept "
            f"by `padformer-edge profile refresh {name}`."
        )
    to = kept[-1] if to is None else to
    if to not in kept:
        raise UserError(
            f"profile '{name}' keeps no version {to} (kept: "
            f"{', '.join(map(str, kept))}); pick one of those."
        )
    folder = version_folder(profile, to)
    old = load_config(folder / PROFILE_FILE, ProfileConfig)
    if old.pinned != profile.config.pinned:
        raise UserError(
            f"version {to} of profile '{name}' ran another model than the profile names now; "
            f"point it back with `padformer-edge profile set-model {name} --model FILE` first."
        )
    if old.calibration is None:
        raise UserError(f"version {to} of profile '{name}' has no threshold; pick another.")
    new_version = next_version(profile)
    change = ProfileChange(
        action="rollback", by=by, at=now_iso(), old_threshold=profile.threshold,
        new_threshold=old.calibration.threshold, version=new_version,
        from_version=profile.config.version, restored=to,
    )  # fmt: skip
    config = old.model_copy(update={
        "version": new_version,
        "history": [*profile.config.history, change],
        "name": profile.name,
        # the settings the profile runs with now (a runtime export, growth settings) stay
        "detection": profile.config.detection,
        "exported": profile.config.exported,
        "growth": profile.config.growth,
    })  # fmt: skip
    sources = {e.file: folder / REFERENCES_DIR / e.file for e in old.references}
    installed = install(profile, config, sources)
    get_logger("profiles").info("profile.rolled_back", name=name, by=by, restored=to,
                                version=new_version)  # fmt: skip
    return installed
