"""``profile refresh NAME``: new references from the profile's own and the approved
candidates, a threshold measured on good images held aside, a new version.

The pool is the current references plus every approved candidate of the profile (their
pictures copied into ``approved/`` when the refresh is installed, so the profile carries
them). Before anything is chosen, each approved picture is scored by the current
version: one scored *far above* the threshold refuses the whole refresh unless
``--force`` names it. Far
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

Planning writes nothing in the profile's folder (issue 51: a refused preview left copies
of the approved pictures in ``approved/``): the new version is staged in a temporary
folder elsewhere and the pictures are read where the line keeps them. A plan is always
made, refusals included: a far-above candidate is left out of it (what rejecting it would
give) and too few held-aside images still measure a threshold, each reason kept in
``RefreshPlan.refusals``, so one preview shows what the refresh would do and every
reason it would refuse; only ``apply_refresh`` refuses.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from padformer_edge.detect.detection import InspectionDetector
from padformer_edge.detect.images import list_images, read_image
from padformer_edge.errors import UserError
from padformer_edge.files.atomic import write_atomic
from padformer_edge.files.digest import file_sha256
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
from padformer_edge.profiles.thresholds import MIN_GOOD_IMAGES, good_images_needed
from padformer_edge.profiles.versions import install, next_version, now_iso
from padformer_edge.reporting.log import get_logger
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
    """A refresh worked out in a staging folder outside the profile, not yet installed;
    ``refusals`` says why it may not be (empty: it may)."""

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
    sources: dict[str, Path]
    """Where each approved picture's bytes are now (``approved/`` or the state folder),
    by its file name in ``approved/``; copied in when the plan is installed."""
    warnings: list[str] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    left_out: list[int] = field(default_factory=list)
    """Approved candidates scored far above the threshold and not forced: not in the plan."""

    @property
    def old_threshold(self) -> float | None:
        return self.profile.threshold

    @property
    def new_threshold(self) -> float | None:
        """The threshold measured on the held-aside images; None when none was held."""
        calibration = self.config.calibration
        return None if calibration is None else calibration.threshold

    def require_applicable(self) -> None:
        """Refuse in one message naming every reason, if there is any."""
        if self.refusals:
            raise UserError(
                f"profile '{self.profile.name}' is not refreshed: " + " Also: ".join(self.refusals)
            )

    def discard(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)


def _approved_name(candidate: Candidate) -> str:
    return f"approved-{candidate.id}-{candidate.sha256[:12]}{candidate.path.suffix}"


def take_in(
    profile: Profile, approved: Sequence[Candidate], warnings: list[str]
) -> list[tuple[ApprovedImage, Path]]:
    """The approved candidates' pictures, each with where its bytes are now: the copy in
    the profile's ``approved/`` folder when there is one, else the candidate's picture in
    the state folder, checked against its sha256. Nothing is copied here."""
    folder = profile.folder / APPROVED_DIR
    taken = []
    for candidate in approved:
        name = _approved_name(candidate)
        source = folder / name if (folder / name).is_file() else candidate.path
        try:
            digest = file_sha256(source)
        except OSError as err:
            warnings.append(f"candidate {candidate.id}: its picture cannot be read ({err}).")
            continue
        if digest != candidate.sha256:
            warnings.append(f"candidate {candidate.id}: its picture changed since it was "
                            "proposed; left out.")  # fmt: skip
            continue
        image = ApprovedImage(candidate=candidate.id, file=name, sha256=candidate.sha256,
                              held_aside=held_aside(candidate.sha256))  # fmt: skip
        taken.append((image, source))
    return taken


def copy_in(profile: Profile, images: Iterable[ApprovedImage], sources: dict[str, Path]) -> None:
    """Copy the pictures of ``images`` not yet in ``approved/`` there, each written to a
    temporary sibling and renamed, their bytes checked against the recorded sha256."""
    folder = profile.folder / APPROVED_DIR
    folder.mkdir(exist_ok=True)
    for image in images:
        target = folder / image.file
        if target.is_file():
            continue
        data = sources[image.file].read_bytes()
        if hashlib.sha256(data).hexdigest() != image.sha256:
            raise UserError(
                f"candidate {image.candidate}'s picture {sources[image.file]} changed while the "
                f"refresh was worked out; run `padformer-edge profile refresh "
                f"{profile.name}` again."
            )
        write_atomic(target, data)


def choose(profile: Profile, pool: Sequence[Path], count: int, own: int) -> list[int]:
    """Indices into ``pool`` of ``count`` pictures covering the most viewpoints. A profile
    whose ``own`` references (the first of ``pool``) already fill ``count`` keeps them:
    re-choosing a full profile's references lost to the ones it had on validation."""
    if count >= len(pool):
        return list(range(len(pool)))
    if own == count:
        return list(range(own))
    from padformer_edge.profiles.selection import select_references

    images = [read_image(p) for p in pool]
    return select_references(images, count, profile.detection, profile.load_model)


def far_refusal(scored: dict[int, float], limit: float, force: Iterable[int], name: str
                ) -> tuple[list[int], str | None]:  # fmt: skip
    """The unforced candidates scored far above the threshold, and the sentence refusing
    the refresh for them (None when there are none)."""
    far = {i: s for i, s in scored.items() if s > limit and i not in set(force)}
    if not far:
        return [], None
    listed = ", ".join(f"{i} (score {s:.6g})" for i, s in sorted(far.items()))
    return sorted(far), (
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
    them from the history database); nothing in the profile's folder is written. The
    reasons the refresh may not be installed are in the plan's ``refusals``."""
    profile = load_profile(root, name)
    calibration = profile.calibration
    if calibration is None:
        raise UserError(f"profile '{name}' has no threshold yet; run `padformer-edge profile "
                        f"calibrate {name} --good DIR` first.")  # fmt: skip
    unknown = sorted(set(force) - {c.id for c in approved})
    if unknown:
        raise UserError(f"--force {unknown[0]} names no approved candidate of profile '{name}'; "
                        f"`padformer-edge profile candidates {name}` lists them.")  # fmt: skip
    good_paths = image_files(good, "good") if good is not None else []  # before torch
    warnings: list[str] = []
    refusals: list[str] = []
    taken = take_in(profile, approved, warnings)
    sources = {image.file: source for image, source in taken}
    detector = profile.build_detector(device)
    scored = dict(zip([i.candidate for i, _ in taken],
                      score_files(detector, [s for _, s in taken]).tolist(),
                      strict=True))  # fmt: skip
    del detector
    limit = far_above_limit(calibration)
    left_out, refusal = far_refusal(scored, limit, force, name)
    if refusal is not None:
        refusals.append(refusal)
    reference_shas = {e.sha256 for e in profile.config.references}
    # a picture that is already a reference stays one: it is not aside, whatever its hash
    images = [i.model_copy(update={"held_aside": i.held_aside and i.sha256 not in reference_shas})
              for i, _ in taken if i.candidate not in left_out]  # fmt: skip
    held = [sources[i.file] for i in images if i.held_aside]
    held += [p for p in good_paths if file_sha256(p) not in reference_shas]
    if len(held) < MIN_GOOD_IMAGES:
        refusals.append(
            f"it has {len(held)} good images held aside for calibration; at least "
            f"{MIN_GOOD_IMAGES} are needed: approve more candidates (about one in "
            f"{HELD_ASIDE_EVERY} is held aside) or add held-out good images with --good DIR."
        )
    pool, own = reference_pool(profile, images, sources, reference_shas)
    count = max_references or profile.config.growth.max_references
    chosen = [pool[i] for i in choose(profile, [p for _, p, _ in pool], count, own)]
    staging = Path(tempfile.mkdtemp(prefix="padformer-edge-refresh-"))  # never the profile's
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
        result = threshold_on_held(staged, detector, held, calibration, warnings, refusals)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    before = {e.file for e in profile.config.references}
    after = {e.file for e in entries}
    return RefreshPlan(
        profile, config.model_copy(update={"calibration": result}), staging, scored, limit,
        sorted(set(force)), sorted(after - before), sorted(before - after), held, sources,
        warnings, refusals, left_out,
    )  # fmt: skip


def reference_pool(
    profile: Profile,
    images: Sequence[ApprovedImage],
    sources: dict[str, Path],
    reference_shas: set[str],
) -> tuple[list[tuple[str, Path, str]], int]:
    """``(file, path, sha256)`` of the profile's own references, then of the approved
    pictures not held aside and not already references, and how many of them are its own
    (they come first: ``choose`` keeps them when they already fill the count)."""
    own = [
        (e.file, p, e.sha256)
        for e, p in zip(profile.config.references, profile.reference_paths, strict=True)
    ]
    grown = [(i.file, sources[i.file], i.sha256) for i in images
             if not i.held_aside and i.sha256 not in reference_shas]  # fmt: skip
    return own + grown, len(own)


def threshold_on_held(
    staged: Profile,
    detector: InspectionDetector,
    held: list[Path],
    calibration: CalibrationResult,
    warnings: list[str],
    refusals: list[str],
) -> CalibrationResult | None:
    """The staged profile's threshold measured on the ``held`` aside images by the
    profile's own rule; an upper bound the held images cannot promise is measured as a
    quantile and a refusal added."""
    if not held:
        return None  # nothing held aside: nothing to measure a threshold on
    rule = "upper-bound" if calibration.rule == "upper-bound" else "quantile"
    if rule == "upper-bound" and len(held) < good_images_needed(calibration.target_fpr):
        rule = "quantile"  # too few to promise: refused below, measured all the same
        refusals.append(
            f"the profile's threshold is set for an upper bound (--upper-bound), and "
            f"{len(held)} held-aside images cannot promise a false-alarm rate of "
            f"{calibration.target_fpr:g}: at least "
            f"{good_images_needed(calibration.target_fpr)} are needed; add held-out "
            "good images with --good DIR."
        )
    return measure_calibration(staged, detector, held, [], calibration.target_fpr,
                               list(warnings), rule=rule)  # fmt: skip


def apply_refresh(plan: RefreshPlan, by: str) -> Profile:
    """Install ``plan`` as the profile's new version, recorded in its history under
    ``by``; refused for the plan's own refusals and when the profile changed while the
    plan was worked out."""
    name = plan.profile.name
    try:
        plan.require_applicable()
        assert plan.new_threshold is not None  # measured: enough held aside, no refusal
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
        copy_in(current, plan.config.approved, plan.sources)
        cache = plan.staging / CACHE_FILE
        if cache.is_file():  # keyed by the new references: valid in the profile folder
            write_atomic(current.folder / CACHE_FILE, cache.read_bytes())
        sources = {p.name: p for p in list_images(plan.staging / REFERENCES_DIR)}
        installed = install(current, config, sources)
    finally:
        plan.discard()
    log.info("profile.refreshed", name=name, by=by, version=config.version,
             references=len(config.references), added=plan.added, dropped=plan.dropped,
             threshold=plan.new_threshold, forced=plan.forced)  # fmt: skip
    return installed
