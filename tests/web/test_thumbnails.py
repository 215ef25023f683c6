"""Thumbnails on a real server: the live view and history show small cached JPEGs, the
detail page the full picture; a thumbnail, and a TIFF's PNG for the detail page, is
made once per file version and then served from a bounded cache, once however many ask
at the same time; the file rules of the full images hold for them too."""

from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import cv2
import numpy as np
import pytest

from padformer_edge.store.engine import open_engine
from padformer_edge.store.queue import enqueue
from padformer_edge.web.file_cache import FileCache
from padformer_edge.web.media import MediaRoots
from padformer_edge.web.server import WebServer
from padformer_edge.web.thumbnails import EDGE, Thumbnails, make_thumbnail
from tests.web.client import request
from tests.web.site import Site, png

CARD_BYTES = 50_000  # the target for a card image: 50 KB


def _decoded(body: bytes) -> np.ndarray:
    image = cv2.imdecode(np.frombuffer(body, np.uint8), cv2.IMREAD_COLOR)
    assert image is not None
    return image


def test_cards_and_history_rows_show_thumbnails_the_detail_page_the_full_image(
    server: WebServer, site: Site
) -> None:
    row = site.good[0]
    for path in ("/", "/history?camera=cam-a"):
        page = request(server.url, path, headers={"Accept": "text/html"}).text
        shown = re.findall(r'<img[^>]* src="([^"]+)"', page)
        assert f"/thumbs/{row}/image" in shown and f"/thumbs/{row}/heatmap" in shown, path
        assert not [s for s in shown if s.startswith("/media/")], path
    cards = request(server.url, "/api/live").text
    assert f'"thumb":"/thumbs/{row}/image"' in cards
    detail = request(server.url, f"/inspections/{row}").text
    assert f'src="/media/{row}/image"' in detail and "/thumbs/" not in detail


def test_a_large_tiff_becomes_a_small_jpeg_made_once(server: WebServer, site: Site) -> None:
    rng = np.random.default_rng(3)
    big = rng.integers(0, 255, (1500, 2000, 3), dtype=np.uint8)  # noise: the worst case
    tiff = site.cameras / "cam-a" / "big.tif"
    assert cv2.imwrite(str(tiff), big)
    engine = open_engine(site.db)
    row = enqueue(engine, camera="cam-a", product="bolt", source_path=str(tiff),
                  sha256="1" * 64, size_bytes=tiff.stat().st_size).id  # fmt: skip
    engine.dispose()
    thumbs = server.app.thumbnails
    made = thumbs.made
    first = request(server.url, f"/thumbs/{row}/image")
    assert first.status == 200 and first.headers["content-type"] == "image/jpeg"
    assert len(first.body) <= CARD_BYTES and max(_decoded(first.body).shape[:2]) == EDGE
    again = request(server.url, f"/thumbs/{row}/image")
    assert again.body == first.body and thumbs.made == made + 1  # the second came from the cache
    # The file replaced under the same name: a new thumbnail, not the old one.
    assert cv2.imwrite(str(tiff), np.full((300, 400, 3), 200, np.uint8))
    replaced = request(server.url, f"/thumbs/{row}/image")
    assert replaced.status == 200 and thumbs.made == made + 2
    assert _decoded(replaced.body).shape[:2] == (240, 320)


@pytest.mark.parametrize("kind", ["outside", "dotdot", "symlink", "relative", "html"])
def test_a_thumbnail_obeys_the_same_file_rules(server: WebServer, site: Site, kind: str) -> None:
    assert request(server.url, f"/thumbs/{site.hostile[kind]}/image").status == 404
    assert request(server.url, f"/thumbs/{site.good[0]}/source").status == 404


def test_the_cache_is_bounded_and_drops_the_least_recently_shown(tmp_path: Path) -> None:
    files = [png(tmp_path / f"{n}.png", seed=n, size=(240, 320)) for n in range(6)]
    one = len(make_thumbnail(files[0].read_bytes()) or b"")
    cache = Thumbnails(max_bytes=3 * one + one // 2)  # room for three, give or take
    for path in files[:3]:
        assert cache.get(path, MediaRoots.read_file) is not None
    assert cache.made == 3
    cache.get(files[0], MediaRoots.read_file)  # shown again: now the most recent
    for path in files[3:]:
        cache.get(path, MediaRoots.read_file)
    assert cache.size_bytes <= cache.max_bytes and cache.made == 6
    cache.get(files[5], MediaRoots.read_file)
    assert cache.made == 6  # still kept
    cache.get(files[1], MediaRoots.read_file)
    assert cache.made == 7  # dropped long ago, made again
    assert cache.get(tmp_path / "gone.png", MediaRoots.read_file) is None
    (tmp_path / "junk.png").write_bytes(b"not an image")
    assert cache.get(tmp_path / "junk.png", MediaRoots.read_file) is None


def test_the_detail_pages_tiff_is_converted_once_at_full_size(
    server: WebServer, site: Site
) -> None:
    """Issue 51's audit: the detail page converted a 12-megapixel TIFF to PNG on every
    request (0.9 s of CPU each). Converted once per file version now, every pixel kept."""
    rng = np.random.default_rng(5)
    big = rng.integers(0, 255, (900, 1200, 3), dtype=np.uint8)
    tiff = site.cameras / "cam-a" / "detail.tif"
    assert cv2.imwrite(str(tiff), big)
    engine = open_engine(site.db)
    row = enqueue(engine, camera="cam-a", product="bolt", source_path=str(tiff),
                  sha256="2" * 64, size_bytes=tiff.stat().st_size).id  # fmt: skip
    engine.dispose()
    converted = server.app.conversions
    made = converted.made
    first = request(server.url, f"/media/{row}/image")
    assert first.status == 200 and first.headers["content-type"] == "image/png"
    assert np.array_equal(_decoded(first.body), big)  # the full picture, not a reduction
    again = request(server.url, f"/media/{row}/image")
    assert again.body == first.body and converted.made == made + 1  # from the cache
    assert cv2.imwrite(str(tiff), np.full((30, 40, 3), 9, np.uint8))  # replaced: made again
    replaced = request(server.url, f"/media/{row}/image")
    assert _decoded(replaced.body).shape[:2] == (30, 40) and converted.made == made + 2
    png_row = site.good[0]  # a browser's own format is sent as it is, never converted
    assert request(server.url, f"/media/{png_row}/image").status == 200
    assert converted.made == made + 2


def test_requests_for_one_picture_at_once_make_it_once(tmp_path: Path) -> None:
    """Four detail pages opened together wait for one conversion, not four."""
    picture = png(tmp_path / "a.png", seed=1, size=(240, 320))
    calls: list[int] = []
    release = threading.Event()

    def slow_make(data: bytes) -> bytes:
        calls.append(len(data))
        release.wait(30)  # held until every request has arrived
        return b"made"

    cache = FileCache(slow_make, max_bytes=1024)
    with ThreadPoolExecutor(4) as pool:
        answers = [pool.submit(cache.get, picture, MediaRoots.read_file) for _ in range(4)]
        while len(calls) < 1:  # the first is making it; the others find it busy
            threading.Event().wait(0.01)
        threading.Event().wait(0.2)  # room for the other three to reach their wait
        release.set()
        assert [a.result(30) for a in answers] == [b"made"] * 4
    assert len(calls) == 1 and cache.made == 1
