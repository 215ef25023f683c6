"""``profile refresh NAME``: new references from the profile's own and the approved
candidates, a threshold measured on good images held aside, a new version.

The pool is the current references plus every approved candidate of the profile (their
pictures copied into ``approved/``, so the profile carries them). Before anything is
chosen, each approved picture is scored by the current version: one scored *far above*
the threshold is refused, with the whole refresh, unless ``--force`` names it. Far
above means beyond ``threshold + FAR_ABOVE * (threshold - median good score)``: the
calibration's own spread of good parts, so the rule needs no scale of its own. A good
part just over the threshold is the false alarm an operator rightly reviews as good, and
as a reference it stops that alarm; a part as far above the threshold as the threshold
is above a typical good part looks like a defect, and as a reference it would teach the
profile that its kind of defect is normal, silently.

Held aside: an approved picture whose sha256 falls in one part in ``HELD_ASIDE_EVERY``
is never a reference, in this refresh or any later one, and the threshold is measured on
those (with ``--good`` images, if given). Choosing aside by content rather than at
random keeps the split the same each time: an image that calibrated one version can
never become a reference of the next. A profile with room below its size limit has its
references chosen again from its own and the rest for viewpoint coverage
(``selection.farthest_point_order``) up to the limit; a full profile keeps its own, and
the refresh gives it a threshold measured on more good pictures. Both were chosen on
validation (docs/research.md#growth-limit): re-choosing a full profile's references lost
to the ones it had, while a small profile re-chosen whole did better than one whose
references were kept and added to. The encodings are cached in the new version's cache
file.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from padformer_edge.detect.images import list_images, read_image
from padformer_edge.digest import file_sha256
from padformer_edge.errors import UserError
from padformer_edge.log import get_logger
from padformer_edge.profiles.calibrate import image_files, measure_calibration, score_files
from padformer_edge.profiles.layout import APPROVED_DIR, CACHE_FILE, REFERENCES_DIR
from padformer_edge.profiles.profile import Profile, load_profile
from padformer_edge.profiles.schema import (
    ApprovedImage,
    CalibrationResult,
    ProfileChange,
    ProfileConfig,
    ReferenceEntry,
)
from padformer_edge.profiles.thresholds import MIN_GOOD_IMAGES
from padformer_edge.profiles.versions import install, next_version, now_iso
from padformer_edge.store.candidates import Candidate

FAR_ABOVE = 1.0
"""How far above the threshold an approved picture may score, in units of the distance
from the median good calibration score to the threshold."""
HELD_ASIDE_EVERY = 3
log = get_logger("profiles")


def held_aside(sha256: str) -> bool:
    """True for the pictures kept for calibration: about one in ``HELD_ASIDE_EVERY``,
    by content, so the same picture is aside in every refresh."""
    return int(sha256[:8], 16) % HELD_ASIDE_EVERY == 0


def far_above_limit(calibration: CalibrationResult) -> float:
    """The score above which an approved picture is refused (module docstring)."""
    spread = max(calibration.threshold - calibration.good.p50, 0.0)
    return calibration.threshold + FAR_ABOVE * spread


@dataclass
class RefreshPlan:
    """A refresh worked out in a staging folder, not yet installed."""

    profile: Profile
    config: ProfileConfig
    staging: Path
    scores: dict[int, float]
    """Approved candidates' scores under the current version."""
    limit: float
    forced: list[int]
    added: list[str]
    dropped: list[str]
    held: list[Path]
    warnings: list[str] = field(default_factory=list)

    @property
    def old_threshold(self) -> float | None:
        return self.profile.threshold

    @property
    def new_threshold(self) -> float:
        assert self.config.calibration is not None
        return self.config.calibration.threshold

    def discard(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)


def take_in(
    profile: Profile, approved: Sequence[Candidate], warnings: list[str]
) -> list[ApprovedImage]:
    """The approved candidates' pictures in the profile's ``approved/`` folder (copied
    from the state folder when not there yet, and checked against their sha256)."""
    folder = profile.folder / APPROVED_DIR
    folder.mkdir(exist_ok=True)
    taken = []
    for candidate in approved:
        name = f"approved-{candidate.id}-{candidate.sha256[:12]}{candidate.path.suffix}"
        target = folder / name
        if not target.is_file():
            try:
                shutil.copyfile(candidate.path, target)
            except OSError as err:
                warnings.append(f"candidate {candidate.id}: its picture cannot be read ({err}).")
                continue
        if file_sha256(target) != candidate.sha256:
            target.unlink()
            warnings.append(f"candidate {candidate.id}: its picture changed since it was "
                            "proposed; left out.")  # fmt: skip
            continue
        taken.append(ApprovedImage(candidate=candidate.id, file=name, sha256=candidate.sha256,
                                   held_aside=held_aside(candidate.sha256)))  # fmt: skip
    return taken


def choose(profile: Profile, pool: Sequence[Path], count: int, own: int) -> list[int]:
    """Indices into ``pool`` of ``count`` pictures covering the most viewpoints. A profile
    whose ``own`` references (the first of ``pool``) already fill ``count`` keeps them:
    re-choosing a full profile's references lost to the ones it had on validation."""
    if count >= len(pool):
        return list(range(len(pool)))
    if own == count:
        return list(range(own))
    from padformer_edge.model.checkpoint import load_checkpoint
    from padformer_edge.profiles.selection import select_references

    model, _ = load_checkpoint(profile.model_path)
    return select_references(model, [read_image(p) for p in pool], count)


def _refuse_far(scored: dict[int, float], limit: float, force: Iterable[int], name: str) -> None:
    far = {i: s for i, s in scored.items() if s > limit and i not in set(force)}
    if far:
        listed = ", ".join(f"{i} (score {s:.6g})" for i, s in sorted(far.items()))
        raise UserError(
            f"approved candidates {listed} of profile '{name}' score far above the threshold "
            f"(above {limit:.6g}): a defect approved as good would teach the profile that its "
            f"kind of defect is normal; reject them (`padformer-edge profile reject {name} ID "
            "--yes ENGINEER`) or, if they are good, name each with --force ID."
        )


def plan_refresh(
    root: str | Path,
    name: str,
    approved: Sequence[Candidate],
    *,
    good: str | Path | None = None,
    force: Sequence[int] = (),
    max_references: int | None = None,
    device: str | None = None,
) -> RefreshPlan:
    """Work out the refresh of ``name`` from its ``approved`` candidates (the caller read
    them from the history database); the profile itself is not changed, except that the
    approved pictures are copied into its ``approved/`` folder."""
    profile = load_profile(root, name)
    calibration = profile.calibration
    if calibration is None:
        raise UserError(f"profile '{name}' has no threshold yet; run `padformer-edge profile "
                        f"calibrate {name} --good DIR` first.")  # fmt: skip
    unknown = sorted(set(force) - {c.id for c in approved})
    if unknown:
        raise UserError(f"--force {unknown[0]} names no approved candidate of profile '{name}'; "
                        f"`padformer-edge profile candidates {name}` lists them.")  # fmt: skip
    warnings: list[str] = []
    images = take_in(profile, approved, warnings)
    folder = profile.folder / APPROVED_DIR
    detector = profile.build_detector(device)
    paths = [folder / image.file for image in images]
    scored = dict(zip([i.candidate for i in images], score_files(detector, paths).tolist(),
                      strict=True))  # fmt: skip
    del detector
    limit = far_above_limit(calibration)
    _refuse_far(scored, limit, force, name)
    reference_shas = {e.sha256 for e in profile.config.references}
    # a picture that is already a reference stays one: it is not aside, whatever its hash
    images = [i.model_copy(update={"held_aside": i.held_aside and i.sha256 not in reference_shas})
              for i in images]  # fmt: skip
    held = [folder / i.file for i in images if i.held_aside]
    if good is not None:
        held += [p for p in image_files(good, "good") if file_sha256(p) not in reference_shas]
    if len(held) < MIN_GOOD_IMAGES:
        raise UserError(
            f"profile '{name}' has {len(held)} good images held aside for calibration; at least "
            f"{MIN_GOOD_IMAGES} are needed: approve more candidates (about one in "
            f"{HELD_ASIDE_EVERY} is held aside) or add held-out good images with --good DIR."
        )
    own = [
        (e.file, p, e.sha256)
        for e, p in zip(profile.config.references, profile.reference_paths, strict=True)
    ]
    grown = [(i.file, folder / i.file, i.sha256) for i in images
             if not i.held_aside and i.sha256 not in reference_shas]  # fmt: skip
    pool = own + grown
    count = max_references or profile.config.growth.max_references
    chosen = [pool[i] for i in choose(profile, [p for _, p, _ in pool], count, len(own))]
    staging = Path(tempfile.mkdtemp(prefix=".refresh-", dir=profile.folder))
    try:
        (staging / REFERENCES_DIR).mkdir()
        entries = []
        for file, path, sha in chosen:
            shutil.copyfile(path, staging / REFERENCES_DIR / file)
            entries.append(ReferenceEntry(file=file, sha256=sha, source=str(path.name)))
        exported = profile.config.exported
        if exported is not None:
            (staging / exported.folder).symlink_to(profile.folder / exported.folder)
        version = next_version(profile)
        config = profile.config.model_copy(
            update={"references": entries, "version": version, "approved": images}
        )
        staged = Profile(staging, config)
        detector = staged.build_detector(device, calibrating=True)  # caches the encodings
        result = measure_calibration(staged, detector, held, [], calibration.target_fpr,
                                     list(warnings))  # fmt: skip
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    before = {e.file for e in profile.config.references}
    after = {e.file for e in entries}
    return RefreshPlan(
        profile, config.model_copy(update={"calibration": result}), staging, scored, limit,
        sorted(set(force)), sorted(after - before), sorted(before - after), held, warnings,
    )  # fmt: skip


def apply_refresh(plan: RefreshPlan, by: str) -> Profile:
    """Install ``plan`` as the profile's new version, recorded in its history under
    ``by``; refused when the profile changed while the plan was worked out."""
    name = plan.profile.name
    try:
        current = load_profile(plan.profile.folder.parent, name)
        if current.config != plan.profile.config:
            raise UserError(f"profile '{name}' changed while the refresh was worked out; run "
                            f"`padformer-edge profile refresh {name}` again.")  # fmt: skip
        change = ProfileChange(
            action="refresh", by=by, at=now_iso(), old_threshold=plan.old_threshold,
            new_threshold=plan.new_threshold, version=plan.config.version,
            from_version=current.config.version,
            candidates_used=[i.candidate for i in plan.config.approved], forced=plan.forced,
        )  # fmt: skip
        config = plan.config.model_copy(update={"history": [*current.config.history, change]})
        cache = plan.staging / CACHE_FILE
        if cache.is_file():  # keyed by the new references: valid in the profile folder
            cache.replace(current.folder / CACHE_FILE)
        sources = {p.name: p for p in list_images(plan.staging / REFERENCES_DIR)}
        installed = install(current, config, sources)
    finally:
        plan.discard()
    log.info("profile.refreshed", name=name, by=by, version=config.version,
             references=len(config.references), added=plan.added, dropped=plan.dropped,
             threshold=plan.new_threshold, forced=plan.forced)  # fmt: skip
    return installed
