"""Starts the OpenVINO cases' own pytest process as soon as the suite has collected the
test that waits for it (``test_openvino_cases``), so it runs beside the other tests."""

from __future__ import annotations

import os

import pytest


def pytest_collection_finish(session: pytest.Session) -> None:
    # Under pytest-xdist every worker collects every test but runs only its share: the
    # worker that is given the test starts the process itself, beside the other worker.
    if session.config.option.collectonly or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    if any(item.nodeid.endswith("test_every_openvino_case_passes_in_its_own_process")
           for item in session.items):  # fmt: skip
        from tests.deploy.test_openvino_cases import start_cases

        start_cases()
