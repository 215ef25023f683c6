"""The line's numpy scoring runs numpy's BLAS on one thread, and gives the process its
BLAS threads back afterwards: with BLAS threads waiting beside the runtime's own on two
cores, the scoring ran many times slower (``benchmarks/detect_speed.py --runtimes``)."""

from __future__ import annotations

from threadpoolctl import threadpool_info, threadpool_limits

from padformer_edge.methods.padformer.line_detector import LineDetector
from padformer_edge.profiles.profile import load_profile
from tests.deploy.parity import tiny_onnx_profile
from tests.detect_images import product_image


def _blas_threads() -> set[int]:
    return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}


def test_scoring_holds_blas_to_one_thread_and_restores_it(tmp_path, monkeypatch):
    detector = load_profile(tiny_onnx_profile(tmp_path, max_batch=2), "part").build_detector()
    assert isinstance(detector, LineDetector)
    seen: list[set[int]] = []
    score_one = detector.score_one

    def watched(*args, **kwargs):
        seen.append(_blas_threads())
        return score_one(*args, **kwargs)

    monkeypatch.setattr(detector, "score_one", watched)
    with threadpool_limits(limits=2, user_api="blas"):  # as a process with two cores has
        assert _blas_threads() == {2}
        detector.detect([product_image(60, 80, seed=3), product_image(60, 80, seed=4)])
        assert _blas_threads() == {2}
    assert seen == [{1}, {1}]
