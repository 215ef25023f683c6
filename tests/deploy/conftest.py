"""Starts the OpenVINO cases' own pytest process as soon as the suite has collected the
test that waits for it (``test_openvino_cases``), so it runs beside the other tests."""

from __future__ import annotations

import pytest


def pytest_collection_finish(session: pytest.Session) -> None:
    if session.config.option.collectonly:
        return
    if any(item.nodeid.endswith("test_every_openvino_case_passes_in_its_own_process")
           for item in session.items):  # fmt: skip
        from tests.deploy.test_openvino_cases import start_cases

        start_cases()
