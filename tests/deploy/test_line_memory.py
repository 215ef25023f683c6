"""The line runtime's onnxruntime sessions run without onnxruntime's memory arena: the
arena never returns memory and grows for each new input shape, which a daemon meets as
batches of 1 to max_batch images (``benchmarks/soak.py`` measured the growth)."""

from __future__ import annotations

import pytest

from padformer_edge.methods.padformer.line_detector import LineDetector
from padformer_edge.profiles.profile import load_profile
from tests.deploy.parity import tiny_onnx_profile
from tests.detect_images import product_image


def test_every_session_runs_without_the_arena_and_scores_every_batch_size(tmp_path):
    detector = load_profile(tiny_onnx_profile(tmp_path, max_batch=4), "part").build_detector()
    assert isinstance(detector, LineDetector)
    assert detector.sessions
    for graph in detector.sessions.values():
        assert graph.session.get_session_options().enable_cpu_mem_arena is False
    images = [product_image(60, 80, seed=9 + i) for i in range(3)]
    alone = [detector.detect([image])[0].score for image in images]
    together = [d.score for d in detector.detect(images)]
    assert together == pytest.approx(alone, rel=1e-5)
