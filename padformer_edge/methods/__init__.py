"""The scoring methods, one package each, found by the metric a profile names.

``registry.method_for(metric)`` is the one place a metric's name decides anything: each
method builds its torch detector, its line detector on exported graphs, its export, its
scoring signature and the features references are chosen by. ``compare`` is the learned
comparison; ``padformer`` holds PADFormer's reconstruction errors and the multi-pass
detector every PADFormer metric runs on; ``fused`` and ``distance`` are the metrics read
from PADFormer's passes and CNN that the ``padformer`` detector runs. A method loads only
what it scores with: ``compare`` never loads a PADFormer.
"""

# Every method's section of the detection settings is registered with the package: a
# module that names a method (its detector, its scorer) reads settings files and options
# of every metric, whichever module it came through.
import padformer_edge.methods.registry  # noqa: F401
