"""Deployment: PADFormer exported as ONNX graphs, and the runtimes that run any method's
graphs.

``export`` writes the graphs (and a manifest naming the model they came from) from a
torch model, ``openvino_export`` converts them to OpenVINO IR; ``onnx_runner`` and
``openvino_runner`` run them for the torch ``Detector``'s reconstruction step
(``graph_runner`` says what it asks of them). For a line with no torch, ``sessions``
opens a graph in either runtime and ``verify`` checks a profile's files against their
sha256; the readout every line scorer shares is the torch detectors' own
(``detect.readout``, on numpy through ``detect.numpy_ops``), and each method's own line
export and scorer live in its package under ``methods``. The modules a line runs
(``names``, ``sessions``, ``verify``) import no torch.
"""
