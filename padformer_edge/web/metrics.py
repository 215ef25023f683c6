"""``/metrics``: the store's counters and histograms in the Prometheus text format.

Counters count what finished since this process started, as Prometheus expects of a
process's counters (a restart is a counter reset, which ``rate()`` handles); counting the
whole history instead would cost a full pass over millions of rows on the first scrape
and show a restart as a burst of a million inspections. A scrape stays cheap because
totals are kept from a watermark on the primary key: every row at or below it is
finished (finished rows never change again) and already counted, the watermark advances
to just before the oldest row still queued, and each scrape reads only the rows above.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from sqlalchemy import Connection, Engine, case, func, select

from padformer_edge.devices.gpu_gauges import read_gpus
from padformer_edge.store.models import Alert, AlertState, Inspection, ReviewVerdict, Status
from padformer_edge.store.outbox import backlog as plant_backlog
from padformer_edge.store.reviews import review_counts
from padformer_edge.web.queries import distinct_in, unindexed

BUCKETS_S = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
FINISHED = (Status.done, Status.failed, Status.skipped, Status.no_part)
QUEUED = (Status.pending, Status.processing)
MIN_INTERVAL_S = 1.0


@dataclass
class Histogram:
    """Cumulative bucket counts (``le`` each of ``BUCKETS_S``), count and sum in seconds."""

    buckets: list[int] = field(default_factory=lambda: [0] * len(BUCKETS_S))
    count: int = 0
    total_s: float = 0.0

    def add(self, other: Histogram, sign: int = 1) -> None:
        self.buckets = [a + sign * b for a, b in zip(self.buckets, other.buckets, strict=True)]
        self.count += sign * other.count
        self.total_s += sign * other.total_s


@dataclass
class Totals:
    """Counts keyed by their labels: (line, camera, product, status) of inspections,
    (line, camera, product) of anomalies, (line, camera) of the histograms."""

    inspections: Counter[tuple[str, str, str, str]] = field(default_factory=Counter)
    anomalies: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    detect: dict[tuple[str, str], Histogram] = field(default_factory=dict)
    queue: dict[tuple[str, str], Histogram] = field(default_factory=dict)

    def add(self, other: Totals, sign: int = 1) -> None:
        """Add (``sign`` 1) or take away (-1) another set of totals, label by label."""
        for mine, theirs in ((self.inspections, other.inspections),
                             (self.anomalies, other.anomalies)):  # fmt: skip
            for key, value in theirs.items():
                mine[key] += sign * value  # type: ignore[index]
        for hists, others in ((self.detect, other.detect), (self.queue, other.queue)):
            for key, hist in others.items():
                hists.setdefault(key, Histogram()).add(hist, sign)


def _histograms(
    conn: Connection, column: Any, where: list[Any]
) -> dict[tuple[str, str], Histogram]:
    """Per (line, camera) cumulative buckets of a millisecond column (set only on
    finished rows), computed by the database."""
    bounds = [func.sum(case((column <= b * 1000.0, 1), else_=0)) for b in BUCKETS_S]
    line, camera = unindexed(Inspection.line), unindexed(Inspection.camera)
    rows = conn.execute(
        select(line, camera, func.count(), func.sum(column), *bounds)
        .where(*where, column.is_not(None))
        .group_by(line, camera)
    ).all()
    return {
        (line, camera): Histogram([int(b or 0) for b in bucket], int(n), float(total or 0) / 1000.0)
        for line, camera, n, total, *bucket in rows
    }


def aggregate(conn: Connection, above: int, upto: int | None) -> Totals:
    """Totals of the finished rows with ``above < id <= upto`` (no upper end if None).

    Only the id range is in the WHERE clause and the grouping columns are wrapped, so
    the database walks the primary key over just that range (a status condition would
    send SQLite through the status index over every finished row instead).
    """
    where = [Inspection.id > above]
    if upto is not None:
        where.append(Inspection.id <= upto)
    totals = Totals()
    anomalous = func.sum(case((Inspection.is_anomaly.is_(True), 1), else_=0))
    keys = [
        unindexed(Inspection.line),
        unindexed(Inspection.camera),
        unindexed(Inspection.product),
        unindexed(Inspection.status),
    ]
    rows = conn.execute(select(*keys, func.count(), anomalous).where(*where).group_by(*keys)).all()
    for line, camera, product, status, count, anomalies in rows:
        if Status(status) not in FINISHED:
            continue
        totals.inspections[(line, camera, product, Status(status).value)] += int(count)
        totals.anomalies[(line, camera, product)] += int(anomalies or 0)
    totals.detect = _histograms(conn, Inspection.detect_ms, where)
    totals.queue = _histograms(conn, Inspection.queue_ms, where)
    return totals


def gpu_families() -> list[Metric]:
    """The worker's GPU memory and utilisation, when this process's worker runs on CUDA;
    no family at all otherwise (``gpu_gauges``)."""
    readings = read_gpus()
    if not readings:
        return []
    allocated = GaugeMetricFamily(
        "padformer_gpu_memory_allocated_bytes",
        "GPU memory held by tensors of the detecting worker (torch's allocator).",
        labels=["device"],
    )
    reserved = GaugeMetricFamily(
        "padformer_gpu_memory_reserved_bytes",
        "GPU memory torch's caching allocator holds for the worker (allocated and cached).",
        labels=["device"],
    )
    busy = GaugeMetricFamily(
        "padformer_gpu_utilization_ratio",
        "Share of the driver's last sample period a kernel ran on the GPU (0 to 1).",
        labels=["device"],
    )
    for reading in readings:
        allocated.add_metric([reading.device], reading.allocated_bytes)
        reserved.add_metric([reading.device], reading.reserved_bytes)
        if reading.utilization is not None:
            busy.add_metric([reading.device], reading.utilization)
    return [allocated, reserved, *([busy] if busy.samples else [])]


class StoreCollector(Collector):
    """Reads the store on scrape (at most once a second) and yields the metric families."""

    def __init__(
        self, engine: Callable[[], Engine], heartbeat_ages: Callable[[], dict[str, float]]
    ):
        self._engine = engine
        self._heartbeat_ages = heartbeat_ages
        self._lock = threading.Lock()
        self._watermark: int | None = None  # set on the first scrape
        self._prefix = Totals()
        self._before_start = Totals()  # finished rows above the first watermark
        self._cached: list[Metric] = []
        self._cached_at = -1e9
        self._ages: dict[str, float] = {}  # each line's heartbeat age, read per scrape

    def _advance(self, conn: Connection) -> Totals:
        """Move finished rows into the cached prefix; return what finished since start:
        prefix + finished tail - what was already finished at the first scrape."""
        oldest_open = [
            conn.execute(select(func.min(Inspection.id)).where(Inspection.status == s)).scalar()
            for s in QUEUED
        ]
        open_ids = [i for i in oldest_open if i is not None]
        newest = conn.execute(select(func.max(Inspection.id))).scalar() or 0
        upto = min(open_ids) - 1 if open_ids else newest
        if self._watermark is None:
            self._watermark = upto
            self._before_start = aggregate(conn, upto, None)
        elif upto > self._watermark:
            self._prefix.add(aggregate(conn, self._watermark, upto))
            self._watermark = upto
        result = Totals()
        result.add(self._prefix)
        result.add(aggregate(conn, self._watermark, None))
        result.add(self._before_start, sign=-1)
        return result

    def _gauges(self, conn: Connection) -> list[Metric]:
        # Every line the database knows (from the index the line leads), so a line with
        # an empty queue still shows its zeros.
        lines = sorted(set(distinct_in(conn, "line")) | set(self._ages))
        depth = GaugeMetricFamily(
            "padformer_queue_depth",
            "Camera files waiting or being inspected.",
            labels=["line", "status"],
        )
        counts = {
            (line, Status(status)): n
            for line, status, n in conn.execute(
                select(Inspection.line, Inspection.status, func.count())
                .where(Inspection.status.in_(QUEUED))
                .group_by(Inspection.line, Inspection.status)
            ).all()
        }
        for line in lines:
            for status in QUEUED:
                depth.add_metric([line, status.value], counts.get((line, status), 0))
        alerts = GaugeMetricFamily(
            "padformer_alerts", "Alerts in the outbox by delivery state.", labels=["line", "state"]
        )
        states = {
            (line, AlertState(state)): n
            for line, state, n in conn.execute(
                select(Alert.line, Alert.state, func.count()).group_by(Alert.line, Alert.state)
            ).all()
        }
        for line in lines:
            for state in AlertState:
                alerts.add_metric([line, state.value], states.get((line, state), 0))
        # A gauge, not a counter: a review can be changed, so the count of one verdict can
        # go down. It counts the whole table (reviews are few beside inspections).
        reviews = GaugeMetricFamily(
            "padformer_reviews",
            "Inspections operators reviewed, by profile and verdict (the current review).",
            labels=["line", "product", "verdict"],
        )
        found = review_counts(conn)
        for line, product in sorted({(li, p) for li, p, _ in found}):
            for verdict in ReviewVerdict:
                count = found.get((line, product, verdict.value), 0)
                reviews.add_metric([line, product, verdict.value], count)
        out: list[Metric] = [depth, alerts, reviews, *gpu_families()]
        # Only a line database that forwards to a plant has the family at all.
        if owed := plant_backlog(conn):
            plant = GaugeMetricFamily(
                "padformer_plant_backlog",
                "Changes (results, reviews, alerts) a line has not yet forwarded to the "
                "plant database; it grows while that database is unreachable.",
                labels=["line"],
            )
            for line, count in sorted(owed.items()):
                plant.add_metric([line], count)
            out.append(plant)
        if self._ages:
            beat = GaugeMetricFamily(
                "padformer_daemon_heartbeat_age_seconds",
                "Seconds since each line's daemon last reported itself alive.",
                labels=["line"],
            )
            for line, age in sorted(self._ages.items()):
                beat.add_metric([line], age)
            out.append(beat)
        return out

    def _families(self) -> list[Metric]:
        self._ages = self._heartbeat_ages()
        with self._engine().connect() as conn:
            totals = self._advance(conn)
            gauges = self._gauges(conn)
        inspections = CounterMetricFamily(
            "padformer_inspections",
            "Camera files finished, by line, camera, product and outcome.",
            labels=["line", "camera", "product", "status"],
        )
        for labels, count in sorted(totals.inspections.items()):
            inspections.add_metric(list(labels), count)
        anomalies = CounterMetricFamily(
            "padformer_anomalies",
            "Inspections judged anomalous.",
            labels=["line", "camera", "product"],
        )
        for labels, count in sorted(totals.anomalies.items()):
            anomalies.add_metric(list(labels), count)
        families: list[Metric] = [inspections, anomalies]
        for name, doc, hists in (
            ("padformer_detect_seconds", "Detection time per image.", totals.detect),
            ("padformer_queue_seconds", "Time from discovery to inspection.", totals.queue),
        ):
            family = HistogramMetricFamily(name, doc, labels=["line", "camera"])
            for key, hist in sorted(hists.items()):
                buckets = [(repr(b), n) for b, n in zip(BUCKETS_S, hist.buckets, strict=True)]
                buckets.append(("+Inf", hist.count))
                family.add_metric(list(key), buckets, hist.total_s)
            families.append(family)
        return families + gauges

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            if time.monotonic() - self._cached_at >= MIN_INTERVAL_S:
                self._cached = self._families()
                self._cached_at = time.monotonic()
            yield from self._cached


class Metrics:
    """A private registry (not the global one) holding the store collector."""

    def __init__(
        self, engine: Callable[[], Engine], heartbeat_ages: Callable[[], dict[str, float]]
    ):
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(StoreCollector(engine, heartbeat_ages))

    def render(self) -> bytes:
        return generate_latest(self.registry)
