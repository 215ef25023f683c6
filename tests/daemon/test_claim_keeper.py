"""The claim keeper's thread waits between renewals: it never spins (a real SQLite file
with the real migrations, the keeper's real thread)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from padformer_edge.daemon.claim_keeper import ClaimKeeper
from padformer_edge.daemon.settings import DaemonConfig

EXPIRY_S = 3.0  # the shortest allowed: a renewal every second
HELD_S = 3.5


class CountingEvent(threading.Event):
    """An ``Event`` that counts the waits made on it."""

    def __init__(self) -> None:
        super().__init__()
        self.waits = 0

    def wait(self, timeout: float | None = None) -> bool:
        self.waits += 1
        return super().wait(timeout)


def test_without_a_plant_the_keeper_waits_a_renewal_apart(tmp_path: Path) -> None:
    """Each wait lasts until the next renewal (``claim_expiry_s / 3``), so holding the
    claims for ``HELD_S`` takes about ``HELD_S / (EXPIRY_S / 3)`` waits. A deadline that
    passed and was never moved on (the plant's, on a line without a plant) made every
    wait return at once: millions of waits, a CPU core and the GIL taken from the
    detector, which ran ten times slower beside it."""
    camera = tmp_path / "camera"
    camera.mkdir()
    config = DaemonConfig.model_validate({
        "database": str(tmp_path / "results.sqlite3"),
        "cameras": [{"name": "cam", "path": str(camera), "profile": "part"}],
        "claim_expiry_s": EXPIRY_S,
    })  # fmt: skip
    keeper = ClaimKeeper(config)
    keeper._stop = waits = CountingEvent()
    with keeper:
        time.sleep(HELD_S)
    renewals = HELD_S / (EXPIRY_S / 3)
    assert 1 <= waits.waits <= renewals + 2, f"{waits.waits} waits in {HELD_S} s"
