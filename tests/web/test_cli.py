"""``padformer-edge serve`` and the ``http:`` section, as a user meets them: a real
subprocess serving a real database, and one-line errors for what a user gets wrong."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from sqlalchemy import select

from padformer_edge.daemon.settings import file_roots, load_daemon_config
from padformer_edge.errors import UserError
from padformer_edge.store.engine import open_engine
from padformer_edge.store.lines import default_line
from padformer_edge.store.migrations import upgrade
from padformer_edge.store.tables import inspections
from padformer_edge.tools.config_kinds import check_config
from tests.cli_process import REPO, run_cli
from tests.web.site import Site, build_site


def _config(tmp_path: Path, **extra: object) -> Path:
    camera = tmp_path / "cameras" / "cam-a"
    camera.mkdir(parents=True, exist_ok=True)
    config = {
        "database": str(tmp_path / "results.sqlite3"),
        "heatmaps": str(tmp_path / "heatmaps"),
        "cameras": [{"name": "cam-a", "path": str(camera), "profile": "bolt"}],
        **extra,
    }
    path = tmp_path / "daemon.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_the_http_section_is_strict_like_the_rest_of_the_config(tmp_path: Path) -> None:
    good = _config(tmp_path, http={"host": "127.0.0.1", "port": 8099, "roots": ["/srv/archive"]})
    kind, config = check_config(good)
    assert kind == "daemon" and config.http.port == 8099  # type: ignore[attr-defined]
    bad = _config(tmp_path, http={"host": "127.0.0.1", "prot": 8099})
    with pytest.raises(UserError, match=r"line \d+, key 'http.prot': unknown key"):
        check_config(bad)
    short = _config(tmp_path, http={"token": "abc"})
    with pytest.raises(UserError, match=r"http\.token"):
        check_config(short)


def test_file_roots_are_the_cameras_and_the_heatmap_folder(tmp_path: Path) -> None:
    config = load_daemon_config(_config(tmp_path), [])
    assert file_roots(config) == [tmp_path / "cameras" / "cam-a", tmp_path / "heatmaps"]


def test_serve_without_a_database_says_how_to_make_one(tmp_path: Path) -> None:
    result = run_cli("serve", "--config", str(_config(tmp_path)), "--port", "0")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "there is no database" in lines[0] and "db upgrade" in lines[0]


@contextmanager
def _serving(tmp_path: Path, config: Path) -> Iterator[str]:
    """``padformer-edge serve --config config`` as its own process: its URL while it
    serves; afterwards it must stop cleanly on SIGTERM."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "PADFORMER_EDGE_STATE_DIR": str(tmp_path)}
    process = subprocess.Popen(
        [sys.executable, "-m", "padformer_edge", "serve", "--config", str(config), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=REPO,
    )  # fmt: skip
    try:
        line = process.stdout.readline()  # type: ignore[union-attr]
        assert line.startswith("serving http://127.0.0.1:"), line
        yield line.split()[1]
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)


def _site(tmp_path: Path) -> Site:
    """The web tests' site in the config's database, under the real migrations."""
    engine = open_engine(str(tmp_path / "results.sqlite3"))
    upgrade(engine)
    site = build_site(engine, str(tmp_path / "results.sqlite3"), tmp_path)
    engine.dispose()
    return site


def test_serve_serves_the_configured_database_until_sigterm(tmp_path: Path) -> None:
    config = _config(tmp_path)
    site = _site(tmp_path)
    with _serving(tmp_path, config) as url:
        with urllib.request.urlopen(f"{url}/history") as reply:
            assert reply.status == 200 and b"cam-a" in reply.read()
        # The camera folder of the config is a root: its pictures are served.
        with urllib.request.urlopen(f"{url}/media/{site.good[0]}/image") as reply:
            assert reply.headers["Content-Type"] == "image/png"


def test_serve_takes_its_line_from_the_config(tmp_path: Path) -> None:
    """``serve`` hands the server the config's ``line``: served on line press-9's PC, a row
    stored on the host's line whose picture is not here is said to be on that line's PC
    (on its own line's PC it would be said removed)."""
    config = _config(tmp_path, line="press-9")
    site = _site(tmp_path)
    engine = open_engine(str(tmp_path / "results.sqlite3"))
    with engine.connect() as conn:
        query = select(inspections.c.source_path).where(inspections.c.id == site.good[0])
        Path(conn.execute(query).scalar_one()).unlink()
    engine.dispose()
    with _serving(tmp_path, config) as url:
        with urllib.request.urlopen(f"{url}/api/live") as reply:
            cards = {card["id"]: card for card in json.loads(reply.read())}
        assert cards[site.good[0]]["elsewhere"] == default_line()
