"""Self-signed certificates for the TLS tests, made by the ``openssl`` command line tool
(Debian's, already on every machine that runs these tests), so no test needs a
cryptography library the project does not ship."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def self_signed(folder: Path, name: str = "localhost", days: int = 30) -> tuple[Path, Path]:
    """(certificate, key) PEM files for ``name`` (also as an IP/DNS alt name), valid for
    ``days`` from now, written under ``folder`` as ``name.crt`` and ``name.key``."""
    openssl = shutil.which("openssl")
    assert openssl is not None, "the TLS tests need the openssl command (apt-get install openssl)"
    folder.mkdir(parents=True, exist_ok=True)
    cert, key = folder / f"{name}.crt", folder / f"{name}.key"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256",
         "-days", str(days), "-subj", f"/CN={name}", "-keyout", str(key), "-out", str(cert),
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


def end_date(cert: Path) -> str:
    """``openssl x509 -enddate``'s reading of the certificate, e.g. ``Dec  8 08:51:24 2026 GMT``."""
    out = subprocess.run(
        ["openssl", "x509", "-in", str(cert), "-noout", "-enddate"],
        check=True, capture_output=True, text=True, timeout=30,
    ).stdout  # fmt: skip
    return out.strip().split("=", 1)[1]
