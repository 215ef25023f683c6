"""``profile create`` and ``profile set-model``: making a profile and adopting a new model.

A new profile is assembled in a hidden staging folder beside its final place (references
copied, ``profile.yaml`` written, reference encodings cached) and renamed into place
only when every step succeeded, so a failed create leaves nothing behind.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from padformer_edge.detect.images import list_images
from padformer_edge.detect.service import load_references
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.devices.runtimes import GRAPH_RUNTIMES
from padformer_edge.errors import UserError
from padformer_edge.files.digest import file_sha256
from padformer_edge.methods.interface import ScoringMethod
from padformer_edge.methods.registry import method_for
from padformer_edge.model.header import read_header
from padformer_edge.profiles.framing import copy_background
from padformer_edge.profiles.layout import (
    PROFILE_FILE,
    REFERENCES_DIR,
    check_name,
    write_yaml_atomic,
)
from padformer_edge.profiles.profile import KnownReferences, Profile, load_profile
from padformer_edge.profiles.regions import check_regions_fit, frame_size_of
from padformer_edge.profiles.schema import (
    IgnoreRegion,
    ProfileConfig,
    ProfileModelRef,
    ReferenceEntry,
    ReferenceSelection,
    WeightsRef,
)
from padformer_edge.profiles.selection import select_references
from padformer_edge.profiles.versions import save_profile, version_for
from padformer_edge.reporting.log import get_logger
from padformer_edge.store.locations import stored_path
from padformer_edge.weights import checked_sha256, locate_generic_model


@dataclass(frozen=True)
class CreateResult:
    """The new profile and which of the offered images became its references."""

    profile: Profile
    chosen: list[Path]
    offered: int


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def pinned_weights(
    method: ScoringMethod, settings: DetectionSettings, checkpoint: str | Path | None
) -> dict[str, ProfileModelRef | WeightsRef]:
    """What a new profile is pinned to, as ``ProfileConfig`` keys: the weights of the
    method's own that ``settings`` name (``compare``'s comparator, already checked against
    its card), so that a checkpoint it never reads is neither read nor hashed; else the
    checkpoint, hashed once (the shipped one: its check reused)."""
    own = settings.section.weights_sha256()
    if own is not None:
        return {"weights": WeightsRef(name=method.weights_name(settings), sha256=own)}
    if checkpoint is None:
        raise UserError(f"metric {settings.metric} scores with a checkpoint; give --model FILE.")
    checkpoint = Path(checkpoint).expanduser().absolute()
    if not method.reads_padformer:  # recorded, not loaded: the file must still be one
        read_header(checkpoint)
    sha256 = checked_sha256(checkpoint) or file_sha256(checkpoint)
    return {"model": ProfileModelRef(path=stored_path(checkpoint), sha256=sha256)}


def create_profile(
    root: str | Path,
    name: str,
    checkpoint: str | Path | None,
    references: str | Path,
    shots: int | None = None,
    settings: DetectionSettings | None = None,
    background: str | Path | None = None,
    ignore_regions: Sequence[IgnoreRegion] = (),
) -> CreateResult:
    """Make profile ``name`` from a folder of good images, and a checkpoint when its
    metric scores with one (``compare`` reads its comparator and ``checkpoint`` is unused).

    With more images than ``shots`` the references are chosen to cover the most
    viewpoints (``selection.select_references``); without ``shots`` all are used.
    ``background``: a photo of the camera's empty belt, copied in; with it the profile
    finds the part in each frame and scores its crop (``detect.framed``);
    ``ignore_regions`` (checked against the references' frame) are left out of scoring.
    """
    settings = settings or DetectionSettings()
    method = method_for(settings.metric)
    root, settings = Path(root), method.settled(settings)
    final = root / check_name(name)
    if final.exists():
        raise UserError(
            f"profile '{name}' already exists at {final}; choose another name or delete it first."
        )
    model, pinned = None, pinned_weights(method, settings, checkpoint)
    if method.reads_padformer:  # a file that does not load must not be adopted
        from padformer_edge.model.checkpoint import load_checkpoint

        model, _ = load_checkpoint(Path(checkpoint).expanduser().absolute())
    images = load_references(references)  # each decoded once, here
    paths = list_images(references)
    if shots is not None and not 1 <= shots <= len(images):
        raise UserError(
            f"--shots {shots} does not fit the {len(images)} images in {references}; "
            f"choose from 1 to {len(images)}."
        )
    check_regions_fit(ignore_regions, frame_size_of(images))
    count = len(images) if shots is None else shots
    picked = select_references(images, count, settings, lambda: model)
    chosen = [paths[i] for i in picked]
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.creating-", dir=root))
    try:
        (staging / REFERENCES_DIR).mkdir()
        entries = []
        for path in chosen:  # each copy hashed once: the bytes the profile keeps
            shutil.copyfile(path, staging / REFERENCES_DIR / path.name)
            sha = file_sha256(staging / REFERENCES_DIR / path.name)
            entries.append(ReferenceEntry(file=path.name, sha256=sha, source=str(path.absolute())))
        backdrop = None if background is None else copy_background(staging, background)
        method = "all" if count == len(images) else "farthest-point"
        config = ProfileConfig(
            name=name,
            created_at=now_iso(),
            **pinned,
            detection=settings,
            references=entries,
            selection=ReferenceSelection(method=method, pool_size=len(images)),
            background=backdrop,
            ignore_regions=list(ignore_regions),
        )
        if settings.runtime in GRAPH_RUNTIMES:
            from padformer_edge.profiles.export import export_into

            config = export_into(staging, config, checkpoint, settings, lambda: model)
        write_yaml_atomic(staging / PROFILE_FILE, config.model_dump(mode="json"))
        known = KnownReferences([images[i] for i in picked], tuple(e.sha256 for e in entries))
        # fills the reference cache and checks the settings, on what was read above
        Profile(staging, config).build_detector(known=known, padformer=lambda: model)
        staging.rename(final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    get_logger("profiles").info(
        "profile.created", name=name, references=[p.name for p in chosen], offered=len(images)
    )
    return CreateResult(load_profile(root, name), chosen, len(images))


def set_model(
    root: str | Path, name: str, checkpoint: str | Path | None, metric: str | None = None
) -> Profile:
    """Point a profile at another checkpoint and/or another metric (``compare``: the
    learned comparison with the shipped default comparator, which also moves a profile
    made with an earlier one); its threshold is dropped because scores of another model or
    metric are on another scale, and the reference cache rebuilds on next use. Graphs
    exported before are dropped too: a profile on onnxruntime or openvino then says to
    run ``profile export`` rather than score the old way."""
    profile = load_profile(root, name)
    update: dict = {"calibration": None, "exported": None}
    settings = profile.detection
    if metric is not None:  # its method's defaults, settled (compare: the shipped comparator)
        settings = method_for(metric).settled(settings.with_metric(metric))
        update["detection"] = settings
    own = settings.section.weights_sha256()
    if checkpoint is None and profile.config.model is None and own is None:
        checkpoint = locate_generic_model()  # what `profile create` records without --model
    if checkpoint is not None:
        from padformer_edge.model.checkpoint import load_checkpoint

        checkpoint = Path(checkpoint).expanduser().absolute()
        load_checkpoint(checkpoint)  # a file that does not load must not be adopted
        sha = file_sha256(checkpoint)
        update["model"] = ProfileModelRef(path=stored_path(checkpoint), sha256=sha)
        update["weights"] = None  # pinned to the checkpoint now, as a file written before
    elif profile.config.model is None:  # pinned to its method's weights: the ones named now
        name_of = method_for(settings.metric).weights_name(settings)
        update["weights"] = WeightsRef(name=name_of, sha256=own)
    config = profile.config.model_copy(update=update)
    save_profile(profile, config.model_copy(update={"version": version_for(profile, config)}))
    get_logger("profiles").info(
        "profile.model_set",
        name=name,
        model=str(checkpoint or profile.weights_label),
        metric=metric,
    )
    return load_profile(root, name)
