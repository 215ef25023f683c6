"""The scoring methods, one package each, found by the metric a profile names.

``registry.method_for(metric)`` is the one place a metric's name decides anything: each
method builds its torch detector, its line detector on exported graphs, its export, its
scoring signature and the features references are chosen by. ``compare`` is the learned
comparison; ``padformer`` holds PADFormer's reconstruction errors and the multi-pass
detector every PADFormer metric runs on; ``fused`` and ``distance`` are the metrics read
from PADFormer's passes and CNN that the ``padformer`` detector runs. A method loads only
what it scores with: ``compare`` never loads a PADFormer.
"""
