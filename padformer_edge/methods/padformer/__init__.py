"""Every score read from PADFormer, and the machinery they all run on: the reconstruction
scores (``lab``, ``rgb``, ``feature``: ``paper_metrics``), the ``fused`` score (those
errors mixed with the distance to the references: ``fused_metric``, ``mix``,
``fused_scoring``) and the ``distance`` score (the nearest reference cell in PADFormer's
CNN features, no pass: ``distance_search`` in torch, ``distance_line`` in numpy); the
multi-pass torch ``Detector``, its pass folding, the line's exported graphs and their
numpy scoring. Three methods (``method``, ``fused_method``, ``distance_method``), one
package: they share the checkpoint, the reference encodings, the detector, the exported
graphs and one formula (the distance is the fused mix with the reconstruction weighed
out), so no piece of one is another method's."""
