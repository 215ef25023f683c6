"""A logger made at import time must follow the format chosen later by the CLI."""

from __future__ import annotations

import json

import pytest

from padformer_edge.log import configure_logging, get_logger

module_level_logger = get_logger("tests.module")


def test_module_logger_follows_later_configuration(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("json", "INFO")
    module_level_logger.info("hello", answer=42)
    line = capsys.readouterr().err.strip().splitlines()[-1]
    event = json.loads(line)
    assert event["event"] == "hello"
    assert event["answer"] == 42
    assert event["component"] == "tests.module"


def test_level_filters_debug(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("json", "WARNING")
    get_logger("x").info("quiet")
    get_logger("x").warning("loud")
    err = capsys.readouterr().err
    assert "quiet" not in err
    assert "loud" in err
