"""Deployment: the model exported as ONNX graphs, and the runtimes that run them.

``export`` writes the graphs (and a manifest naming the model they came from) from a
torch model, ``openvino_export`` converts them to OpenVINO IR; ``onnx_runner`` and
``openvino_runner`` run them for the torch ``Detector``'s reconstruction step.
``line_export`` adds what a profile needs to run with no torch at all, and
``line_detector`` runs it: the graphs in onnxruntime or OpenVINO (``sessions`` opens a
graph in either, for every runner), the scoring in numpy (``line_scoring``, ``arrays``).
The modules a line runs (``names``, ``sessions``, ``arrays``, ``line_scoring``,
``line_detector``) import no torch.
"""
