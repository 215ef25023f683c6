"""How big each step of the demo is: the full run (minutes) and ``--quick`` (for tests).

With the shipped generic model (the default) there is no training step: ``train_views``
are only the candidates ``profile create`` picks its references from, so the generic plans
render fewer of them. ``demo --train`` uses ``FULL`` / ``QUICK`` and trains first.

The full run is sized from the measured training speed of the small preset on this
project's 2-core build machine (docs/benchmarks.md, ``benchmarks/train_speed.py``: about 4.9
samples/s within-view and 2.5 cross-view on one thread): 80 views x (2 + 12) epochs is
about 7 minutes of training, and rendering, calibration and inspection add one or two,
so the whole demo takes about 10 minutes there and less on a free machine. The budget
goes to more distinct views rather than more epochs over few: the camera shows the
part from viewpoints the model never saw, so breadth of views is what it needs first.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from padformer_edge.detect.settings import PRODUCT_METRIC


@dataclass(frozen=True)
class DemoPlan:
    mesh: str
    size: int
    preset: str
    train_views: int
    test_per_defect: int
    calibration_views: int
    camera_good_views: int
    within_view_epochs: int
    cross_view_epochs: int
    num_refs: int
    batch_size: int
    shots: int
    passes: int
    target_fpr: float
    perceptual: str
    metric: str = "auto"  # the profile's detection metric (``--metric``)
    frame: str | None = None  # the camera's frame, WIDTHxHEIGHT; None: the part fills the image

    @property
    def test_good_views(self) -> int:
        # One render of held-out good views, split: calibration first, the camera after.
        return self.calibration_views + self.camera_good_views


FULL = DemoPlan(
    mesh="builtin:duck",
    size=128,
    preset="small",
    train_views=80,
    test_per_defect=3,
    calibration_views=12,
    camera_good_views=6,
    within_view_epochs=2,
    cross_view_epochs=12,
    num_refs=4,
    batch_size=8,
    shots=4,
    passes=15,
    target_fpr=0.1,
    perceptual="efficientnet-lite0",
)
# The tiny preset with random-quality weights: every step runs for real, in seconds.
QUICK = DemoPlan(
    mesh="builtin:duck",
    size=64,
    preset="tiny",
    train_views=6,
    test_per_defect=1,
    calibration_views=10,
    camera_good_views=1,
    within_view_epochs=1,
    cross_view_epochs=1,
    num_refs=2,
    batch_size=2,
    shots=2,
    passes=2,
    target_fpr=0.1,
    perceptual="none",
)

# The shipped model inspects a part it never saw: render reference candidates, no training.
# The camera sees the part from any side, so the profile keeps 12 of 48 candidates, chosen
# to cover the view sphere. Chosen on validation renders, never on the demo's own images
# (docs/benchmarks.md#demo-validation, benchmarks/demo_validation.py): references chosen
# from 48 rank the defects above the good views better than from 24 at the same cost, and
# a threshold from 12 good views at a 10 % target raised no false alarm there; 24
# references rank higher still but cost the demo's daemon half again per photo, and
# rendering at 320 px ranked no better. On the same validation parts as camera frames
# (docs/benchmarks.md#demo-validation-framed) 12 references rank above 4 and near 24 at
# less CPU, and 24 calibration views flag more defects than 12 (46 % against 39 %) at the
# same one false alarm in 72: the demo calibrates on 24 (its first-run bar of 60 s has room
# for the 12 more frames since the daemon's claim thread stopped spinning).
# The shipped model's demo shows what a line camera delivers: frames of the belt in which
# the part covers a share at a place and turn that change, found against a photo of the
# empty belt (``profile create --background``). The frames' conditions are those of every
# framed table (docs/research.md#framed-quality): a part 0.15-0.6 of the shorter side on
# the seamed belt, light gain 1 +- 0.1 and colour shift +- 6 levels per frame, sensor
# noise 2 and JPEG 95. 1280 x 1024 is the smallest common line camera's frame.
CAMERA_FRAME = {"part_scale": (0.15, 0.6), "belt": "belt", "light": 0.1, "colour": 6.0,
                "noise": 2.0, "jpeg": 95}  # fmt: skip
GENERIC = replace(
    FULL,
    size=224,
    train_views=48,
    shots=12,
    calibration_views=24,
    metric=PRODUCT_METRIC,
    frame="1280x1024",
)
GENERIC_QUICK = replace(QUICK, metric=PRODUCT_METRIC, frame="320x256")
