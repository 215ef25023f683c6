"""The GPU benchmarks' refusals. Their CPU paths at tiny sizes, and that a dry run never
becomes a docs table, are checked where the one prepared GPU call runs them
(``tests/test_gpu_session.py``): one run of each script serves both."""

from __future__ import annotations

from tests.benchmark_process import run_benchmark


def test_the_random_table_takes_one_reference_count() -> None:
    done = run_benchmark("gpu_detect_speed.py", "--device", "cpu", "--references", "4,12")
    assert done.returncode != 0 and "takes one --references count" in done.stderr
