"""The scoring methods, in the package of the model each reads, found by the metric a
profile names.

``registry.method_for(metric)`` is the one place a metric's name decides anything: each
method builds its torch detector, its line detector on exported graphs, its export, its
scoring signature and the features references are chosen by. ``compare`` is the learned
comparison; ``padformer`` holds every score read from PADFormer (its reconstruction
errors, the ``fused`` mix and the ``distance`` alone: three methods of one package, on the
multi-pass detector they share). A method loads only what it scores with: ``compare``
never loads a PADFormer. No method's package imports another's (``tests/test_imports.py``).
"""

# Every method's section of the detection settings is registered with the package: a
# module that names a method (its detector, its scorer) reads settings files and options
# of every metric, whichever module it came through.
import padformer_edge.methods.registry  # noqa: F401
