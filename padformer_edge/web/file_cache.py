"""Bytes made from a picture file once and kept: the thumbnails of the cards and rows,
and the PNG a browser is sent for a TIFF on the detail page.

Making them costs the server's CPU (a 12-megapixel TIFF: most of a second to decode and
encode again) on the PC that also runs the detector, and a page asks for the same
picture again and again (every refresh, every operator). So each result is kept in
memory, keyed by the file's resolved path, modification time and size (a file replaced
under the same name is made again), the least recently used leaving first once the
cache holds more than its byte budget. Requests that arrive while the same picture is
being made wait for that one making instead of starting their own (four browsers
opening one detail page at once cost one conversion, not four).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

Key = tuple[str, int, int]
Make = Callable[[bytes], bytes | None]


class FileCache:
    """``make(file bytes)`` by file, least recently used dropped past ``max_bytes``;
    thread-safe, one making per file at a time."""

    def __init__(self, make: Make, max_bytes: int) -> None:
        self.make = make
        self.max_bytes = max_bytes
        self._kept: OrderedDict[Key, bytes] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._making: dict[Key, threading.Event] = {}
        self.made = 0  # results made (cache misses), for tests and the benchmark

    @property
    def size_bytes(self) -> int:
        with self._lock:
            return self._bytes

    def _lookup(self, key: Key) -> tuple[bytes | None, threading.Event | None, bool]:
        """(the kept bytes, an event to wait on, whether this caller makes them)."""
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None:
                self._kept.move_to_end(key)
                return kept, None, False
            busy = self._making.get(key)
            if busy is not None:
                return None, busy, False
            self._making[key] = threading.Event()
            return None, None, True

    def get(self, real: Path, read: Callable[[Path], bytes | None]) -> bytes | None:
        """What ``make`` gives for the file ``real`` (already checked by the caller), made
        from ``read(real)``'s bytes on a miss; ``None`` when the file is gone or ``make``
        gives nothing."""
        try:
            info = real.stat()
        except OSError:
            return None
        key = (str(real), info.st_mtime_ns, info.st_size)
        while True:
            kept, busy, mine = self._lookup(key)
            if kept is not None:
                return kept
            if mine:
                break
            assert busy is not None
            busy.wait()  # made by another request: look again (made, or too big to keep)
            with self._lock:
                if key not in self._kept:  # nothing kept: make it here, not in a loop
                    break
        try:
            data = read(real)
            result = self.make(data) if data is not None else None
            if result is not None:
                self._keep(key, result)
            return result
        finally:
            with self._lock:
                event = self._making.pop(key, None) if mine else None
            if event is not None:
                event.set()

    def _keep(self, key: Key, result: bytes) -> None:
        with self._lock:
            self.made += 1
            if key not in self._kept and len(result) <= self.max_bytes:
                self._kept[key] = result
                self._bytes += len(result)
                while self._bytes > self.max_bytes:
                    _, old = self._kept.popitem(last=False)
                    self._bytes -= len(old)
