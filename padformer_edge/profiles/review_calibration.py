"""``profile calibrate NAME --from-reviews``: a threshold from the scores operators
reviewed, previewed before anything is written and applied only under a person's name.

Everything here is arithmetic on scores already in the history database, so nothing
imports torch: the line PC that holds the reviews (a torch-free ``.[line]`` install) can
recalibrate. The plan (``plan_from_reviews``) reads and writes nothing on disk; the
engineer sees the old and new threshold, the reviews used and every stored inspection
whose verdict would flip, and ``apply_plan`` writes the new calibration together with
a ``history`` entry in ``profile.yaml`` saying who, when and from which reviews.

A threshold raised from reviews also clears parts nobody reviewed, and any of them may
be a real defect (issue 51: a preview passed 5 unreviewed defects among 13 parts, mixed
with the false alarms). Those the current threshold flags are listed apart, and the
change is applied only once they are reviewed or the engineer accepts them by their
count (``--accept-unreviewed N``), so none passes without someone having said so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from sqlalchemy import Engine

from padformer_edge.anomaly import is_anomalous
from padformer_edge.errors import UserError
from padformer_edge.profiles.profile import Profile, load_profile
from padformer_edge.profiles.schema import CalibrationResult, ProfileChange, ReviewsUsed
from padformer_edge.profiles.thresholds import anomaly_check, summarise
from padformer_edge.profiles.versions import save_profile, version_for
from padformer_edge.reporting.log import get_logger
from padformer_edge.store.models import ReviewVerdict
from padformer_edge.store.reviews import MAX_REVIEWER_CHARS, ReviewedInspection
from padformer_edge.store.verdict_changes import VerdictChange, unreviewed_cleared

MIN_REVIEWS_EACH = 5
"""Reviews of each verdict below which ``--from-reviews`` refuses: with fewer, one odd
part decides where the threshold goes."""


@dataclass(frozen=True)
class ReviewThreshold:
    """The threshold chosen from reviewed scores and the false-alarm score it sits above
    (``None`` when no false alarm scored below the lowest true defect)."""

    value: float
    highest_alarm_below: float | None
    lowest_defect: float


def review_threshold(defects: np.ndarray, alarms: np.ndarray) -> ReviewThreshold:
    """The threshold that keeps every reviewed true defect flagged and, among those,
    flags the fewest reviewed false alarms, with the widest margin on both sides.

    Every defect stays flagged (``score > threshold``) only below the lowest defect
    score; every false alarm at or above that score stays flagged whatever is chosen, and
    every one below it is cleared by any threshold above the highest of them. Midway
    between the two keeps as far from both as the reviews allow. When no false alarm
    scored below the lowest defect, the threshold sits just below that defect (the rule
    ``f1_optimal_threshold`` uses below its lowest score).
    """
    lowest = float(defects.min())
    below = alarms[alarms < lowest]
    if below.size:
        highest = float(below.max())
        return ReviewThreshold((highest + lowest) / 2, highest, lowest)
    return ReviewThreshold(lowest - max(1e-12, 1e-6 * abs(lowest)), None, lowest)


def change_order(change: VerdictChange) -> tuple[int, float]:
    """Sort key of the preview: what an engineer must not miss comes first.

    Reviewed true defects that would pass, then reviewed false alarms that would pass,
    then unreviewed parts that would pass, then parts that would newly be flagged; in
    each group the highest score first, because among parts that would newly pass the
    one scored highest is the one most like the defects (a real defect reviewed as a
    false alarm by mistake sits there)."""
    if change.newly_passing:
        rank = {ReviewVerdict.true_defect: 0, ReviewVerdict.false_alarm: 1, None: 2}
        group = rank[change.review]
    else:
        group = 3
    return group, -change.score


@dataclass(frozen=True)
class ReviewPlan:
    """A recalibration worked out and not yet written."""

    profile: Profile
    source: str
    result: CalibrationResult
    used: list[ReviewedInspection]
    other_model: int
    changes: list[VerdictChange] = field(default_factory=list)
    unreviewed: list[VerdictChange] = field(default_factory=list)
    """Unreviewed parts the current threshold flags and the new one would pass, highest
    score first: each may be a defect, so they are shown apart and must be accepted."""

    @property
    def old_threshold(self) -> float | None:
        return self.profile.threshold

    @property
    def defects_passing(self) -> list[VerdictChange]:
        """Reviewed true defects the new threshold would pass (none under the rule of
        ``review_threshold``; listed first if ever there are)."""
        return [
            c for c in self.changes if c.newly_passing and c.review is ReviewVerdict.true_defect
        ]

    def ids(self, verdict: ReviewVerdict) -> list[int]:
        return [r.inspection_id for r in self.used if r.verdict is verdict]

    @property
    def other_changes(self) -> list[VerdictChange]:
        """The verdict changes not among ``unreviewed`` (those are listed on their own)."""
        apart = {c.inspection_id for c in self.unreviewed}
        return [c for c in self.changes if c.inspection_id not in apart]


def _refuse_short(name: str, source: str, defects: int, alarms: int, other: int) -> None:
    counts = {"true defects": defects, "false alarms": alarms}
    short = [f"{n} {kind}" for kind, n in counts.items() if n < MIN_REVIEWS_EACH]
    if short:
        more = (
            f" ({other} more were scored by another model and do not count)" if other else ""
        )
        raise UserError(
            f"profile '{name}' has only {' and '.join(short)} reviewed in {source}{more}; "
            f"review at least {MIN_REVIEWS_EACH} of each (results review ID --true-defect "
            "or --false-alarm) before calibrating from reviews."
        )


def plan_from_reviews(root: str | Path, name: str, engine: Engine, source: str) -> ReviewPlan:
    """The recalibration of ``name`` from its reviewed inspections in the history behind
    ``engine`` (``source`` names it), by ``review_threshold``, with every stored verdict
    it would change; nothing is written. Only reviews of scores the profile's current
    model computed count; fewer than ``MIN_REVIEWS_EACH`` of either verdict is refused."""
    from padformer_edge.store.reviews import reviewed_inspections
    from padformer_edge.store.verdict_changes import verdict_changes

    profile = load_profile(root, name)
    previous = profile.config.calibration
    if previous is None:
        raise UserError(
            f"profile '{name}' has no calibration to adjust; run `padformer-edge profile "
            f"calibrate {name} --good DIR` with held-out good images first."
        )
    found = reviewed_inspections(engine, name)
    used = [r for r in found if r.model_sha256 == profile.model_sha256]
    other = len(found) - len(used)
    defects = np.asarray([r.score for r in used if r.verdict is ReviewVerdict.true_defect])
    alarms = np.asarray([r.score for r in used if r.verdict is ReviewVerdict.false_alarm])
    _refuse_short(name, source, defects.size, alarms.size, other)
    chosen = review_threshold(defects, alarms)
    flagged = int(is_anomalous(alarms, chosen.value).sum())
    warnings = [
        f"set from {defects.size} reviewed true defects and {alarms.size} reviewed false "
        f"alarms in {source}, not from held-out good images: the reviewed parts are mostly "
        "the ones the old threshold flagged, so the false-alarm rate on all good parts is "
        "not measured."
    ]
    if flagged:
        warnings.append(
            f"{flagged} of {alarms.size} reviewed false alarms score at or above the lowest "
            f"reviewed true defect ({chosen.lowest_defect:.6g}) and stay flagged."
        )
    if other:
        warnings.append(f"{other} reviews were left out: another model scored them.")
    everything = np.concatenate([defects, alarms])
    # keep the good-image range the normalised score was set on
    low = min(float(everything.min()), previous.normalise_min)
    high = max(float(everything.max()), previous.normalise_max)
    anchor = chosen.highest_alarm_below
    result = CalibrationResult(
        threshold=chosen.value,
        target_fpr=previous.target_fpr,
        good_quantile=anchor if anchor is not None else chosen.value,
        margin=chosen.value - anchor if anchor is not None else 0.0,
        observed_fpr=flagged / alarms.size,
        good=summarise(alarms),
        anomalous=anomaly_check(alarms, defects, chosen.value),
        normalise_min=low,
        normalise_max=high,
        model_sha256=profile.model_sha256,
        calibrated_at=now_iso(),
        warnings=warnings,
        good_scores=previous.good_scores,  # the drift reference: same model, same scoring
        # Reviews hold scores, not a fair sample of good images (the false alarms are the
        # unusual ones), so the images' drift reference stays the one the good set gave.
        good_image_stats=previous.good_image_stats,
        # The daemon scored these rows under the scoring the profile was calibrated with
        # (it refuses any other), so that scoring still holds.
        scoring=previous.scoring,
        rule="reviews",
    )
    changes = verdict_changes(engine, name, profile.model_sha256, chosen.value)
    unreviewed = []
    if profile.threshold is not None:  # a calibrated profile: always, checked above
        unreviewed = unreviewed_cleared(
            engine, name, profile.model_sha256, profile.threshold, chosen.value
        )
    ordered = sorted(changes, key=change_order)
    return ReviewPlan(profile, source, result, used, other, ordered, unreviewed)


def check_accepted(plan: ReviewPlan, accepted: int | None) -> None:
    """Refuse to apply ``plan`` while it would pass unreviewed parts the current threshold
    flags, unless ``accepted`` names exactly how many (a count, not a yes: a count seen in
    an older preview no longer matches once more such parts arrive)."""
    count = len(plan.unreviewed)
    name = plan.profile.name
    if count == 0:
        if accepted not in (None, 0):
            raise UserError(
                f"--accept-unreviewed {accepted} does not match: this recalibration of "
                f"profile '{name}' passes no unreviewed part the current threshold flags; "
                "drop --accept-unreviewed."
            )
        return
    if accepted == count:
        return
    ids = ", ".join(str(c.inspection_id) for c in plan.unreviewed[:10])
    more = f" and {count - 10} more" if count > 10 else ""
    told = "" if accepted is None else f" (--accept-unreviewed {accepted} does not match)"
    raise UserError(
        f"this recalibration of profile '{name}' would pass {count} unreviewed parts the "
        f"current threshold flags (inspections {ids}{more}), and any may be a defect"
        f"{told}; review them (padformer-edge results review ID --true-defect or "
        f"--false-alarm) and preview again, or pass them unreviewed with "
        f"--accept-unreviewed {count}."
    )


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def engineer_name(given: str) -> str:
    """The name recorded as having applied the change: free text until the page has
    named users, but never empty and never longer than a reviewer's name."""
    name = given.strip()
    if not name:
        raise UserError("--yes needs the name of the engineer applying the change; --yes NAME.")
    if len(name) > MAX_REVIEWER_CHARS:
        raise UserError(
            f"the name given to --yes has {len(name)} characters; keep it to "
            f"{MAX_REVIEWER_CHARS}."
        )
    return name


def apply_plan(
    root: str | Path, plan: ReviewPlan, engineer: str, accepted_unreviewed: int | None = None
) -> Profile:
    """Write ``plan``'s calibration and a history entry naming ``engineer``.

    Refused when the profile file changed since the plan was made (another calibration
    or a new model): the preview would no longer describe what is written; and while
    it would pass unreviewed flagged parts not accepted by their count (``check_accepted``).
    """
    by = engineer_name(engineer)
    check_accepted(plan, accepted_unreviewed)
    name = plan.profile.name
    current = load_profile(root, name)
    if current.config != plan.profile.config:
        raise UserError(
            f"profile '{name}' changed while the recalibration was being worked out; run "
            f"`padformer-edge profile calibrate {name} --from-reviews` again."
        )
    config = current.config.model_copy(update={"calibration": plan.result})
    version = version_for(current, config)
    entry = ProfileChange(
        action="calibrate-from-reviews",
        by=by,
        at=now_iso(),
        old_threshold=plan.old_threshold,
        new_threshold=plan.result.threshold,
        reviews=ReviewsUsed(
            database=plan.source,
            true_defects=plan.ids(ReviewVerdict.true_defect),
            false_alarms=plan.ids(ReviewVerdict.false_alarm),
        ),
        newly_passing=sorted(c.inspection_id for c in plan.changes if c.newly_passing),
        newly_flagged=sorted(c.inspection_id for c in plan.changes if not c.newly_passing),
        accepted_unreviewed=sorted(c.inspection_id for c in plan.unreviewed),
        version=version,
        from_version=current.config.version,
    )
    config = config.model_copy(
        update={"version": version, "history": [*current.config.history, entry]}
    )
    save_profile(current, config)
    get_logger("profiles").info(
        "profile.calibrated_from_reviews", name=name, by=by, threshold=plan.result.threshold,
        old_threshold=plan.old_threshold,
        true_defects=len(plan.ids(ReviewVerdict.true_defect)),
        false_alarms=len(plan.ids(ReviewVerdict.false_alarm)),
        newly_passing=len(entry.newly_passing),
        accepted_unreviewed=len(entry.accepted_unreviewed),
    )  # fmt: skip
    return load_profile(root, name)
