"""A loaded inspection profile: the unit the daemon and the CLI run detection with.

``load_profile(root, name)`` reads and validates ``profile.yaml``; ``build_detector``
checks the checkpoint against the sha256 the profile was made with before anything is
scored, because a threshold is only meaningful for the model it was calibrated on.

Torch, the model and the scoring code are imported inside the methods that run a model
(and never on the onnxruntime or openvino runtime, which a torch-free line install runs):
``profile list``, ``profile delete`` and ``doctor`` load profiles only to read them, and
must answer in a fraction of a second without loading that stack.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from padformer_edge.anomaly import is_anomalous
from padformer_edge.config import load_config
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.devices.runtimes import GRAPH_RUNTIMES
from padformer_edge.errors import UserError
from padformer_edge.files.digest import file_sha256
from padformer_edge.methods.interface import PadformerSource, ReferenceSlot
from padformer_edge.methods.registry import method_for
from padformer_edge.profiles.layout import (
    CACHE_FILE,
    PROFILE_FILE,
    REFERENCES_DIR,
    check_name,
)
from padformer_edge.profiles.schema import CalibrationResult, ExportedFiles, ProfileConfig
from padformer_edge.store.locations import resolve_stored

if TYPE_CHECKING:
    import numpy as np

    from padformer_edge.detect.detection import InspectionDetector
    from padformer_edge.detect.framed import Framing
    from padformer_edge.detect.regions import IgnoredRegions
    from padformer_edge.detect.signature import Signature
    from padformer_edge.methods.interface import ScoringMethod
    from padformer_edge.model.padformer import PADFormer


def line_threads() -> int:
    """onnxruntime's intra-op (or OpenVINO's inference) threads: ``OMP_NUM_THREADS`` when
    set (the one setting that governs torch's pool too), else every core."""
    try:
        return max(1, int(os.environ.get("OMP_NUM_THREADS", "")))
    except ValueError:
        return os.cpu_count() or 1


@dataclass(frozen=True)
class KnownReferences:
    """A profile's references as its maker has just copied, hashed and decoded them, in
    the profile's order: handed to ``Profile.build_detector`` so they are not read again."""

    images: list[np.ndarray]
    sha256s: tuple[str, ...]


@dataclass
class Profile:
    """One product's model, references, detection settings and threshold."""

    folder: Path
    config: ProfileConfig

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def model_path(self) -> Path:
        """The checkpoint; recorded relative to the state folder when it lies inside it.
        Asked only where a checkpoint is read: a profile pinned to weights of its method's
        own names none, and says how to give it one."""
        if self.config.model is None:
            raise UserError(
                f"profile '{self.name}' scores with {self.weights_label} and names no "
                f"checkpoint; give it one with `padformer-edge profile set-model {self.name} "
                "--model FILE`."
            )
        return resolve_stored(self.config.model.path)

    @property
    def model_sha256(self) -> str:
        """The sha256 of the weights the profile is pinned to (``weights_sha256``): what
        its calibration, its export and each inspection record."""
        return self.config.weights_sha256

    @property
    def weights_label(self) -> str:
        """What the profile scores with, for people: the checkpoint's path, or the name of
        its method's own weights (``compare``'s comparator)."""
        if self.config.weights is not None:
            return self.config.weights.name
        return str(self.model_path)

    @property
    def detection(self) -> DetectionSettings:
        return self.config.detection

    @property
    def calibration(self) -> CalibrationResult | None:
        return self.config.calibration

    @property
    def threshold(self) -> float | None:
        """The anomaly threshold on raw scores; None until ``profile calibrate`` ran."""
        return None if self.calibration is None else self.calibration.threshold

    @property
    def reference_paths(self) -> list[Path]:
        return [self.folder / REFERENCES_DIR / entry.file for entry in self.config.references]

    @property
    def cache_path(self) -> Path:
        return self.folder / CACHE_FILE

    def verify_model(self) -> None:
        """Refuse to run when the checkpoint is gone or is not the file the profile pinned."""
        path = self.model_path
        fix = (
            f"restore the original file, or run `padformer-edge profile set-model {self.name} "
            f"--model FILE` and then `profile calibrate {self.name}` to adopt a new model"
        )
        if not path.is_file():
            raise UserError(f"profile '{self.name}': checkpoint {path} does not exist; {fix}.")
        actual = file_sha256(path)
        if actual != self.model_sha256:
            raise UserError(
                f"profile '{self.name}': checkpoint {path} changed since the profile was made "
                f"(sha256 {actual[:12]}..., profile expects {self.model_sha256[:12]}...); {fix}."
            )

    def verify_references(self) -> list[str]:
        """The sha256 of every reference file, each checked against the one profile.yaml
        recorded when the file was copied in; a missing or changed file is refused.

        A reference overwritten with another picture would otherwise be scored against
        by every runtime without a word, and the threshold was calibrated on the old one.
        """
        remake = (
            f"`padformer-edge profile delete {self.name} --yes` then `padformer-edge "
            f"profile create {self.name} --references DIR`"
        )
        shas = []
        for entry, path in zip(self.config.references, self.reference_paths, strict=True):
            if not path.is_file():
                raise UserError(
                    f"profile '{self.name}': reference {path} is missing; put it back, or "
                    f"re-create the profile with {remake}."
                )
            actual = file_sha256(path)
            if actual != entry.sha256:
                raise UserError(
                    f"profile '{self.name}': reference {path} differs from the sha256 "
                    f"profile.yaml records ({entry.sha256[:12]}..., the file has "
                    f"{actual[:12]}...); put the original file back, or make the profile "
                    f"again from the new pictures with {remake}."
                )
            shas.append(actual)
        return shas

    def reference_slot(self) -> ReferenceSlot:
        """The profile's reference cache file and what names it, the references checked
        unchanged first: each method keys its file by what it reads."""
        references = tuple(self.verify_references())
        return ReferenceSlot(self.cache_path, self.model_sha256, references)

    def reference_key(self) -> str:
        """The cache key for the model and the reference files, checked unchanged."""
        from padformer_edge.deploy.cache_files import cache_key

        return cache_key(self.model_sha256, self.verify_references(), self.detection.precision)

    @property
    def method(self) -> ScoringMethod:
        """The scoring method of this profile's metric (``methods.registry``)."""
        return method_for(self.detection.metric)

    def load_model(self) -> PADFormer:
        """The profile's PADFormer, after checking its checkpoint's sha256: what a method
        that scores with it loads (``ScoringMethod``'s ``padformer`` source)."""
        from padformer_edge.model.checkpoint import load_checkpoint

        self.verify_model()
        model, _ = load_checkpoint(self.model_path)
        return model

    def build_detector(
        self,
        device: str | None = None,
        runtime: str | None = None,
        *,
        calibrating: bool = False,
        known: KnownReferences | None = None,
        padformer: PadformerSource | None = None,
    ) -> InspectionDetector:
        """A detector with this profile's settings and references, by its method.

        ``device`` overrides the profile's own device setting (``auto``, ``cpu``,
        ``cuda``), ``runtime`` its runtime (the daemon's ``worker.runtime``). The files the
        method reads are verified first (a PADFormer method's checkpoint, every method's
        references), and unless ``calibrating``, that the threshold was set on scores
        computed the way this detector computes them. ``known`` and ``padformer`` hand in
        what the caller has already read and checked (``profile create`` has just decoded
        and hashed the references and loaded the checkpoint), so nothing is read twice.
        A profile with a belt photo scores each frame's part crop (``detect.framed``); one
        with ``ignore_regions`` leaves them out of map and score (``detect.regions``).
        """
        if runtime is not None and runtime != self.detection.runtime:
            profile = self.on_runtime(runtime)
            return profile.build_detector(device, calibrating=calibrating, known=known)
        settings = self.detection if device is None else self.detection.replace(device=device)
        framing = self.framing()
        if settings.runtime in GRAPH_RUNTIMES:
            detector = self.build_line_detector(settings, known, framing)
        else:
            slot, references = self.scored_references(known, framing)
            source = self.load_model if padformer is None else padformer
            detector = self.method.torch_detector(references, settings, source, cache=slot)
        if framing is not None:
            from padformer_edge.detect.framed import FramedDetector

            detector = FramedDetector(detector, framing)
        if (ignored := self.ignored_regions()) is not None:
            from padformer_edge.detect.regions import RegionsDetector

            detector = RegionsDetector(detector, ignored)
        if not calibrating:
            self.check_scoring(detector.scoring)
        return detector

    def checked_references(
        self, known: KnownReferences | None = None
    ) -> tuple[ReferenceSlot, list[np.ndarray]]:
        """The reference cache slot and the decoded references, each file checked against
        its recorded sha256 first; ``known``: what the caller already hashed and decoded."""
        if known is None:
            from padformer_edge.detect.images import read_image

            slot = self.reference_slot()
            return slot, [read_image(path) for path in self.reference_paths]
        recorded = tuple(entry.sha256 for entry in self.config.references)
        assert known.sha256s == recorded, "the references handed in are the profile's own"
        return ReferenceSlot(self.cache_path, self.model_sha256, recorded), known.images

    def framing(self) -> Framing | None:
        """How this profile's frames are located and cropped; None without a belt photo
        (frames are then scored whole, as before ``profile create --background``)."""
        if self.config.background is None:
            return None
        from padformer_edge.profiles.framing import load_framing

        return load_framing(self.folder, self.config.background, self.name)

    def ignored_regions(self) -> IgnoredRegions | None:
        """The profile's regions to ignore (``detect.regions``); None without any."""
        if not self.config.ignore_regions:
            return None
        from padformer_edge.detect.regions import IgnoredRegions

        regions = self.config.ignore_regions
        return IgnoredRegions.of([r.name for r in regions], [r.points for r in regions])

    def scored_references(
        self, known: KnownReferences | None, framing: Framing | None
    ) -> tuple[ReferenceSlot, list[np.ndarray]]:
        """``checked_references``, cut to the part's crop when the profile has a belt photo
        (the references are frames of the same camera, read the way queries are)."""
        slot, references = self.checked_references(known)
        if framing is None:
            return slot, references
        from padformer_edge.detect.framed import framed_references
        from padformer_edge.profiles.framing import framed_slot

        names = [str(path) for path in self.reference_paths]
        return framed_slot(slot, framing), framed_references(references, framing, names)

    def on_runtime(self, runtime: str) -> Profile:
        """This profile (in memory, the file unchanged) set to run on ``runtime``: what a
        daemon's ``worker.runtime`` asks for, checked and refused like the profile's own."""
        detection = self.detection.replace(runtime=runtime)
        return Profile(self.folder, self.config.model_copy(update={"detection": detection}))

    def build_line_detector(
        self,
        settings: DetectionSettings,
        known: KnownReferences | None = None,
        framing: Framing | None = None,
    ) -> InspectionDetector:
        """The torch-free detector on the profile's exported graphs, each verified against
        the sha256 profile.yaml records (the checkpoint itself is not read: the graphs
        carry the weights, and the export names the checkpoint sha256 it was made from)."""
        exported = self.exported_files()
        slot, references = self.scored_references(known, framing)
        return self.method.line_detector(
            self.folder / exported.folder,
            exported.files,
            references,
            settings,
            fix=self.export_fix,
            cache=slot,
            threads=line_threads(),
        )

    @property
    def export_fix(self) -> str:
        runtime = self.detection.runtime
        wanted = " --runtime openvino" if runtime == "openvino" else ""
        return f"run `padformer-edge profile export {self.name}{wanted}` where torch is installed"

    def exported_files(self) -> ExportedFiles:
        """The export record, or the sentence saying there is none for this checkpoint."""
        exported = self.config.exported
        if exported is None:
            raise UserError(
                f"profile '{self.name}' runs on {self.detection.runtime} but holds no exported "
                "graphs; "
                f"{self.export_fix}."
            )
        if exported.model_sha256 != self.model_sha256:
            raise UserError(
                f"profile '{self.name}': its exported graphs were made from another checkpoint "
                f"than the one it names; {self.export_fix}."
            )
        return exported

    def verify_runnable(self) -> str:
        """Check the files this profile's runtime reads (the checkpoint on torch, the
        exported graphs on onnxruntime or openvino, the references on every runtime)
        and say what was checked, for ``doctor``."""
        if self.detection.runtime not in GRAPH_RUNTIMES:
            checks = []
            if self.method.reads_padformer:
                self.verify_model()
                checks.append(f"model {self.model_path} matches")
            checks.append(self.method.weights_checked(self.detection))
            checked = ", ".join(check for check in checks if check)
        else:
            from padformer_edge.deploy.verify import verify_files

            exported = self.exported_files()
            verify_files(self.folder / exported.folder, exported.files, self.export_fix)
            folder = self.folder / exported.folder
            checked = f"{len(exported.files)} exported files in {folder} match"
        count = len(self.verify_references())
        if self.config.background is not None:  # its sha256 checked, its belt model fitted
            self.framing()
            checked += f", belt photo {self.config.background.file} matches"
        return f"{checked}, {count} reference(s) match"

    def check_scoring(self, scoring: Signature) -> None:
        """Refuse a threshold calibrated under another scoring than ``scoring``.

        The same checkpoint can score differently after an upgrade (the fused metric's
        validated readouts, for one) or with other scoring settings, and a threshold on the
        old scores would raise or drop alarms silently. The recorded signature is compared
        as a value (``detect.signature.same_scoring``, which also reads the text of earlier
        versions); files calibrated before the scoring was recorded pass only for a metric
        whose scores never changed (the paper's readouts)."""
        from padformer_edge.detect.signature import (
            paper_signature,
            same_scoring,
            signature_text,
        )

        if self.calibration is None:
            return
        recorded = self.calibration.scoring
        if not same_scoring(recorded, scoring):
            if recorded is None:
                recorded = paper_signature(scoring["metric"])
            before = recorded if isinstance(recorded, str) else signature_text(recorded)
            raise UserError(
                f"profile '{self.name}' was calibrated on scores computed another way "
                f"({before}) than this version computes them ({signature_text(scoring)}); "
                f"run `padformer-edge profile calibrate {self.name} --good DIR` again."
            )

    def require_threshold(self) -> float:
        """The threshold, or a UserError telling the operator to calibrate first."""
        if self.threshold is None:
            raise UserError(
                f"profile '{self.name}' has no threshold yet; run `padformer-edge profile "
                f"calibrate {self.name} --good DIR` with held-out good images."
            )
        return self.threshold

    def is_anomaly(self, score: float) -> bool:
        """True when ``score`` is above the calibrated threshold (equal counts as good)."""
        return is_anomalous(score, self.require_threshold())

    def normalised_score(self, score: float) -> float:
        """``score`` mapped so the threshold becomes 0.5, clipped to [0, 1].

        The same min-max rule anomalib users know: shift by the threshold, divide by the
        range of the calibration scores, add 0.5. Above 0.5 means anomalous.
        """
        threshold = self.require_threshold()
        assert self.calibration is not None
        span = max(self.calibration.normalise_max - self.calibration.normalise_min, 1e-12)
        return float(min(1.0, max(0.0, 0.5 + (score - threshold) / span)))


def existing_profile_folder(root: str | Path, name: str, fix: str) -> Path:
    """The folder of profile ``name`` under ``root``, which must hold a profile.yaml (valid
    or not); otherwise one sentence naming the known profiles and ``fix``."""
    folder = Path(root) / check_name(name)
    if not (folder / PROFILE_FILE).is_file():
        known = ", ".join(list_profile_names(root)) or "none"
        raise UserError(f"profile '{name}' does not exist under {root} (known: {known}); {fix}.")
    return folder


def load_profile(root: str | Path, name: str) -> Profile:
    """The profile called ``name`` under ``root``; a missing or invalid one is a UserError."""
    folder = existing_profile_folder(root, name, "create it with `padformer-edge profile create`")
    config = load_config(folder / PROFILE_FILE, ProfileConfig)
    if config.name != name:
        raise UserError(
            f"{folder / PROFILE_FILE} names profile '{config.name}' but lives in folder "
            f"'{name}'; rename the folder or fix the name key."
        )
    if config.calibration is not None and config.calibration.model_sha256 != config.weights_sha256:
        raise UserError(
            f"{folder / PROFILE_FILE}: the calibration was made with another model than the one "
            f"the profile names; run `padformer-edge profile calibrate {name} --good DIR`."
        )
    return Profile(folder, config)


def list_profile_names(root: str | Path) -> list[str]:
    """Names of the folders under ``root`` that hold a ``profile.yaml``, sorted."""
    root = Path(root)
    if not root.is_dir():
        return []
    names = [p.name for p in root.iterdir() if (p / PROFILE_FILE).is_file()]
    return sorted(n for n in names if not n.startswith("."))  # dot folders are staging
