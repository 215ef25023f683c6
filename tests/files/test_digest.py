"""Every file checksum in the project is the same plain sha256 of the file's bytes."""

from __future__ import annotations

import hashlib

from padformer_edge.daemon.camera_files import fingerprint
from padformer_edge.files.digest import file_sha256
from padformer_edge.model.checkpoint import file_sha256 as checkpoint_sha256
from padformer_edge_training.synth.loaders import file_digest


def test_the_three_readers_agree_with_hashing_the_bytes(tmp_path) -> None:
    data = bytes(range(256)) * 9000  # over two MiB: several buffers of the reader
    path = tmp_path / "file.bin"
    path.write_bytes(data)
    expected = hashlib.sha256(data).hexdigest()
    assert file_sha256(path) == expected
    assert checkpoint_sha256(path) == expected
    assert file_digest(path) == expected
    assert fingerprint(path, max_bytes=len(data)) == (expected, len(data))


def test_an_empty_file_has_the_empty_digest(tmp_path) -> None:
    path = tmp_path / "empty"
    path.write_bytes(b"")
    assert file_sha256(path) == hashlib.sha256(b"").hexdigest()
