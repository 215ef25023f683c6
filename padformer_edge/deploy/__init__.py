"""Deployment: the model exported as ONNX graphs, and the runtimes that run them.

``export`` writes the graphs (and a manifest naming the model they came from) from a
torch model; ``onnx_runner`` runs them with onnxruntime for the ``Detector``'s
reconstruction step. Scoring still runs in torch (``detect.scoring``): this package moves
the model's work, not the metric's.
"""
