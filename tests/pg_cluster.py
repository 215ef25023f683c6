"""A PostgreSQL server a test owns: its own cluster on a free port, stopped and started
at will (the plant database going away and coming back), removed afterwards.

The shared test server (``PADFORMER_EDGE_TEST_PG_URL``) cannot be stopped by one test
without failing every other one, so the plant tests start their own from the server
programs of the ``postgresql`` package (what ``.ci/services`` installs). Without them
the tests skip locally and fail in CI (``tests.services``). PostgreSQL refuses to run
as root; as root the cluster belongs to the ``postgres`` user the package creates.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.services import postgres_driver_or_missing, service_missing

PROGRAMS = ("initdb", "pg_ctl", "createdb")


def server_programs() -> Path | None:
    """The newest folder holding every program used here (Debian keeps them out of PATH,
    one folder per major version), else PATH's; None when PostgreSQL is not installed."""
    folders = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: p.parent.name)
    folders = [*reversed(folders)]
    on_path = shutil.which("initdb")
    if on_path:
        folders.append(Path(on_path).resolve().parent)
    for folder in folders:
        if all(os.access(folder / name, os.X_OK) for name in PROGRAMS):
            return folder
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Cluster:
    """One stopped-or-running PostgreSQL server with one database, ``plant``."""

    def __init__(self, programs: Path, root: Path) -> None:
        self.programs, self.root = programs, root
        self.data, self.log = root / "data", root / "server.log"
        self.port = _free_port()
        self._as: list[str] = []
        if os.geteuid() == 0:
            self._as = ["runuser", "-u", "postgres", "--"]
            shutil.chown(root, user=pwd.getpwnam("postgres").pw_uid)
        self._run("initdb", "-D", str(self.data), "-U", "padformer", "-A", "trust", "--no-sync")
        self.start()
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "padformer", "plant")

    @property
    def url(self) -> str:
        return f"postgresql://padformer@127.0.0.1:{self.port}/plant"

    def _run(self, program: str, *args: str) -> None:
        command = [*self._as, str(self.programs / program), *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            log = self.log.read_text() if self.log.exists() else ""
            raise RuntimeError(f"{program} failed: {done.stderr}{done.stdout}{log[-2000:]}")

    def start(self) -> None:
        options = f"-h 127.0.0.1 -p {self.port} -k {self.root} -F"
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options,
                  "-w", "start")  # fmt: skip

    def stop(self) -> None:
        """A fast shutdown: open connections are cut, as when the plant server goes away."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def running(self) -> bool:
        status = subprocess.run([*self._as, str(self.programs / "pg_ctl"), "-D",
                                 str(self.data), "status"], capture_output=True)  # fmt: skip
        return status.returncode == 0


@contextmanager
def own_cluster() -> Iterator[Cluster]:
    """A fresh cluster for the ``with`` block; skipped (locally) without PostgreSQL."""
    programs = server_programs()
    if programs is None:
        service_missing(
            "PostgreSQL's server programs (initdb, pg_ctl) are not installed; "
            "apt-get install postgresql, or run .ci/services"
        )
    postgres_driver_or_missing()
    # Not pytest's tmp_path: its folders are private to root, and the server runs as
    # the postgres user.
    root = Path(tempfile.mkdtemp(prefix="padformer-plant-"))
    root.chmod(0o755)
    cluster = None
    try:
        cluster = Cluster(programs, root)
        yield cluster
    finally:
        if cluster is not None and cluster.running():
            cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
