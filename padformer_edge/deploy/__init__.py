"""Deployment: the model exported as ONNX graphs, and the runtimes that run them.

``export`` writes the graphs (and a manifest naming the model they came from) from a
torch model; ``onnx_runner`` runs them with onnxruntime for the torch ``Detector``'s
reconstruction step. ``line_export`` adds what a profile needs to run with no torch at
all, and ``line_detector`` runs it: the graphs in onnxruntime, the scoring in numpy
(``line_scoring``, ``arrays``). The modules a line runs (``names``, ``arrays``,
``line_scoring``, ``line_detector``) import no torch.
"""
