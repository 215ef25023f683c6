"""The scoring signature: a structured value that changes whenever the scores of the same
images would, recorded with a profile's threshold and compared before it is used.

A threshold only holds for the scores it was calibrated on. The signature names the metric,
each job's mix and readout as the metric actually computes them (and, for the ``compare``
metric, the sha256 of the comparator's weights) (a zoom or turns that a
zero reference weight makes irrelevant are left at 1 and false), and whether the feature
error counts hidden patches only. It is plain JSON (nested dicts), compared as a value.

Profiles calibrated by earlier versions recorded a one-line text instead
(``signature_text`` writes that text from a signature, so such a profile still passes exactly
when the scores it was calibrated on are computed the same way); profiles older still
recorded nothing and pass only for the paper's readouts (``paper_signature``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from padformer_edge.detect.readout_constants import PAPER_READOUT_SETTINGS

if TYPE_CHECKING:  # the metrics need torch; comparing and naming signatures must not
    from padformer_edge.detect.readout import Readout

Signature = dict[str, Any]
TURNS_TEXT = "with quarter turns"  # how the old text named a reference distance with turns
HIDDEN_ONLY_TEXT = "feature error on hidden patches only"  # ModelConfig.score_masked_cells


def _readout(readout: Readout) -> dict[str, Any]:
    return {"consistency_filter": readout.consistency_filter, "sigma": float(readout.sigma)}


def readout_jobs(map_readout: Readout, score_readout: Readout) -> dict[str, Any]:
    """The two jobs' readouts as a signature holds them: every method's signature has
    them (``methods.compare.scorer.compare_signature`` adds its comparator's sha256)."""
    return {"map": _readout(map_readout), "score": _readout(score_readout)}


def paper_signature(name: str) -> Signature:
    """The signature of metric ``name`` read the paper's way, with no fused settings: what
    a profile that recorded no signature was calibrated on."""
    paper = dict(PAPER_READOUT_SETTINGS)
    return {"metric": name, "map": paper, "score": dict(paper), "hidden_patches_only": False}


def same_scoring(recorded: Signature | str | None, current: Signature) -> bool:
    """Whether a threshold recorded under ``recorded`` (a signature, an earlier version's
    text, or None for a profile that recorded nothing) holds for ``current`` scores."""
    if recorded is None:
        recorded = paper_signature(current["metric"])
    if isinstance(recorded, str):
        return recorded == signature_text(current)
    return recorded == current


def signature_text(signature: Signature) -> str:
    """The signature as one line of text, 'fused; map: LAB weight 0.25, reference weight 12
    at zoom 2 with quarter turns, mean, sigma 2; score: ...': what earlier versions
    recorded in profiles, and what tables show a reader. Written only, never parsed back."""
    text = (
        f"{signature['metric']}; map: {_job_text(signature['map'])}; "
        f"score: {_job_text(signature['score'])}"
    )
    if "comparator" in signature:
        text += f"; comparator {signature['comparator'][:12]}"
    if "framing" in signature:  # detect.framed: the part found against a belt photo
        framing = signature["framing"]
        text += f"; part cropped against belt {framing['background'][:12]}"
        text += f" with margin {framing['margin']:g}"
        if "light" in framing:  # earlier framed profiles did not match the light
            text += f", light matched by {framing['light']}"
        if "surround" in framing:
            text += f", {framing['surround']}"
    if signature.get("ignore_regions"):  # detect.regions: parts of the frame left out
        text += "; ignoring " + ", ".join(r["name"] for r in signature["ignore_regions"])
    return text + (f"; {HIDDEN_ONLY_TEXT}" if signature["hidden_patches_only"] else "")


def _job_text(job: dict[str, Any]) -> str:
    readout = f"{'filtered' if job['consistency_filter'] else 'mean'}, sigma {job['sigma']:g}"
    if "reference_weight" not in job:
        return readout
    reference = setting_text(job, reference_only=True)
    if "lab_weight" not in job:
        return f"{reference}, {readout}"
    mix = f"LAB weight {job['lab_weight']:g}"
    if job["reference_weight"] > 0:
        mix += f", {reference}"
    return f"{mix}, {readout}"


def setting_text(job: dict[str, Any], reference_only: bool = False) -> str:
    """A person's name for one job's settings ('reference weight 12 at zoom 2 with quarter
    turns'; with the LAB weight and readout unless ``reference_only``): table rows and
    messages show it; files keep the structured values."""
    reference = f"reference weight {job['reference_weight']:g}"
    if job["reference_weight"] > 0:
        reference += f" at zoom {job['reference_zoom']}" if job["reference_zoom"] > 1 else ""
        reference += f" {TURNS_TEXT}" if job["reference_turns"] else ""
    if reference_only:
        return reference
    readout = f"{'filtered' if job['consistency_filter'] else 'mean'}, sigma {job['sigma']:g}"
    return f"LAB weight {job['lab_weight']:g}, {reference}, {readout}"
