"""The one inspection worker: claim a batch, decode, detect, write heatmaps, commit.

In ``run`` the three overlap (``overlap``): while a batch is detected, a thread decodes
the next one (claimed early only while a full batch waits) and another writes the last
one's heatmaps and commits them, in order. ``run_batch`` alone finishes its batch before
it returns.

Every row it claims ends in exactly one of: ``done`` (result and alerts committed
together after the heatmap file is in place; a batch's rows in one transaction),
``failed`` (a refusal, immediately, or an error that used up its attempts), ``skipped``
(older than the overload deadline, with an operator alert) or back to ``pending`` (a
retryable error). A crash between the heatmaps and the commit leaves the rows
``processing``; the next start requeues them and each retry rewrites the same heatmap
name, so a file never gets two results or two heatmaps.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

import numpy as np
from sqlalchemy import Engine, bindparam, func, select

from padformer_edge.daemon.alerts.config import AlertsConfig
from padformer_edge.daemon.alerts.planning import (
    AlertKind,
    AlertRequest,
    Cooldown,
    drift_requests,
    plan_alerts,
)
from padformer_edge.daemon.burst import next_batch_size
from padformer_edge.daemon.camera_files import Refused, decode, read_checked
from padformer_edge.daemon.drift import DriftFinding, DriftMonitor
from padformer_edge.daemon.host_pool import HostPool
from padformer_edge.daemon.inspectors import Inspector
from padformer_edge.daemon.intake import Camera
from padformer_edge.daemon.memory import PeriodicTrim
from padformer_edge.daemon.overlap import Ahead, Finisher
from padformer_edge.daemon.settings import DriftConfig, HeatmapFormat, WorkerConfig
from padformer_edge.detect.detection import Detection
from padformer_edge.detect.heatmap import OVERLAY_ENCODINGS, write_heatmap
from padformer_edge.files.atomic import folder_syncs_deferred, sync_folders
from padformer_edge.images.decode import DEFAULT_MAX_PIXELS
from padformer_edge.images.image_stats import image_statistics
from padformer_edge.reporting.log import get_logger
from padformer_edge.store.candidates import pending_count, propose
from padformer_edge.store.drift import has_open_drift, record_drift
from padformer_edge.store.engine import reading
from padformer_edge.store.lines import line_of
from padformer_edge.store.locations import resolve_stored, stored_path
from padformer_edge.store.models import Inspection, Status, utc_now
from padformer_edge.store.queue import (
    DetectionOutcome,
    claim_batch,
    complete,
    complete_many,
    fail,
    requeue_interrupted,
    skip,
)
from padformer_edge.store.vocabulary import CandidateOrigin

log = get_logger("worker")
IDLE_RECHECK_S = 1.0
"""With nothing queued the worker sleeps until intake wakes it; this bound only keeps the
watchdog heartbeat going and catches rows queued by another process."""
PENDING_COUNT = (
    select(func.count())
    .select_from(Inspection)
    .where(Inspection.status == Status.pending, Inspection.line == bindparam("line"))
)
"""``backlog``'s query, built once: the worker counts before every batch, and building
the expression cost as much as running it."""
Decoded = list[tuple[Inspection, np.ndarray]]
Statistics = tuple[float, ...] | None


@dataclass(frozen=True)
class Finished:
    """A detected row with its heatmap in place, waiting for its batch's commit."""

    row: Inspection
    detection: Detection
    heatmap: Path
    statistics: tuple[float, ...] | None
    notices: list[AlertRequest]


def out_of_memory_errors() -> tuple[type[BaseException], ...]:
    """torch's out-of-memory error when torch is loaded (the torch runtime), else none: a
    line install without torch has no GPU memory to run out of and must not import it."""
    torch = sys.modules.get("torch")
    return (torch.OutOfMemoryError,) if torch is not None else ()


def device_lost(err: BaseException) -> bool:
    """Whether ``err`` says the GPU itself failed (a lost device, a driver error) rather
    than a bug or one image: torch's ``AcceleratorError`` where it exists, else a
    ``RuntimeError`` that names CUDA. Out-of-memory is not one: halving handles it."""
    torch = sys.modules.get("torch")
    if torch is None or isinstance(err, out_of_memory_errors()):
        return False
    accelerator = getattr(torch, "AcceleratorError", None)
    if accelerator is not None and isinstance(err, accelerator):
        return True
    return isinstance(err, RuntimeError) and "CUDA" in str(err)


def release_gpu_cache() -> None:
    """Hand the GPU's cached blocks back after an out-of-memory error (torch runtime)."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def heatmap_path(folder: Path, row_id: int, heatmap_format: HeatmapFormat = "jpeg") -> Path:
    """``<folder>/<id // 10000>/<id>.jpg`` (the suffix of ``heatmap_format``): named by
    row id, never by the camera's file name, and sharded so a folder holds at most 10,000
    files after months of running."""
    suffix = OVERLAY_ENCODINGS[heatmap_format].suffix
    return folder / f"{row_id // 10000:05d}" / f"{row_id}{suffix}"


def remove_stale_temporaries(folder: Path) -> int:
    """Delete the temp files (``.<id>.jpg.XXXXXXXX.tmp``) a crash left beside heatmaps;
    returns how many. Only the one daemon writes there, and it calls this before its
    worker starts, so every such file is a leftover, never a write in progress."""
    removed = 0
    if not folder.is_dir():
        return 0
    for shard, _, names in os.walk(folder):
        for name in names:
            if name.startswith(".") and name.endswith(".tmp"):
                try:
                    os.unlink(os.path.join(shard, name))
                    removed += 1
                except FileNotFoundError:
                    pass
    return removed


class Worker:
    """Runs batches until ``stop`` is set; finishes the batch in hand before returning."""

    def __init__(
        self,
        engine: Engine,
        cameras: dict[str, Camera],
        inspectors: dict[str, Inspector],
        config: WorkerConfig,
        heatmaps: Path,
        max_bytes: int,
        alerts: AlertsConfig,
        on_alert: Callable[[], None] = lambda: None,
        max_pixels: int = DEFAULT_MAX_PIXELS,
        drift: DriftConfig | None = None,
        on_cpu: Callable[[str], Inspector] | None = None,
    ) -> None:
        """``on_cpu`` builds a profile's inspector on the CPU: with it, a GPU that fails
        while detecting moves that profile to the CPU (with an operator alert) instead of
        failing its rows; without it, such rows fail and are retried like any error."""
        self.engine, self.cameras, self.inspectors = engine, cameras, inspectors
        self.on_cpu = on_cpu
        self.config, self.heatmaps, self.max_bytes = config, heatmaps, max_bytes
        self.max_pixels = max_pixels
        self.alerts, self.on_alert = alerts, on_alert
        self.cooldown = Cooldown(alerts.cooldown_s)  # per camera/product/kind, for its lifetime
        self.drift = DriftMonitor(drift or DriftConfig())
        self.batch_size = config.max_batch  # halved on CUDA out-of-memory
        self.base_batch = config.max_batch  # what a batch returns to after a burst
        self.ceiling = config.burst_max_batch or config.max_batch
        self.last_batch_ms: float | None = None
        self.beat = time.monotonic()
        self.busy_since: float | None = None
        self.last_result = "none yet"
        self.processed = 0
        self.trim = PeriodicTrim()
        self._arrived = threading.Event()
        self.finishing = Finisher()  # heatmaps and commits of detected batches, in order
        self.ahead = Ahead()  # decodes the batch claimed ahead
        self.host = HostPool(config.host_threads)  # decoding and heatmaps, per image
        self.heatmap_folder: tuple[Path, str] | None = None  # the shard's stored form
        self.next_batch: tuple[list[Inspection], Future[Decoded]] | None = None
        # alert cooldowns, drift windows and counters: touched by the worker's thread,
        # the finisher, the decoding thread (skips) and the reloader (a new version)
        self.shared = threading.RLock()

    def wake(self) -> None:
        """New work was queued (intake calls this), or the daemon is stopping: look now."""
        self._arrived.set()

    def _wait_for_work(self, seconds: float) -> None:
        self._arrived.wait(seconds)
        self._arrived.clear()  # the loop counts the backlog next, so nothing is missed

    # -- loop ------------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        """Batches until ``stop``; then the batch claimed ahead and every handed-over
        commit are finished before it returns (the daemon requeues what is left)."""
        try:
            self._loop(stop)
            while self.next_batch is not None:
                self._guarded(stop, prefetch=False)
            self.finishing.drain()
        finally:
            self.finishing.close()
            self.ahead.close()
            self.host.close()

    def _loop(self, stop: threading.Event) -> None:
        waiting_since: float | None = None
        while not stop.is_set():
            self.beat = time.monotonic()
            if self.next_batch is not None:  # claimed and decoding already: detect it now
                self._guarded(stop, prefetch=True)
                continue
            backlog = self.backlog()
            if backlog == 0:
                waiting_since = None
                self._wait_for_work(IDLE_RECHECK_S)
                continue
            waiting_since = waiting_since or time.monotonic()
            self.batch_size = next_batch_size(
                self.batch_size, base=self.base_batch, ceiling=self.ceiling, backlog=backlog,
                last_batch_ms=self.last_batch_ms, latency_ms=self.config.burst_latency_ms,
            )  # fmt: skip
            young = (time.monotonic() - waiting_since) * 1000 < self.config.max_wait_ms
            if backlog < self.batch_size and young:
                self._wait_for_work(0.02)  # a short wait lets a burst fill the batch
                continue
            waiting_since = None
            self._guarded(stop, prefetch=True)

    def _guarded(self, stop: threading.Event, prefetch: bool) -> None:
        """One overlapped batch; on an error (the database, most likely) let the helpers
        finish what they hold, back off, and give every claimed row back."""
        try:
            self.run_batch(wait=False, prefetch=prefetch)
        except Exception as err:
            log.error("worker.batch_failed", error=f"{type(err).__name__}: {err}")
            self.settle()
            stop.wait(1.0)
            self.release_claimed()

    def settle(self) -> None:
        """Wait for the decoding thread and the finisher and drop the batch claimed ahead
        (its rows are ``processing``, so ``release_claimed`` gives them back): nothing may
        still write a row that is being requeued."""
        ahead, self.next_batch = self.next_batch, None
        if ahead is not None:
            try:
                ahead[1].result()
            except Exception as err:
                log.error("worker.decode_failed", error=f"{type(err).__name__}: {err}")
        self.finishing.drain()

    def release_claimed(self) -> None:
        """Give a failed batch's rows back; this is the only worker, so every row still
        ``processing`` is one of them. If the database is still away, start-up does it."""
        try:
            requeue_interrupted(self.engine, max_attempts=self.config.max_attempts)
        except Exception as err:
            log.error("worker.requeue_failed", error=f"{type(err).__name__}: {err}")

    def backlog(self) -> int:
        """This line's files waiting to be inspected (another line's, on a database they
        share, are not its work)."""
        with reading(self.engine) as conn:
            found = conn.execute(PENDING_COUNT, {"line": line_of(self.engine)}).scalar()
            return int(found or 0)

    def run_batch(self, wait: bool = True, prefetch: bool = False) -> int:
        """Claim (or take the batch claimed ahead) and detect one batch; returns how many
        rows it holds. ``wait``: its results are committed before this returns, else the
        finisher commits them while the next batch is detected. ``prefetch``: while a
        full batch more is queued, claim it now and decode it beside this detection."""
        self.finishing.raise_failure()  # the rows the finisher could not record go back
        ahead, self.next_batch = self.next_batch, None
        rows = (
            ahead[0] if ahead is not None else claim_batch(self.engine, self.batch_size, fair=True)
        )
        if not rows:
            return 0
        self.busy_since = started = time.monotonic()
        try:
            decoded = ahead[1].result() if ahead is not None else self.prepare(rows)
            if prefetch:
                self.claim_ahead()
            by_profile: dict[str, Decoded] = {}
            for row, image in decoded:
                by_profile.setdefault(self.inspector_of(row).profile, []).append((row, image))
            for group in by_profile.values():
                self.inspect(group, wait)
        finally:
            self.busy_since = None
            self.last_batch_ms = (time.monotonic() - started) * 1000
            self.trim.after_batch()  # free heap pages back to the kernel, now and then
        if wait:
            self.finishing.drain()
            self.finishing.raise_failure()
        return len(rows)

    def prepare(self, rows: list[Inspection]) -> Decoded:
        """Skip the overdue rows, read and decode the others in the host threads, and
        record each failure here, in the rows' order (so the pool never writes a row)."""
        fresh = self.skip_overdue(rows)
        real_roots = {  # each camera root resolved once per batch, not once per file
            row.camera: os.path.realpath(self.cameras[row.camera].root)
            for row in fresh
            if row.camera in self.cameras
        }
        real_folders: dict[Path, str] = {}  # and each file's folder once per batch
        loaded = self.host.map(lambda row: self.read_decode(row, real_roots, real_folders), fresh)
        decoded: Decoded = []
        for row, image in zip(fresh, loaded, strict=True):
            if isinstance(image, Exception):
                self.load_failed(row, image)
            else:
                decoded.append((row, image))
        return decoded

    def claim_ahead(self) -> None:
        """While at least a full batch is queued (a burst), claim the next batch now and
        decode it in a thread while this one is detected; a shorter queue waits for the
        next turn of the loop, which may still fill its batch (the claim itself takes
        none then: no count before it)."""
        rows = claim_batch(self.engine, self.batch_size, fair=True, at_least=self.batch_size)
        if rows:
            self.next_batch = (rows, self.ahead.start(lambda: self.prepare(rows)))

    def inspector_of(self, row: Inspection) -> Inspector:
        return self.inspectors[row.camera]

    def use_inspector(self, profile: str, inspector: Inspector) -> None:
        """Score every camera of ``profile`` with ``inspector`` from the next batch on.

        Called from the profile reloader's thread. The table is replaced whole, in one
        assignment, so every camera of the profile changes at the same instant; ``inspect``
        reads its inspector once per group, so a batch is scored, and its rows record
        the version, by one version only. The cameras' drift windows start again: the
        new version's scores are compared with its own calibration."""
        self.inspectors = {
            camera: inspector if current.profile == profile else current
            for camera, current in self.inspectors.items()
        }
        with self.shared:
            self.drift.forget(c for c, i in self.inspectors.items() if i.profile == profile)

    # -- per row ---------------------------------------------------------------------
    def skip_overdue(self, rows: list[Inspection]) -> list[Inspection]:
        """Overload is explicit: rows older than the deadline are skipped with an alert."""
        limit = utc_now() - timedelta(seconds=self.config.deadline_s)
        fresh = []
        for row in rows:
            if row.discovered_at >= limit:
                fresh.append(row)
                continue
            reason = (
                f"overload: waited longer than the {self.config.deadline_s:g}s deadline "
                "before inspection"
            )
            with self.shared:
                alerts = plan_alerts(
                    self.alerts,
                    cooldown=self.cooldown,
                    camera=row.camera,
                    product=row.product,
                    score=None,
                    threshold=None,
                    reason=reason,
                    kind=AlertKind.skipped,
                    source_path=str(resolve_stored(row.source_path)),
                    extra={"inspection_id": row.id},
                )
                skip(self.engine, row.id, reason, alerts)
            if alerts:
                self.on_alert()
            log.warning(
                "worker.skipped", id=row.id, camera=row.camera, path=row.source_path, reason=reason
            )
        return fresh

    def read_decode(
        self,
        row: Inspection,
        real_roots: dict[str, str],
        real_folders: dict[Path, str] | None = None,
    ) -> np.ndarray:
        """The row's decoded pixels (a host thread's work), or the exception saying why
        not, which ``load_failed`` turns into the row's reason (``real_roots``: camera ->
        its root resolved; ``real_folders``: ``read_checked``'s, for the batch)."""
        camera = self.cameras.get(row.camera)
        if camera is None:
            raise Refused(f"camera '{row.camera}' is no longer configured")
        path = resolve_stored(row.source_path)
        data = read_checked(
            path, camera.root, self.max_bytes, row.sha256, real_roots.get(row.camera),
            real_folders,
        )  # fmt: skip
        return decode(data, path.suffix, self.max_pixels)

    def load_failed(self, row: Inspection, err: Exception) -> None:
        """Record why a row could not be read or decoded. Whatever goes wrong there
        belongs to this file alone: it becomes this row's reason and never reaches the
        batch, so a bad file cannot fail its neighbours."""
        if isinstance(err, Refused):
            self.record_failure(row, str(err), permanent=True)
        elif isinstance(err, OSError):
            self.record_failure(row, f"cannot read the file: {err.strerror or err}")
        elif isinstance(err, MemoryError):
            self.record_failure(row, "decoding ran out of memory", permanent=True)
        else:  # a decoder bug on odd bytes: this file's reason only
            self.record_failure(
                row, f"decoding failed: {type(err).__name__}: {err}", permanent=True
            )

    def record_failure(self, row: Inspection, reason: str, *, permanent: bool = False) -> None:
        attempts = row.attempts if permanent else self.config.max_attempts
        closed = fail(self.engine, row.id, reason, max_attempts=attempts)
        log.warning(
            "worker.failed",
            id=row.id,
            camera=row.camera,
            path=row.source_path,
            reason=reason,
            status=closed.status.value,
            attempts=closed.attempts,
        )

    def inspect(self, group: Decoded, wait: bool = True) -> None:
        """Detect ``group`` (one profile's rows), then finish its rows: here (``wait``)
        or in the finisher's thread while the worker goes on."""
        inspector = self.inspector_of(group[0][0])
        images = [image for _, image in group]
        notices: list[AlertRequest] = []
        try:
            try:
                detections = self.detect_halving(inspector, images)
            except Exception as err:
                if not (device_lost(err) and self.on_cpu is not None):
                    raise
                inspector, notices = self.move_to_cpu(group[0][0], inspector, err)
                detections = self.detect_halving(inspector, images)
        except Exception as err:
            for row, _ in group:
                self.record_failure(row, f"detection failed: {type(err).__name__}: {err}")
            return

        def finish_group() -> None:
            items = [(row, image, d) for (row, image), d in zip(group, detections, strict=True)]
            self.finish_all(items, inspector, notices)

        if wait:
            self.finishing.drain()  # batches handed over earlier commit first
            finish_group()
        else:
            self.finishing.submit(finish_group)

    def detect_halving(self, inspector: Inspector, images: list[np.ndarray]) -> list[Detection]:
        """Detect in chunks of ``batch_size``; on CUDA out-of-memory halve the chunk and
        the model batch and retry, keeping the smaller sizes for later batches too."""
        detector, out, start = inspector.detector, [], 0
        while start < len(images):
            chunk = images[start : start + self.batch_size]
            try:
                out.extend(detector.detect(chunk))
                start += len(chunk)
            except out_of_memory_errors():
                if self.batch_size == 1 and detector.max_batch == 1:
                    raise
                self.batch_size = max(1, self.batch_size // 2)
                self.base_batch = min(self.base_batch, self.batch_size)  # no regrowing past
                self.ceiling = self.batch_size  # what did not fit
                detector.max_batch = max(1, detector.max_batch // 2)
                release_gpu_cache()
                log.warning(
                    "worker.oom_halved", batch=self.batch_size, model_batch=detector.max_batch
                )
        return out

    def move_to_cpu(
        self, row: Inspection, inspector: Inspector, err: BaseException
    ) -> tuple[Inspector, list[AlertRequest]]:
        """Rebuild ``inspector``'s profile on the CPU after its GPU failed, serve every
        camera of the profile with it from now on, and plan the operator alert (stored
        with ``row``'s result, so the alert and the first CPU result commit together).
        Other profiles move the same way when their own next batch meets the failure."""
        assert self.on_cpu is not None
        reason = (
            f"the GPU failed while detecting ({type(err).__name__}: {err}); profile "
            f"'{inspector.profile}' now runs on the CPU, slower: check the GPU and its "
            "driver, then restart the daemon"
        )
        log.error("worker.gpu_failed", profile=inspector.profile, reason=reason)
        moved = self.on_cpu(inspector.profile)
        self.use_inspector(inspector.profile, moved)
        self.batch_size = self.base_batch = self.ceiling = self.config.max_batch
        with self.shared:
            alerts = plan_alerts(
                self.alerts, cooldown=self.cooldown, camera=row.camera, product=row.product,
                score=None, threshold=None, reason=reason, kind=AlertKind.device,
                extra={"inspection_id": row.id, "profile": inspector.profile},
            )  # fmt: skip
        return moved, alerts

    def finish(
        self,
        row: Inspection,
        image: np.ndarray,
        detection: Detection,
        inspector: Inspector,
        notices: list[AlertRequest] | None = None,
    ) -> None:
        """One row's heatmap and commit (``finish_all`` of one)."""
        self.finish_all([(row, image, detection)], inspector, notices or [])

    def finish_all(
        self,
        items: list[tuple[Inspection, np.ndarray, Detection]],
        inspector: Inspector,
        notices: list[AlertRequest],
    ) -> None:
        """Write each row's heatmap, then commit every result with its alerts in one
        transaction (``notices``, alerts planned by something other than a score, go
        with the first row that has its heatmap). The heatmaps (drawing and encoding,
        the slow part) and the image statistics run in the host threads, outside
        ``shared``. Every heatmap is in place, and its folder synced (once for the batch,
        not once per file), before the transaction that records it, so a kill in between
        leaves the rows ``processing`` for the next start, whose retry rewrites the same
        heatmap names. A row whose heatmap fails is recorded as failed alone (all of them
        if the folder cannot be synced); so is a row the batch's transaction cannot take
        (it is then retried row by row)."""

        folders: set[Path] = set()  # the heatmaps' shard folders, synced once below

        def draw(item: tuple[Inspection, np.ndarray, Detection]) -> tuple[Path, Statistics]:
            row, image, detection = item
            heatmap = heatmap_path(self.heatmaps, row.id, self.config.heatmap_format)
            with folder_syncs_deferred(folders):
                write_heatmap(
                    heatmap,
                    image,
                    detection.anomaly_map,
                    detection.score,
                    threshold=inspector.threshold,  # one colour scale per profile
                    encoding=self.config.heatmap_format,
                    ignored=detection.ignored_regions,
                )
            return heatmap, self.image_statistics(image, inspector)

        drawn_all = self.host.map(draw, items)
        try:  # every heatmap's rename durable before the transaction that names it
            sync_folders(folders)
        except OSError as err:
            failed = OSError(f"cannot sync the heatmaps' folder: {err.strerror or err}")
            drawn_all = [failed for _ in items]
        ready: list[Finished] = []
        for (row, _, detection), drawn in zip(items, drawn_all, strict=True):
            if isinstance(drawn, Exception):
                reason = f"storing the result failed: {type(drawn).__name__}: {drawn}"
                self.record_failure(row, reason)
                continue
            heatmap, statistics = drawn
            ready.append(Finished(row, detection, heatmap, statistics,
                                  [] if ready else notices))  # fmt: skip
        if ready:
            with self.shared:
                self.commit_all(ready, inspector)

    def commit_all(self, ready: list[Finished], inspector: Inspector) -> None:
        """The results with their alerts in one transaction, then drift and counters for
        each; if the transaction fails, each row is committed (or failed) on its own."""
        planned = [(item, self.outcome(item, inspector)) for item in ready]
        try:
            results = [(item.row.id, outcome) for item, outcome in planned]
            complete_many(self.engine, results, rows=False)
            committed = planned
        except Exception as err:
            log.warning("worker.batch_commit_failed", rows=len(planned),
                        error=f"{type(err).__name__}: {err}")  # fmt: skip
            committed = []
            for item, outcome in planned:
                try:
                    complete(self.engine, item.row.id, outcome)
                except Exception as row_err:
                    reason = f"storing the result failed: {type(row_err).__name__}: {row_err}"
                    self.record_failure(item.row, reason)
                    continue
                committed.append((item, outcome))
        for item, outcome in committed:
            self.committed(item.row, item.detection, inspector, outcome, item.statistics)

    def outcome(self, item: Finished, inspector: Inspector) -> DetectionOutcome:
        """A row's result (its verdict decided there) and the alerts that verdict plans,
        with its notices."""
        row, detection = item.row, item.detection
        outcome = DetectionOutcome(
            score=detection.score,
            threshold=inspector.threshold,
            heatmap_path=self.stored_heatmap(item.heatmap),  # relative under the state folder
            model_sha256=inspector.model_sha256,
            detect_ms=detection.timings["total"] * 1000,
            alerts=list(item.notices),
            profile_version=inspector.version,
            no_part=detection.no_part,  # a frame with no part is never an alert
            part_box=detection.part_box,
            part_cut=detection.part_cut if detection.part_box is not None else None,
        )
        if not outcome.is_anomaly:  # else no alert: its reason and paths are made for one
            return outcome
        planned = plan_alerts(
            self.alerts,
            cooldown=self.cooldown,
            camera=row.camera,
            product=row.product,
            score=detection.score,
            threshold=inspector.threshold,
            reason=f"score {detection.score:.4g} above threshold {inspector.threshold:.4g}",
            source_path=str(resolve_stored(row.source_path)),  # a receiver needs the file
            heatmap_path=str(item.heatmap),
            extra={"inspection_id": row.id},
        )
        return replace(outcome, alerts=[*planned, *item.notices])

    def committed(
        self,
        row: Inspection,
        detection: Detection,
        inspector: Inspector,
        outcome: DetectionOutcome,
        statistics: tuple[float, ...] | None,
    ) -> None:
        """After a row's commit: its candidate proposal, the alert wake-up, drift and
        the counters; a frame with no part has no score to propose, alert on or drift by."""
        if detection.no_part:
            if outcome.alerts:  # notices planned by something else than a score
                self.on_alert()
            self.processed += 1
            self.last_result = f"#{row.id} {row.camera} no part"
            ms = round(outcome.detect_ms, 1)
            log.info("inspected", id=row.id, camera=row.camera, path=row.source_path,
                     product=row.product, no_part=True, ms=ms)  # fmt: skip
            return
        if inspector.auto_limit is not None and detection.score <= inspector.auto_limit:
            self.propose_confident(row, inspector)
        if outcome.alerts:
            self.on_alert()
        findings = self.drift.observe(
            row.camera, row.product, detection.score, outcome.is_anomaly,
            inspector.good_scores, inspector.target_fpr, inspector.threshold,
            statistics=statistics,
            good_image_stats=inspector.good_image_stats,
        )  # fmt: skip
        if findings:
            self.raise_drift(row, inspector, findings)
        self.processed += 1
        self.last_result = f"#{row.id} {row.camera} score {detection.score:.4g}" + (
            " ANOMALY" if outcome.is_anomaly else ""
        )
        log.info(
            "inspected",
            id=row.id,
            camera=row.camera,
            product=row.product,
            path=row.source_path,
            score=round(detection.score, 6),
            anomaly=outcome.is_anomaly,
            ms=round(outcome.detect_ms, 1),
        )

    def stored_heatmap(self, heatmap: Path) -> str:
        """``stored_path`` of a heatmap: its shard folder's stored form is worked out
        once (resolving the folder's links each time cost more than the rest of the
        row's record) and the file's name appended, as ``stored_path`` would."""
        folder = heatmap.parent
        if self.heatmap_folder is None or self.heatmap_folder[0] != folder:
            self.heatmap_folder = (folder, stored_path(folder / "x")[: -len("x")])
        return self.heatmap_folder[1] + heatmap.name

    def image_statistics(self, image: np.ndarray, inspector: Inspector) -> Statistics:
        """The drift watch's luminance percentiles of the image already decoded for this
        result (well under a millisecond, ``image_stats``); None where nothing would test
        them (drift off, or a profile calibrated before they were kept)."""
        if not (self.drift.config.enabled and inspector.good_image_stats):
            return None
        return image_statistics(image)

    def propose_confident(self, row: Inspection, inspector: Inspector) -> None:
        """Offer a part scored far below the threshold as a reference candidate (a
        profile that opted in), while fewer than its cap wait for a decision. A failure
        is logged and never fails the result, which is already committed."""
        try:
            if pending_count(self.engine, row.product) < inspector.auto_max_pending:
                propose(self.engine, row.id, CandidateOrigin.confident)
        except Exception as err:
            log.error("candidate.propose_failed", id=row.id,
                      error=f"{type(err).__name__}: {err}")  # fmt: skip

    def raise_drift(
        self, row: Inspection, inspector: Inspector, findings: list[DriftFinding]
    ) -> None:
        """Store a drift event with its alerts (tied to the window's last inspection),
        unless this camera's previous drift is still open. A failure here is logged and
        never fails the result, which is already committed."""
        strongest = findings[0]
        reason = "; ".join(f.reason for f in findings)
        try:
            if has_open_drift(self.engine, row.camera, row.product):
                log.warning("drift.still_open", camera=row.camera, product=row.product,
                            reason=reason)  # fmt: skip
                return
            requests = drift_requests(
                self.alerts, camera=row.camera, product=row.product,
                threshold=inspector.threshold, reason=reason,
                extra={"inspection_id": row.id, "test": strongest.kind,
                       "p_value": strongest.p_value, "window": strongest.window_size}
                | ({"statistic": strongest.measure} if strongest.measure else {}),
            )  # fmt: skip
            drift_id = record_drift(
                self.engine, camera=row.camera, product=row.product, kind=strongest.kind,
                statistic=strongest.statistic, p_value=strongest.p_value,
                level=strongest.level, window_size=strongest.window_size, reason=reason,
                inspection_id=row.id, requests=requests,
            )  # fmt: skip
        except Exception as err:
            log.error("drift.record_failed", camera=row.camera,
                      error=f"{type(err).__name__}: {err}")  # fmt: skip
            return
        if requests:
            self.on_alert()
        log.warning("drift", id=drift_id, camera=row.camera, product=row.product,
                    test=strongest.kind, p_value=strongest.p_value, reason=reason)  # fmt: skip
