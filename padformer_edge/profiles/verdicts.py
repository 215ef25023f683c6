"""``profile test``: inspect image files with a profile exactly as the daemon does, and
write each image's heatmap, so an operator can check a profile before it goes live.

Without a folder named, the heatmaps go under the state folder, never the current one:
a command run from a checkout or a home folder must not leave files there (issue 51)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from padformer_edge.detect.heatmap import write_heatmap
from padformer_edge.detect.images import read_image
from padformer_edge.detect.service import heatmap_names
from padformer_edge.errors import UserError
from padformer_edge.profiles.profile import load_profile
from padformer_edge.store.locations import state_dir

TEST_HEATMAPS_DIR = "profile-test"  # <state dir>/profile-test/<profile>/: apart from the daemon's


def default_heatmap_folder(name: str) -> Path:
    """Where ``profile test NAME`` writes heatmaps when not told: one folder per profile
    under the state folder, next to (not inside) the daemon's ``heatmaps/``."""
    return state_dir() / TEST_HEATMAPS_DIR / name


@dataclass(frozen=True)
class Verdict:
    """One inspected image: raw and normalised score, decision and heatmap file; for a
    framed profile (``profile create --background``) whether the frame showed no part
    (then no score: None) and whether the part was cut by the frame's edge."""

    path: Path
    score: float | None
    normalised: float | None
    anomalous: bool
    heatmap: Path
    no_part: bool = False
    part_cut: bool = False

    @property
    def word(self) -> str:
        """The verdict as the table shows it: ANOMALY, good or no part (cut, if so)."""
        word = "no part" if self.no_part else "ANOMALY" if self.anomalous else "good"
        return word + (" (cut)" if self.part_cut else "")

    def shown(self) -> tuple[str, str]:
        """The score and the normalised score as the table shows them ('-': none)."""
        if self.score is None or self.normalised is None:
            return "-", "-"
        return f"{self.score:.6g}", f"{self.normalised:.3f}"


def inspect_images(
    root: str | Path,
    name: str,
    images: Sequence[str | Path],
    out_dir: str | Path,
    device: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[Verdict]:
    """Score ``images`` with profile ``name``; heatmaps go to ``out_dir``; ``progress``
    hears (done, total) after each image."""
    if not images:
        raise UserError("no images were given; name at least one image file to test.")
    profile = load_profile(root, name)
    threshold = profile.require_threshold()  # before the model loads: verdicts need it
    paths = [Path(p) for p in images]
    decoded = [read_image(p) for p in paths]  # every file checked before the model loads
    detector = profile.build_detector(device)
    named = zip(paths, heatmap_names(paths), decoded, strict=True)
    verdicts = []
    for (path, name, _), image, found in detector.detect_each(named, lambda item: item[2]):
        heatmap = write_heatmap(
            Path(out_dir) / f"{name}.png",
            image,
            found.anomaly_map,
            found.score,
            threshold=threshold,  # the same colour scale as the daemon's heatmaps
            ignored=found.ignored_regions,
        )
        scored = not found.no_part
        verdicts.append(
            Verdict(
                path,
                found.score if scored else None,
                profile.normalised_score(found.score) if scored else None,
                scored and profile.is_anomaly(found.score),
                heatmap,
                found.no_part,
                found.part_cut,
            )
        )
        if progress is not None:
            progress(len(verdicts), len(paths))
    return verdicts
