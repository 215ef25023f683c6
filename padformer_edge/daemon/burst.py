"""How many images the worker takes per batch while a burst drains.

On a GPU a larger batch costs little more than a small one, so a queue that grows faster
than ``worker.max_batch`` images per batch drains much sooner in larger batches. A batch's
wall time is also how long its first image waits for its result once taken, so growth
is bounded by ``worker.burst_latency_ms``: a batch doubles only while the last one took
under half the bound (the doubled one then stays under it if time grows at most in
proportion), halves when one took longer, and returns to ``max_batch`` when the queue is
short again. A pure function of what the worker measured, so tests need no clock.
"""

from __future__ import annotations


def next_batch_size(
    current: int,
    *,
    base: int,
    ceiling: int,
    backlog: int,
    last_batch_ms: float | None,
    latency_ms: float,
) -> int:
    """The next batch's size from the ``current`` one: ``base`` is ``max_batch`` (or less
    after running out of GPU memory), ``ceiling`` the most it may grow to, ``backlog`` the
    images waiting and ``last_batch_ms`` the previous batch's wall time (None: none yet)."""
    if ceiling <= base or backlog < 2 * base:
        return min(base, ceiling)
    if last_batch_ms is not None and last_batch_ms > latency_ms:
        return max(base, current // 2)
    if backlog >= 2 * current and (last_batch_ms is None or 2 * last_batch_ms <= latency_ms):
        return min(ceiling, current * 2)
    return current
