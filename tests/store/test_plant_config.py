"""``plant_database`` in the daemon config: only a PostgreSQL URL, only beside a local
SQLite database; ``doctor`` says whether the plant answers and what the line owes it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from padformer_edge.daemon.alerts.config import AlertsConfig
from padformer_edge.daemon.alerts.planning import Cooldown
from padformer_edge.daemon.settings import DaemonConfig
from padformer_edge.store.engine import open_engine
from padformer_edge.store.lines import with_line
from padformer_edge.store.migrations import upgrade
from padformer_edge.store.models import ReviewVerdict
from padformer_edge.store.outbox import enable_forwarding
from padformer_edge.store.reviews import save_review
from padformer_edge.tools.doctor import check_plant
from tests.alerts.conftest import store_result
from tests.pg_cluster import Cluster, own_cluster

CAMERAS = [{"name": "cam0", "path": "/cameras/cam0", "profile": "bolt"}]


def config(**keys: object) -> DaemonConfig:
    return DaemonConfig.model_validate({"cameras": CAMERAS, "line": "press-1", **keys})


def test_the_plant_must_be_a_server() -> None:
    with pytest.raises(ValidationError, match="plant_database must be a PostgreSQL URL"):
        config(plant_database="sqlite:///plant.sqlite3")


def test_a_daemon_writing_a_server_has_no_plant_to_forward_to() -> None:
    with pytest.raises(ValidationError, match="database is a server already"):
        config(database="postgresql://a@db/x", plant_database="postgresql://a@plant/x")
    assert config(plant_database="postgresql://a@plant/x").database is None


def test_without_a_plant_doctor_says_nothing_of_one() -> None:
    assert list(check_plant(config())) == []


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with own_cluster() as owned:
        yield owned


def test_doctor_reports_the_plant_and_the_lines_backlog(tmp_path: Path, cluster: Cluster) -> None:
    database = tmp_path / "results.sqlite3"
    line = with_line(open_engine(str(database)), "press-1")
    upgrade(line)
    enable_forwarding(line, cluster.url)
    inspection, _ = store_result(line, AlertsConfig(), Cooldown(0), "a.png")
    save_review(line, inspection, ReviewVerdict.true_defect, reviewer="ana")
    line.dispose()
    plant = config(database=str(database), plant_database=cluster.url)
    (finding,) = check_plant(plant)
    assert finding.ok and "answers, empty (watch migrates it)" in finding.detail
    # the result, its alert, the review and its history entry
    assert "4 change(s) of this line not yet forwarded" in finding.detail
    cluster.stop()
    (finding,) = check_plant(plant)
    assert not finding.ok and "cannot be reached" in finding.detail
    assert "4 change(s)" in finding.detail
