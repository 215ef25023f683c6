"""The scoring methods, one package each, found by the metric a profile names.

``registry.method_for(metric)`` is the one place a metric's name decides anything: each
method (``compare``, the learned comparison; ``padformer``, PADFormer's passes and the
distance on its CNN) builds its torch detector, its line detector on exported graphs, its
export, its scoring signature and the features references are chosen by. A method loads
only what it scores with: ``compare`` never loads a PADFormer.
"""
